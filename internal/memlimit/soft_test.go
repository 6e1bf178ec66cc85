package memlimit

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestParseMemTotal(t *testing.T) {
	tests := []struct {
		line string
		want int64
	}{
		{"MemTotal:       24683656 kB", 24683656 << 10},
		{"MemTotal: 1 kB", 1024},
		{"MemFree:        21000000 kB", 0},
		{"MemTotal:       24683656", 0},
		{"MemTotal:       -5 kB", 0},
		{"MemTotal:       lots kB", 0},
		{"MemTotal:       99999999999999999999 kB", 0},
		{"", 0},
	}
	for _, tt := range tests {
		if got := parseMemTotal(tt.line); got != tt.want {
			t.Errorf("parseMemTotal(%q) = %d, want %d", tt.line, got, tt.want)
		}
	}
}

func TestReadCgroupMax(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		content string
		want    int64
	}{
		{"8589934592\n", 8 << 30},
		{"max\n", 0},
		{"", 0},
		{"0\n", 0},
	}
	for i, tt := range tests {
		path := filepath.Join(dir, "memory.max")
		if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := readCgroupMax(path); got != tt.want {
			t.Errorf("%d: readCgroupMax(%q) = %d, want %d", i, tt.content, got, tt.want)
		}
	}
	if got := readCgroupMax(filepath.Join(dir, "absent")); got != 0 {
		t.Errorf("a missing file: %d, want 0", got)
	}
}

// TestSoftLimit: on Linux the limit is 3/4 of MemTotal, or less.
func TestSoftLimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/meminfo")
	}
	total := readMemTotal("/proc/meminfo")
	if total <= 0 {
		t.Fatalf("MemTotal of /proc/meminfo: %d", total)
	}
	if got := SoftLimit(); got <= 0 || got > total/4*3 {
		t.Errorf("SoftLimit() = %d, want in (0, %d]", got, total/4*3)
	}
}
