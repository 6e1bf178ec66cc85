package driver

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/block"
)

// The reports of a run: the values superopt, merge and superopt --dynamic
// print as JSON (a script's form; their field names are a contract) and
// the tables they print otherwise.

// Emitted says which candidate superopt wrote CUDA for.
type Emitted struct {
	Candidate int      `json:"candidate"`
	Files     []string `json:"files"`
}

// CandidateSummary is one whole-program candidate in superopt --json.
type CandidateSummary struct {
	Kernels       int     `json:"kernels"`
	Customized    int     `json:"customized"`
	Grids         [][]int `json:"grids"`
	ForloopRanges []int   `json:"forloop_ranges"`
	DeviceBytes   int64   `json:"device_bytes"`
	Flops         int64   `json:"flops"`
	EstimatedUs   float64 `json:"estimated_us"`
	Speedup       float64 `json:"speedup"`
	Unfused       bool    `json:"unfused"`
	Hash          string  `json:"hash"`               // cost.GraphHash: what profiles key it by
	Measured      bool    `json:"measured,omitempty"` // estimated_us is a profile's measured time
	Seed          string  `json:"seed,omitempty"`     // the seed rules that built its parts
	// ByParts: its own check did not finish in the budget; its parts are
	// verified and it is wired as they were.
	ByParts bool `json:"verified_by_parts,omitempty"`
}

// PartSummary is one part in superopt --json.
type PartSummary struct {
	Ops         []string     `json:"ops"`
	OpIndices   []int        `json:"op_indices"`
	Inputs      int          `json:"inputs"`
	Outputs     int          `json:"outputs"`
	Config      string       `json:"config"`
	Fused       bool         `json:"fused"`
	WhyNot      string       `json:"why_not,omitempty"`
	EstimatedUs float64      `json:"estimated_us"`
	UnfusedUs   float64      `json:"unfused_us"`
	Cached      bool         `json:"cached"`
	SameAs      *int         `json:"same_as,omitempty"`
	Stats       search.Stats `json:"stats"`
	// Seed is the rule that built the part's answer; Seeds what became of
	// each rule's seeds; FirstFusedAt when, since the run began, the part
	// had its first fused answer (-1: none).
	Seed         string             `json:"seed,omitempty"`
	Seeds        []search.SeedTrial `json:"seeds"`
	FirstFusedAt float64            `json:"first_fused_at_seconds"`
	// Note is advice on writing the part so that it runs faster.
	Note string `json:"note,omitempty"`
}

// MergeSummary is what merge --json adds to superopt's object.
type MergeSummary struct {
	Shards     int   `json:"shards"`
	Incomplete []int `json:"incomplete"` // shards stopped early, by index
}

// AnswerReport is superopt's (and merge's) --json object.
type AnswerReport struct {
	Stats         search.Stats       `json:"stats"`
	BaselineUs    float64            `json:"baseline_us"`
	Candidates    []CandidateSummary `json:"candidates"` // whole-program answers, best first
	Parts         []PartSummary      `json:"parts"`
	Stopped       string             `json:"stopped,omitempty"`
	Output        string             `json:"output"` // the μGraph document's path
	Emitted       *Emitted           `json:"emitted,omitempty"`
	*MergeSummary                    // merge's
}

// Report is res's AnswerReport, written to out (the document's path) with
// emitted's CUDA; merged adds merge's fields.
func (res *Result) Report(out string, emitted *Emitted, merged *MergeSummary) AnswerReport {
	cands := make([]CandidateSummary, len(res.Candidates))
	for i, c := range res.Candidates {
		cands[i] = summarize(c, res.Baseline)
	}
	return AnswerReport{res.Stats, res.Baseline.Micros, cands, partSummaries(res), res.Stopped, out, emitted, merged}
}

// summarize is a whole-program candidate as --json prints it.
func summarize(c *Candidate, baseline cost.Estimate) CandidateSummary {
	cj := CandidateSummary{
		Kernels: c.Kernels, Customized: c.Customized, Grids: [][]int{}, ForloopRanges: []int{},
		DeviceBytes: c.Estimate.Bytes, Flops: c.Estimate.Flops, EstimatedUs: c.Estimate.Micros,
		Speedup: cost.Speedup(baseline.Micros, c.Estimate.Micros), Unfused: c.Unfused,
		Hash: cost.GraphHash(c.Graph), Measured: c.Measured, Seed: c.Seed, ByParts: c.ByParts,
	}
	for _, g := range c.Grids {
		cj.Grids = append(cj.Grids, g[:])
	}
	cj.ForloopRanges = append(cj.ForloopRanges, c.ForloopRanges...)
	return cj
}

