package frontend

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad checks that no source makes the loader panic, hang or exhaust
// memory, and that every failure is a positioned *Error. Run it with
//
//	go test -fuzz=FuzzLoad ./frontend
func FuzzLoad(f *testing.F) {
	examples, err := filepath.Glob(filepath.Join("..", "examples", "*.py"))
	if err != nil || len(examples) == 0 {
		f.Fatalf("no examples: %v", err)
	}
	for _, path := range examples {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, tt := range errorCases {
		f.Add(tt.src)
	}
	for _, tt := range boundCases {
		f.Add(tt.src)
	}
	f.Add(withFused("O = g.customized([X, W], tb)", "g.mark_output(O[0])"))
	f.Add(lenientDemo)

	f.Fuzz(func(t *testing.T, src string) {
		for _, lenient := range []bool{false, true} {
			opts := Options{Lenient: lenient, Stdout: io.Discard, MaxSteps: 100_000, MaxAlloc: 1 << 20}
			p, err := Load("fuzz.py", []byte(src), opts)
			if (p == nil) == (err == nil) {
				t.Fatalf("Load returned %v and %v", p, err)
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Filename != "fuzz.py" || e.Line < 0 || e.Col < 0 {
					t.Fatalf("error %v (%T) is not a positioned *Error", err, err)
				}
				// Loading is deterministic.
				if _, err2 := Load("fuzz.py", []byte(src), opts); err2 == nil || err2.Error() != err.Error() {
					t.Fatalf("second load: %v, first: %v", err2, err)
				}
				continue
			}
			g := p.Graph
			if len(g.Outputs) == 0 {
				t.Fatal("program without outputs")
			}
			for _, o := range g.Outputs {
				if o < 0 || int(o) >= len(g.Tensors) || !g.Tensors[o].Shape.Valid() {
					t.Fatalf("bad output %d", o)
				}
			}
		}
	})
}
