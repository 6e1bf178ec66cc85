package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// ShardBalance is how evenly a sharded search shares out one workload
// (DESIGN §8): the time of each of its shards, run one after another on
// the same machine. The slowest over the mean is the figure: the wall time
// of a sharded run is its slowest shard's.
type ShardBalance struct {
	Workload    string    `json:"workload"`
	Shards      int       `json:"shards"`
	Seconds     []float64 `json:"seconds"` // per shard, in index order
	MeanSeconds float64   `json:"mean_seconds"`
	MaxSeconds  float64   `json:"max_seconds"`
	Ratio       float64   `json:"max_over_mean"`
	Incomplete  int       `json:"incomplete,omitempty"` // shards stopped by their time limit
}

// MaxShardRatio is the balance goal: the slowest shard within 1.5x the
// mean.
const MaxShardRatio = 1.5

// NewShardBalance summarizes the shards' times.
func NewShardBalance(workload string, seconds []float64, incomplete int) *ShardBalance {
	b := &ShardBalance{Workload: workload, Shards: len(seconds), Seconds: seconds, Incomplete: incomplete}
	for _, s := range seconds {
		b.MeanSeconds += s / float64(len(seconds))
	}
	b.MaxSeconds = slices.Max(seconds)
	if b.MeanSeconds > 0 {
		b.Ratio = b.MaxSeconds / b.MeanSeconds
	}
	return b
}

// WriteShardBalance writes the balance as the report's shard-balance line.
func WriteShardBalance(w io.Writer, b *ShardBalance) error {
	var secs []string
	for _, s := range b.Seconds {
		secs = append(secs, fmt.Sprintf("%.1f", s))
	}
	verdict := "within"
	if b.Ratio > MaxShardRatio {
		verdict = "OVER"
	}
	note := ""
	if b.Incomplete > 0 {
		note = fmt.Sprintf("; %d shard(s) stopped by the time limit", b.Incomplete)
	}
	_, err := fmt.Fprintf(w, "\nShard balance: %s in %d shards: %s s; slowest %.1f s, mean %.1f s, %.2fx the mean (%s the %.1fx goal%s)\n",
		b.Workload, b.Shards, strings.Join(secs, ", "), b.MaxSeconds, b.MeanSeconds, b.Ratio, verdict, MaxShardRatio, note)
	return err
}
