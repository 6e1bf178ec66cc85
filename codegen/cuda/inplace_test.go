package cuda

import (
	"slices"
	"testing"

	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/thread"
)

// TestCasesReadInPlace pins which input tiles two one-iteration emulator
// cases read in place from device memory, so that both ways of reading an
// input read once stay covered by TestEmulateCases: a kernel that copies no
// input in reads such tiles in place ("reductions"); one that copies some
// (for rms_norm, for a broadcast) copies them beside ("copied_in_once").
func TestCasesReadInPlace(t *testing.T) {
	checkCasePlans(t, "inputs read in place", map[string][]int{ // case: its inputs read in place, by position
		"reductions":           {0, 1},
		"copied_in_once":       nil,
		"rows_read_in_vectors": {0, 1},
	}, func(tg *thread.Graph) (got []int) {
		for k, op := range tg.Block.InputOps() {
			if tg.Tiles[op.Out].Storage == thread.Device {
				got = append(got, k)
			}
		}
		return got
	})
}

// TestCasesReadRowsInVectors: the row loops of the emulator cases that
// were written for them read 16-byte vectors (thread.Group.RowVector: 8
// fp16 or bf16, 4 fp32), and those whose rows are too short to give every
// lane a vector, or are no whole vectors, read elements.
func TestCasesReadRowsInVectors(t *testing.T) {
	checkCasePlans(t, "elements a row loop reads at a time", map[string][]int{ // case: the RowVector of its row-loop groups, in group order
		"rows_read_in_vectors":     {8, 8},
		"rms_norm_rows_in_vectors": {8},
		"lane_partials_in_vectors": {8, 8},
		"rows_shared_by_warps":     {8, 8, 8, 8, 8}, // rows of 1000, 2 warps a row
		"rows_256_threads":         {1},             // rows of 100
		"reductions":               {1, 4},          // the rms_norm's 128 fp16; the reduction of its 128 fp32 sums
	}, func(tg *thread.Graph) (got []int) {
		for gi := range tg.Groups {
			if gr := &tg.Groups[gi]; thread.RowLoop(tg.Block, gr) {
				got = append(got, gr.RowVector)
			}
		}
		return got
	})
}

// TestCasesPassAccumulatorsThrough checks that the emulator runs the
// groups whose one-iteration accumulator passes values through
// (thread.Group.Through) and the ones whose does not.
func TestCasesPassAccumulatorsThrough(t *testing.T) {
	checkCasePlans(t, "groups passing their accumulator through (1) or not (0)", map[string][]int{ // per group with an accumulator in its chain
		"accumulators_passed_through": {1, 1},
		"rms_norm_rows_in_vectors":    {1},
		"rows_shared_by_warps":        {1},
		"fp32_simt":                   {0}, // three iterations
	}, func(tg *thread.Graph) (got []int) {
		for _, gr := range tg.Groups {
			if gr.Accum >= 0 && gr.Accum != gr.Head {
				got = append(got, map[bool]int{false: 0, true: 1}[gr.Through])
			}
		}
		return got
	})
}

// TestCasesStoreRowVectors checks that the emulator runs rms_norms that
// store their rows a vector at a time (thread.Group.StoreVector) and ones
// that store elements.
func TestCasesStoreRowVectors(t *testing.T) {
	checkCasePlans(t, "elements an rms_norm stores at a time", map[string][]int{ // per rms_norm group
		"rms_norm_rows_stored_in_vectors":       {4},
		"rms_norm_bf16_rows_stored_in_vectors":  {8},
		"rms_norm_rows_in_vectors":              {8},
		"rms_norm_after_loop_stored_in_vectors": {4},
		"rows_shared_by_warps":                  {8}, // rows of 1000, 2 warps a row, a row sum added
		"accumulators_passed_through":           {1}, // fp32 rows of 40
	}, func(tg *thread.Graph) (got []int) {
		for _, gr := range tg.Groups {
			if tg.Block.Ops[gr.Head].Kind == ugraph.OpRMSNorm {
				got = append(got, gr.StoreVector)
			}
		}
		return got
	})
}

// checkCasePlans plans each emulator case that want names for sm_90 and
// checks what of collects from its graph-defined kernels' thread plans,
// in kernel order, against the case's entry; a name with no case fails.
func checkCasePlans(t *testing.T, what string, want map[string][]int, of func(*thread.Graph) []int) {
	t.Helper()
	for _, c := range emuCases {
		w, ok := want[c.name]
		if !ok {
			continue
		}
		delete(want, c.name)
		p, err := launch.Graph(loadSource(t, c.name, c.src...), target.MustLookup("sm_90"), launch.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []int
		for i := range p.Kernels {
			if tg := p.Kernels[i].Thread; tg != nil {
				got = append(got, of(tg)...)
			}
		}
		if !slices.Equal(got, w) {
			t.Errorf("%s: %s %v, want %v", c.name, what, got, w)
		}
	}
	for name := range want {
		t.Errorf("no emulator case %s", name)
	}
}
