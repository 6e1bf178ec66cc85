package cuda

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mirage-go/mirage/internal/boundedread"
	"github.com/mirage-go/mirage/internal/tempdir"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// SectorBytes is the unit in which global memory moves data: a warp's
// request moves every 32-byte sector one of its lanes touches.
const SectorBytes = 32

// Traffic counts a kernel launch's warp-level requests of one kind (loads
// or stores) to one device tensor.
type Traffic struct {
	Requests int64 // warp-level requests (one per access site and warp, per execution)
	Sectors  int64 // the distinct 32-byte sectors of each request, summed
	Used     int64 // the distinct bytes the lanes of each request asked for, summed
	// Distinct is the launch's distinct sectors: what DRAM would move if
	// an L2 kept every sector the launch touched. Sectors > Distinct
	// means re-reads of the same sectors, not bytes the kernel never
	// needed.
	Distinct int64
}

// Bytes is what the requests moved: their sectors' bytes.
func (t Traffic) Bytes() int64 { return SectorBytes * t.Sectors }

func (t *Traffic) add(u Traffic) {
	t.Requests += u.Requests
	t.Sectors += u.Sectors
	t.Used += u.Used
	t.Distinct += u.Distinct
}

// TensorTraffic is one launch's traffic to one device tensor.
type TensorTraffic struct {
	Tensor string // the tensor's C name, "t3"; "" for addresses in no tensor
	Role   Role
	Bytes  int64 // the tensor's size
	Load   Traffic
	Store  Traffic
}

// Requested is the bytes the launch's requests moved to and from the
// tensor: each request's sectors, with no cache between it and DRAM.
func (t TensorTraffic) Requested() int64 { return t.Load.Bytes() + t.Store.Bytes() }

// SectorsPerRequest is the sectors a warp-level request to the tensor
// moved, on average over its loads and stores (0 without any): 4 when
// each lane asks for 4 bytes of one contiguous row, 16 for 16 bytes.
func (t TensorTraffic) SectorsPerRequest() float64 {
	n := t.Load.Requests + t.Store.Requests
	if n == 0 {
		return 0
	}
	return float64(t.Load.Sectors+t.Store.Sectors) / float64(n)
}

// DistinctBytes is the bytes of the tensor's sectors the launch loaded, plus
// those it stored: its traffic if every re-read were served by L2.
func (t TensorTraffic) DistinctBytes() int64 {
	return SectorBytes * (t.Load.Distinct + t.Store.Distinct)
}

// Counters is what the CPU emulator counted of one kernel launch.
type Counters struct {
	Kernel int    // the index in Result.Kernels
	Name   string // the kernel's Name
	// Library is the vendor library that ran the kernel ("cublasLt"): the
	// emulator counts none of its accesses, and Tensors is empty.
	Library string
	// Tensors are the launch's op's inputs then outputs (each once), then
	// any other buffer it touched; the first Inputs are the op's inputs.
	Tensors []TensorTraffic
	Inputs  int
	// IdealBytes is the traffic of a kernel that reads each of its
	// inputs once and writes each of its outputs once.
	IdealBytes int64
	// Shared memory: warp-level requests, the phases they are served in
	// (a phase is up to 128 bytes: a whole warp's 4-byte accesses, a
	// half-warp's 8-byte ones, a quarter-warp's 16-byte ones, one matrix
	// of an ldmatrix), and the wavefronts those took: one per phase plus
	// one per further distinct word that a phase needs from one bank.
	SharedRequests, SharedPhases, SharedWavefronts int64
	CpAsyncBytes                                   int64 // global bytes copied to shared memory by cp.async
}

// Total sums the traffic of every tensor.
func (c *Counters) Total() (load, store Traffic) {
	for _, t := range c.Tensors {
		load.add(t.Load)
		store.add(t.Store)
	}
	return load, store
}

// MovedBytes is the bytes of every sector the launch's requests moved.
func (c *Counters) MovedBytes() int64 {
	l, s := c.Total()
	return l.Bytes() + s.Bytes()
}

