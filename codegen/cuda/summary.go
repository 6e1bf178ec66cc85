package cuda

import (
	"fmt"
	"strings"
)

// Summary describes the emitted program for a human: the files, then each
// kernel with its launch, its shared memory, its fast paths and, for a
// graph-defined kernel, where each tile lives and the order of its parts
// with the barriers between them. The golden tests keep one per example.
func (r *Result) Summary() string {
	var b strings.Builder
	var names []string
	for _, f := range r.Files {
		names = append(names, f.Name)
	}
	fmt.Fprintf(&b, "mirage_%s for %s: %s, workspace %d bytes\n", r.Name, r.Arch, plural(len(r.Kernels), "kernel"), r.WorkspaceBytes)
	fmt.Fprintf(&b, "files: %s\n", strings.Join(names, ", "))
	for i, k := range r.Kernels {
		fmt.Fprintf(&b, "\nkernel %d: op %d, %s: %s\n", i, k.Op, k.What, k.Name)
		if k.Library != "" {
			fmt.Fprintf(&b, "  launch: a call into %s, which launches its own kernels\n", k.Library)
		} else {
			fmt.Fprintf(&b, "  launch: grid (%d, %d, %d) x %d threads, %d bytes of dynamic shared memory\n", k.Grid[0], k.Grid[1], k.Grid[2], k.Threads, k.SmemBytes)
		}
		for _, n := range k.Notes {
			fmt.Fprintf(&b, "  %s\n", n)
		}
		if k.Plan == nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(k.Plan.String(), "\n"), "\n")
		fmt.Fprintf(&b, "  plan: %s\n", lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(&b, "    %s\n", strings.TrimSpace(l))
		}
		fmt.Fprintf(&b, "  schedule (%s from hazards, besides the loop's and the pipeline's own):\n", plural(k.Barriers, "barrier"))
		for _, s := range k.Schedule {
			fmt.Fprintf(&b, "    %s\n", s)
		}
	}
	return b.String()
}
