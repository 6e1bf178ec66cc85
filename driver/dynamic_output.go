package driver

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Rows says which dim of each input and output of the program is m.
func (r *DynamicResult) Rows() cuda.Rows {
	ins, outs := r.Program.DynamicDims()
	return cuda.Rows{Lo: r.Lo, Hi: r.Hi, Inputs: ins, Outputs: outs, Padded: r.Program.Padded()}
}

// DynamicMeta is the "dynamic" object of a dynamic program's μGraph
// document: which dims are m, the range, and the buckets, whose graphs
// follow one another in the document (each bucket's best first).
type DynamicMeta struct {
	Inputs  []int `json:"inputs"`  // per input, its dim that is m, or -1
	Outputs []int `json:"outputs"` // per output
	Lo      int   `json:"lo"`
	Hi      int   `json:"hi"`
	Buckets []int `json:"buckets"`
	// Padded: a tensor has m inside an outer dim (cuda.Rows.Padded).
	Padded bool `json:"padded,omitempty"`
}

// bucketMeta is the meta of one graph of a dynamic document: the figures
// a static one has, and the bucket.
type bucketMeta struct {
	Bucket      int     `json:"bucket"`
	Lo          int     `json:"lo"`
	Hi          int     `json:"hi"`
	Rank        int     `json:"rank"` // within the bucket
	Rows        int     `json:"rows"` // the m the graph is written for: the bucket's size, or a larger bucket's (adopted)
	Kernels     int     `json:"kernels"`
	Customized  int     `json:"customized"`
	EstimatedUs float64 `json:"estimated_us"`
	DeviceBytes int64   `json:"device_bytes"`
	Flops       int64   `json:"flops"`
	Unfused     bool    `json:"unfused"`
}

// File returns the buckets' candidates as one μGraph document, bucket after
// bucket, each bucket's best first; its meta holds "dynamic" (DynamicMeta)
// beside meta's fields.
func (r *DynamicResult) File(name string, meta any) (*kernel.File, error) {
	rows := r.Rows()
	dm := DynamicMeta{Inputs: rows.Inputs, Outputs: rows.Outputs, Lo: r.Lo, Hi: r.Hi, Padded: rows.Padded}
	f := &kernel.File{Name: name}
	for _, b := range r.Buckets {
		dm.Buckets = append(dm.Buckets, b.Size)
		for i, c := range b.Candidates {
			m, err := json.Marshal(bucketMeta{Bucket: b.Size, Lo: b.Lo, Hi: b.Hi, Rank: i, Rows: b.rowsOf(c), Kernels: c.Kernels, Customized: c.Customized,
				EstimatedUs: c.Estimate.Micros, DeviceBytes: c.Estimate.Bytes, Flops: c.Estimate.Flops, Unfused: c.Unfused})
			if err != nil {
				return nil, err
			}
			f.Graphs = append(f.Graphs, kernel.Entry{Graph: c.Graph, Meta: m})
		}
	}
	doc := map[string]any{}
	if meta != nil {
		raw, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("the document's meta must be an object: %v", err)
		}
	}
	doc["dynamic"] = dm
	m, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	f.Meta = m
	return f, nil
}

// EmitCUDA lowers each bucket's best candidate that lowers (the unfused
// program always does) into one entry point. It returns, per bucket, the
// rank of the candidate it took.
func (r *DynamicResult) EmitCUDA(name string, opts cuda.Options, warn func(string)) (*cuda.Result, []int, error) {
	docs := make([]DocBucket, len(r.Buckets))
	for k, b := range r.Buckets {
		docs[k] = DocBucket{Size: b.Size, Lo: b.Lo, Hi: b.Hi}
		for _, c := range b.Candidates {
			docs[k].Graphs = append(docs[k].Graphs, c.Graph)
			docs[k].Rows = append(docs[k].Rows, b.rowsOf(c))
		}
	}
	return EmitBuckets(name, r.Rows(), docs, opts, warn)
}

// EmitBuckets lowers each bucket's first graph that lowers into one entry
// point, and returns, per bucket, the rank of the graph it took: the code
// superopt --dynamic writes, and what verify --engine runs.
func EmitBuckets(name string, rows cuda.Rows, buckets []DocBucket, opts cuda.Options, warn func(string)) (*cuda.Result, []int, error) {
	var chosen []cuda.Bucket
	var ranks []int
	for _, b := range buckets {
		rank := -1
		for i, g := range b.Graphs {
			one := cuda.Bucket{Size: b.Rows[i], Lo: b.Lo, Hi: b.Hi, Graph: g}
			rr := rows
			rr.Lo, rr.Hi = b.Lo, b.Hi
			if _, err := cuda.EmitDynamic(name, rr, []cuda.Bucket{one}, opts); err != nil {
				if warn != nil {
					warn(fmt.Sprintf("bucket %d, candidate %d: no CUDA: %v", b.Size, i, err))
				}
				continue
			}
			chosen, rank = append(chosen, one), i
			break
		}
		if rank < 0 {
			return nil, nil, fmt.Errorf("bucket %d: no candidate lowers to CUDA", b.Size)
		}
		ranks = append(ranks, rank)
	}
	res, err := cuda.EmitDynamic(name, rows, chosen, opts)
	return res, ranks, err
}

// DynamicWritten says what DynamicResult.Write wrote.
type DynamicWritten struct {
	Graph string   // the .ugraph.json's path
	Ranks []int    // per bucket, the candidate whose CUDA was written; nil: none
	CUDA  []string // the CUDA files' paths
}

