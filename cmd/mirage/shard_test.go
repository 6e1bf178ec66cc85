package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shardRun runs superopt --shard i/n for program into dir, in-process.
func shardRun(t *testing.T, program, dir, shard string, extra ...string) {
	t.Helper()
	args := append([]string{"superopt", program, "--no-cache", "--time-limit", "120s", "--shard", shard, "--shard-dir", dir}, extra...)
	if code, _, stderr := mirage(t, args...); code != 0 {
		t.Fatalf("superopt --shard %s: exit %d: %s", shard, code, stderr)
	}
}

// graphsOf returns the graphs of a .ugraph.json document, without the
// statistics (which count what each process did).
func graphsOf(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Meta   json.RawMessage   `json:"meta"`
		Graphs []json.RawMessage `json:"graphs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(doc)
	return string(out)
}

// TestMergeIsOneProcess runs gated_mlp as two shards, the first as two
// concurrent processes would (one by --shard auto in a Slurm array's
// environment), merges them, and compares the answer with one process's:
// the same graphs in the same order, and the same CUDA bytes.
func TestMergeIsOneProcess(t *testing.T) {
	program := examplePath("gated_mlp.py")
	dir := t.TempDir()
	one, shards, merged := filepath.Join(dir, "one"), filepath.Join(dir, "shards"), filepath.Join(dir, "merged")
	if code, _, stderr := mirage(t, "superopt", program, "--no-cache", "--time-limit", "120s", "-o", one); code != 0 {
		t.Fatalf("superopt: exit %d: %s", code, stderr)
	}
	shardRun(t, program, shards, "0/2")
	t.Setenv("SLURM_ARRAY_TASK_ID", "8")
	t.Setenv("SLURM_ARRAY_TASK_MIN", "7")
	t.Setenv("SLURM_ARRAY_TASK_MAX", "8")
	shardRun(t, program, shards, "auto") // 1 of 2
	code, stdout, stderr := mirage(t, "merge", shards, "-o", merged, "--json")
	if code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	var out struct {
		Shards     int   `json:"shards"`
		Incomplete []int `json:"incomplete"`
		Parts      []struct {
			Fused bool `json:"fused"`
		} `json:"parts"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("merge --json: %v\n%s", err, stdout)
	}
	if out.Shards != 2 || out.Incomplete == nil || len(out.Incomplete) != 0 || len(out.Parts) != 1 || !out.Parts[0].Fused {
		t.Errorf("merge --json: %s", stdout)
	}
	if g, w := graphsOf(t, filepath.Join(merged, "gated_mlp.ugraph.json")), graphsOf(t, filepath.Join(one, "gated_mlp.ugraph.json")); g != w {
		t.Errorf("merged graphs differ from one process's")
	}
	for _, f := range []string{"gated_mlp.cu", "gated_mlp.h"} {
		a, err := os.ReadFile(filepath.Join(one, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(merged, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the merged run's differs from one process's", f)
		}
	}
}

// TestShardBadInput feeds superopt --shard and merge what they must
// refuse: exit 2, a message that names the problem, nothing written.
func TestShardBadInput(t *testing.T) {
	program := examplePath("gated_mlp.py")
	for _, env := range []string{"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"} {
		t.Setenv(env, "") // outside any scheduler
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--shard", "2/2", "--shard-dir", "D"}, "index must be in 0..1"},
		{[]string{"--shard", "0/0", "--shard-dir", "D"}, "at least 1"},
		{[]string{"--shard", "-1/3", "--shard-dir", "D"}, "index must be in 0..2"},
		{[]string{"--shard", "one/2", "--shard-dir", "D"}, "not a number"},
		{[]string{"--shard", "1", "--shard-dir", "D"}, "want I/N"},
		{[]string{"--shard", "1/2"}, "needs --shard-dir"},
		{[]string{"--shard-dir", "D"}, "give --shard"},
		{[]string{"--shard", "auto", "--shard-dir", "D"}, "not in a Slurm job array"},
		{[]string{"--shards", "4"}, "--shards goes with --shard auto"},
		{[]string{"--shard", "0/2", "--shards", "2", "--shard-dir", "D"}, "--shards goes with --shard auto"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"superopt", program, "-o", filepath.Join(dir, "out")}
			for _, a := range tt.args {
				if a == "D" {
					a = filepath.Join(dir, "shards")
				}
				args = append(args, a)
			}
			code, _, stderr := mirage(t, args...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, %q; want 2 and %q", code, stderr, tt.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("wrote %v", entries)
			}
		})
	}
	t.Run("Kubernetes without --shards", func(t *testing.T) {
		t.Setenv("JOB_COMPLETION_INDEX", "1")
		code, _, stderr := mirage(t, "superopt", program, "--shard", "auto", "--shard-dir", t.TempDir())
		if code != 2 || !strings.Contains(stderr, "needs --shards N") {
			t.Errorf("exit %d, %q", code, stderr)
		}
	})
}

