package memlimit

import (
	"bufio"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mirage-go/mirage/internal/boundedread"
)

// SoftLimit is the heap size past which the garbage collector should work
// harder rather than let the heap grow: 3/4 of the memory this process may
// use, the machine's or its memory cgroup's when lower; 0 when neither is
// known.
//
// Without it the Go heap grows to twice the live data before a collection.
// A search at LLaMA-70B shapes kept about 7 GB live when the verifiers
// stored its 8192x28672 weights, and peaked at 15 GB, nearly all of a 16
// GB machine; under a 6 GiB limit the same search peaked at 7.6 GB, as
// fast. Past the limit the collector's CPU share is capped (the runtime's
// GC limiter), so a live set above it costs time, not a crash: but it
// goes on growing, which is why a search stops enumerating at a quarter
// of the limit (driver's liveHeapBudget; an attention search ran 5 minutes
// to 24 GB of a 23 GB machine without that).
func SoftLimit() int64 { return softLimit("/") }

// softLimit is SoftLimit with /proc and /sys under root.
func softLimit(root string) int64 {
	total := memTotal(filepath.Join(root, "proc/meminfo"))
	if c := cgroupLimit(root); c > 0 && (total == 0 || c < total) {
		total = c
	}
	return total / 4 * 3
}

// maxProcFile bounds what is read of a /proc or cgroup file: a few lines.
const maxProcFile = 1 << 20

// memTotal is MemTotal of a /proc/meminfo file, in bytes; 0 when the
// file or the line is missing or malformed.
func memTotal(path string) int64 {
	f, err := boundedread.Open(path, maxProcFile)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if n := parseMemTotal(sc.Text()); n > 0 {
			return n
		}
	}
	return 0
}

// parseMemTotal reads "MemTotal:  24683656 kB" as bytes; 0 otherwise.
func parseMemTotal(line string) int64 {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "MemTotal:" || f[2] != "kB" {
		return 0
	}
	kb, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || kb <= 0 || kb >= 1<<53 {
		return 0
	}
	return kb << 10
}

// cgroupLimit is the lowest memory limit of the cgroups this process is in
// (per /proc/self/cgroup): cgroup v2's memory.max, v1's
// memory.limit_in_bytes, at the process's cgroup and at the mount's root
// (what a container sees of its own limit); 0 without one.
func cgroupLimit(root string) int64 {
	fs := filepath.Join(root, "sys/fs/cgroup")
	files := []string{filepath.Join(fs, "memory.max"), filepath.Join(fs, "memory/memory.limit_in_bytes")}
	if b, err := boundedread.ReadFile(filepath.Join(root, "proc/self/cgroup"), maxProcFile); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			// hierarchy-ID:controllers:path
			f := strings.SplitN(line, ":", 3)
			if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
				continue
			}
			switch {
			case f[0] == "0" && f[1] == "":
				files = append(files, filepath.Join(fs, f[2], "memory.max"))
			case hasController(f[1], "memory"):
				files = append(files, filepath.Join(fs, "memory", f[2], "memory.limit_in_bytes"))
			}
		}
	}
	var lowest int64
	for _, file := range files {
		if n := readLimit(file); n > 0 && (lowest == 0 || n < lowest) {
			lowest = n
		}
	}
	return lowest
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit is a cgroup memory limit file's value in bytes; 0 when the
// file is missing or malformed, or says there is no limit ("max", or v1's
// page-rounded 2^63-1).
func readLimit(path string) int64 {
	b, err := boundedread.ReadFile(path, maxProcFile)
	if err != nil {
		return 0
	}
	return parseLimit(string(b))
}

// parseLimit reads a cgroup memory limit file's content as bytes.
func parseLimit(content string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(content), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}
