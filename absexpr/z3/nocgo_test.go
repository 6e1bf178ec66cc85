//go:build !cgo

package z3

import (
	"errors"
	"strings"
	"testing"
)

func TestWithoutCgo(t *testing.T) {
	err := Available()
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("Available() = %v; want it to explain that this build has no cgo", err)
	}
	if _, err := NewContext(); err == nil {
		t.Error("NewContext succeeded without cgo")
	}
}
