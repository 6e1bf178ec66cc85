// Package ujson is the JSON plumbing shared by the block and kernel codecs of
// .ugraph.json files: a strict reader of objects and values, the attribute
// members of an op, and the canonical layout of a document.
//
// The reader is stricter than encoding/json: member names match exactly (not
// case-insensitively), a name may appear once per object, null is never a
// value of a field, and integers must be written as integers. It assumes its
// input is well-formed JSON (the caller checks the whole document once).
package ujson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Object is a JSON object whose members are read by name. It remembers
// which members were read, so that Unread can reject the unknown ones.
type Object struct {
	names []string // in document order
	vals  map[string]json.RawMessage
	read  map[string]bool
}

// ParseObject splits data, a well-formed JSON value, into an object's
// members; it fails unless data is an object with distinct member names.
func ParseObject(data json.RawMessage) (*Object, error) {
	if kind(data) != "an object" {
		return nil, fmt.Errorf("want an object, got %s", kind(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // the '{'
		return nil, err
	}
	o := &Object{vals: map[string]json.RawMessage{}, read: map[string]bool{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("malformed object member %v", tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := o.vals[name]; dup {
			return nil, fmt.Errorf("duplicate field %q", name)
		}
		o.names = append(o.names, name)
		o.vals[name] = v
	}
	return o, nil
}

// Has reports whether the object has the named member.
func (o *Object) Has(name string) bool {
	_, ok := o.vals[name]
	return ok
}

// Raw returns the named member's value, which must be present.
func (o *Object) Raw(name string) (json.RawMessage, error) {
	v, ok := o.vals[name]
	if !ok {
		return nil, fmt.Errorf("missing field %q", name)
	}
	o.read[name] = true
	return v, nil
}

// Unread returns an error naming the first member, in document order, that
// no accessor has read: a member the schema does not have at that place.
func (o *Object) Unread() error {
	for _, n := range o.names {
		if !o.read[n] {
			return fmt.Errorf("unknown field %q", n)
		}
	}
	return nil
}

// field reads the named member with parse, naming the member in errors.
func field[T any](o *Object, name string, parse func(json.RawMessage) (T, error)) (T, error) {
	v, err := o.Raw(name)
	if err != nil {
		var zero T
		return zero, err
	}
	x, err := parse(v)
	if err != nil {
		return x, fmt.Errorf("field %q: %w", name, err)
	}
	return x, nil
}

// String reads the named member as a string.
func (o *Object) String(name string) (string, error) { return field(o, name, String) }

// Int reads the named member as an integer.
func (o *Object) Int(name string) (int, error) { return field(o, name, Int) }

// Float reads the named member as a number.
func (o *Object) Float(name string) (float64, error) { return field(o, name, Float) }

// Ints reads the named member as an array of integers.
func (o *Object) Ints(name string) ([]int, error) { return field(o, name, Ints) }

// IntLists reads the named member as an array of arrays of integers.
func (o *Object) IntLists(name string) ([][]int, error) { return field(o, name, IntLists) }

// Array reads the named member as an array of values.
func (o *Object) Array(name string) ([]json.RawMessage, error) { return field(o, name, Array) }

// kind names the JSON type of a well-formed value, for error messages.
func kind(v json.RawMessage) string {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) == 0 {
		return "nothing"
	}
	switch c := v[0]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	default:
		return "a number"
	}
}

// String parses a JSON string.
func String(v json.RawMessage) (string, error) {
	if kind(v) != "a string" {
		return "", fmt.Errorf("want a string, got %s", kind(v))
	}
	var s string
	err := json.Unmarshal(v, &s)
	return s, err
}

// Int parses a JSON number written as an integer (no fraction, no exponent)
// that fits an int.
func Int(v json.RawMessage) (int, error) {
	if kind(v) != "a number" {
		return 0, fmt.Errorf("want an integer, got %s", kind(v))
	}
	n, err := strconv.Atoi(string(v))
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("integer %s is out of range", v)
	}
	if err != nil {
		return 0, fmt.Errorf("want an integer, got %s", v)
	}
	return n, nil
}

// Float parses a JSON number that a float64 can hold.
func Float(v json.RawMessage) (float64, error) {
	if kind(v) != "a number" {
		return 0, fmt.Errorf("want a number, got %s", kind(v))
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return 0, fmt.Errorf("number %s is out of range", v)
	}
	return f, nil
}

// Array parses a JSON array into its elements.
func Array(v json.RawMessage) ([]json.RawMessage, error) {
	if kind(v) != "an array" {
		return nil, fmt.Errorf("want an array, got %s", kind(v))
	}
	var elems []json.RawMessage
	err := json.Unmarshal(v, &elems)
	return elems, err
}

// Ints parses an array of integers.
func Ints(v json.RawMessage) ([]int, error) { return arrayOf(v, "integers", Int) }

// IntLists parses an array of arrays of integers.
func IntLists(v json.RawMessage) ([][]int, error) { return arrayOf(v, "arrays of integers", Ints) }

func arrayOf[T any](v json.RawMessage, what string, parse func(json.RawMessage) (T, error)) ([]T, error) {
	if kind(v) != "an array" {
		return nil, fmt.Errorf("want an array of %s, got %s", what, kind(v))
	}
	elems, err := Array(v)
	if err != nil {
		return nil, err
	}
	xs := make([]T, len(elems))
	for i, e := range elems {
		if xs[i], err = parse(e); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return xs, nil
}
