package frontend

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
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
	for _, tt := range identityRewrites {
		f.Add(tt.in)
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

// FuzzArgs checks that no command line makes parse_args panic or hang, and
// that every failure is a positioned *Error: at the parse_args call, or at
// the shape the arguments gave. The fuzzed string is split at spaces into
// arguments. Run it with
//
//	go test -fuzz=FuzzArgs ./frontend
func FuzzArgs(f *testing.F) {
	for _, seed := range []string{"", "--batch_size 8", "-b8 --file=x", "-vv --tag a --tag=b", "--s", "--help", "1 2 3 -- -x",
		"--hidden -1", "-b", "--franges 1 2 --opt", "--no-check --check", "-", "--", "-b=", "--=", "-v-v"} {
		f.Add(seed)
	}
	prog := []byte(src(
		"import argparse",
		"import mirage as mi",
		"p = argparse.ArgumentParser()",
		"p.add_argument('-b', '--batch_size', type=int, default=1)",
		"p.add_argument('--hidden', type=int, default='64', choices=[64, 128])",
		"p.add_argument('--file')",
		"p.add_argument('names', nargs='*')",
		"p.add_argument('--franges', nargs='+', type=int)",
		"p.add_argument('--opt', nargs='?', const='on')",
		"p.add_argument('-v', action='count')",
		"p.add_argument('--tag', action='append')",
		"p.add_argument('--check', action=argparse.BooleanOptionalAction)",
		"a = p.parse_args()",
		"g = mi.new_kernel_graph()",
		"g.mark_output(g.exp(g.new_input(dims=(a.batch_size, a.hidden))))",
	))
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		opts := Options{Args: args, Stdout: io.Discard, MaxSteps: 100_000, MaxAlloc: 1 << 20}
		p, err := Load("fuzz.py", prog, opts)
		if (p == nil) == (err == nil) {
			t.Fatalf("Load returned %v and %v", p, err)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Filename != "fuzz.py" || e.Line != 13 && e.Line != 15 {
				t.Fatalf("%q: error %v (%T) is not at the parse_args call or the new_input", args, err, err)
			}
			return
		}
		if s := p.Graph.Tensors[p.Graph.Inputs()[0]].Shape; s.Dim(1) != 64 && s.Dim(1) != 128 {
			t.Fatalf("%q: input %v: a value outside --hidden's choices", args, s)
		}
	})
}
