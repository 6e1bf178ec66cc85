package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/mirage-go/mirage/driver"
)

// shardFlags checks --shard, --shard-dir and --shards together; sharded
// is false when the run is not a shard's.
func (f *superoptFlags) shardFlags(cmd *cobra.Command) (sh driver.Shard, sharded bool, err error) {
	given := cmd.Flags().Changed
	if f.shard == "" {
		switch {
		case f.shardDir != "":
			return sh, false, fmt.Errorf("--shard-dir %s: give --shard I/N (or auto) too", f.shardDir)
		case given("shards"):
			return sh, false, fmt.Errorf("--shards goes with --shard auto")
		}
		return sh, false, nil
	}
	switch {
	case f.shardDir == "":
		return sh, false, fmt.Errorf("--shard %s needs --shard-dir DIR, the directory the shards share for mirage merge", f.shard)
	case f.profile != "":
		return sh, false, fmt.Errorf("--profile cannot be used with --shard (the merge ranks by the model)")
	case given("shards") && f.shards < 1:
		return sh, false, fmt.Errorf("--shards %d: want at least 1", f.shards)
	}
	if f.shard == "auto" {
		sh, err = driver.ShardFromEnv(os.Getenv, f.shards)
		return sh, err == nil, err
	}
	if given("shards") {
		return sh, false, fmt.Errorf("--shards goes with --shard auto: --shard %s gives N itself", f.shard)
	}
	sh, err = driver.ParseShard(f.shard)
	if err != nil {
		return sh, false, fmt.Errorf("--%v", err)
	}
	return sh, true, nil
}

// runShard searches slice sh of the program and writes its shard file.
func (f *superoptFlags) runShard(cmd *cobra.Command, in *driver.Input, opts driver.Options, sh driver.Shard) error {
	if err := driver.CheckOutputDir(f.shardDir); err != nil {
		return fmt.Errorf("--shard-dir %s: %v", f.shardDir, err)
	}
	errw := cmd.ErrOrStderr()
	// Catch SIGTERM before the header says the shard has started: a
	// scheduler (or a test) that signals on seeing it must get exit 130.
	ctx, stop := driver.Interruptible(cmd.Context(), errw)
	defer stop()
	fmt.Fprintf(errw, "superopt %s: shard %v, time budget %v (--time-limit), %d worker(s), %s\n", in.Name, sh, opts.TimeLimit, opts.Workers, opts.Arch)
	res, err := driver.RunShard(ctx, in.Program.Graph, opts, sh)
	if err != nil {
		return fmt.Errorf("%s: %v", in.Path, err)
	}
	if res.Interrupted {
		// A scheduler's SIGTERM (a preemption, a task's time limit): no
		// file, and a failing status, so that the task is run again
		// rather than merged incomplete.
		return &exitError{code: driver.ExitInterrupted, err: fmt.Errorf("shard %v interrupted; nothing written (run it again)", sh)}
	}
	meta := driver.ShardMeta{Source: in.Path, Answer: f.answerMeta(), NoEmit: f.noEmit}
	file, err := driver.NewShardFile(in.Program.Graph, opts, res, version, meta)
	if err != nil {
		return fmt.Errorf("%s: %v", in.Path, err)
	}
	if err := file.Write(f.shardDir); err != nil {
		return fmt.Errorf("--shard-dir %s: %v", f.shardDir, err)
	}
	if file.Header.Stopped != "" { // the search's cause, or the file's size
		fmt.Fprintf(errw, "warning: shard %v stopped early (%s): the merged answer will be the best of what was searched\n", sh, file.Header.Stopped)
	}
	if f.asJSON {
		return writeJSON(cmd.OutOrStdout(), file.Summary())
	}
	file.WriteSummary(cmd.OutOrStdout())
	return nil
}
