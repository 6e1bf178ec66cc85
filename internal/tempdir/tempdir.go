// Package tempdir makes the temporary directories a command builds in
// (a tune run's timing program, verify's emulated build), so that a
// process that exits at once, on a second interrupt, still removes them:
// a deferred cleanup does not run past os.Exit.
package tempdir

import (
	"os"
	"sync"
)

var live = struct {
	sync.Mutex
	dirs map[string]bool
}{dirs: map[string]bool{}}

// Make makes a new directory as os.MkdirTemp("", pattern) does and returns
// it with the function that removes it and all it holds. Until then,
// RemoveAll removes it too.
func Make(pattern string) (dir string, remove func(), err error) {
	dir, err = os.MkdirTemp("", pattern)
	if err != nil {
		return "", nil, err
	}
	live.Lock()
	live.dirs[dir] = true
	live.Unlock()
	var once sync.Once
	return dir, func() {
		once.Do(func() {
			live.Lock()
			delete(live.dirs, dir)
			live.Unlock()
			os.RemoveAll(dir)
		})
	}, nil
}

// RemoveAll removes every directory Make made that its own remove has not:
// for a process about to exit without running its deferred calls.
func RemoveAll() {
	live.Lock()
	defer live.Unlock()
	for dir := range live.dirs {
		os.RemoveAll(dir)
	}
	clear(live.dirs)
}
