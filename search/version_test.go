package search_test

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mirage-go/mirage/search"
)

var update = flag.Bool("update", false, "record the generator's fingerprints in testdata/fingerprints.txt")

// fingerprint sums up what a search found: how many complete candidates
// and, in rank order, each verified one's canonical hash and estimate. (Not
// the state count: with two graph-defined kernels, which worker searches a
// replayed block first changes it, and it is not what the cache holds.)
func fingerprint(r *search.Result) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d complete\n", r.Stats.Complete)
	for _, c := range r.Candidates {
		fmt.Fprintf(h, "%016x %.6g\n", c.Hash, c.Estimate.Micros)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// TestCacheVersionFollowsTheGenerator keeps the result cache honest: the
// cache serves a result recorded by any earlier binary of the same
// cacheVersion, so whenever the generator (a pruning rule, the enumeration
// order, the ranking) changes what a search finds, cacheVersion must change
// too. The fingerprints of two whole searches, recorded with the version,
// catch a change that forgot the bump.
func TestCacheVersionFollowsTheGenerator(t *testing.T) {
	path := filepath.Join("testdata", "fingerprints.txt")
	var lines []string
	for _, ex := range []string{"rmsnorm_matmul.py", "../bench/workloads/ntrans.py"} {
		_, res := searchedExample(t, ex)
		lines = append(lines, fmt.Sprintf("%d %s %s", search.CacheVersion, ex, fingerprint(res)))
	}
	got := strings.Join(lines, "\n") + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got == string(want) {
		return
	}
	if strings.HasPrefix(string(want), fmt.Sprint(search.CacheVersion)+" ") {
		t.Fatalf("the generator finds something else than %s records for cache version %d: "+
			"bump cacheVersion (search/cache.go), then record with go test ./search -run CacheVersion -update\ngot:\n%swant:\n%s",
			path, search.CacheVersion, got, want)
	}
	t.Fatalf("cache version %d has no fingerprints recorded: go test ./search -run CacheVersion -update\ngot:\n%swant:\n%s", search.CacheVersion, got, want)
}
