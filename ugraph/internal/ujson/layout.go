package ujson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Indent appends to dst the JSON value data in the canonical layout of
// .ugraph.json files, and a final newline. An array or object that holds no
// object (at any depth) goes on one line, with a space after each comma and
// colon: an op, a shape, a shape list. Any other container puts each element
// on a line of its own, indented by two spaces per level. Member order,
// numbers and string contents are kept; strings are re-escaped canonically
// (without HTML escapes), so the layout of a value depends only on the value
// and Indent(Indent(x)) == Indent(x).
func Indent(dst *bytes.Buffer, data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseNode(dec)
	if err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("ujson: trailing data after the value")
	}
	if err := v.write(dst, ""); err != nil {
		return err
	}
	dst.WriteByte('\n')
	return nil
}

// node is a parsed JSON value: a container (delim '{' or '[') or a scalar.
type node struct {
	delim  json.Delim
	scalar any      // string, json.Number, bool or nil, when delim is 0
	names  []string // member names, when delim is '{'
	elems  []*node  // members or elements
	flat   bool     // holds no object at any depth: written on one line
}

func parseNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return &node{scalar: tok, flat: true}, nil
	}
	n := &node{delim: d, flat: true}
	for dec.More() {
		if d == '{' {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			name, ok := tok.(string)
			if !ok {
				return nil, fmt.Errorf("ujson: malformed object member %v", tok)
			}
			n.names = append(n.names, name)
		}
		e, err := parseNode(dec)
		if err != nil {
			return nil, err
		}
		n.flat = n.flat && e.flat && e.delim != '{'
		n.elems = append(n.elems, e)
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return nil, err
	}
	return n, nil
}

func (n *node) write(dst *bytes.Buffer, indent string) error {
	if n.delim == 0 {
		return writeScalar(dst, n.scalar)
	}
	closing := byte(']')
	if n.delim == '{' {
		closing = '}'
	}
	dst.WriteByte(byte(n.delim))
	if len(n.elems) == 0 {
		dst.WriteByte(closing)
		return nil
	}
	inner := indent + "  "
	sep := ", "
	if !n.flat {
		sep = ",\n" + inner
		dst.WriteString("\n" + inner)
	}
	for i, e := range n.elems {
		if i > 0 {
			dst.WriteString(sep)
		}
		if n.delim == '{' {
			if err := writeScalar(dst, n.names[i]); err != nil {
				return err
			}
			dst.WriteString(": ")
		}
		if err := e.write(dst, inner); err != nil {
			return err
		}
	}
	if !n.flat {
		dst.WriteString("\n" + indent)
	}
	dst.WriteByte(closing)
	return nil
}

func writeScalar(dst *bytes.Buffer, v any) error {
	if num, ok := v.(json.Number); ok {
		dst.WriteString(string(num))
		return nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	dst.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return nil
}
