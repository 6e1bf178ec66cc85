package bench

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

var rows = []Row{
	{Workload: "rmsnorm_matmul", Seconds: 12.3, States: 46000, StatesPerCore: 1870, PrunedShare: 0.5, Complete: 296, Verified: 16,
		BestKernels: 1, BestUs: 21.3, UnfusedUs: 24.9, Speedup: 24.9 / 21.3, FirstFusedSec: 1.2},
	{Workload: "gqa", Seconds: 60, States: 6e6, Complete: 1841, Verified: 16, BestKernels: 2, BestUs: 18, UnfusedUs: 28.6,
		Speedup: 28.6 / 18, Stopped: "time limit", FirstFusedSec: 6},
	{Workload: "broken", Err: "examples/broken.py:3: no such op", FirstFusedSec: -1},
}

func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, "title", rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if lines[0] != "# title" || len(lines) != 2+2+len(rows) {
		t.Fatalf("got %d lines:\n%s", len(lines), b.String())
	}
	cols := strings.Count(lines[2], "|")
	for i, want := range []string{
		"| rmsnorm_matmul | 12.3 | 1.2 | 46000 | 1870 | 50.0% | 296 | 16 | 1 | 21.3 | 24.9 | 1.17x |  |",
		"| gqa | 60.0 | 6.0 | 6000000 | 0 | 0.0% | 1841 | 16 | 2 | 18.0 | 28.6 | 1.59x | stopped: time limit |",
		"| broken | 0.0 | - | 0 | 0 | 0.0% | 0 | 0 | - | - | 0.0 | - | examples/broken.py:3: no such op |",
	} {
		line := lines[4+i]
		if line != want {
			t.Errorf("row %d:\n got %s\nwant %s", i, line, want)
		}
		if n := strings.Count(line, "|"); n != cols {
			t.Errorf("row %d has %d cells' separators, the header %d", i, n, cols)
		}
	}
}

func TestWriteSVG(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSVG(&b, "speedups <&>", rows); err != nil {
		t.Fatal(err)
	}
	// Well-formed XML, one bar per workload with a candidate.
	dec := xml.NewDecoder(&b)
	bars, labels := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "rect":
				bars++
			case "text":
				labels++
			}
		}
	}
	if bars != 2 {
		t.Errorf("%d bars, want 2 (the broken workload has none)", bars)
	}
	if labels < 2*len(rows) {
		t.Errorf("%d labels, want at least a name and a value per row", labels)
	}
}

func TestWorkloads(t *testing.T) {
	ws, err := Workloads()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range ws {
		names = append(names, w.Name)
		if !bytes.Contains(w.Source, []byte("import mirage as mi")) {
			t.Errorf("%s: not a Mirage program", w.Name)
		}
	}
	if got := strings.Join(names, " "); got != "gqa qknorm_gqa rmsnorm_matmul lora gated_mlp ntrans llama_mlp_block stacked_layers gqa_repeat_kv encoder_mlp" {
		t.Errorf("workloads %s", got)
	}
}
