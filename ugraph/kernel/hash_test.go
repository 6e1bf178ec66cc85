package kernel_test

import (
	"fmt"
	"reflect"
	"unsafe"

	"testing"

	"github.com/mitchellh/hashstructure/v2"

	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/block"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// reflective is the hash that kernel.Hash and block.Hash compute field by
// field: hashstructure's, by reflection.
func reflective(t *testing.T, v any) uint64 {
	t.Helper()
	h, err := hashstructure.Hash(v, hashstructure.FormatV2, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// rmsnormKernel builds the fused RMSNorm+MatMul graph with the given grid,
// for-loop range and rms accumulator kind.
func rmsnormKernel(grid, f int, acc ugraph.Accum) *kernel.Graph {
	g := kernel.New()
	x := must(g.AddInput(ugraph.MustShape(16, 4096), ugraph.Float16))
	w := must(g.AddInput(ugraph.MustShape(4096, 6144), ugraph.Float16))
	b := must(block.New(block.Dim3{grid, 1, 1}, block.Dim3{128, 1, 1}, f, 64))
	tx := must(b.AddInput(g.Tensors[x].Shape, ugraph.Float16, block.Replicate, 1))
	tw := must(b.AddInput(g.Tensors[w].Shape, ugraph.Float16, block.Map{1, -1, -1}, 0))
	m := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{}, must(b.Add(ugraph.OpMatmul, ugraph.Attr{}, tx, tw))))
	r := must(b.Add(ugraph.OpForloopAccum, ugraph.Attr{Accum: acc}, tx))
	if err := b.AddOutput(must(b.Add(ugraph.OpDiv, ugraph.Attr{}, m, r)), block.Map{1, -1, -1}); err != nil {
		panic(err)
	}
	o := must(g.Customized([]kernel.TensorID{x, w}, b))
	if err := g.MarkOutput(o[0]); err != nil {
		panic(err)
	}
	return g
}

func TestHash(t *testing.T) {
	base := kernel.Hash(rmsnormKernel(96, 64, ugraph.AccumRMS))
	if again := kernel.Hash(rmsnormKernel(96, 64, ugraph.AccumRMS)); again != base {
		t.Errorf("equal graphs hash differently: %x vs %x", base, again)
	}
	if c := kernel.Hash(rmsnormKernel(96, 64, ugraph.AccumRMS).Clone()); c != base {
		t.Errorf("a clone hashes differently")
	}
	for name, g := range map[string]*kernel.Graph{
		"grid":        rmsnormKernel(48, 64, ugraph.AccumRMS),
		"forloop":     rmsnormKernel(96, 16, ugraph.AccumRMS),
		"accumulator": rmsnormKernel(96, 64, ugraph.AccumMean),
	} {
		if kernel.Hash(g) == base {
			t.Errorf("changing the %s leaves the hash unchanged", name)
		}
	}
}

// HashWith takes the block graphs' hashes from its function, once per
// graph-defined kernel, and is Hash when that function is block.Hash.
func TestHashWith(t *testing.T) {
	g := rmsnormKernel(96, 64, ugraph.AccumRMS)
	calls := 0
	counted := func(b *block.Graph) uint64 { calls++; return block.Hash(b) }
	if got, want := kernel.HashWith(g, counted), kernel.Hash(g); got != want || calls != 1 {
		t.Errorf("HashWith = %x after %d block hashes, want Hash's %x after 1", got, calls, want)
	}
	if kernel.HashWith(g, func(*block.Graph) uint64 { return 0 }) == kernel.Hash(g) {
		t.Error("HashWith ignores the block graphs' hashes it is given")
	}
}

// TestHashCoversEveryField changes every number and flag a graph holds, one
// at a time, exported or not (a Shape's extents are unexported), and checks
// that the hash changes each time, and stays hashstructure's (the values
// the cache, profiles and fixtures recorded). A field that the hash skips, as
// hashstructure skips unexported fields unless their type hashes itself,
// fails here: the result cache, the search's dedup and GPU profiles are all
// keyed by this hash, so a skipped field is a wrong answer served from the
// cache.
func TestHashCoversEveryField(t *testing.T) {
	for name, g := range map[string]*kernel.Graph{
		"every_op": everyOp(),
		"rmsnorm":  rmsnormKernel(96, 64, ugraph.AccumRMS),
	} {
		base := kernel.Hash(g)
		if want := reflective(t, g); base != want {
			t.Errorf("%s: kernel.Hash = %x, hashstructure's %x", name, base, want)
		}
		n := 0
		eachLeaf(reflect.ValueOf(g).Elem(), "Graph", func(path string, v reflect.Value) {
			n++
			restore := perturb(v)
			if h := kernel.Hash(g); h == base {
				t.Errorf("%s: changing %s leaves kernel.Hash unchanged", name, path)
			} else if want := reflective(t, g); h != want {
				t.Errorf("%s: with %s changed, kernel.Hash = %x, hashstructure's %x", name, path, h, want)
			}
			restore()
		})
		if kernel.Hash(g) != base {
			t.Fatalf("%s: the walk did not restore the graph", name)
		}
		if n < 50 {
			t.Errorf("%s: only %d leaves walked; the walk misses fields", name, n)
		}
	}
	// block.Hash is the replay key of complete threadblock graphs.
	var b *block.Graph
	for _, op := range everyOp().Ops {
		if op.Block != nil {
			b = op.Block
		}
	}
	if b == nil {
		t.Fatal("every_op has no customized op")
	}
	base := block.Hash(b)
	if want := reflective(t, b); base != want {
		t.Errorf("block.Hash = %x, hashstructure's %x", base, want)
	}
	eachLeaf(reflect.ValueOf(b).Elem(), "block.Graph", func(path string, v reflect.Value) {
		restore := perturb(v)
		if h := block.Hash(b); h == base {
			t.Errorf("changing %s leaves block.Hash unchanged", path)
		} else if want := reflective(t, b); h != want {
			t.Errorf("with %s changed, block.Hash = %x, hashstructure's %x", path, h, want)
		}
		restore()
	})
	// A kernel graph without block graphs hashes its nil pointers alike.
	g := kernel.New()
	x := must(g.AddInput(ugraph.MustShape(16, 4096), ugraph.Float16))
	if err := g.MarkOutput(must(g.Add(ugraph.OpExp, ugraph.Attr{}, x))); err != nil {
		t.Fatal(err)
	}
	if h, want := kernel.Hash(g), reflective(t, g); h != want {
		t.Errorf("exp(x): kernel.Hash = %x, hashstructure's %x", h, want)
	}
}

// eachLeaf calls f on every number and bool reachable from v through
// structs (unexported fields too), arrays, slices and pointers, each once.
func eachLeaf(v reflect.Value, path string, f func(string, reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			eachLeaf(v.Elem(), path, f)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fv := v.Field(i)
			if !fv.CanSet() { // unexported: reach it through its address
				fv = reflect.NewAt(fv.Type(), unsafe.Pointer(fv.UnsafeAddr())).Elem()
			}
			eachLeaf(fv, path+"."+v.Type().Field(i).Name, f)
		}
	case reflect.Array, reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			eachLeaf(v.Index(i), fmt.Sprintf("%s[%d]", path, i), f)
		}
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		f(path, v)
	default:
		panic(fmt.Sprintf("%s: eachLeaf does not know %v; teach it, and make sure the hash covers it", path, v.Kind()))
	}
}

// perturb changes the leaf v and returns the function that restores it.
func perturb(v reflect.Value) (restore func()) {
	old := reflect.New(v.Type()).Elem()
	old.Set(v)
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	default:
		v.SetInt(v.Int() + 1)
	}
	return func() { v.Set(old) }
}

// BenchmarkHash compares kernel.Hash with hashstructure's reflective walk
// of the same graph (go test -bench Hash ./ugraph/kernel).
func BenchmarkHash(b *testing.B) {
	g := everyOp()
	b.Run("fields", func(b *testing.B) {
		for b.Loop() {
			kernel.Hash(g)
		}
	})
	b.Run("hashstructure", func(b *testing.B) {
		for b.Loop() {
			if _, err := hashstructure.Hash(g, hashstructure.FormatV2, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
