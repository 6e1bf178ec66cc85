package check

import (
	"context"
	"errors"
	"fmt"
	"github.com/mirage-go/mirage/internal/memlimit"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/driver"
	"github.com/mirage-go/mirage/enginerun"
	"github.com/mirage-go/mirage/internal/tempdir"
)

// ErrEngineFailed is wrapped by Engine's error when the decode loop ran and
// a step failed.
var ErrEngineFailed = enginerun.ErrFailed

// Engine emits the one entry point of b, a dynamic program's document
// (superopt --dynamic's), each bucket's first graph that lowers (as
// superopt --dynamic writes it), and runs
// examples/engine's decode loop over it in the CPU emulator at steps,
// checked against d, the program named name, on the same rows. It writes a
// line per step. With keep set, the decode loop's sources and data stay in
// that directory (new or empty), with run-gpu.sh to build it with nvcc.
// A step whose outputs are wrong, or an m outside the range not refused,
// is an error wrapping ErrEngineFailed: a verdict, which the caller
// reports as it reports programs that differ.
//
// What the check holds keeps to limit bytes (0: memlimit.Default).
func Engine(ctx context.Context, w io.Writer, d *driver.Dynamic, name string, b *driver.Input, steps []int, keep string, limit int64) error {
	if limit <= 0 {
		limit = memlimit.Default
	}
	rows, docs, ok, err := driver.ReadDynamic(b.File)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %v", b.Path, err)
	case !ok:
		return fmt.Errorf("%s: --engine runs a dynamic program's entry point: B must be superopt --dynamic's document", b.Path)
	}
	if rows.Lo != d.Lo || rows.Hi != d.Hi {
		return fmt.Errorf("%s covers m in %d..%d, --dynamic says %d..%d", b.Path, rows.Lo, rows.Hi, d.Lo, d.Hi)
	}
	// The code superopt wrote: for the arch it searched (meta.arch).
	code, ranks, err := driver.EmitBuckets(name, rows, docs, cuda.Options{Source: b.Path, Arch: DocumentArch(b)}, nil)
	if err != nil {
		return fmt.Errorf("%s: %v", b.Path, err)
	}
	dir := keep
	if keep == "" {
		var remove func()
		if dir, remove, err = tempdir.Make("mirage-engine-*"); err != nil {
			return err
		}
		defer remove()
	} else if err := emptyDir(keep); err != nil {
		return fmt.Errorf("--engine-dir %s: %v", keep, err)
	}
	res, err := enginerun.Run(ctx, dir, d.Program, code, d.Lo, d.Hi, steps, limit)
	for _, s := range res {
		switch {
		case s.M < d.Lo || s.M > d.Hi:
			fmt.Fprintf(w, "engine m = %d: outside %d..%d: %s\n", s.M, d.Lo, d.Hi, map[bool]string{true: "refused", false: "ACCEPTED"}[s.Refused])
		default:
			note := ""
			if s.Past {
				note = ", rows past m written"
			}
			fmt.Fprintf(w, "engine m = %d (%s): error %.3g of max |want|%s: %s\n", s.M, servedBy(docs, ranks, s.M), s.Error, note, map[bool]string{true: "ok", false: "FAILED"}[s.OK])
		}
	}
	if err != nil || keep == "" {
		return err
	}
	if err := os.WriteFile(filepath.Join(keep, "run-gpu.sh"), []byte(gpuScript(code, steps)), 0o755); err != nil {
		return err
	}
	fmt.Fprintf(w, "kept the decode loop in %s (run-gpu.sh builds it with nvcc)\n", keep)
	return nil
}

// gpuScript is run-gpu.sh: the decode loop Engine ran, built with nvcc.
func gpuScript(code *cuda.Result, steps []int) string {
	var ms []string
	for _, m := range steps {
		ms = append(ms, fmt.Sprint(m))
	}
	var links strings.Builder
	for _, l := range code.Links {
		links.WriteString(" -l" + l)
	}
	return fmt.Sprintf(`#!/usr/bin/env bash
# The decode loop that mirage verify --engine ran in the CPU emulator, built
# with nvcc for a GPU: run-gpu.sh [ARCH] (default sm_90).
set -euo pipefail
cd "$(dirname "$0")"
"${NVCC:-nvcc}" -O2 -std=c++17 -arch="${1:-sm_90}" -DMIRAGE_PROGRAM=%[1]s -include %[1]s.h -x cu engine.cpp %[1]s.cu -o engine-gpu%[3]s
./engine-gpu inputs.bin reference.bin %[2]s
`, code.Name, strings.Join(ms, " "), links.String())
}

// emptyDir makes dir, or checks that it is empty.
func emptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return errors.New("not empty")
	}
	return nil
}

// servedBy says which bucket serves m and whose graph it runs.
func servedBy(docs []driver.DocBucket, ranks []int, m int) string {
	for k, b := range docs {
		if m < b.Lo || m > b.Hi {
			continue
		}
		r := ranks[k]
		s := fmt.Sprintf("bucket %d", b.Size)
		if r > 0 {
			s += fmt.Sprintf(", its graph %d", r)
		}
		if b.Rows[r] != b.Size {
			s += fmt.Sprintf(", bucket %d's graph", b.Rows[r])
		}
		return s
	}
	return "no bucket"
}
