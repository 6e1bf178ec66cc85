// Package boundedread reads the files mirage is given, and every other
// file it reads: each read is capped at a size its caller chooses, and
// only regular files are read, so that a symbolic link to /dev/zero, a
// FIFO or a directory named as an input is an error at once rather than a
// read that grows without end or never returns.
package boundedread

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// TooLargeError is the error for a file larger than the limit its reader
// gave.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %s, the most mirage reads of such a file", e.Path, Size(e.Limit))
}

// NotRegularError is the error for a path that names something other than
// a regular file (after symbolic links): a directory, a FIFO, a device.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: not a regular file (%s)", e.Path, kind(e.Mode))
}

// kind names what a non-regular file is.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// ErrEmptyPath is the error for a path that is the empty string.
var ErrEmptyPath = errors.New("the path is empty")

// Open opens the regular file at path for reading at most limit bytes:
// reading more is a *TooLargeError. A path that names anything but a
// regular file is a *NotRegularError; the open does not block, even on a
// FIFO that no one writes.
func Open(path string, limit int64) (io.ReadCloser, error) {
	if path == "" {
		return nil, ErrEmptyPath
	}
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
	// writer. It changes nothing for the regular files read past the check.
	f, err := os.OpenFile(path, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	if fi.Size() > limit {
		f.Close()
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return &capped{f: f, path: path, limit: limit, left: limit}, nil
}

// ReadFile returns the contents of the regular file at path, as Open
// reads it: at most limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	r, err := Open(path, limit)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// capped reads a file and fails once it has given limit bytes and more
// follow: a file that grows after its size was checked, or one whose size
// the system does not know (those of /proc say 0).
type capped struct {
	f     *os.File
	path  string
	limit int64
	left  int64 // bytes still allowed
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a file of exactly the limit from a larger one.
		var one [1]byte
		n, err := c.f.Read(one[:])
		if n > 0 {
			return 0, &TooLargeError{Path: c.path, Limit: c.limit}
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.f.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *capped) Close() error { return c.f.Close() }

// Size prints a byte count as its largest whole binary unit: 64 MiB.
func Size(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