// DistinctBytes is the sum of the tensors' DistinctBytes: what the launch
// would move through DRAM if L2 served every re-read.
func (c *Counters) DistinctBytes() int64 {
	l, s := c.Total()
	return SectorBytes * (l.Distinct + s.Distinct)
}

// Coalescing is the bytes used over the bytes moved: 1 when every sector
// a request moves is wholly used by its lanes.
func (c *Counters) Coalescing() float64 {
	l, s := c.Total()
	return ratio(l.Used+s.Used, l.Bytes()+s.Bytes())
}

// BankConflicts is the shared-memory wavefronts past one per phase.
func (c *Counters) BankConflicts() int64 { return c.SharedWavefronts - c.SharedPhases }

// BankConflictsPerAccess is BankConflicts per warp-level shared request
// (0 without any).
func (c *Counters) BankConflictsPerAccess() float64 {
	if c.SharedRequests == 0 {
		return 0
	}
	return float64(c.BankConflicts()) / float64(c.SharedRequests)
}

// Tensor returns the traffic to the tensor named name ("t3").
func (c *Counters) Tensor(name string) (TensorTraffic, bool) {
	for _, t := range c.Tensors {
		if t.Tensor == name {
			return t, true
		}
	}
	return TensorTraffic{}, false
}

// Weights is the traffic of the kernel's largest input (the first of the
// largest), which a fused kernel should stream once; false when the
// kernel has no inputs.
func (c *Counters) Weights() (TensorTraffic, bool) {
	best := -1
	for i, t := range c.Tensors[:c.Inputs] {
		if best < 0 || t.Bytes > c.Tensors[best].Bytes {
			best = i
		}
	}
	if best < 0 {
		return TensorTraffic{}, false
	}
	return c.Tensors[best], true
}

// What a fused kernel should do with its weights (its largest input): ask
// for each byte about once, in whole sectors. Re-reads of smaller tensors
// (which L2 serves) are reported but not judged.
const (
	MaxWeightRequests   = 1.05 // requested bytes over size
	MinWeightCoalescing = 0.90 // bytes used over bytes moved, of the loads
)

// WeightProblems says how the kernel's weight traffic falls short of
// MaxWeightRequests and MinWeightCoalescing; nil when it does not.
func (c *Counters) WeightProblems() []string {
	w, ok := c.Weights()
	if !ok || w.Bytes == 0 {
		return nil
	}
	var p []string
	if r := float64(w.Requested()) / float64(w.Bytes); r > MaxWeightRequests {
		// What is distinct of it says how much of the excess is re-reads
		// (which L2 serves when it holds them between the reads).
		p = append(p, fmt.Sprintf("requests %.2fx the size of its largest input %s (at most %.2fx): %.2fx distinct, the rest re-reads of the same sectors",
			r, w.Tensor, MaxWeightRequests, float64(w.DistinctBytes())/float64(w.Bytes)))
	}
	if co := w.LoadCoalescing(); co < MinWeightCoalescing {
		p = append(p, fmt.Sprintf("loads its largest input %s at %.1f%% coalescing (at least %.0f%%)", w.Tensor, 100*co, 100*MinWeightCoalescing))
	}
	return p
}

// LoadCoalescing is the bytes used over the bytes moved by the loads of t.
func (t TensorTraffic) LoadCoalescing() float64 { return ratio(t.Load.Used, t.Load.Bytes()) }

// ratio is a/b for bytes used over bytes moved: 1 when nothing moved.
func ratio(a, b int64) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// Measure builds res, the code Emit wrote for g, for the CPU emulator in a
// temporary directory, runs it once on random inputs (uniform in [-1, 1)
// from seed; what the kernels access does not depend on the values), and
// returns what each kernel launch moved, in res.Kernels' order. It needs
// g++ (templates.EmulatorCompiler), and takes about as long as the
// emulator takes to run the program (seconds for a few hundred MB of
// weights).
func Measure(ctx context.Context, g *kernel.Graph, res *Result, seed uint64) ([]Counters, error) {
	dir, remove, err := tempdir.Make("mirage-counters-")
	if err != nil {
		return nil, err
	}
	defer remove()
	emu, _, err := BuildEmulation(ctx, dir, g, res)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, 0x636f756e74657273))
	in, out, counts := filepath.Join(dir, "in.bin"), filepath.Join(dir, "out.bin"), filepath.Join(dir, "counters.jsonl")
	if err := emu.WriteInputs(in, func(int, int) float32 { return float32(2*r.Float64() - 1) }); err != nil {
		return nil, err
	}
	if err := emu.Run(ctx, in, out, "MIRAGE_EMU_COUNTERS="+counts); err != nil {
		return nil, err
	}
	return readCountersFile(counts, g, res)
}

