package driver

import "testing"

// FuzzParseDynamicFlag: any text parses or is refused with an error, never
// a panic; a parsed flag prints back to itself.
func FuzzParseDynamicFlag(f *testing.F) {
	for _, s := range []string{"X:0=1..64", "0:1=4..4", "X:0=0..64", "W:9=1..2", "a:b=c..d", ":=..", "X:0=1..99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fl, err := ParseDynamicFlag(s)
		if err != nil {
			return
		}
		if fl.Lo < 1 || fl.Lo > fl.Hi || fl.Dim < 0 {
			t.Fatalf("%q parsed to %+v", s, fl)
		}
		again, err := ParseDynamicFlag(fl.String())
		if err != nil || again != fl {
			t.Fatalf("%q -> %v -> %+v, %v", s, fl, again, err)
		}
	})
}

// FuzzParseBuckets: any list parses or is refused; a parsed one covers the
// range in ascending order.
func FuzzParseBuckets(f *testing.F) {
	for _, s := range []string{"1,8,64", "64", "1,2,3,4,5,6,7,8,9,10,64", "8,1", ",", "1,,64", "-1,64", " 1, 64"} {
		f.Add(s, 1, 64)
	}
	f.Fuzz(func(t *testing.T, s string, lo, hi int) {
		if lo < 1 || lo > hi || hi > 1<<20 {
			return
		}
		b, err := ParseBuckets(s, lo, hi)
		if err != nil {
			return
		}
		if b[0] < lo || b[len(b)-1] < hi {
			t.Fatalf("%q for %d..%d: %v does not cover the range", s, lo, hi, b)
		}
		for i := 1; i < len(b); i++ {
			if b[i] <= b[i-1] {
				t.Fatalf("%q: %v does not ascend", s, b)
			}
		}
	})
}
