package bench

import (
	"fmt"
	"io"
	"strings"
)

// DynamicCost is what a dynamic row count costs the search (DESIGN §9):
// one workload searched for every bucket of a range, against its largest
// bucket searched alone as a static program, on the same machine.
type DynamicCost struct {
	Workload       string    `json:"workload"`
	Input          int       `json:"input"` // the input whose dim 0 is m
	Lo             int       `json:"lo"`
	Hi             int       `json:"hi"`
	Buckets        []int     `json:"buckets"`
	BucketSeconds  []float64 `json:"bucket_seconds"`  // per bucket, within the run of all
	Seconds        float64   `json:"seconds"`         // every bucket, one run
	LargestSeconds float64   `json:"largest_seconds"` // the largest bucket alone
	Ratio          float64   `json:"ratio"`           // Seconds / LargestSeconds
}

// MaxDynamicRatio is the goal: every bucket together within 3x the largest
// alone.
const MaxDynamicRatio = 3

// NewDynamicCost summarizes a dynamic run's times.
func NewDynamicCost(workload string, input, lo, hi int, buckets []int, bucketSeconds []float64, seconds, largest float64) *DynamicCost {
	d := &DynamicCost{Workload: workload, Input: input, Lo: lo, Hi: hi, Buckets: buckets, BucketSeconds: bucketSeconds, Seconds: seconds, LargestSeconds: largest}
	if largest > 0 {
		d.Ratio = seconds / largest
	}
	return d
}

// WriteDynamicCost writes the report's dynamic-batch line.
func WriteDynamicCost(w io.Writer, d *DynamicCost) error {
	var per []string
	for i, b := range d.Buckets {
		per = append(per, fmt.Sprintf("%d: %.1f", b, d.BucketSeconds[i]))
	}
	verdict := "within"
	if d.Ratio > MaxDynamicRatio {
		verdict = "OVER"
	}
	_, err := fmt.Fprintf(w, "\nDynamic batch: %s with m in %d..%d (input %d, dim 0), %d buckets: %.1f s in all (%s s); the largest bucket alone %.1f s; %.2fx (%s the %dx goal)\n",
		d.Workload, d.Lo, d.Hi, d.Input, len(d.Buckets), d.Seconds, strings.Join(per, ", "), d.LargestSeconds, d.Ratio, verdict, MaxDynamicRatio)
	return err
}
