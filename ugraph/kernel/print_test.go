package kernel_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// TestFprintGolden pins the printed form of every example: the files in
// testdata/*.txt are what `mirage show` prints, checked by a human.
func TestFprintGolden(t *testing.T) {
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			g := ex.build()
			var buf bytes.Buffer
			if err := kernel.Fprint(&buf, g); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			golden(t, ex.name+".txt", buf.Bytes())

			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			for i, l := range lines {
				if strings.TrimRight(l, " ") != l {
					t.Errorf("line %d has trailing spaces: %q", i+1, l)
				}
			}
			// One line per kernel op, per customized op's launch parameters
			// and per block op, and the outputs.
			want := len(g.Ops) + 1
			for _, op := range g.Ops {
				if op.Kind == ugraph.OpCustomized {
					want += 1 + len(op.Block.Ops)
				}
			}
			if len(lines) != want {
				t.Errorf("%d lines, want %d", len(lines), want)
			}
		})
	}
}

// Fprint must not panic on a graph assembled inconsistently by hand.
func TestFprintDamagedGraph(t *testing.T) {
	g := gqaMugraph()
	g.Ops[3].Out = append(g.Ops[3].Out, 99)
	g.Ops[4].Block.Ops[5].In[0] = 42
	g.Outputs = append(g.Outputs, -1)
	var buf bytes.Buffer
	if err := kernel.Fprint(&buf, g); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "?") {
		t.Errorf("damage not shown:\n%s", buf.String())
	}
}

// A block graph's pipeline depth is printed where it sets one, in the
// kernel's launch line; the default prints nothing, as the golden files
// show.
func TestFprintStages(t *testing.T) {
	g := gqaMugraph()
	for _, op := range g.Ops {
		if op.Block != nil {
			if err := op.Block.SetStages(3); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	var buf bytes.Buffer
	if err := kernel.Fprint(&buf, g); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "reduction_dimx 64, stages 3\n"); n != 1 {
		t.Errorf("%d launch lines end with the depth, want 1:\n%s", n, buf.String())
	}
	if n := strings.Count(buf.String(), ", stages "); n != 1 {
		t.Errorf("%d launch lines name a depth, want 1 (the other kernel sets none):\n%s", n, buf.String())
	}
}