// TestMergeRefusesBadSets merges shard sets that are not one run's whole
// set.
func TestMergeRefusesBadSets(t *testing.T) {
	program := examplePath("gated_mlp.py")
	good := t.TempDir()
	shardRun(t, program, good, "0/2")
	shardRun(t, program, good, "1/2")
	other := t.TempDir() // the same name, another shape
	variant := writeVariant(t, "gated_mlp.py", "dims=(8, 4096)", "dims=(16, 4096)")
	shardRun(t, variant, other, "1/2")
	three := t.TempDir()
	shardRun(t, program, three, "2/3")
	seeded := t.TempDir() // the same program, another seed
	shardRun(t, program, seeded, "1/2", "--seed", "7")
	mlpConfig := t.TempDir() // the same program, another configuration
	shardRun(t, program, mlpConfig, "1/2", "--config", "default")
	otherVersion := t.TempDir() // written by another build of mirage
	v := version
	version = "0.0.1-other"
	shardRun(t, program, otherVersion, "1/2")
	version = v
	shard0, shard1 := "gated_mlp.shard-0-of-2.json", "gated_mlp.shard-1-of-2.json"

	for _, tt := range []struct {
		name  string
		files map[string]string // name in the set -> file it copies
		edit  func([]byte) []byte
		want  string
	}{
		{"missing index", map[string]string{shard0: filepath.Join(good, shard0)}, nil, "shard(s) 1 of 2 (0..1) missing"},
		{"another program", map[string]string{shard0: filepath.Join(good, shard0), shard1: filepath.Join(other, shard1)}, nil, "program hash"},
		{"another seed", map[string]string{shard0: filepath.Join(good, shard0), shard1: filepath.Join(seeded, shard1)}, nil, "seed 1 vs 7"},
		{"another configuration", map[string]string{shard0: filepath.Join(good, shard0), shard1: filepath.Join(mlpConfig, shard1)}, nil, "configuration hash"},
		{"another N", map[string]string{shard0: filepath.Join(good, shard0), shard1: filepath.Join(good, shard1),
			"gated_mlp.shard-2-of-3.json": filepath.Join(three, "gated_mlp.shard-2-of-3.json")}, nil, "shard count"},
		{"renamed", map[string]string{shard0: filepath.Join(good, shard0), shard1: filepath.Join(good, shard0)}, nil, "renamed"},
		{"two programs", map[string]string{shard0: filepath.Join(good, shard0), "other.shard-0-of-1.json": filepath.Join(good, shard0)}, nil, "more than one program"},
		{"truncated", map[string]string{shard0: filepath.Join(good, shard0), shard1: filepath.Join(good, shard1)},
			func(b []byte) []byte { return b[:len(b)/2] }, "corrupted or truncated"},
		{"edited", map[string]string{shard0: filepath.Join(good, shard0), shard1: filepath.Join(good, shard1)},
			func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"estimated_us":`), []byte(`"estimated_us":1`), 1)
			}, "does not match its header's sum"},
		{"another version", map[string]string{shard0: filepath.Join(good, shard0), shard1: filepath.Join(otherVersion, shard1)}, nil, "written by mirage 0.0.1-other"},
		{"edited header", map[string]string{shard0: filepath.Join(good, shard0), shard1: filepath.Join(good, shard1)},
			func(b []byte) []byte { return bytes.Replace(b, []byte(`"seed":1`), []byte(`"seed":2`), 1) }, "does not match its header's sum"},
		{"trailing bytes", map[string]string{shard0: filepath.Join(good, shard0), shard1: filepath.Join(good, shard1)},
			func(b []byte) []byte { return append(b, []byte("{}")...) }, "more after its JSON object"},
		{"an older format", map[string]string{shard0: filepath.Join(good, shard0), shard1: filepath.Join(good, shard1)},
			func(b []byte) []byte { // format 1's stats had pruned_hash
				b = bytes.Replace(b, []byte(`"format":2`), []byte(`"format":1`), 1)
				return bytes.Replace(b, []byte(`"stats":{`), []byte(`"stats":{"pruned_hash":0,`), 1)
			}, "shard format 1, this mirage reads 2"},
		{"empty", map[string]string{}, nil, "no shard files"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			set := filepath.Join(dir, "set")
			if err := os.Mkdir(set, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, from := range tt.files {
				data, err := os.ReadFile(from)
				if err != nil {
					t.Fatal(err)
				}
				if tt.edit != nil && name == shard1 {
					edited := tt.edit(data)
					if bytes.Equal(edited, data) {
						t.Fatal("the edit changed nothing")
					}
					data = edited
				}
				if err := os.WriteFile(filepath.Join(set, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(dir, "out")
			code, _, stderr := mirage(t, "merge", set, "-o", out)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, %q; want 2 and %q", code, stderr, tt.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("merge made %s", out)
			}
		})
	}
}

// TestShardKilledMidRun stops a shard while it searches: it leaves no
// shard file (a retried task starts clean), the merge refuses the set
// (exit 2) until the slice has run again, and then merges it; and a shard
// stopped by its time limit is merged with a warning and "incomplete".
func TestShardKilledMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: searches")
	}
	dir := t.TempDir()
	shards := filepath.Join(dir, "shards")
	shardRun(t, gqa, shards, "0/2", "--workers", "1")
	c := startMirage(t, nil, "superopt", gqa, "--no-cache", "--workers", "1", "--time-limit", "5m", "--shard", "1/2", "--shard-dir", shards)
	c.waitForStderr(t, "shard 1/2")
	time.Sleep(time.Second) // searching
	// As a scheduler ends a task: SIGTERM. The shard writes nothing and
	// fails, so that the task is run again.
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := c.wait(); code != 130 || !strings.Contains(c.stderrString(), "nothing written") {
		t.Errorf("the interrupted shard: exit %d, %q; want 130", code, c.stderrString())
	}
	if m, _ := filepath.Glob(filepath.Join(shards, "gqa.shard-1-of-2.json*")); len(m) != 0 {
		t.Errorf("the interrupted shard left %v", m)
	}
	// Nor the --shard-dir it made (found by review: left empty).
	fresh := filepath.Join(dir, "new", "shards")
	c = startMirage(t, nil, "superopt", gqa, "--no-cache", "--workers", "1", "--time-limit", "5m", "--shard", "1/2", "--shard-dir", fresh)
	c.waitForStderr(t, "shard 1/2")
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := c.wait(); code != 130 {
		t.Errorf("the interrupted shard: exit %d, want 130", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the --shard-dir made by an interrupted shard: %v; want none", err)
	}
	out := filepath.Join(dir, "out")
	if code, _, stderr := mirage(t, "merge", shards, "-o", out); code != 2 || !strings.Contains(stderr, "shard(s) 1 of 2 (0..1) missing") {
		t.Errorf("merge without shard 1: exit %d, %q", code, stderr)
	}
	// Run again, under a time limit far too short for the whole slice
	// (5.6 s with one worker here; 5 s and then 2 s were too near it for a
	// faster machine): a shard stopped early still writes its file.
	shardRun(t, gqa, shards, "1/2", "--workers", "1", "--time-limit", "300ms")
	code, stdout, stderr := mirage(t, "merge", shards, "-o", out, "--json")
	if code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	var res struct {
		Incomplete []int `json:"incomplete"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Incomplete, []int{1}) || !strings.Contains(stderr, "warning: shard 1 of 2 stopped early (time limit)") {
		t.Errorf("incomplete %v, stderr %q: want shard 1 reported", res.Incomplete, stderr)
	}
	if !checkSet(t, out, "gqa") {
		t.Error("no output set")
	}
}

// TestShardsShareACache runs two shards at once on one cache directory, as
// shards on several machines share one on NFS: the entries are whole, a
// torn one is ignored and written again, a slice run again is served from
// the cache, and the merge is unchanged.
func TestShardsShareACache(t *testing.T) {
	program := examplePath("gated_mlp.py")
	dir := t.TempDir()
	cache, shards := filepath.Join(dir, "cache"), filepath.Join(dir, "shards")
	args := func(i int) []string {
		return []string{"superopt", program, "--cache", cache, "--time-limit", "120s", "--shard", fmt.Sprintf("%d/2", i), "--shard-dir", shards}
	}
	a, b := startMirage(t, nil, args(0)...), startMirage(t, nil, args(1)...)
	if ca, cb := a.wait(), b.wait(); ca != 0 || cb != 0 {
		t.Fatalf("shards at once: exit %d, %d\n%s\n%s", ca, cb, a.stderrString(), b.stderrString())
	}
	checkCache(t, cache)
	entries, _ := filepath.Glob(filepath.Join(cache, "*.ugraph.json"))
	if len(entries) != 2 {
		t.Fatalf("%d cache entries, want one per slice: %v", len(entries), entries)
	}
	merged := func() string {
		out := filepath.Join(dir, "out")
		if code, _, stderr := mirage(t, "merge", shards, "-o", out); code != 0 {
			t.Fatalf("merge: exit %d: %s", code, stderr)
		}
		data, err := os.ReadFile(filepath.Join(out, "gated_mlp.cu"))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	want := merged()
	// Tear both entries: the slices run again ignore them, search, and
	// write them whole.
	for _, e := range entries {
		data, _ := os.ReadFile(e)
		os.WriteFile(e, data[:len(data)/3], 0o644)
	}
	for i := range 2 {
		code, _, stderr := mirage(t, args(i)...)
		if code != 0 || !strings.Contains(stderr, "warning: ignoring the cache") {
			t.Errorf("shard %d over a torn entry: exit %d, %q", i, code, stderr)
		}
	}
	checkCache(t, cache)
	code, _, stderr := mirage(t, args(1)...)
	if code != 0 || !strings.Contains(stderr, "using cached result") {
		t.Errorf("shard 1 run again: exit %d, %q; want a cache hit", code, stderr)
	}
	if got := merged(); got != want {
		t.Error("the merge after the cache's use differs")
	}
}

// A shard whose --time-limit passes before it has listed its parts'
// subtrees is a shard stopped by its time limit: the README says such a
// shard "writes what it searched, and the merge says so" (exit 0, as an
// unsharded superopt at the same limit exits 0 with the unfused program).
// (Found by review: it exited 2, "unusable input", with "context deadline
// exceeded".)
func TestShardTimeLimitWhileListingSubtrees(t *testing.T) {
	shards := filepath.Join(t.TempDir(), "shards")
	code, _, stderr := mirage(t, "superopt", gqa, "--no-cache", "--shard", "0/2", "--shard-dir", shards, "--time-limit", "50ms")
	if code != exitOK {
		t.Errorf("shard 0/2 at --time-limit 50ms: exit %d, %q; want 0 and a shard file stopped by its time limit", code, stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(shards, "gqa.shard-0-of-2.json")); len(m) != 1 {
		t.Errorf("no shard file written")
	}
}

// A shard interrupted by SIGTERM "writes nothing and exits 130, so that
// its task is run again" (README). One interrupted while it lists its
// parts' subtrees (the first second or so of a decoder layer's shard)
// does the same (found by review: it exited 2, "listing the subtrees ...:
// context canceled").
func TestShardSIGTERMWhileListingSubtrees(t *testing.T) {
	layer := filepath.Join("..", "..", "bench", "workloads", "llama_layer.py")
	shards := filepath.Join(t.TempDir(), "shards")
	c := startMirage(t, nil, "superopt", layer, "--no-cache", "--time-limit", "5m", "--shard", "0/4", "--shard-dir", shards)
	c.waitForStderr(t, "shard 0/4")
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := c.wait(); code != 130 {
		t.Errorf("shard interrupted while listing its subtrees: exit %d, %q; want 130", code, c.stderrString())
	}
}

// The merge verifies within the shards' --max-memory, as one process with
// their flags does, unless its own --max-memory says otherwise. Found by
// review: the bound was not in the shard files and merge had no flag, so
// a program whose checks need more than the default bound, sharded with
// --max-memory 16GiB, was left unfused by its merge. Here the other way
// round: one process under 16 KiB cannot verify, and its answer is the
// program as written.
func TestMergeKeepsTheShardsMaxMemory(t *testing.T) {
	program := filepath.Join(t.TempDir(), "rm.py")
	src := "import mirage as mi\ngraph = mi.new_kernel_graph()\nX = graph.new_input(dims=(8, 64), dtype=mi.float16)\n" +
		"W = graph.new_input(dims=(64, 64), dtype=mi.float16)\ngraph.mark_output(graph.matmul(graph.rms_norm(X, normalized_shape=(64,)), W))\n"
	if err := os.WriteFile(program, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	one, shards := filepath.Join(dir, "one"), filepath.Join(dir, "shards")
	flags := []string{"--max-memory", "16KiB"}
	if code, _, stderr := mirage(t, append([]string{"superopt", program, "--no-cache", "--time-limit", "60s", "-o", one}, flags...)...); code != 0 {
		t.Fatalf("superopt: exit %d: %s", code, stderr)
	}
	shardRun(t, program, shards, "0/2", flags...)
	shardRun(t, program, shards, "1/2", flags...)
	merged := filepath.Join(dir, "merged")
	if code, _, stderr := mirage(t, "merge", shards, "-o", merged); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	want := graphsOf(t, filepath.Join(one, "rm.ugraph.json"))
	if g := graphsOf(t, filepath.Join(merged, "rm.ugraph.json")); g != want {
		t.Errorf("merged graphs differ from one process's with the same --max-memory:\nmerged: %.300s\none:    %.300s", g, want)
	}
	wider := filepath.Join(dir, "wider")
	if code, _, stderr := mirage(t, "merge", shards, "-o", wider, "--max-memory", "1GiB"); code != 0 {
		t.Fatalf("merge --max-memory 1GiB: exit %d: %s", code, stderr)
	}
	if g := graphsOf(t, filepath.Join(wider, "rm.ugraph.json")); g == want {
		t.Error("merge --max-memory 1GiB wrote what the shards' 16 KiB allows")
	}
}
