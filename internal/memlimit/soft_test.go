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
		{"MemTotal:       9007199254740992 kB", 0}, // 2^53 kB: bytes overflow
		{"MemTotal:       99999999999999999999 kB", 0},
		{"", 0},
	}
	for _, tt := range tests {
		if got := parseMemTotal(tt.line); got != tt.want {
			t.Errorf("parseMemTotal(%q) = %d, want %d", tt.line, got, tt.want)
		}
	}
}

// TestSoftLimitFiles builds /proc and /sys/fs/cgroup trees: the limit is
// 3/4 of the lowest of MemTotal and the cgroup limits that apply.
func TestSoftLimitFiles(t *testing.T) {
	const meminfo = "MemTotal:       16777216 kB\nMemFree:         1000 kB\n" // 16 GiB
	tests := []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"no cgroup", map[string]string{"proc/meminfo": meminfo}, 12 << 30},
		{"no meminfo either", map[string]string{}, 0},
		{"v2 at the namespace root", map[string]string{"proc/meminfo": meminfo,
			"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "8589934592\n"}, 6 << 30},
		{"v2 unlimited", map[string]string{"proc/meminfo": meminfo,
			"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n"}, 12 << 30},
		{"v2 in a nested cgroup", map[string]string{"proc/meminfo": meminfo,
			"proc/self/cgroup": "0::/user.slice/job.scope\n", "sys/fs/cgroup/memory.max": "max\n",
			"sys/fs/cgroup/user.slice/job.scope/memory.max": "4294967296\n"}, 3 << 30},
		{"v1 memory controller", map[string]string{"proc/meminfo": meminfo,
			"proc/self/cgroup":                                  "9:name=systemd:/\n4:memory:/jobs/7\n0::/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":        "9223372036854771712\n",
			"sys/fs/cgroup/memory/jobs/7/memory.limit_in_bytes": "2147483648\n"}, 3 << 29},
		{"v1 unlimited", map[string]string{"proc/meminfo": meminfo,
			"proc/self/cgroup":                           "4:cpu,memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 12 << 30},
		{"a cgroup above the machine", map[string]string{"proc/meminfo": meminfo,
			"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "68719476736\n"}, 12 << 30},
		{"a cgroup, no meminfo", map[string]string{
			"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "4294967296\n"}, 3 << 30},
		{"malformed", map[string]string{"proc/meminfo": meminfo,
			"proc/self/cgroup": "garbage\n0::relative\n", "sys/fs/cgroup/memory.max": "lots\n"}, 12 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for name, content := range tt.files {
				path := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := softLimit(root); got != tt.want {
				t.Errorf("softLimit = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestSoftLimit: on Linux this machine has a limit, at most 3/4 of its
// MemTotal.
func TestSoftLimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/meminfo")
	}
	total := memTotal("/proc/meminfo")
	if total <= 0 {
		t.Fatalf("MemTotal of /proc/meminfo: %d", total)
	}
	if got := SoftLimit(); got <= 0 || got > total/4*3 {
		t.Errorf("SoftLimit() = %d, want in (0, %d]", got, total/4*3)
	}
}
