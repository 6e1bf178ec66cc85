// Package atomicfile writes files so that readers see either the old
// contents or the new ones, never a partial file: the data goes to a
// temporary file in the same directory, which is synced and then renamed
// over the destination. On any error the temporary file is removed and the
// destination is left as it was.
package atomicfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// WriteFile writes data to path atomically, like os.WriteFile. The file gets
// mode perm exactly (the umask does not apply).
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write calls write with a writer on a temporary file beside path and, if
// write succeeds, replaces path with that file. write must not keep w.
func Write(path string, perm fs.FileMode, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// The temporary file lives in the destination's directory so that the
	// rename stays on one file system, where it is atomic.
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	tmp := f.Name()
	committed := false
	defer func() {
		// Runs on errors and on panics in write alike.
		if !committed {
			f.Close()
			os.Remove(tmp)
		}
	}()

	if err := write(f); err != nil {
		return fmt.Errorf("atomicfile: writing %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	// Without the sync, a crash soon after the rename can leave an empty or
	// partial file under the new name on some file systems.
	if err := f.Sync(); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	committed = true
	return syncDir(dir)
}

// syncDir makes a rename in dir durable. Windows cannot sync a directory;
// there the rename is as durable as the file system makes it.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("atomicfile: syncing directory %s: %w", dir, err)
	}
	return nil
}
