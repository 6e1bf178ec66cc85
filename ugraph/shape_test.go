package ugraph

import "testing"

func TestNewShape(t *testing.T) {
	tests := []struct {
		dims []int
		ok   bool
	}{
		{[]int{16, 4096}, true},
		{[]int{1}, true},
		{[]int{2, 3, 4, 5}, true},
		{nil, false},
		{[]int{1, 2, 3, 4, 5}, false},
		{[]int{16, 0}, false},
		{[]int{-1}, false},
		{[]int{MaxDim + 1}, false},
	}
	for _, tt := range tests {
		s, err := NewShape(tt.dims...)
		if (err == nil) != tt.ok {
			t.Errorf("NewShape(%v): err = %v, want ok=%v", tt.dims, err, tt.ok)
			continue
		}
		if tt.ok && (s.Rank() != len(tt.dims) || !s.Valid()) {
			t.Errorf("NewShape(%v) = %v", tt.dims, s)
		}
	}
}

func TestShapeOps(t *testing.T) {
	x := MustShape(2, 256, 4096)
	if x.NumElements() != 2*256*4096 || x.Last() != 4096 || x.String() != "[2, 256, 4096]" {
		t.Errorf("shape %v: elements %d, last %d", x, x.NumElements(), x.Last())
	}
	if st := x.Strides(); st[0] != 256*4096 || st[1] != 4096 || st[2] != 1 {
		t.Errorf("strides %v", st)
	}
	if d, err := x.DivDim(2, 16); err != nil || d != MustShape(2, 256, 256) {
		t.Errorf("DivDim(2, 16) = %v, %v", d, err)
	}
	if _, err := x.DivDim(1, 3); err == nil {
		t.Error("DivDim(1, 3) of 256 should fail")
	}
	if m, err := x.MulDim(0, 3); err != nil || m != MustShape(6, 256, 4096) {
		t.Errorf("MulDim(0, 3) = %v, %v", m, err)
	}
	if _, err := x.MulDim(2, MaxDim); err == nil {
		t.Error("MulDim overflow should fail")
	}
	if MustShape(4, 4) == MustShape(4, 4, 1) {
		t.Error("shapes of different rank compare equal")
	}
	if (Shape{}).Valid() {
		t.Error("zero Shape is valid")
	}
}

func TestDTypes(t *testing.T) {
	for _, dt := range []DType{Float16, BFloat16, Float32} {
		got, err := ParseDType(dt.String())
		if err != nil || got != dt {
			t.Errorf("ParseDType(%q) = %v, %v", dt.String(), got, err)
		}
	}
	if Float16.Size() != 2 || BFloat16.Size() != 2 || Float32.Size() != 4 {
		t.Error("dtype sizes")
	}
	if _, err := ParseDType("int8"); err == nil {
		t.Error("ParseDType(int8) should fail")
	}
}

func TestOpTable(t *testing.T) {
	for k := OpInvalid + 1; k < numOpKinds; k++ {
		info := k.Info()
		if info.Name == "" || info.Class == 0 || info.Levels == 0 {
			t.Errorf("op %d has an incomplete table entry %+v", k, info)
		}
		if got, ok := LookupOp(info.Name); !ok || got != k {
			t.Errorf("LookupOp(%q) = %v, %v", info.Name, got, ok)
		}
	}
	if OpSub.AllowedAt(LevelKernel) || !OpSub.AllowedAt(LevelBlock) {
		t.Error("sub is a threadblock-only op")
	}
	if OpCustomized.AllowedAt(LevelBlock) {
		t.Error("customized is kernel-only")
	}
	for a := AccumNone; a < numAccums; a++ {
		if got, err := ParseAccum(a.String()); err != nil || got != a {
			t.Errorf("ParseAccum(%q) = %v, %v", a.String(), got, err)
		}
	}
}
