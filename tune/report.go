package tune

import (
	"bytes"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/internal/jsonfloat"
)

// JSONMeasurement is a measurement as mirage tune --json prints it.
type JSONMeasurement struct {
	Candidate   int             `json:"candidate"`
	Hash        string          `json:"hash"`
	EstimatedUs float64         `json:"estimated_us"`
	MedianUs    float64         `json:"median_us,omitempty"`
	P10Us       float64         `json:"p10_us,omitempty"`
	P90Us       float64         `json:"p90_us,omitempty"`
	Runs        int             `json:"runs,omitempty"`
	MaxRelErr   jsonfloat.Float `json:"max_rel_err"` // +Inf where the output is not finite and the reference's is
	Reference   bool            `json:"reference,omitempty"`
	Error       string          `json:"error,omitempty"`
}

func (res *Result) jsonMeasurements() []JSONMeasurement {
	var ms []JSONMeasurement
	for _, m := range res.Measurements {
		ms = append(ms, JSONMeasurement{m.Candidate, m.Hash, m.EstimatedUs, m.MedianUs, m.P10, m.P90, m.Runs, jsonfloat.Float(m.MaxRelErr), m.Reference, m.Err})
	}
	return ms
}

// WriteTable prints the measurements and which candidate each of the
// model and the GPU prefers, and the profile written ("": none).
func (res *Result) WriteTable(w io.Writer, profile string) {
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
	if profile != "" {
		fmt.Fprintf(w, "wrote %s (%d measurement(s)): superopt --profile %s ranks by it\n", profile, len(res.Profile.Measurements), profile)
	}
}

// Report is mirage tune --json's object: the measurements, and the
// profile written for program on arch.
type Report struct {
	GPU          string            `json:"gpu"`
	Arch         string            `json:"arch"`
	Program      string            `json:"program"`
	Profile      string            `json:"profile"`
	Measurements []JSONMeasurement `json:"measurements"`
}

// Report is res's Report, its profile written to profile for program on
// arch.
func (res *Result) Report(arch, program, profile string) Report {
	return Report{res.GPU, arch, program, profile, res.jsonMeasurements()}
}

// WriteProfile writes res's profile to path, atomically.
func (res *Result) WriteProfile(path string) error {
	var data bytes.Buffer
	if err := res.Profile.Write(&data); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data.Bytes(), 0o644)
}
