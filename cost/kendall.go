package cost

import "math"

// KendallTau is Kendall's rank correlation (tau-b, which allows ties)
// between paired observations a[i], b[i]: 1 when both order the items
// alike, -1 when they order them oppositely. Use it to report how well the
// model's order of candidates matches measured times.
//
// It returns NaN when there are fewer than two pairs or one side is
// constant, and panics if the lengths differ. It compares every pair:
// O(n²), fine for the thousands of candidates a search ranks.
func KendallTau(a, b []float64) float64 {
	if len(a) != len(b) {
		panic("cost.KendallTau: slices of different lengths")
	}
	var concordant, discordant, tiesA, tiesB float64 // tiesA: tied in a only
	for i := range a {
		for j := i + 1; j < len(a); j++ {
			da, db := sign(a[i]-a[j]), sign(b[i]-b[j])
			switch {
			case da == 0 && db == 0:
			case da == 0:
				tiesA++
			case db == 0:
				tiesB++
			case da == db:
				concordant++
			default:
				discordant++
			}
		}
	}
	// tau-b = (C - D) / sqrt((C + D + ties only in a) (C + D + ties only in b))
	n := concordant + discordant
	den := math.Sqrt((n + tiesA) * (n + tiesB))
	if den == 0 {
		return math.NaN()
	}
	return (concordant - discordant) / den
}

func sign(x float64) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}