// Write writes the buckets' candidates as one μGraph document and, with
// out.CUDA, the one entry point, as one set (as Result.Write does).
func (r *DynamicResult) Write(out Output) (*DynamicWritten, error) {
	file, err := r.File(out.Name, out.Meta)
	if err != nil {
		return nil, err
	}
	w := &DynamicWritten{}
	var code *cuda.Result
	if out.CUDA != nil {
		if code, w.Ranks, err = r.EmitCUDA(out.Name, *out.CUDA, out.Warn); err != nil {
			return nil, err
		}
	}
	if w.Graph, w.CUDA, err = out.write(file, code); err != nil {
		return nil, err
	}
	return w, nil
}

// DocBucket is one bucket of a dynamic μGraph document: its candidates,
// best first.
type DocBucket struct {
	Size, Lo, Hi int
	Graphs       []*kernel.Graph
	Rows         []int // per graph, the m it is written for (Candidate.Rows)
	Index        []int // per graph, its place in the document (read back by ReadDynamic)
}

// ReadDynamic reads back what DynamicResult.File wrote: the rows and the
// buckets. ok is false for a document without "dynamic" in its meta.
func ReadDynamic(f *kernel.File) (rows cuda.Rows, buckets []DocBucket, ok bool, err error) {
	var doc map[string]json.RawMessage
	if len(f.Meta) == 0 || json.Unmarshal(f.Meta, &doc) != nil || doc["dynamic"] == nil {
		return cuda.Rows{}, nil, false, nil
	}
	var dm DynamicMeta
	if err := json.Unmarshal(doc["dynamic"], &dm); err != nil {
		return cuda.Rows{}, nil, true, fmt.Errorf("meta.dynamic: %v", err)
	}
	rows = cuda.Rows{Lo: dm.Lo, Hi: dm.Hi, Inputs: dm.Inputs, Outputs: dm.Outputs, Padded: dm.Padded}
	if err := CheckBuckets(dm.Buckets, dm.Lo, dm.Hi); err != nil {
		return rows, nil, true, fmt.Errorf("meta.dynamic: %v", err)
	}
	from := dm.Lo
	for _, size := range dm.Buckets {
		buckets = append(buckets, DocBucket{Size: size, Lo: from, Hi: min(size, dm.Hi)})
		from = size + 1
	}
	for i, e := range f.Graphs {
		var bm bucketMeta
		if err := json.Unmarshal(e.Meta, &bm); err != nil {
			return rows, nil, true, fmt.Errorf("graph %d: no bucket in its meta", i)
		}
		k := slices.IndexFunc(buckets, func(b DocBucket) bool { return b.Size == bm.Bucket })
		if k < 0 {
			return rows, nil, true, fmt.Errorf("graph %d: bucket %d is not among %v", i, bm.Bucket, dm.Buckets)
		}
		rows := bm.Rows
		if rows == 0 {
			rows = bm.Bucket
		}
		buckets[k].Graphs = append(buckets[k].Graphs, e.Graph)
		buckets[k].Rows = append(buckets[k].Rows, rows)
		buckets[k].Index = append(buckets[k].Index, i)
	}
	for _, b := range buckets {
		if len(b.Graphs) == 0 {
			return rows, nil, true, fmt.Errorf("bucket %d has no graph", b.Size)
		}
	}
	return rows, buckets, true, nil
}

// CheckLowers checks, before a dynamic run that writes CUDA, that every
// bucket's code can be emitted: that the program as written, which every
// bucket has as an answer, lowers at the largest bucket's size (the code
// for more rows needs larger grids, and past the GPU's grid limits there
// is none: a matmul of 128-row tiles stops at 65535 of them). Otherwise
// the search would run, at a size that may not fit in memory, for an
// answer that cannot be written. The error gives the largest m the code
// can be emitted for, and the largest HI the default buckets then allow.
func CheckLowers(name string, program *kernel.Graph, lo, hi int, buckets []int, opts cuda.Options) error {
	ins, outs := program.DynamicDims()
	lower := func(m int) error {
		g, err := program.Bind(m)
		if err != nil {
			return err
		}
		rows := cuda.Rows{Lo: m, Hi: m, Inputs: ins, Outputs: outs, Padded: program.Padded()}
		_, err = cuda.EmitDynamic(name, rows, []cuda.Bucket{{Size: m, Lo: m, Hi: m, Graph: g}}, opts)
		return err
	}
	last := buckets[len(buckets)-1]
	err := lower(last)
	if err == nil {
		return nil
	}
	if lerr := lower(lo); lerr != nil {
		return fmt.Errorf("the emitted code supports no m in %d..%d: at m = %d, %v", lo, hi, lo, lerr)
	}
	// The largest m that lowers, between lo (does) and last (does not):
	// the grids grow with m.
	good, bad, why := lo, last, err
	for bad-good > 1 {
		mid := good + (bad-good)/2
		if err := lower(mid); err != nil {
			bad, why = mid, err
		} else {
			good = mid
		}
	}
	pow := 1 << (bits.Len(uint(good)) - 1)
	return fmt.Errorf("the emitted code supports m up to %d (at m = %d, %v): give HI at most %d with the default buckets (powers of two), or --buckets ending at most at %d; --no-emit searches without it",
		good, bad, why, pow, good)
}
