package boundedread

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	small := write("small.json", "12345")
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		path  string
		limit int64
		want  string // the contents, when the read succeeds
		err   string // else a part of the error
		check func(error) bool
	}{
		{name: "under the limit", path: small, limit: 6, want: "12345"},
		{name: "at the limit", path: small, limit: 5, want: "12345"},
		{name: "over the limit", path: small, limit: 4, err: "larger than 4 bytes",
			check: func(err error) bool { var e *TooLargeError; return errors.As(err, &e) }},
		{name: "empty file", path: write("empty", ""), limit: 0, want: ""},
		{name: "/dev/zero", path: "/dev/zero", limit: 1 << 20, err: "/dev/zero: not a regular file (a character device)"},
		{name: "a link to /dev/zero", path: zero, limit: 1 << 20, err: "zero.json: not a regular file (a character device)"},
		{name: "a FIFO no one writes", path: fifo, limit: 1 << 20, err: "fifo.json: not a regular file (a named pipe)",
			check: func(err error) bool { var e *NotRegularError; return errors.As(err, &e) }},
		{name: "a directory", path: dir, limit: 1 << 20, err: "not a regular file (a directory)"},
		{name: "missing", path: filepath.Join(dir, "nope"), limit: 1, err: "nope",
			check: func(err error) bool { return errors.Is(err, fs.ErrNotExist) }},
		{name: "empty path", path: "", limit: 1, err: "the path is empty",
			check: func(err error) bool { return errors.Is(err, ErrEmptyPath) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadFile(tt.path, tt.limit)
			if tt.err == "" {
				if err != nil || string(got) != tt.want {
					t.Fatalf("got %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("got %q, %v; want an error with %q", got, err, tt.err)
			}
			if tt.check != nil && !tt.check(err) {
				t.Errorf("error %v (%T) is not of the kind wanted", err, err)
			}
		})
	}
}

// A file whose size the system reports as 0 (those of /proc) is read to
// its end, and still capped.
func TestReadFileOfUnknownSize(t *testing.T) {
	data, err := ReadFile("/proc/self/status", 1<<20)
	if err != nil || !bytes.Contains(data, []byte("Name:")) {
		t.Fatalf("/proc/self/status: %q, %v", data, err)
	}
	if _, err := ReadFile("/proc/self/status", 10); err == nil || !strings.Contains(err.Error(), "larger than 10 bytes") {
		t.Fatalf("/proc/self/status capped at 10 bytes: %v", err)
	}
}

// A file that grows after Open checked its size is cut at the limit, with
// an error.
func TestReadGrowingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "grows")
	os.WriteFile(p, []byte("abc"), 0o644)
	r, err := Open(p, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	os.WriteFile(p, []byte("abcdefgh"), 0o644)
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r); err == nil || !strings.Contains(err.Error(), "larger than 4 bytes") {
		t.Fatalf("read %q, %v; want the limit's error", buf.String(), err)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1000: "1000 bytes", 1 << 20: "1 MiB", 64 << 20: "64 MiB", 3 << 30: "3 GiB", 1<<20 + 1: "1048577 bytes"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzReadFile: whatever a file holds and whatever the limit, the read
// gives the contents exactly when they fit, and the limit's error
// otherwise.
func FuzzReadFile(f *testing.F) {
	f.Add([]byte("hello"), int64(5))
	f.Add([]byte("hello"), int64(4))
	f.Add([]byte{}, int64(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, limit int64) {
		if limit < 0 {
			limit = -limit
		}
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(p, limit)
		if int64(len(data)) <= limit {
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%d bytes, limit %d: %v", len(data), limit, err)
			}
			return
		}
		var e *TooLargeError
		if !errors.As(err, &e) {
			t.Fatalf("%d bytes, limit %d: got %d bytes, %v", len(data), limit, len(got), err)
		}
	})
}
