package driver

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// shardOpts are the options of the sharded runs compared with one process:
// a budget no search here comes near, so that both are exhaustive.
func shardOpts(name string) Options {
	return Options{Name: name, Arch: target.MustLookup("sm_90"), TimeLimit: 10 * time.Minute, Workers: 2, Seed: 1}
}

// shardFile runs slice sh of program and makes its file; it returns the
// slice's result too. The slice must not stop early.
func shardFile(t *testing.T, program *kernel.Graph, opts Options, sh Shard) (*ShardFile, *ShardResult) {
	t.Helper()
	res, err := RunShard(context.Background(), program, opts, sh)
	if err != nil {
		t.Fatalf("shard %v: %v", sh, err)
	}
	if res.Stopped != "" {
		t.Fatalf("shard %v stopped early: %s", sh, res.Stopped)
	}
	f, err := NewShardFile(program, opts, res, "test", map[string]string{"source": "x.py"})
	if err != nil {
		t.Fatal(err)
	}
	return f, res
}

// runShards runs the n shards of program one after the other, writes their
// files into dir, and merges them as mirage merge does.
func runShards(t *testing.T, program *kernel.Graph, opts Options, n int, dir string) (*Merged, []time.Duration) {
	t.Helper()
	var took []time.Duration
	for i := range n {
		start := time.Now()
		f, _ := shardFile(t, program, opts, Shard{i, n})
		took = append(took, time.Since(start))
		if err := f.Write(dir); err != nil {
			t.Fatal(err)
		}
	}
	files, err := ReadShardDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := MergeShards(files, "test")
	if err != nil {
		t.Fatal(err)
	}
	return m, took
}

// TestMergedShardsAreOneProcess runs programs as 1, 2 and 7 shards (one
// slice, slices of equal size, of unequal ones) and merges them: the
// answer must be the one process's, candidate for candidate, part for
// part, and the same CUDA. gqa, whose search is the longest (a third of
// the package's time), runs as 2 and 7 only: one slice is the others'.
func TestMergedShardsAreOneProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: each program is searched 10 or 11 times")
	}
	programs := []struct {
		name   string
		graph  func(t *testing.T) *kernel.Graph
		shards []int
	}{
		{"rmsnorm_matmul", example("rmsnorm_matmul.py"), []int{1, 2, 7}},
		{"gated_mlp", example("gated_mlp.py"), []int{1, 2, 7}},
		{"gqa", example("gqa.py"), []int{2, 7}},
		{"llama_mlp", func(t *testing.T) *kernel.Graph { return load(t, "llama_mlp") }, []int{1, 2, 7}},
	}
	for _, p := range programs {
		t.Run(p.name, func(t *testing.T) {
			program := p.graph(t)
			opts := shardOpts(p.name)
			one, err := Run(context.Background(), program, opts)
			if err != nil {
				t.Fatal(err)
			}
			if one.Stopped != "" {
				t.Fatalf("one process stopped early: %s", one.Stopped)
			}
			if !slices.ContainsFunc(one.Candidates, func(c *Candidate) bool { return c.Customized > 0 }) {
				t.Fatal("one process kept no fused answer: nothing to compare")
			}
			for _, n := range p.shards {
				m, _ := runShards(t, program, opts, n, filepath.Join(t.TempDir(), fmt.Sprint(n)))
				mopts := m.Options
				mopts.Workers = 2
				merged, err := Run(context.Background(), m.Program, mopts)
				if err != nil {
					t.Fatal(err)
				}
				compareAnswers(t, fmt.Sprintf("%d shards", n), one, merged)
			}
		})
	}
}

