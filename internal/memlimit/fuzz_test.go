package memlimit

import "testing"

// FuzzParseMemTotal: any line gives 0 or a positive whole number of KiB.
func FuzzParseMemTotal(f *testing.F) {
	for _, s := range []string{"MemTotal:       24683656 kB", "MemTotal: 9007199254740991 kB", "MemTotal: -1 kB", "MemFree: 1 kB", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if n := parseMemTotal(line); n < 0 || n%1024 != 0 {
			t.Errorf("parseMemTotal(%q) = %d", line, n)
		}
	})
}

// FuzzParseLimit: any content gives 0 (no limit) or a positive limit
// below 2^62.
func FuzzParseLimit(f *testing.F) {
	for _, s := range []string{"8589934592\n", "max\n", "9223372036854771712\n", "", " 12 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		if n := parseLimit(content); n < 0 || n >= 1<<62 {
			t.Errorf("parseLimit(%q) = %d", content, n)
		}
	})
}
