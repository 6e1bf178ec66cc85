package cuda

import (
	"slices"
	"testing"
)

func TestMergeLinks(t *testing.T) {
	for _, tt := range []struct{ links, more, want []string }{
		{nil, nil, nil},
		{nil, []string{"cublasLt"}, []string{"cublasLt"}},
		{[]string{"cublasLt"}, []string{"cublasLt", "cudnn", "cudnn"}, []string{"cublasLt", "cudnn"}},
	} {
		if got := MergeLinks(slices.Clone(tt.links), tt.more...); !slices.Equal(got, tt.want) {
			t.Errorf("MergeLinks(%v, %v) = %v, want %v", tt.links, tt.more, got, tt.want)
		}
	}
}
