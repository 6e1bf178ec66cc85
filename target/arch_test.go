package target

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		name, gpu string
		err       string
	}{
		{"sm_80", "A100-SXM4-80GB", ""},
		{"sm_90", "H100-SXM5-80GB", ""},
		{"h200", "H200-SXM-141GB", ""},
		{"sm_75", "", `unknown arch "sm_75" (known: h200, sm_80, sm_90)`},
		{"", "", `unknown arch "" (known: h200, sm_80, sm_90)`},
		{"SM_80", "", "unknown arch"},
	}
	for _, tt := range tests {
		a, err := Lookup(tt.name)
		switch {
		case tt.err == "" && (err != nil || a.GPU != tt.gpu):
			t.Errorf("Lookup(%q) = %v, %v; want %s", tt.name, a, err, tt.gpu)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("Lookup(%q) error %v, want %q", tt.name, err, tt.err)
		}
	}
}

func TestArchTableIsComplete(t *testing.T) {
	as := Archs()
	if !slices.IsSortedFunc(as, func(a, b Arch) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("Archs is not ordered by name")
	}
	for _, a := range as {
		positive := []float64{float64(a.SMs), a.MemBandwidth, a.L2Bandwidth, float64(a.L2Bytes), float64(a.MemBytes), a.TensorFLOPS, a.FP32FLOPS,
			float64(a.SmemPerSM), float64(a.MaxSmemPerBlock), float64(a.SmemReserved),
			float64(a.MaxThreadsPerSM), float64(a.MaxBlocksPerSM), a.LaunchMicros,
			a.ClockHz, float64(a.SchedulersPerSM), a.MemLatencyNs, a.SMBandwidth}
		for i, v := range positive {
			if !(v > 0) {
				t.Errorf("%s: figure %d is %v", a.Name, i, v)
			}
		}
		if a.MMA.M <= 0 || a.MMA.N <= 0 || a.MMA.K <= 0 || a.MMA.PTX == "" {
			t.Errorf("%s: MMA %+v", a.Name, a.MMA)
		}
		if a.CUDA != "sm_80" && a.CUDA != "sm_90" {
			t.Errorf("%s: CUDA architecture %q: the emitted code and its runtime are written for sm_80 and sm_90", a.Name, a.CUDA)
		}
		if a.MaxSmemPerBlock > a.SmemPerSM || a.L2Bandwidth <= a.MemBandwidth || a.GPU == "" || a.Source == "" {
			t.Errorf("%s: inconsistent entry %+v", a.Name, a)
		}
	}
	as[0].SMs = 0
	if Archs()[0].SMs == 0 {
		t.Error("Archs returns the table itself")
	}
}

// Every figure of the arch table cites its source: each field of each
// Arch literal, and each figure a derived entry (h200) sets, but the
// names, GPU and source list, carries a comment naming a source key
// ("[A100-DS]") that the Source constants define; and the table is made
// of those literals and derivations alone.
func TestArchFiguresCiteSources(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "arch.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	comments := map[int]string{} // line -> comment text
	for _, cg := range f.Comments {
		comments[fset.Position(cg.Pos()).Line] = cg.Text()
	}
	keys := []string{"[A100-DS]", "[A100-WP]", "[H100-DS]", "[H100-WP]", "[H200-DS]", "[KINDS]", "[CUDA-CG]", "[LAUNCH]", "[PTX]", "[L2]", "[RUN]"}
	for _, k := range keys {
		if !strings.Contains(srcA100DS+srcA100WP+srcH100DS+srcH100WP+srcH200DS+srcKinds+srcCUDA+srcLaunch+srcPTX+srcL2+srcRun, k) {
			t.Errorf("source key %s is not defined", k)
		}
	}
	cites := func(pos token.Pos, name string) {
		if name == "Name" || name == "CUDA" || name == "GPU" || name == "Source" {
			return
		}
		line := fset.Position(pos).Line
		if c := comments[line]; !slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(c, k) }) {
			t.Errorf("line %d: %s has no source comment", line, name)
		}
	}
	checked := map[string]bool{} // the Arch literals and derivations whose figures are checked
	var table []ast.Expr
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok || len(vs.Values) != 1 {
					continue
				}
				if vs.Names[0].Name == "archs" {
					table = vs.Values[0].(*ast.CompositeLit).Elts
					continue
				}
				lit, ok := vs.Values[0].(*ast.CompositeLit)
				if !ok || !isIdent(lit.Type, "Arch") {
					continue
				}
				checked[vs.Names[0].Name] = true
				for _, field := range lit.Elts {
					kv := field.(*ast.KeyValueExpr)
					cites(kv.Pos(), kv.Key.(*ast.Ident).Name)
				}
			}
		case *ast.FuncDecl:
			if d.Recv != nil || d.Type.Results == nil || len(d.Type.Results.List) != 1 || !isIdent(d.Type.Results.List[0].Type, "Arch") {
				continue
			}
			checked[d.Name.Name] = true
			ast.Inspect(d.Body, func(n ast.Node) bool {
				if as, ok := n.(*ast.AssignStmt); ok {
					for _, lhs := range as.Lhs {
						if sel, ok := lhs.(*ast.SelectorExpr); ok {
							cites(as.Pos(), sel.Sel.Name)
						}
					}
				}
				return true
			})
		}
	}
	if len(table) != len(archs) {
		t.Fatalf("the archs literal has %d entries, the table %d", len(table), len(archs))
	}
	for _, e := range table {
		name := ""
		switch e := e.(type) {
		case *ast.Ident:
			name = e.Name
		case *ast.CallExpr:
			name = e.Fun.(*ast.Ident).Name
		}
		if !checked[name] {
			t.Errorf("entry %s of archs is neither an Arch literal nor a derivation whose figures are checked", name)
		}
	}
}

// isIdent reports whether e is the identifier name.
func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// TestComputeCapability reads sm_NN names, and no other form.
func TestComputeCapability(t *testing.T) {
	for _, tc := range []struct {
		cuda string
		cc   int
		ok   bool
	}{{"sm_80", 80, true}, {"sm_90", 90, true}, {"sm_90a", 0, false}, {"compute_90", 0, false}} {
		if cc, ok := (Arch{CUDA: tc.cuda}).ComputeCapability(); cc != tc.cc || ok != tc.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tc.cuda, cc, ok, tc.cc, tc.ok)
		}
	}
}
