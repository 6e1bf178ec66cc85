package kernel_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// dotToken is a token of the DOT subset WriteDot emits.
type dotToken struct {
	text   string
	quoted bool
}

// lexDot splits DOT text into identifiers, quoted strings (unescaped only
// as far as \" goes) and punctuation, failing on anything else.
func lexDot(src string) ([]dotToken, error) {
	var toks []dotToken
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\n' || c == '\t':
			i++
		case c == '"':
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\\' {
					j++
				}
			}
			if j >= len(src) {
				return nil, fmt.Errorf("unterminated string at byte %d", i)
			}
			toks = append(toks, dotToken{src[i+1 : j], true})
			i = j + 1
		case strings.HasPrefix(src[i:], "->"):
			toks = append(toks, dotToken{text: "->"})
			i += 2
		case strings.ContainsRune("{}[];=,", rune(c)):
			toks = append(toks, dotToken{text: string(c)})
			i++
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			toks = append(toks, dotToken{text: src[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q at byte %d", c, i)
		}
	}
	return toks, nil
}

// dotGraph is what the structural check extracts from a digraph.
type dotGraph struct {
	nodes    map[string]string // id -> label
	edges    [][2]string
	clusters []string
}

// parseDot checks the statement structure of WriteDot's output: one
// digraph, balanced braces, statements ended by ';', and every edge between
// declared nodes.
func parseDot(src string) (*dotGraph, error) {
	toks, err := lexDot(src)
	if err != nil {
		return nil, err
	}
	if len(toks) < 3 || toks[0].text != "digraph" || toks[2].text != "{" {
		return nil, fmt.Errorf("does not open with digraph NAME {")
	}
	d := &dotGraph{nodes: map[string]string{}}
	depth := 1
	// attrs reads "[k=v, ...]" at toks[i], returning the label and the
	// index after the ']'.
	attrs := func(i int) (string, int, error) {
		label := ""
		if toks[i].text != "[" {
			return "", i, fmt.Errorf("want [ at token %d", i)
		}
		for i++; i < len(toks) && toks[i].text != "]"; i++ {
			if i+2 >= len(toks) || toks[i+1].text != "=" {
				return "", i, fmt.Errorf("malformed attribute at token %d", i)
			}
			if toks[i].text == "label" {
				label = toks[i+2].text
			}
			i += 2
			if toks[i+1].text == "," {
				i++
			}
		}
		return label, i + 1, nil
	}
	for i := 3; i < len(toks); {
		t := toks[i]
		switch {
		case t.text == "}" && !t.quoted:
			depth--
			i++
			if depth == 0 && i != len(toks) {
				return nil, fmt.Errorf("tokens after the closing brace")
			}
		case t.text == "subgraph":
			if i+2 >= len(toks) || toks[i+2].text != "{" {
				return nil, fmt.Errorf("malformed subgraph at token %d", i)
			}
			d.clusters = append(d.clusters, toks[i+1].text)
			depth++
			i += 3
		case t.text == "graph" || t.text == "node" || t.text == "edge":
			_, j, err := attrs(i + 1)
			if err != nil {
				return nil, err
			}
			i = j
		case t.text == "label" && toks[i+1].text == "=":
			i += 3
		case i+1 < len(toks) && toks[i+1].text == "->":
			_, j, err := attrs(i + 3)
			if err != nil {
				return nil, err
			}
			d.edges = append(d.edges, [2]string{t.text, toks[i+2].text})
			i = j
		default:
			label, j, err := attrs(i + 1)
			if err != nil {
				return nil, err
			}
			if _, dup := d.nodes[t.text]; dup {
				return nil, fmt.Errorf("node %s declared twice", t.text)
			}
			d.nodes[t.text] = label
			i = j
		}
		if depth > 0 && i < len(toks) && toks[i].text == ";" {
			i++
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced braces (depth %d at the end)", depth)
	}
	for _, e := range d.edges {
		for _, n := range e {
			if _, ok := d.nodes[n]; !ok {
				return nil, fmt.Errorf("edge %s -> %s: %s is not declared", e[0], e[1], n)
			}
		}
	}
	return d, nil
}

func TestWriteDot(t *testing.T) {
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			g := ex.build()
			var buf bytes.Buffer
			if err := kernel.WriteDot(&buf, g); err != nil {
				t.Fatal(err)
			}
			golden(t, ex.name+".dot", buf.Bytes())
			d, err := parseDot(buf.String())
			if err != nil {
				t.Fatalf("%v in\n%s", err, buf.String())
			}
			checkWithGraphviz(t, buf.Bytes())
			// Every op is a node (a customized op: a cluster of its block
			// ops) whose label starts with the op as Fprint writes it, and
			// every operand and output is an edge.
			edges, clusters := len(g.Outputs), 0
			for i, op := range g.Ops {
				edges += len(op.In)
				if op.Kind != ugraph.OpCustomized {
					want := fmt.Sprintf("t%d = %v(", op.Out[0], op.Kind)
					if l, ok := d.nodes[fmt.Sprintf("k%d", i)]; !ok || !strings.HasPrefix(l, want) {
						t.Errorf("op %d: node k%d has label %q, want it to start with %q", i, i, l, want)
					}
					continue
				}
				clusters++
				for j, bop := range op.Block.Ops {
					edges += len(bop.Operands())
					want := fmt.Sprintf("= %v(", bop.Kind)
					if l, ok := d.nodes[fmt.Sprintf("k%d_s%d", i, j)]; !ok || !strings.Contains(l, want) {
						t.Errorf("op %d, block op %d: label %q, want it to contain %q", i, j, l, want)
					}
				}
			}
			for i, o := range g.Outputs {
				if l := d.nodes[fmt.Sprintf("out%d", i)]; l != fmt.Sprintf("output t%d", o) {
					t.Errorf("output %d: label %q", i, l)
				}
			}
			if len(d.edges) != edges || len(d.clusters) != clusters {
				t.Errorf("%d edges and %d clusters, want %d and %d", len(d.edges), len(d.clusters), edges, clusters)
			}
		})
	}
}

// checkWithGraphviz runs Graphviz's dot on src where it is installed.
func checkWithGraphviz(t *testing.T, src []byte) {
	t.Helper()
	dot, err := exec.LookPath("dot")
	if err != nil {
		return
	}
	cmd := exec.Command(dot, "-Tsvg", "-o", os.DevNull)
	cmd.Stdin = bytes.NewReader(src)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("dot rejects the graph: %v\n%s", err, out)
	}
}

func TestParseDotRejectsBrokenText(t *testing.T) {
	for _, src := range []string{
		"digraph g {\n  a [label=\"x\"];\n",
		"digraph g {\n  a [label=\"x];\n}\n",
		"digraph g {\n  a [label=\"x\"];\n  a -> b [label=\"y\"];\n}\n",
		"digraph g {\n  a [label=\"x\"];\n}\n}\n",
	} {
		if _, err := parseDot(src); err == nil {
			t.Errorf("parseDot accepted %q", src)
		}
	}
}
