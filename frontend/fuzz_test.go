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
	scripts, err := filepath.Glob(filepath.Join(scriptsDir, "*.py"))
	if err != nil || len(scripts) == 0 {
		f.Fatalf("no scripts: %v", err)
	}
	examples = append(examples, scripts...)
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
	for _, s := range identitySeeds {
		f.Add(s)
	}
	for _, tt := range bracketCases {
		f.Add(tt.src)
	}
	f.Add(withFused("O = g.customized([X, W], tb)", "g.mark_output(O[0])"))
	f.Add(lenientDemo)

	f.Fuzz(func(t *testing.T, src string) {
		for _, strict := range []bool{false, true} {
			opts := Options{Strict: strict, Stdout: io.Discard, MaxSteps: 100_000, MaxAlloc: 1 << 20}
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

// identitySeeds are the sources of package rewrite's identityRewrites:
// identity tests it turns into comparisons, and some it leaves.
var identitySeeds = []string{
	"if x is None:\n",
	"ok = x is not None\n",
	"a = b is True or c is not False\n",
	"f(x is None, y=z is not None)\n",
	"v = [y for y in ys if y is not None]\n",
	"v = 1 if x is None else 2\n",
	"d = {k: v is None for k, v in kv}\n",
	"ok = (f(x)[0].y\n  is  not\n  None)\n",
	"ok = x is \\\n None; y = 1\n",
	"ok = None is None",
	"assert args.c is None, 'c'\n",
	"ok = x is y\n",
	"ok = x is None + 1\n",
	"ok = x is None.y\n",
	"ok = x is not None is None\n",
	"ok = not is None\n",
	"s = 'x is None'  # y is None\n",
}
