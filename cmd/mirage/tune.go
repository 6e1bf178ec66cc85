package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/tune"
)

// tuneFlags are the flags of mirage tune.
type tuneFlags struct {
	load       loadFlags
	arch       archFlag
	candidates int
	runs       int
	warmup     int
	out        string
	program    string
	asJSON     bool
	emulate    bool
}

func newTuneCmd() *cobra.Command {
	var f tuneFlags
	cmd := &cobra.Command{
		Use:   "tune FILE.ugraph.json",
		Short: "Time a μGraph file's best candidates on the GPU and write the profile superopt ranks by",
		Long: `tune measures the first --candidates graphs of a μGraph file (superopt writes
its answers best first: superopt --max-candidates K) on this machine's GPU,
and writes what it measured as a profile that superopt --profile ranks by:
the cost model picks the few candidates worth timing, the GPU picks among
them.

It emits each candidate's CUDA, builds one host program with nvcc (the CUDA
toolkit alone; no Python or PyTorch), and runs them all on the same random
inputs (rotated among copies when they fit in L2 twice over, so that each
run reads device memory): --warmup untimed runs, then --runs runs each timed
with its own pair of CUDA events, a spin kernel keeping the GPU ahead of the
host. Each candidate's outputs are checked against the first one's (max
relative error 1e-2, as bench/gpu checks fp16 results); one that differs is
reported and left out of the profile.

The profile (-o, default profile_ARCH.json beside FILE) keys each time by the
program's name (--program, default the file's) and the graph's hash, as
superopt --profile reads it. On a machine without a GPU (or nvcc) tune says
so and exits 2.`,
		Args: f.load.files(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	registerArch(cmd, &f.arch, "the code built and the cost model's estimates")
	fl := cmd.Flags()
	fl.IntVar(&f.candidates, "candidates", 4, "how many of the file's graphs to time, best first (0: all)")
	fl.IntVar(&f.runs, "runs", 200, "timed runs of each candidate (the median is kept)")
	fl.IntVar(&f.warmup, "warmup", 20, "untimed runs of each candidate first")
	fl.StringVarP(&f.out, "out", "o", "", "the profile to write (default: profile_ARCH.json beside FILE)")
	fl.StringVar(&f.program, "program", "", "the program's name the profile keys the times by (default: the file's)")
	fl.BoolVar(&f.asJSON, "json", false, "print the measurements as JSON")
	// --emulate runs the timing program in the CPU emulator: mirage's own
	// tests of tune on machines without a GPU. Its times are the CPU's.
	fl.BoolVar(&f.emulate, "emulate", false, "build for the CPU emulator instead of the GPU (for testing tune; the times are meaningless)")
	_ = fl.MarkHidden("emulate")
	pathFlags(cmd, "out")
	return cmd
}

func (f *tuneFlags) run(cmd *cobra.Command, path string) error {
	if err := checkNotNegative(cmd, "candidates"); err != nil {
		return err
	}
	if f.runs < 1 || f.warmup < 0 {
		return fmt.Errorf("--runs %d, --warmup %d: want at least one timed run, and no negative warm-up", f.runs, f.warmup)
	}
	if isProgram(path) {
		return fmt.Errorf("%s: tune times the candidates of a μGraph file (superopt FILE.py --max-candidates K writes one)", path)
	}
	in, err := f.load.load(cmd, path)
	if err != nil {
		return err
	}
	if _, _, ok, err := driver.ReadDynamic(in.File); err != nil || ok {
		return fmt.Errorf("%s: a dynamic program's document: tune one bucket's graphs (show --candidate) at a time", path)
	}
	out := f.out
	if out == "" {
		out = filepath.Join(filepath.Dir(path), "profile_"+f.arch.Arch.Name+".json")
	}
	work, err := os.MkdirTemp("", "mirage-tune-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	program := in.File.Name
	if f.program != "" {
		program = f.program
	}
	res, err := tune.Run(cmd.Context(), in.File, tune.Options{Arch: f.arch.Arch, Program: program, Candidates: f.candidates,
		Runs: f.runs, Warmup: f.warmup, Dir: work, Emulate: f.emulate})
	if errors.Is(err, tune.ErrNoGPU) {
		return fmt.Errorf("tune needs a GPU and nvcc: %v", err)
	}
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	var data bytes.Buffer
	if err := res.Profile.Write(&data); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(out, data.Bytes(), 0o644); err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), struct {
			GPU          string            `json:"gpu"`
			Arch         string            `json:"arch"`
			Program      string            `json:"program"`
			Profile      string            `json:"profile"`
			Measurements []tuneMeasurement `json:"measurements"`
		}{res.GPU, f.arch.Arch.Name, program, out, tuneMeasurements(res)})
	}
	printTuneTable(cmd.OutOrStdout(), res, out)
	return nil
}

// tuneMeasurement is a measurement as --json prints it.
type tuneMeasurement struct {
	Candidate   int     `json:"candidate"`
	Hash        string  `json:"hash"`
	EstimatedUs float64 `json:"estimated_us"`
	MedianUs    float64 `json:"median_us,omitempty"`
	P10Us       float64 `json:"p10_us,omitempty"`
	P90Us       float64 `json:"p90_us,omitempty"`
	Runs        int     `json:"runs,omitempty"`
	MaxRelErr   float64 `json:"max_rel_err"`
	Reference   bool    `json:"reference,omitempty"`
	Error       string  `json:"error,omitempty"`
}

func tuneMeasurements(res *tune.Result) []tuneMeasurement {
	var ms []tuneMeasurement
	for _, m := range res.Measurements {
		ms = append(ms, tuneMeasurement{m.Candidate, m.Hash, m.EstimatedUs, m.MedianUs, m.P10, m.P90, m.Runs, m.MaxRelErr, m.Reference, m.Err})
	}
	return ms
}

// printTuneTable prints the measurements and which candidate each of the
// model and the GPU prefers.
func printTuneTable(w io.Writer, res *tune.Result, profile string) {
	fmt.Fprintf(w, "%s\n", res.GPU)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "candidate\test. µs\tmedian µs\tp10\tp90\tmax rel err\t")
	fastest := -1
	for i, m := range res.Measurements {
		if m.Err != "" {
			fmt.Fprintf(tw, "%d\t%.1f\t-\t-\t-\t-\t%s\n", m.Candidate, m.EstimatedUs, m.Err)
			continue
		}
		ref := ""
		if m.Reference {
			ref = "(reference)"
		}
		fmt.Fprintf(tw, "%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.1e\t%s\n", m.Candidate, m.EstimatedUs, m.MedianUs, m.P10, m.P90, m.MaxRelErr, ref)
		if fastest < 0 || m.MedianUs < res.Measurements[fastest].MedianUs {
			fastest = i
		}
	}
	tw.Flush()
	if fastest >= 0 {
		fmt.Fprintf(w, "the model ranks candidate 0 first; measured, candidate %d is fastest\n", res.Measurements[fastest].Candidate)
	}
	fmt.Fprintf(w, "wrote %s (%d measurement(s)): superopt --profile %s ranks by it\n", profile, len(res.Profile.Measurements), profile)
}
