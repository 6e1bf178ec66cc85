//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on directory dir, held until unlock (or
// the process ends), waiting for another holder to let go.
func lockDir(dir string) (unlock func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		d.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
		d.Close()
	}, nil
}