func example(file string) func(t *testing.T) *kernel.Graph {
	return func(t *testing.T) *kernel.Graph {
		p, err := frontend.LoadFile(filepath.Join("..", "examples", file), frontend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Graph
	}
}

// compareAnswers checks that got is want: the candidates' graphs in order,
// the parts' fates, and the best candidate's CUDA.
func compareAnswers(t *testing.T, what string, want, got *Result) {
	t.Helper()
	hashes := func(r *Result) []uint64 {
		var hs []uint64
		for _, c := range r.Candidates {
			hs = append(hs, c.Hash)
		}
		return hs
	}
	if w, g := hashes(want), hashes(got); !slices.Equal(w, g) {
		t.Errorf("%s: candidates %x, one process's %x", what, g, w)
	}
	if len(want.Parts) != len(got.Parts) {
		t.Fatalf("%s: %d parts, one process %d", what, len(got.Parts), len(want.Parts))
	}
	for i, w := range want.Parts {
		g := got.Parts[i]
		if !slices.Equal(w.Ops, g.Ops) || w.Fused != g.Fused || w.EstimatedUs != g.EstimatedUs {
			t.Errorf("%s: part %d: ops %v fused %v %.3f µs; one process: ops %v fused %v %.3f µs", what, i, g.Ops, g.Fused, g.EstimatedUs, w.Ops, w.Fused, w.EstimatedUs)
		}
	}
	emit := func(r *Result) []byte {
		res, err := cuda.Emit("x", r.Candidates[0].Graph, cuda.Options{Arch: target.MustLookup("sm_90"), Source: "x.py"})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var b bytes.Buffer
		for _, f := range res.Files {
			b.WriteString(f.Name)
			b.Write(f.Data)
		}
		return b.Bytes()
	}
	if !bytes.Equal(emit(want), emit(got)) {
		t.Errorf("%s: the best candidate's CUDA differs from one process's", what)
	}
}

func TestShardFromEnv(t *testing.T) {
	for _, tt := range []struct {
		env   map[string]string
		count int
		want  Shard
		err   string
	}{
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"}, want: Shard{2, 4}},
		// A sparse array (--array=0,2-3): N is max-min+1, not the count.
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3", "SLURM_ARRAY_TASK_COUNT": "3"}, want: Shard{3, 4}},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "12", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_MAX": "13"}, want: Shard{2, 4}},
		// One index run again as an array of its own, with --shards.
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "1"}, count: 3, want: Shard{1, 3}},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "3"}, count: 3, err: "index must be in 0..2"},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "1"}, err: "not a number"},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "1"}, err: "SLURM_ARRAY_TASK_MIN"},
		// Values at the ends of int64 must not wrap around into a slice.
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "9223372036854775807", "SLURM_ARRAY_TASK_MIN": "9223372036854775807", "SLURM_ARRAY_TASK_MAX": "-9223372036854775808"},
			err: "SLURM_ARRAY_TASK_MIN=9223372036854775807 is above SLURM_ARRAY_TASK_MAX=-9223372036854775808"},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "-9223372036854775808", "SLURM_ARRAY_TASK_MAX": "9223372036854775807"}, err: "more than 65536 shards"},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "-9223372036854775808", "SLURM_ARRAY_TASK_MIN": "9223372036854775806", "SLURM_ARRAY_TASK_MAX": "9223372036854775807"}, err: "is outside SLURM_ARRAY_TASK_MIN..MAX"},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "9223372036854775807", "SLURM_ARRAY_TASK_MIN": "9223372036854775806", "SLURM_ARRAY_TASK_MAX": "9223372036854775807"}, want: Shard{1, 2}},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "6", "SLURM_ARRAY_TASK_MAX": "9"}, err: "SLURM_ARRAY_TASK_ID=5 is outside"},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "-3", "SLURM_ARRAY_TASK_MIN": "-4", "SLURM_ARRAY_TASK_MAX": "-3"}, want: Shard{1, 2}},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "99999999999999999999", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "1"}, err: "not a number"},
		{env: map[string]string{"JOB_COMPLETION_INDEX": "5"}, count: 7, want: Shard{5, 7}},
		{env: map[string]string{"JOB_COMPLETION_INDEX": "7"}, count: 7, err: "index must be in 0..6"},
		{env: map[string]string{"JOB_COMPLETION_INDEX": "0"}, err: "needs --shards N"},
		{env: map[string]string{}, count: 2, err: "not in a Slurm job array"},
	} {
		got, err := ShardFromEnv(func(k string) string { return tt.env[k] }, tt.count)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%v --shards %d: %v, %v; want an error with %q", tt.env, tt.count, got, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%v --shards %d: %v, %v; want %v", tt.env, tt.count, got, err, tt.want)
		}
	}
}

