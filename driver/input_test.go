package driver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/target"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "layer.ugraph.json")
	if err := os.WriteFile(doc, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path, name, err string
		program         bool
	}{
		{filepath.Join("..", "examples", "gqa.py"), "gqa", "", true},
		{filepath.Join("..", "ugraph", "kernel", "testdata", "gqa_mugraph.ugraph.json"), "gqa_mugraph", "", false},
		{doc, "", "layer.ugraph.json", false},
		{filepath.Join(dir, "notes.txt"), "", "notes.txt: unknown kind of file (want a .py program or a .ugraph.json μGraph file)", false},
		{filepath.Join(dir, "missing.py"), "", "missing.py", true},
	} {
		in, err := Load(tt.path, frontend.Options{})
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want an error naming %q", tt.path, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.path, err)
		case in.Name != tt.name || (in.Program != nil) != tt.program || len(in.File.Graphs) == 0:
			t.Errorf("%s: name %q, program %v, %d graph(s)", tt.path, in.Name, in.Program != nil, len(in.File.Graphs))
		default:
			if _, err := in.Graph(len(in.File.Graphs)); err == nil || !strings.Contains(err.Error(), "no candidate") {
				t.Errorf("%s: Graph past the last: %v", tt.path, err)
			}
		}
	}
}

const rowsSource = `import mirage as mi
g = mi.new_kernel_graph()
X = g.new_input(dims=(16, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 64), dtype=mi.float16)
S = g.reduction(X, 0)
g.mark_output(g.matmul(X, W))
g.mark_output(S)
`

func TestInputMarkDynamic(t *testing.T) {
	in, err := LoadSource("rows.py", []byte(rowsSource), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := LoadSource("ok.py", []byte(strings.Replace(rowsSource, "S = g.reduction(X, 0)", "S = g.exp(X)", 1)), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := ok.MarkDynamic([]string{"X:0=1..16"}, "")
	if err != nil || d.Lo != 1 || d.Hi != 16 || len(d.Buckets) == 0 || d.Buckets[len(d.Buckets)-1] < 16 {
		t.Errorf("%+v, %v", d, err)
	}
	if d, err := ok.MarkDynamic([]string{"X:0=1..16"}, "4,16"); err != nil || len(d.Buckets) != 2 {
		t.Errorf("--buckets 4,16: %+v, %v", d, err)
	}
	for _, tt := range []struct {
		in      *Input
		specs   []string
		buckets string
		err     string
	}{
		{in, []string{"X:0=1..16"}, "", "rows.py:5: --dynamic X:0=1..16: "}, // the sum over rows, named by its line
		{ok, nil, "4,16", "--buckets needs --dynamic"},
		{ok, []string{"X:0=1..16"}, "4,8", "the last bucket 8 is below HI 16"},
		{&Input{Path: "a.ugraph.json"}, []string{"0:0=1..16"}, "", "a.ugraph.json: --dynamic takes a program (.py)"},
	} {
		if _, err := tt.in.MarkDynamic(tt.specs, tt.buckets); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%v %q: %v, want %q", tt.specs, tt.buckets, err, tt.err)
		}
	}
}

func TestConfigure(t *testing.T) {
	src := "import mirage as mi\ng = mi.new_kernel_graph()\nX = g.new_input(dims=(16, 64), dtype=mi.float16)\ng.mark_output(g.exp(X))\ng.superoptimize(config=\"mlp\", griddims=[(2, 1, 1)])\n"
	in, err := LoadSource("p.py", []byte(src), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	arch := target.MustLookup("sm_90")
	warned := ""
	warn := func(msg string) { warned = msg }
	opts, err := Configure(in, Settings{Arch: arch, CacheDir: t.TempDir()}, warn)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Preset != "mlp" || len(opts.Restrict.Grids) != 1 || opts.TimeLimit != DefaultTimeLimit || opts.PartResults != -1 || opts.Cache == nil || warned != "" {
		t.Errorf("the program's preset, its grids, the default limit, all candidates, a cache: %+v (warned %q)", opts, warned)
	}
	if opts, err := Configure(in, Settings{Arch: arch, Preset: "attention", MaxCandidates: 3, NoCache: true}, warn); err != nil || opts.Preset != "attention" || opts.PartResults != 3 || opts.Cache != nil {
		t.Errorf("a preset given, 3 candidates, no cache: %+v, %v", opts, err)
	}
	if _, err := Configure(in, Settings{Arch: arch, Preset: "nonesuch"}, warn); err == nil || !strings.HasPrefix(err.Error(), "p.py: ") {
		t.Errorf("an unknown preset: %v", err)
	}
	// A config the program names is an error at its superoptimize call.
	bogus, err := LoadSource("bogus.py", []byte(strings.Replace(src, `config="mlp"`, `config="nonesuch"`, 1)), frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Configure(bogus, Settings{Arch: arch}, warn); err == nil || !strings.HasPrefix(err.Error(), `bogus.py:5: superoptimize: unknown config "nonesuch"`) {
		t.Errorf("an unknown config in the program: %v", err)
	}
	if _, err := Configure(in, Settings{Arch: arch, Profile: filepath.Join(t.TempDir(), "none.json")}, warn); err == nil || !strings.HasPrefix(err.Error(), "--profile: ") {
		t.Errorf("a missing profile: %v", err)
	}
	// A profile that measured the program on another arch ranks nothing
	// here, and says so; on its arch it says nothing.
	profile := filepath.Join(t.TempDir(), "profile_sm_80.json")
	if err := os.WriteFile(profile, []byte(`{"version": 1, "arch": "sm_80", "measurements": [{"program": "p", "hash": "0123456789abcdef", "median_us": 3}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ arch, want string }{
		{"sm_90", "--profile " + profile + " measured no graph of p on sm_90: the model alone ranks"},
		{"sm_80", ""},
	} {
		warned = ""
		if _, err := Configure(in, Settings{Arch: target.MustLookup(tt.arch), Profile: profile}, warn); err != nil || warned != tt.want {
			t.Errorf("%s: %v, warned %q; want %q", tt.arch, err, warned, tt.want)
		}
	}
}