// readCountersFile reads what a run of res under MIRAGE_EMU_COUNTERS=path
// counted, per kernel launch in res.Kernels' order.
func readCountersFile(path string, g *kernel.Graph, res *Result) ([]Counters, error) {
	f, err := boundedread.Open(path, maxCountersFile)
	if os.IsNotExist(err) && !slices.ContainsFunc(res.Kernels, func(k Kernel) bool { return k.Library == "" }) {
		// Nothing launched that the emulator records: no kernel at all, or
		// only a vendor library's calls.
		return readCounters(strings.NewReader(""), g, res)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCounters(f, g, res)
}

// maxCountersFile bounds the emulator's counters file, a line per launch.
const maxCountersFile = 1 << 30

// launchRecord is a line of the emulator's counters file (see
// write_counters in templates/emu/cuda_runtime.h).
type launchRecord struct {
	Launch  int `json:"launch"`
	Buffers []struct {
		Name  string   `json:"name"`
		Load  [4]int64 `json:"load"`
		Store [4]int64 `json:"store"`
	} `json:"buffers"`
	Shared       [3]int64 `json:"shared"`
	CpAsyncBytes int64    `json:"cp_async_bytes"`
}

// idealBytes is the traffic of op's kernel if it read each of its inputs
// once and wrote each of its outputs once (Counters.IdealBytes).
func idealBytes(g *kernel.Graph, op *kernel.Op) int64 {
	var n int64
	seen := map[kernel.TensorID]bool{}
	for _, id := range append(append([]kernel.TensorID(nil), op.In...), op.Out...) {
		if !seen[id] {
			seen[id] = true
			n += int64(g.Tensors[id].Bytes())
		}
	}
	return n
}

// readCounters reads the emulator's counters, a launch per line, and
// matches launch i with res.Kernels[i] (the entry point launches them in
// that order).
func readCounters(r io.Reader, g *kernel.Graph, res *Result) ([]Counters, error) {
	buffers := map[string]Buffer{}
	for _, b := range res.Buffers {
		buffers[b.Name()] = b
	}
	// The emulator records our own kernels' launches; a vendor library's
	// calls launch nothing it records.
	var launched []int
	cs := make([]Counters, len(res.Kernels))
	for i, k := range res.Kernels {
		if k.Library == "" {
			launched = append(launched, i)
			continue
		}
		cs[i] = Counters{Kernel: i, Name: k.Name, Library: k.Library, IdealBytes: idealBytes(g, &g.Ops[k.Op])}
	}
	records := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec launchRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("the emulator's counters, launch %d: %v", records, err)
		}
		if records >= len(launched) {
			return nil, fmt.Errorf("the emulated program launched more than its %d kernels", len(launched))
		}
		i := launched[records]
		records++
		k := res.Kernels[i]
		c := Counters{Kernel: i, Name: k.Name, SharedRequests: rec.Shared[0], SharedWavefronts: rec.Shared[1],
			SharedPhases: rec.Shared[2], CpAsyncBytes: rec.CpAsyncBytes}
		traffic := map[string]TensorTraffic{}
		for _, b := range rec.Buffers {
			t := TensorTraffic{Tensor: b.Name, Role: -1,
				Load:  Traffic{b.Load[0], b.Load[1], b.Load[2], b.Load[3]},
				Store: Traffic{b.Store[0], b.Store[1], b.Store[2], b.Store[3]}}
			if buf, ok := buffers[b.Name]; ok {
				t.Role, t.Bytes = buf.Role, int64(buf.Bytes)
			}
			traffic[b.Name] = t
		}
		// The op's tensors first, in order, then whatever else was touched.
		op := &g.Ops[k.Op]
		c.IdealBytes = idealBytes(g, op)
		seen := map[string]bool{}
		for which, ids := range [][]kernel.TensorID{op.In, op.Out} {
			for _, id := range ids {
				name := fmt.Sprintf("t%d", id)
				if seen[name] {
					continue
				}
				seen[name] = true
				t, ok := traffic[name]
				if !ok {
					t = TensorTraffic{Tensor: name, Bytes: int64(g.Tensors[id].Bytes())}
					if b, ok := buffers[name]; ok {
						t.Role = b.Role
					}
				}
				c.Tensors = append(c.Tensors, t)
			}
			if which == 0 {
				c.Inputs = len(c.Tensors)
			}
		}
		for _, b := range rec.Buffers {
			if t := traffic[b.Name]; !seen[b.Name] && t.Requested() > 0 {
				c.Tensors = append(c.Tensors, t)
			}
		}
		cs[i] = c
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if records != len(launched) {
		return nil, fmt.Errorf("the emulated program launched %d of its %d kernels", records, len(launched))
	}
	return cs, nil
}