// partSummaries are a result's parts as --json prints them.
func partSummaries(res *Result) []PartSummary {
	parts := make([]PartSummary, len(res.Parts))
	for i, p := range res.Parts {
		parts[i] = PartSummary{Ops: p.Kinds, OpIndices: p.Ops, Inputs: p.Inputs, Outputs: p.Outputs, Config: p.Config,
			Fused: p.Fused, WhyNot: p.WhyNot, EstimatedUs: p.EstimatedUs, UnfusedUs: p.UnfusedUs, Cached: p.Cached, Stats: p.Stats,
			Seed: p.Seed, Seeds: p.Seeds, FirstFusedAt: p.FirstFusedAt, Note: p.Note}
		if parts[i].Seeds == nil {
			parts[i].Seeds = []search.SeedTrial{}
		}
		if p.SameAs >= 0 {
			parts[i].SameAs = &p.SameAs
		}
	}
	return parts
}

// maxReasonCell bounds the table's reason a part is not fused, in
// characters: a memory error's is 230, and the table's columns are as
// wide as their widest cell. The part's line in the log above the table,
// and --json, say it whole.
const maxReasonCell = 100

// shortened is s, cut to at most n characters with an ellipsis.
func shortened(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimRight(string(r[:n-1]), " ,;:") + "…"
}

