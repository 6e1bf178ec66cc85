package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/target"
)

// mergeFlags are the flags of mirage merge.
type mergeFlags struct {
	outDir  string
	workers int
	noEmit  bool
	asJSON  bool
	// maxMemory overrides the shards' --max-memory when given.
	maxMemory memoryFlag
}

func newMergeCmd() *cobra.Command {
	var f mergeFlags
	cmd := &cobra.Command{
		Use:   "merge DIR",
		Short: "Put the shards of a sharded superopt run together",
		Long:  help("merge"),
		Args:  cobra.ExactArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.outDir, "out", "o", "out", "directory to write the files into")
	fl.IntVar(&f.workers, "workers", 2, "parallel verification workers")
	fl.BoolVar(&f.noEmit, "no-emit", false, "do not write CUDA for the best candidate")
	fl.BoolVar(&f.asJSON, "json", false, "print the statistics, candidates and parts as one JSON object")
	fl.Var(&f.maxMemory, "max-memory", "refuse verifications that would take more memory than `SIZE` (default: the first shard's --max-memory)")
	pathFlags(cmd, "out")
	return cmd
}

func (f *mergeFlags) run(cmd *cobra.Command, dir string) error {
	if f.workers < 1 {
		return fmt.Errorf("--workers %d: want at least 1", f.workers)
	}
	files, err := driver.ReadShardDir(dir)
	if err != nil {
		return err
	}
	m, err := driver.MergeShards(files, version)
	if err != nil {
		return err
	}
	var meta driver.ShardMeta
	if err := json.Unmarshal(m.Meta, &meta); err != nil {
		return fmt.Errorf("%s: the shards' meta: %v", dir, err)
	}
	arch, err := target.Lookup(meta.Answer.Arch)
	if err != nil {
		return fmt.Errorf("%s: the shards' arch: %v", dir, err)
	}
	emit := !f.noEmit && !meta.NoEmit
	out := driver.NewOutput(f.outDir, m.Options.Name, meta.Source, meta.Answer, arch, emit, warner(cmd))
	if err := out.Check(); err != nil {
		return fmt.Errorf("-o %s: %v", f.outDir, err)
	}
	errw := cmd.ErrOrStderr()
	incomplete := []int{}
	for _, h := range m.Incomplete {
		incomplete = append(incomplete, h.Index)
		fmt.Fprintf(errw, "warning: shard %d of %d stopped early (%s): the answer is the best of what was searched\n", h.Index, h.Count, h.Stopped)
	}
	opts := m.Options
	opts.Workers = f.workers
	if cmd.Flags().Changed("max-memory") {
		opts.MaxMemory = int64(f.maxMemory)
	}
	opts.Log = func(line string) { fmt.Fprintln(errw, line) }
	// The handler before the header: a signal sent on seeing it is caught.
	ctx, stop := driver.Interruptible(cmd.Context(), errw)
	defer stop()
	fmt.Fprintf(errw, "merge %s: %d shard(s), time budget %v for what is left, %s\n", opts.Name, m.Count, opts.TimeLimit, opts.Arch)
	res, err := driver.Run(ctx, m.Program, opts)
	if err != nil {
		return fmt.Errorf("%s: %v", dir, err)
	}
	written, emitted, err := res.WriteAnswer(out)
	if err != nil {
		return err
	}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), res.Report(written, emitted, &driver.MergeSummary{Shards: m.Count, Incomplete: incomplete}))
	}
	driver.WriteTable(cmd.OutOrStdout(), res, opts, written, emitted)
	return nil
}
