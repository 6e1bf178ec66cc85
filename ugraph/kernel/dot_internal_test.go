package kernel

import "testing"

func TestDotEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{`t2 = matmul(t0, t1)`, `"t2 = matmul(t0, t1)"`},
		{`say "hi"`, `"say \"hi\""`},
		{`back\slash`, `"back\\slash"`},
		{`\"`, `"\\\""`},
		{"two\nlines", `"two\nlines"`},
		{`{}[];->`, `"{}[];->"`},
	}
	for _, tt := range tests {
		if got := dotString(tt.in); got != tt.want {
			t.Errorf("dotString(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if got := dotLabel("a", `"b"`); got != `"a\n\"b\""` {
		t.Errorf("dotLabel = %s", got)
	}
}
