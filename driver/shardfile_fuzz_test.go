package driver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mirage-go/mirage/search"
)

// seedShard returns a shard file of a small program, as bytes.
func seedShard(t testing.TB) []byte {
	g := loadSource(t, "p", `
X = g.new_input(dims=(8, 64), dtype=mi.float16)
W = g.new_input(dims=(64, 64), dtype=mi.float16)
g.mark_output(g.silu(g.matmul(X, W)))`)
	f, err := NewShardFile(g, Options{Name: "p"}, &ShardResult{Shard: Shard{0, 1},
		Parts: []ShardPart{{Key: "0123456789abcdef", Result: &search.Result{Stats: search.Stats{States: 3}}}}}, "fuzz", map[string]int{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// FuzzReadShardFile reads arbitrary bytes as a shard file and merges what
// reads: errors, never a panic.
func FuzzReadShardFile(f *testing.F) {
	f.Add(seedShard(f))
	f.Add([]byte(`{"header": {"format": 2, "count": 1}}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "p.shard-0-of-1.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sf, err := ReadShardFile(path)
		if err != nil {
			return
		}
		MergeShards([]*ShardFile{sf}, sf.Header.Version)
	})
}

// FuzzMergeShardBody mutates a shard file's body and seals it again (its
// sum and configuration hash), so that the merge's own checks of the
// program, options and candidates are what meets the mutations.
func FuzzMergeShardBody(f *testing.F) {
	f.Add(seedShard(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		var sf ShardFile
		if json.Unmarshal(data, &sf) != nil {
			return
		}
		sf.Header.Config = configHash(sf.Options, sf.Meta)
		sf.Header.Sum = sf.sum()
		if sf.Header.Count < 1 || sf.Header.Index != 0 || sf.Header.Name == "" {
			return
		}
		dir := t.TempDir()
		if err := sf.Write(dir); err != nil {
			return
		}
		files, err := ReadShardDir(dir)
		if err != nil {
			return
		}
		MergeShards(files, sf.Header.Version)
	})
}
