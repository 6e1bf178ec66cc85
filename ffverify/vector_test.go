package ffverify

import (
	"fmt"
	"testing"
)

// mulAdd4 (the vector form where the CPU has it) agrees with its
// definition at every length, on random residues and on the largest ones,
// where four products and a residue come closest to overflowing a uint64
// and every reduction step reaches its bound.
func TestMulAdd4MatchesTheDefinition(t *testing.T) {
	if !useAVX2 {
		t.Log("no vector form on this CPU: mulAdd4 is the definition")
	}
	largest := elem{modP - 1, modQ - 1}
	fills := map[string]func(i int) elem{
		"random":  func(i int) elem { return uniform(hash(7, uint64(i))) },
		"largest": func(int) elem { return largest },
		"mixed": func(i int) elem {
			if i%3 == 0 {
				return largest
			}
			return uniform(hash(9, uint64(i)))
		},
		"small": func(i int) elem { return elem{uint32(i % 3), uint32(i % 5)} },
	}
	for name, fill := range fills {
		for n := range 41 {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				rows := make([][]elem, 4)
				for l := range rows {
					rows[l] = make([]elem, n+l) // longer than c: only len(c) count
					for j := range rows[l] {
						rows[l][j] = fill(1000*l + j + 1)
					}
				}
				a := [4]elem{fill(-1), fill(-2), fill(-3), fill(-4)}
				got, want := make([]elem, n), make([]elem, n)
				for j := range got {
					got[j] = fill(5000 + j)
					want[j] = got[j]
				}
				mulAdd4(got, rows[0], rows[1], rows[2], rows[3], &a)
				mulAdd4Generic(want, rows[0], rows[1], rows[2], rows[3], &a)
				for j := range want {
					if got[j] != want[j] {
						t.Fatalf("c[%d] = %v, want %v", j, got[j], want[j])
					}
				}
			})
		}
	}
}

// mulAdd4Generic is the field's arithmetic: c + Σ a_l·b_l by add and mul.
func TestMulAdd4GenericIsFieldArithmetic(t *testing.T) {
	for i := range 1000 {
		var a [4]elem
		var b [4][]elem
		c := []elem{uniform(hash(3, uint64(i)))}
		if i%10 == 0 {
			c[0] = elem{modP - 1, modQ - 1}
		}
		want := c[0]
		for l := range 4 {
			a[l] = uniform(hash(4, uint64(4*i+l)))
			b[l] = []elem{uniform(hash(5, uint64(4*i+l)))}
			if i%10 == 0 {
				a[l], b[l][0] = elem{modP - 1, modQ - 1}, elem{modP - 1, modQ - 1}
			}
			want = want.add(a[l].mul(b[l][0]))
		}
		mulAdd4Generic(c, b[0], b[1], b[2], b[3], &a)
		if c[0] != want {
			t.Fatalf("draw %d: %v, want %v", i, c[0], want)
		}
	}
}

// fillUniform (the vector form where the CPU has it) draws what
// trial.input draws, element by element, at every length (in chunks too)
// and for keys whose sums with the stride wrap around.
func TestFillUniformMatchesTheDefinition(t *testing.T) {
	for _, key := range []uint64{0, 1, 12345, ^uint64(0), ^uint64(0) - inputStride + 2, mix(99)} {
		for _, n := range append(seq(41), 2*fillChunk+7) {
			got, want := make([]elem, n), make([]elem, n)
			fillUniform(got, key)
			fillUniformGeneric(want, key)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("key %#x, %d elements: v[%d] = %v, want %v", key, n, i, got[i], want[i])
				}
				if d := uniform(key + uint64(i)*inputStride); want[i] != d {
					t.Fatalf("key %#x: generic v[%d] = %v, uniform gives %v", key, i, want[i], d)
				}
			}
		}
	}
}

// seq is 0, 1, ..., n-1.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
