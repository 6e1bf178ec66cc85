package cuda

import "testing"

// TestArchs checks that every architecture Emit targets parses and has a
// shared-memory limit (from the cost model's table: SmemLimit panics on an
// architecture the table lacks), and that others are refused.
func TestArchs(t *testing.T) {
	for _, tt := range []struct {
		arch Arch
		smem int
	}{{SM80, 163 << 10}, {SM90, 227 << 10}} {
		a, err := ParseArch(string(tt.arch))
		if err != nil || a != tt.arch {
			t.Errorf("ParseArch(%q) = %q, %v", tt.arch, a, err)
		}
		if got := tt.arch.SmemLimit(); got != tt.smem {
			t.Errorf("%s: SmemLimit %d, want %d (the CUDA guide's opt-in maximum per block)", tt.arch, got, tt.smem)
		}
	}
	for _, bad := range []string{"", "sm_75", "SM_90", "sm_100"} {
		if _, err := ParseArch(bad); err == nil {
			t.Errorf("ParseArch(%q) accepted", bad)
		}
	}
}