// WriteCountersTable prints the counters of each kernel launch for a
// human: per tensor the bytes requested against its size, then the total
// against the ideal (each input read once, each output written once), the
// coalescing (bytes used over bytes moved), the shared-memory bank
// conflicts per request, and whether the weights pass WeightProblems.
func WriteCountersTable(w io.Writer, res *Result, cs []Counters) error {
	var b strings.Builder
	for _, c := range cs {
		k := res.Kernels[c.Kernel]
		if c.Library != "" {
			fmt.Fprintf(&b, "kernel %d: %s, %s: a call into %s, whose accesses the emulator does not count\n", c.Kernel, k.What, k.Name, c.Library)
			continue
		}
		fmt.Fprintf(&b, "kernel %d: %s, %s\n", c.Kernel, k.What, k.Name)
		fmt.Fprintf(&b, "  %-18s %10s %10s %10s %15s %14s %16s %12s\n", "tensor", "size", "loaded", "stored", "requested/size", "distinct/size", "load coalescing", "sectors/req")
		for _, t := range c.Tensors {
			name := t.Tensor
			if name == "" {
				name = "(no tensor)"
			} else if t.Role >= 0 {
				name += " " + t.Role.String()
			}
			fmt.Fprintf(&b, "  %-18s %10s %10s %10s %15s %14s %16s %12.1f\n", name, mib(t.Bytes), mib(t.Load.Bytes()), mib(t.Store.Bytes()),
				times(t.Requested(), t.Bytes), times(t.DistinctBytes(), t.Bytes), pct(t.LoadCoalescing(), t.Load.Sectors > 0), t.SectorsPerRequest())
		}
		fmt.Fprintf(&b, "  total: moved %s, ideal %s (%s), distinct %s (%s), coalescing %s\n", mib(c.MovedBytes()), mib(c.IdealBytes),
			times(c.MovedBytes(), c.IdealBytes), mib(c.DistinctBytes()), times(c.DistinctBytes(), c.IdealBytes), pct(c.Coalescing(), c.MovedBytes() > 0))
		fmt.Fprintf(&b, "  shared memory: %d requests, %d bank conflicts (%.2f per request); cp.async %s\n",
			c.SharedRequests, c.BankConflicts(), c.BankConflictsPerAccess(), mib(c.CpAsyncBytes))
		if wt, ok := c.Weights(); ok {
			verdict := "ok"
			if p := c.WeightProblems(); len(p) > 0 {
				verdict = "POOR: " + strings.Join(p, "; ")
			}
			fmt.Fprintf(&b, "  weights (largest input %s): %s\n", wt.Tensor, verdict)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mib(b int64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

func times(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}

func pct(f float64, ok bool) string {
	if !ok {
		return "-"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", 100*f), ".0") + "%"
}