// TestDeal checks the slicing: every subtree in exactly one slice, every
// part searched by some slice, and the same answer every time.
func TestDeal(t *testing.T) {
	parts := [][]search.Subtree{
		{{Memo: 1, Size: 8}, {Memo: 2, Size: 8}, {Memo: 1, Size: 8}, {Memo: 3, Size: 1}, {Memo: 4, Size: 30}},
		{}, // no subtrees: its graphs of pre-defined ops still need a search
		{{Memo: 1, Size: 1}},
	}
	for _, n := range []int{1, 2, 3, 7} {
		slices1 := deal(parts, n)
		if !reflect.DeepEqual(slices1, deal(parts, n)) {
			t.Fatalf("n=%d: two deals differ", n)
		}
		for k, p := range parts {
			seen := make([]int, len(p))
			searched := false
			for _, sl := range slices1 {
				if sl[k] != nil {
					searched = true
				}
				if !slices.IsSorted(sl[k]) {
					t.Errorf("n=%d part %d: %v not ascending", n, k, sl[k])
				}
				for _, i := range sl[k] {
					seen[i]++
				}
			}
			if !searched {
				t.Errorf("n=%d: part %d is in no slice", n, k)
			}
			for i, c := range seen {
				if c != 1 {
					t.Errorf("n=%d part %d: subtree %d in %d slices", n, k, i, c)
				}
			}
		}
		// Subtrees that share a memo stay together once a part is split.
		for _, sl := range slices1 {
			if sl[0] != nil && slices.Contains(sl[0], 0) != slices.Contains(sl[0], 2) {
				t.Errorf("n=%d: subtrees 0 and 2 of part 0 share a memo but not a slice: %v", n, sl[0])
			}
		}
	}
}

// TestMergeChecksCoverage merges shards whose slices do not cover their
// search (as shards of two builds that list subtrees differently would):
// the merge refuses them, even sealed anew.
func TestMergeChecksCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: searches")
	}
	program := example("gated_mlp.py")(t)
	opts := shardOpts("gated_mlp")
	dir := t.TempDir()
	runShards(t, program, opts, 2, dir)
	for _, tt := range []struct {
		name string
		edit func(f0, f1 *ShardFile)
		want string
	}{
		{"a subtree twice", func(f0, f1 *ShardFile) { f1.Parts[0].Subtrees = append(f1.Parts[0].Subtrees, f0.Parts[0].Subtrees[0]) }, "searched by 2 shards"},
		{"a subtree left out", func(f0, f1 *ShardFile) { f1.Parts[0].Subtrees = f1.Parts[0].Subtrees[1:] }, "searched by 0 shards"},
		{"a part left out", func(f0, f1 *ShardFile) { f0.Parts, f1.Parts = nil, nil }, "no shard searched part"},
		{"another count", func(f0, f1 *ShardFile) { f1.Parts[0].NSubtrees++ }, "subtrees"},
		// Found by review: a slice of 2⁶⁰ counters was made, and merge panicked.
		{"a huge count", func(f0, f1 *ShardFile) { f0.Parts[0].NSubtrees, f1.Parts[0].NSubtrees = 1<<60, 1<<60 }, "searched by 0 shards"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files, err := ReadShardDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(files[0], files[1])
			for _, f := range files {
				f.Header.Sum = f.sum()
			}
			if _, err := MergeShards(files, "test"); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("merge: %v; want an error with %q", err, tt.want)
			}
		})
	}
}

// FuzzShardFromEnv: whatever a scheduler's environment holds, the slice
// taken is one that exists, and in a Slurm array it is ID-MIN of
// MAX-MIN+1, computed without wrapping around.
func FuzzShardFromEnv(f *testing.F) {
	f.Add("2", "0", "3", 0)
	f.Add("9223372036854775807", "9223372036854775807", "-9223372036854775808", 0)
	f.Add("1", "1", "1", 3)
	f.Fuzz(func(t *testing.T, id, lo, hi string, count int) {
		env := map[string]string{"SLURM_ARRAY_TASK_ID": id, "SLURM_ARRAY_TASK_MIN": lo, "SLURM_ARRAY_TASK_MAX": hi}
		sh, err := ShardFromEnv(func(k string) string { return env[k] }, count)
		if err != nil {
			return
		}
		if err := sh.Check(); err != nil {
			t.Fatalf("%v --shards %d: took %v: %v", env, count, sh, err)
		}
		if count != 0 || id == "" {
			return
		}
		i, _ := new(big.Int).SetString(id, 10)
		l, _ := new(big.Int).SetString(lo, 10)
		h, _ := new(big.Int).SetString(hi, 10)
		wantIndex := new(big.Int).Sub(i, l)
		wantCount := new(big.Int).Add(new(big.Int).Sub(h, l), big.NewInt(1))
		if wantIndex.Cmp(big.NewInt(int64(sh.Index))) != 0 || wantCount.Cmp(big.NewInt(int64(sh.Count))) != 0 {
			t.Fatalf("%v: took %v, want %v/%v", env, sh, wantIndex, wantCount)
		}
	})
}

