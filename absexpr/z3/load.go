//go:build cgo

package z3

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"unsafe"
)

// defaultLibraries are tried in order when EnvLibrary is not set.
var defaultLibraries = []string{"libz3.so.4", "libz3.so"}

func load() {
	candidates := defaultLibraries
	if p := os.Getenv(EnvLibrary); p != "" {
		candidates = []string{p}
	}
	lib.path, lib.version, lib.err = open(candidates)
}

// open loads the first of candidates that dlopen accepts and that has every
// symbol the binding uses.
func open(candidates []string) (path, version string, err error) {
	var tried []string
	for _, path := range candidates {
		cpath := C.CString(path)
		msg := C.mz_open(cpath)
		C.free(unsafe.Pointer(cpath))
		if msg == nil {
			var major, minor, build, rev C.uint
			C.mz_version(&major, &minor, &build, &rev)
			return path, fmt.Sprintf("%d.%d.%d.%d", major, minor, build, rev), nil
		}
		tried = append(tried, C.GoString(msg))
	}
	msg := "libz3 not found: install libz3-4 / libz3-dev (apt-get install libz3-dev)"
	if os.Getenv(EnvLibrary) == "" {
		msg += " or set " + EnvLibrary + " to its path"
	}
	return "", "", &unavailableError{msg + " (" + strings.Join(tried, "; ") + ")"}
}
