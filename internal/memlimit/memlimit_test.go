package memlimit

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{100, "100 B"},
		{1023, "1023 B"},
		{1024, "1 KiB"},
		{1536, "1.5 KiB"},
		{192 << 20, "192 MiB"},
		{8 << 30, "8 GiB"},
		{16<<30 + 123<<20, "16.1 GiB"},
		{1 << 51, "2 PiB"},
		{math.MaxInt64, "more than 8 EiB"},
	}
	for _, tt := range tests {
		if got := Format(tt.n); got != tt.want {
			t.Errorf("Format(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		s    string
		want int64 // 0: an error
	}{
		{"4294967296", 4 << 30},
		{"512MiB", 512 << 20},
		{"4 GiB", 4 << 30},
		{"4gib", 4 << 30},
		{"4G", 4 << 30},
		{"1.5GiB", 3 << 29},
		{"100B", 100},
		{"", 0},
		{"GiB", 0},
		{"4 GB", 4e9},
		{"4kB", 4000},
		{"4 XB", 0},
		{"4 GiBs", 0},
		{"0", 0},
		{"-1", 0},
		{"16 EiB", 0},
	}
	for _, tt := range tests {
		got, err := Parse(tt.s)
		if tt.want == 0 && err == nil || tt.want != 0 && (err != nil || got != tt.want) {
			t.Errorf("Parse(%q) = %d, %v; want %d", tt.s, got, err, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	if err := Check("x", 4<<30, 4<<30); err != nil {
		t.Errorf("Check at the limit: %v", err)
	}
	err := Check("evaluating it in float64", 16<<30, 4<<30)
	var e *Error
	if !errors.As(err, &e) || e.Need != 16<<30 {
		t.Fatalf("Check over the limit = %v", err)
	}
	if want := "evaluating it in float64 needs 16 GiB of memory, more than the limit of 4 GiB"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
	// Just over the limit, the rounded sizes would read alike.
	err = Check("x", 4<<30+128, 4<<30)
	if want := "x needs 4 GiB (4294967424 bytes) of memory, more than the limit of 4 GiB (4294967296 bytes)"; err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %q", err, want)
	}
}

func TestIsOver(t *testing.T) {
	over := Check("evaluating", 2, 1)
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{over, true},
		{fmt.Errorf("a.py: %w", over), true},
		{fmt.Errorf("a.py: %v", over), false}, // the type is lost
		{errors.New("needs more memory"), false},
		{nil, false},
	} {
		if got := IsOver(tt.err); got != tt.want {
			t.Errorf("IsOver(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