// A slice's file holds what the merge reads back: compact documents, and
// where its candidates pass MaxShardFileSize, the best of them that fit,
// said in the part's stats and the header (the merge warns). Before, the
// file was indented, documents and all, and a part's candidates passed the
// 64 MiB of a μGraph document: `superopt --max-candidates 0 --shard 0/2`
// on three small outputs wrote 263 MB, and the merge refused it.
func TestShardFileFitsWhatAMergeReads(t *testing.T) {
	program := loadSource(t, "three", `
X = g.new_input(dims=(8, 64), dtype=mi.float16)
Y = g.new_input(dims=(8, 64), dtype=mi.float16)
A = g.add(X, Y)
g.mark_output(g.mul(A, X))
g.mark_output(g.exp(A))`)
	opts := shardOpts("three")
	opts.PartResults = -1
	f, res := shardFile(t, program, opts, Shard{0, 1})
	full, err := f.size()
	if err != nil {
		t.Fatal(err)
	}
	var results []*search.Result
	total := 0
	for _, p := range res.Parts {
		results = append(results, p.Result)
		total += len(p.Result.Candidates)
	}
	if total < 100 {
		t.Fatalf("%d candidates: too few to cut", total)
	}
	limit := full * 2 / 3
	if err := f.fitParts(results, limit); err != nil {
		t.Fatal(err)
	}
	if size, _ := f.size(); size > limit {
		t.Errorf("fitted to %d bytes, past %d", size, limit)
	}
	dropped := 0
	for _, p := range f.Parts {
		dropped += p.Dropped
		if p.Dropped > 0 && p.Stats.Stopped != droppedCandidates {
			t.Errorf("part %s dropped %d, stopped %q", p.Key, p.Dropped, p.Stats.Stopped)
		}
	}
	if dropped == 0 || dropped > total/2 || f.Header.Exhaustive || f.Header.Stopped != droppedCandidates {
		t.Errorf("dropped %d of %d; header exhaustive %v, stopped %q", dropped, total, f.Header.Exhaustive, f.Header.Stopped)
	}
	f.Header.Sum = f.sum()
	dir := t.TempDir()
	if err := f.Write(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(f.Path); err != nil {
		t.Fatal(err)
	} else if size, _ := f.size(); int64(size) != fi.Size() {
		t.Errorf("size() = %d, the file written %d", size, fi.Size())
	}
	// What superopt --shard prints says what the file holds (found by
	// review: it said the slice was whole).
	sum := f.Summary()
	if sum.Exhaustive || sum.Stopped != droppedCandidates {
		t.Errorf("summary: exhaustive %v, stopped %q", sum.Exhaustive, sum.Stopped)
	}
	for i, p := range sum.Parts {
		if p.Candidates+p.Dropped != len(results[i].Candidates) || p.Dropped != f.Parts[i].Dropped {
			t.Errorf("summary of part %s: %d candidates, %d dropped, of %d", p.Key, p.Candidates, p.Dropped, len(results[i].Candidates))
		}
	}
	var text strings.Builder
	f.WriteSummary(&text)
	if !strings.Contains(text.String(), "stopped: "+droppedCandidates) || !strings.Contains(text.String(), "left out") {
		t.Errorf("summary:\n%s", &text)
	}
	files, err := ReadShardDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := MergeShards(files, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Incomplete) != 1 {
		t.Errorf("incomplete shards %v: want the one cut", m.Incomplete)
	}
	for i, p := range f.Parts { // the best-ranked ones are kept, in order
		kept := m.Options.Searched[p.Key][0].Candidates
		for j, c := range kept {
			if c.Hash != results[i].Candidates[j].Hash {
				t.Fatalf("part %s: kept candidate %d is not the search's %d", p.Key, j, j)
			}
		}
		if len(kept)+p.Dropped != len(results[i].Candidates) {
			t.Errorf("part %s: %d kept + %d dropped of %d", p.Key, len(kept), p.Dropped, len(results[i].Candidates))
		}
	}

	// A part's document may pass the 64 MiB of a μGraph file: the shard
	// file's bound is what holds.
	p := &files[0].Parts[0]
	doc, err := kernel.DecodeBytes(p.Candidates)
	if err != nil {
		t.Fatal(err)
	}
	doc.Meta = []byte(`{"pad":"` + strings.Repeat("x", kernel.MaxFileSize) + `"}`)
	if p.Candidates, err = encodeDocument(doc); err != nil {
		t.Fatal(err)
	}
	files[0].Header.Sum = files[0].sum()
	if _, err := MergeShards(files, "test"); err != nil {
		t.Errorf("a part of %d bytes: %v", len(p.Candidates), err)
	}
}
