package bench

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeResults: any file is refused with an error or read as results
// that pass the checks and survive a round trip; none panics.
func FuzzDecodeResults(f *testing.F) {
	good, err := json.Marshal(results("sm_90", 0.06, fusedRow("a"), Row{Workload: "b", Err: "boom"}))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"format": "mirage-bench-results/1"}`))
	f.Add([]byte(`{"format": null, "workloads": [{}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeResults(data)
		if err != nil {
			return
		}
		if err := r.check(); err != nil {
			t.Fatalf("accepted results fail the checks: %v", err)
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("accepted results do not encode: %v", err)
		}
		r2, err := decodeResults(again)
		if err != nil {
			t.Fatalf("re-encoded results refused: %v\n%s", err, again)
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed the results:\n%+v\n%+v", r, r2)
		}
	})
}