// WriteTable prints res as superopt does without --json: its parts, then
// its candidates.
func WriteTable(w io.Writer, res *Result, opts Options, out string, emitted *Emitted) {
	s := res.Stats
	fused, cached := 0, 0
	for _, p := range res.Parts {
		if p.Fused {
			fused++
		}
		if p.Cached {
			cached++
		}
	}
	fmt.Fprintf(w, "%d part(s), %d fused", len(res.Parts), fused)
	if cached > 0 {
		// The states count the searches the cache kept too; the time is
		// this run's, which checked their answers again (found by a
		// user's sweep: an all-cached run read as a search).
		fmt.Fprintf(w, ", %d from the cache", cached)
	}
	fmt.Fprintf(w, "; searched %d states in %.1fs", s.States, s.Seconds)
	switch {
	case res.byPart && res.Stopped == "time limit":
		fmt.Fprint(w, " (a part's search stopped at its share of the time limit)")
	case res.byPart:
		fmt.Fprintf(w, " (a part's search stopped: %s)", res.Stopped)
	case res.Stopped != "":
		fmt.Fprintf(w, " (stopped: %s)", res.Stopped)
	}
	if s.FirstFused >= 0 {
		fmt.Fprintf(w, "; every part had a fused candidate at %.1fs", s.FirstFused)
		if n := len(res.Parts) - fused; n > 0 {
			// A part whose verified fused candidates were all slower than
			// its ops is not fused (found by a user's sweep: "every part
			// had a fused candidate" beside "0 fused").
			fmt.Fprintf(w, ", %d not kept (the table says why)", n)
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "part\tops\tconfig\tfused\test. µs\tunfused µs\tfirst fused\tsearch")
	for i, p := range res.Parts {
		search := fmt.Sprintf("%d states, %.1fs", p.Stats.States, p.Stats.Seconds) + searchStopped(p.Stats.Stopped)
		switch {
		case p.SameAs >= 0:
			search = fmt.Sprintf("as part %d", p.SameAs)
		case p.Cached:
			search = "cached"
		}
		status := "yes"
		switch {
		case !p.Fused:
			status = "no: " + shortened(p.WhyNot, maxReasonCell)
		case p.Seed != "":
			status = "yes (seed: " + p.Seed + ")"
		}
		first := "-"
		if p.FirstFusedAt >= 0 {
			first = fmt.Sprintf("%.1fs", p.FirstFusedAt)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.1f\t%.1f\t%s\t%s\n", i, strings.Join(p.Kinds, ", "), orDash(p.Config), status, p.EstimatedUs, p.UnfusedUs, first, search)
	}
	tw.Flush()
	for i, p := range res.Parts {
		if p.Note != "" && p.SameAs < 0 {
			fmt.Fprintf(w, "note: part %d: %s\n", i, p.Note)
		}
	}
	fmt.Fprintf(w, "unfused program: %.1f µs estimated on %v\n", res.Baseline.Micros, opts.Arch)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "rank\tkernels\tcustomized\tgrids\tforloop\tdevice MB\tGFLOP\test. µs\tspeedup")
	for i, c := range res.Candidates {
		e := c.Estimate
		note := ""
		switch {
		case c.Unfused:
			note = "  (the program as written)"
		case c.ByParts && res.Stopped == "interrupted":
			note = "  (verified part by part: the run was interrupted before the whole program's check ended)"
		case c.ByParts:
			note = "  (verified part by part: the whole program's check did not fit the time limit)"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%s\t%.1f\t%.2f\t%.1f\t%.2fx%s\n", i, c.Kernels, c.Customized,
			gridsText(c.Grids), rangesText(c.ForloopRanges),
			float64(e.Bytes)/1e6, float64(e.Flops)/1e9, e.Micros, cost.Speedup(res.Baseline.Micros, e.Micros), note)
	}
	tw.Flush()
	fmt.Fprintf(w, "wrote %s\n", out)
	if emitted != nil {
		fmt.Fprintf(w, "CUDA for candidate %d: %s\n", emitted.Candidate, strings.Join(emitted.Files, ", "))
	}
}

// searchStopped says, after a part's search figures, why its enumeration
// stopped early, if it did. A search's share of the time limit is fixed
// when it starts, so a run can end well inside --time-limit with a part's
// search cut short; its row says so.
func searchStopped(why string) string {
	switch why {
	case "":
		return ""
	case "time limit":
		return " (stopped at its share of the time limit)"
	case "state budget":
		return " (stopped at --max-states)"
	}
	return " (stopped: " + why + ")"
}

// gridsText prints the grids of a candidate's graph-defined kernels as
// "96x1x1 8x8x1", or "-" when it has none.
func gridsText(grids []block.Dim3) string {
	return listText(grids, func(g block.Dim3) string { return fmt.Sprintf("%dx%dx%d", g[0], g[1], g[2]) })
}

// rangesText prints their for-loop ranges as "64 16", or "-".
func rangesText(ranges []int) string {
	return listText(ranges, func(r int) string { return fmt.Sprint(r) })
}

// listText prints a figure per graph-defined kernel. A stack of layers has
// a kernel or more per layer: past maxListText, the rest are counted
// (--json lists them all).
func listText[T any](xs []T, text func(T) string) string {
	var out []string
	for i, x := range xs {
		if i == maxListText && len(xs) > maxListText+1 {
			out = append(out, fmt.Sprintf("(+%d more)", len(xs)-i))
			break
		}
		out = append(out, text(x))
	}
	return orDash(strings.Join(out, " "))
}

// maxListText is how many figures of a kind a candidate's row prints.
const maxListText = 6

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// rankOf is the candidate of bucket i that the entry point runs.
func rankOf(w *DynamicWritten, i int) int {
	if w.Ranks == nil {
		return 0
	}
	return w.Ranks[i]
}

// BucketSummary is one bucket in superopt --dynamic --json.
type BucketSummary struct {
	Size        int              `json:"size"`
	Lo          int              `json:"lo"`
	Hi          int              `json:"hi"`
	EstimatedUs float64          `json:"estimated_us"`       // at m = size
	EstimatedLo float64          `json:"estimated_us_at_lo"` // at m = lo: rows past m move nothing
	UnfusedUs   float64          `json:"unfused_us"`
	Chosen      CandidateSummary `json:"chosen"`      // the μGraph the entry point runs for it
	ChosenRows  int              `json:"chosen_rows"` // the m that μGraph is written for: size, or a larger bucket's it adopted
	Emitted     *int             `json:"emitted_candidate,omitempty"`
	Parts       []PartSummary    `json:"parts"`
	Stats       search.Stats     `json:"stats"`
	Stopped     string           `json:"stopped,omitempty"`
	Unsearched  string           `json:"unsearched,omitempty"` // why the run passed over it (Bucket.Unsearched)
}

// DynamicReport is superopt --dynamic's --json object.
type DynamicReport struct {
	Stats      search.Stats       `json:"stats"`
	Candidates []CandidateSummary `json:"candidates"` // per bucket, the μGraph it runs
	Buckets    []BucketSummary    `json:"buckets"`
	Lo         int                `json:"lo"`
	Hi         int                `json:"hi"`
	Stopped    string             `json:"stopped,omitempty"`
	Output     string             `json:"output"`
	Files      []string           `json:"files,omitempty"`
}

// Report is r's DynamicReport, written as written says; atLo are the
// buckets' estimates at their smallest m (EstimatesAtLo).
func (r *DynamicResult) Report(written *DynamicWritten, atLo []float64) DynamicReport {
	res := r
	var buckets []BucketSummary
	var cands []CandidateSummary
	for i, b := range res.Buckets {
		bj := BucketSummary{Size: b.Size, Lo: b.Lo, Hi: b.Hi, EstimatedLo: atLo[i], UnfusedUs: b.Baseline.Micros, Parts: partSummaries(b.Result), Stats: b.Stats, Stopped: b.Stopped, Unsearched: b.Unsearched}
		rank := rankOf(written, i)
		if written.Ranks != nil {
			bj.Emitted = &written.Ranks[i]
		}
		c := b.Candidates[rank]
		bj.Chosen = summarize(c, b.Baseline)
		bj.ChosenRows = b.Size
		if c.Rows > 0 {
			bj.ChosenRows = c.Rows
		}
		bj.EstimatedUs = c.Estimate.Micros
		buckets = append(buckets, bj)
		cands = append(cands, bj.Chosen)
	}
	return DynamicReport{res.Stats, cands, buckets, res.Lo, res.Hi, res.Stopped, written.Graph, written.CUDA}
}

// WriteDynamicTable prints res as superopt --dynamic does without --json.
func WriteDynamicTable(w io.Writer, res *DynamicResult, written *DynamicWritten, atLo []float64) {
	fmt.Fprintf(w, "m in %d..%d: %d bucket(s); searched %d states in %.1fs", res.Lo, res.Hi, len(res.Buckets), res.Stats.States, res.Stats.Seconds)
	if res.Stopped != "" {
		fmt.Fprintf(w, " (stopped: %s)", res.Stopped)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "bucket\tm\truns\tkernels\tcustomized\tgrids\test. µs\tat m=lo\tunfused µs\tspeedup\tsearch")
	for i, b := range res.Buckets {
		c := b.Candidates[rankOf(written, i)]
		runs := "its own"
		if c.Rows > 0 {
			runs = fmt.Sprintf("bucket %d's", c.Rows)
		}
		searched := fmt.Sprintf("%d states, %.1fs", b.Stats.States, b.Stats.Seconds)
		if b.Unsearched != "" {
			searched = "not searched"
		}
		fmt.Fprintf(tw, "%d\t%d..%d\t%s\t%d\t%d\t%s\t%.1f\t%.1f\t%.1f\t%.2fx\t%s\n", b.Size, b.Lo, b.Hi, runs, c.Kernels, c.Customized,
			gridsText(c.Grids), c.Estimate.Micros, atLo[i], b.Baseline.Micros, cost.Speedup(b.Baseline.Micros, c.Estimate.Micros), searched)
	}
	tw.Flush()
	for _, b := range res.Buckets {
		if b.Unsearched != "" {
			fmt.Fprintf(w, "(bucket %d not searched: %s; a longer --time-limit searches it)\n", b.Size, b.Unsearched)
		}
	}
	if res.Program.Padded() {
		fmt.Fprintf(w, "(m is inside an outer dim: every call also copies its tensors with m through the workspace, a launch each way, in \"at m=lo\" but not in \"est. µs\", \"unfused µs\" or the speedup)\n")
	}
	for i, b := range res.Buckets {
		if b.Candidates[rankOf(written, i)].Rows > 0 {
			if res.Program.Padded() {
				fmt.Fprintf(w, "(a bucket runs a larger bucket's μGraph where the cost model has it faster, all of that bucket's rows included)\n")
			} else {
				fmt.Fprintf(w, "(a bucket runs a larger bucket's μGraph where the cost model has it faster on its rows: rows past m move nothing)\n")
			}
			break
		}
	}
	fmt.Fprintf(w, "wrote %s\n", written.Graph)
	if len(written.CUDA) > 0 {
		fmt.Fprintf(w, "CUDA, one entry point for m in %d..%d: %s\n", res.Lo, res.Hi, strings.Join(written.CUDA, ", "))
	}
}

// EstimatesAtLo are the estimates of the μGraph each bucket runs (as
// written chose them) at the bucket's smallest m, on arch.
func (r *DynamicResult) EstimatesAtLo(written *DynamicWritten, arch target.Arch) ([]float64, error) {
	atLo := make([]float64, len(r.Buckets))
	for i, b := range r.Buckets {
		e, err := r.EstimateAt(b.Lo, rankOf(written, i), arch)
		if err != nil {
			return nil, err
		}
		atLo[i] = e.Micros
	}
	return atLo, nil
}

// AnswerMeta is the μGraph document's meta of an answer: the settings
// that shaped it and the program's arguments.
type AnswerMeta struct {
	Config string   `json:"config,omitempty"`
	Arch   string   `json:"arch"`
	Seed   uint64   `json:"seed"`
	Args   []string `json:"args,omitempty"` // the program's, after --
}

// ShardMeta is what the shards of a run record (ShardFile's meta) for
// their merge to write the answer as one run would have.
type ShardMeta struct {
	Source string     `json:"source"` // the program's path, as given
	Answer AnswerMeta `json:"answer"`
	NoEmit bool       `json:"no_emit,omitempty"`
}

// ShardSummary is superopt --shard --json's object.
type ShardSummary struct {
	Shard      int                `json:"shard"`
	Shards     int                `json:"shards"`
	File       string             `json:"file"`
	Exhaustive bool               `json:"exhaustive"`
	Stopped    string             `json:"stopped,omitempty"`
	Stats      search.Stats       `json:"stats"`
	Parts      []ShardPartSummary `json:"parts"`
}

// ShardPartSummary is one part search of a shard.
type ShardPartSummary struct {
	Key        string       `json:"key"`
	Candidates int          `json:"candidates"`        // in the file
	Dropped    int          `json:"dropped,omitempty"` // left out for the file to fit (fitParts)
	Stats      search.Stats `json:"stats"`
}

// Summary is what f holds, as superopt --shard --json prints it once f is
// written.
func (f *ShardFile) Summary() ShardSummary {
	out := ShardSummary{Shard: f.Header.Index, Shards: f.Header.Count, File: f.Path, Exhaustive: f.Header.Exhaustive,
		Stopped: f.Header.Stopped, Stats: f.Stats, Parts: []ShardPartSummary{}}
	for _, p := range f.Parts {
		out.Parts = append(out.Parts, ShardPartSummary{Key: p.Key, Candidates: p.kept, Dropped: p.Dropped, Stats: p.Stats})
	}
	return out
}

// WriteSummary prints what f holds and where it was written.
func (f *ShardFile) WriteSummary(w io.Writer) {
	sh := Shard{f.Header.Index, f.Header.Count}
	fmt.Fprintf(w, "shard %v: %d part search(es), %d states in %.1fs", sh, len(f.Parts), f.Stats.States, f.Stats.Seconds)
	if f.Header.Stopped != "" {
		fmt.Fprintf(w, " (stopped: %s)", f.Header.Stopped)
	}
	for _, p := range f.Parts {
		if p.Dropped > 0 {
			fmt.Fprintf(w, "\npart %s: the best %d candidates kept, %d left out for the file to fit in %d MiB", p.Key, p.kept, p.Dropped, MaxShardFileSize>>20)
		}
	}
	fmt.Fprintf(w, "\nwrote %s\n", f.Path)
}

// WriteAnswer writes res as the output set out (superopt's and merge's)
// and returns the document's path and, when CUDA was written, for which
// candidate.
func (res *Result) WriteAnswer(out Output) (string, *Emitted, error) {
	w, err := res.Write(out)
	if err != nil {
		return "", nil, err
	}
	var emitted *Emitted
	if w.Candidate >= 0 {
		emitted = &Emitted{Candidate: w.Candidate, Files: w.CUDA}
	}
	return w.Graph, emitted, nil
}
