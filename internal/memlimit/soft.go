package memlimit

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// SoftLimit is the heap size past which the garbage collector should work
// harder rather than let the heap grow: 3/4 of the memory this process may
// use, the machine's or its cgroup's when lower; 0 when neither is known.
//
// Without it the Go heap grows to twice the live data before a collection.
// A search at LLaMA-70B shapes keeps about 7 GB live (the verifiers'
// fingerprints of 8192x28672 weights) and peaked at 15 GB, nearly all of
// a 16 GB machine; under a 6 GiB limit the same search peaks at 7.6 GB,
// as fast. Past the limit the collector's CPU share is capped (the
// runtime's GC limiter), so a live set above it costs time, not a crash.
func SoftLimit() int64 {
	total := readMemTotal("/proc/meminfo")
	if c := readCgroupMax("/sys/fs/cgroup/memory.max"); c > 0 && (total == 0 || c < total) {
		total = c
	}
	return total / 4 * 3
}

// readMemTotal is MemTotal of a /proc/meminfo file, in bytes; 0 when the
// file or the line is missing or malformed.
func readMemTotal(path string) int64 {
	f, err := os.Open(path)
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
	if err != nil || kb <= 0 || kb > 1<<53 {
		return 0
	}
	return kb << 10
}

// readCgroupMax is a cgroup v2 memory.max file's limit in bytes; 0 when
// the file is missing, says "max" (no limit) or is malformed.
func readCgroupMax(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}
