//go:build !unix

package atomicfile

// lockDir does nothing where flock is not available: concurrent WriteSets
// into one directory are then the caller's business.
func lockDir(string) (func(), error) { return func() {}, nil }
