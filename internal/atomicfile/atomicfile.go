// Package atomicfile writes files so that readers see either the old
// contents or the new ones, never a partial file: the data goes to a
// temporary file in the same directory, which is synced and then renamed
// over the destination. On any error the temporary file is removed and the
// destination is left as it was.
package atomicfile

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mirage-go/mirage/internal/boundedread"
)

// WriteFile writes data to path atomically, like os.WriteFile. The file gets
// mode perm exactly (the umask does not apply).
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// pending are the temporary files of the Writes in progress.
var pending = tempFiles{paths: map[string]bool{}}

type tempFiles struct {
	sync.Mutex
	paths map[string]bool
}

func (t *tempFiles) add(path string) { t.Lock(); t.paths[path] = true; t.Unlock() }

func (t *tempFiles) remove(path string) { t.Lock(); delete(t.paths, path); t.Unlock() }

// RemovePending removes the temporary files of the Writes in progress, for
// a process about to exit at once (a second interrupt): a Write's file is
// otherwise left beside its destination, where no later Write of another
// name removes it (a Set's next Write removes its own).
func RemovePending() {
	pending.Lock()
	defer pending.Unlock()
	for path := range pending.paths {
		os.Remove(path)
	}
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
	pending.add(tmp)
	committed := false
	defer func() {
		// Runs on errors and on panics in write alike.
		if !committed {
			f.Close()
			os.Remove(tmp)
		}
		pending.remove(tmp)
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

// File is one file of a set: its name in the set's directory and its
// contents.
type File struct {
	Name string
	Data []byte
}

// ManifestSuffix ends the name of a set's manifest: a set finds the other
// sets of its directory by it.
const ManifestSuffix = ".manifest.json"

// Set is a set of files written together into one directory.
type Set struct {
	Dir   string
	Files []File
	// Manifest, the name of a file listing the set's files with their
	// SHA-256 sums, ends in ManifestSuffix; "": no manifest.
	Manifest string
	// Owner is what the set was written for (a program's name), recorded in
	// the manifest: a set of another owner under the same manifest is not
	// replaced. "": none recorded, and none checked.
	Owner string
	// Keep: the files the set's previous manifest lists that Files does
	// not hold, where they are still as listed, stay in the set (written
	// again as they are): a write that replaces part of a set, as emit
	// replaces the CUDA beside superopt's document, leaves the rest
	// listed.
	Keep bool
	// Drop: the files the set's previous manifest lists that Files does
	// not hold are removed once the new manifest is in place, but for
	// those another manifest in the directory lists (a runtime header
	// sets share): a set written again without some of its files (superopt
	// --no-emit after a run that wrote CUDA) leaves none of them stale
	// beside it.
	Drop bool
}

// WriteSet writes files into dir as one set, with manifest listing them
// (Set.Write).
func WriteSet(dir string, files []File, manifest string) error {
	return Set{Dir: dir, Files: files, Manifest: manifest}.Write()
}

// Write writes the set: every file goes to a temporary file first, so that
// an error (a full disk) leaves the previous set as it was and no
// temporary file behind; only when all are written are the files in place
// backed up, the old manifest removed, the files renamed into place, and
// the new manifest written. A rename that fails midway is rolled back:
// after any error the previous set is whole, its manifest included. And
// wherever a process is killed, a manifest that exists lists files that
// match it: a reader that finds one has a whole set. Temporary files that
// a killed Write left for these names are removed first. Writes into one
// directory from several processes take turns (a lock on the directory),
// so that one's manifest never lists another's files.
//
// A set with a manifest never takes another's files: when another
// manifest in the directory lists one of its files with other contents, or
// its manifest exists and was written for another owner, Write writes
// nothing and returns a *ConflictError.
func (s Set) Write() error {
	dir, files, manifest := s.Dir, s.Files, s.Manifest
	// The lock covers the whole write: another process's cleanup must not
	// take this one's temporary files for stale ones.
	unlock, err := lockDir(dir)
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	defer unlock()
	if manifest != "" {
		if err := s.conflicts(); err != nil {
			return err
		}
		if s.Keep {
			files = append(slices.Clone(files), s.kept()...)
		}
	}
	var dropped []string
	if manifest != "" && s.Drop {
		dropped = s.dropped()
	}
	names := make([]string, 0, len(files)+1)
	for _, f := range files {
		names = append(names, f.Name)
	}
	if manifest != "" {
		names = append(names, manifest)
	}
	for _, name := range names {
		// A killed Write's temporary files and backups.
		stale, _ := matching(dir, func(n string) bool {
			return strings.HasPrefix(n, "."+name+".tmp-") || strings.HasPrefix(n, "."+name+".old-")
		})
		for _, s := range stale {
			os.Remove(s)
		}
	}
	// Every byte is written (the manifest too) before anything in place
	// changes: a full disk fails here, with the previous set whole.
	all := slices.Clone(files)
	if manifest != "" {
		sums := make([]setEntry, 0, len(files))
		for _, f := range files {
			sums = append(sums, setEntry{Name: f.Name, SHA256: sum(f.Data)})
		}
		data, err := json.MarshalIndent(setManifest{Owner: s.Owner, Files: sums}, "", "  ")
		if err != nil {
			return err
		}
		all = append(all, File{Name: manifest, Data: append(data, '\n')})
	}
	tmps := make([]string, 0, len(all))
	defer func() {
		for _, t := range tmps {
			if t != "" { // not renamed: after an error
				os.Remove(t)
			}
		}
	}()
	for _, f := range all {
		tmp, err := writeTemp(dir, f.Name, f.Data)
		if err != nil {
			return err
		}
		tmps = append(tmps, tmp)
		step()
	}
	// What is in place is backed up before anything changes, so that a
	// rename that fails midway (an immutable file, an I/O error) is rolled
	// back: every error leaves the previous set whole, not only a full
	// disk's. A destination that cannot be replaced fails here.
	dests := make([]string, len(all))
	backups := make([]string, len(all)) // "": nothing in place
	keep := make([]bool, len(all))      // a backup a failed rollback still needs
	defer func() {
		for i, b := range backups {
			if b != "" && !keep[i] {
				os.Remove(b)
			}
		}
	}()
	for i, f := range all {
		dests[i] = filepath.Join(dir, f.Name)
		fi, err := os.Lstat(dests[i])
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("atomicfile: %w", err)
		}
		if fi.IsDir() {
			return fmt.Errorf("atomicfile: %s is a directory", dests[i])
		}
		if backups[i], err = backup(dir, f.Name, fi); err != nil {
			return fmt.Errorf("atomicfile: cannot replace %s: %v", dests[i], err)
		}
	}
	if manifest != "" {
		if err := fsops.remove(dests[len(all)-1]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("atomicfile: %w", err)
		}
		step()
		if err := syncDir(dir); err != nil {
			return s.rollback(err, 0, dests, backups, keep)
		}
	}
	for i, tmp := range tmps { // the manifest last
		if err := fsops.rename(tmp, dests[i]); err != nil {
			return s.rollback(fmt.Errorf("atomicfile: %w", err), i, dests, backups, keep)
		}
		tmps[i] = ""
		step()
	}
	// The new set is whole; what it dropped is listed nowhere now.
	for _, name := range dropped {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("atomicfile: the set is written, but %s, of its previous one, could not be removed: %w", name, err)
		}
	}
	return syncDir(dir)
}

// left are the entries of the set's previous manifest that s.Files does
// not hold (but its manifest itself, and names outside the directory,
// which are no files of the set's): what Keep keeps and Drop removes.
func (s Set) left() []setEntry {
	own, err := readManifest(filepath.Join(s.Dir, s.Manifest))
	if err != nil {
		return nil
	}
	var left []setEntry
	for _, e := range own.Files {
		if e.Name != s.Manifest && filepath.Base(e.Name) == e.Name &&
			!slices.ContainsFunc(s.Files, func(f File) bool { return f.Name == e.Name }) {
			left = append(left, e)
		}
	}
	return left
}

// dropped are the files left from the set's previous manifest (left) that
// no other manifest in the directory lists (Set.Drop).
func (s Set) dropped() []string {
	others, _ := matching(s.Dir, isManifest)
	listed := map[string]bool{}
	for _, path := range others {
		if filepath.Base(path) == s.Manifest {
			continue
		}
		if m, err := readManifest(path); err == nil {
			for _, e := range m.Files {
				listed[e.Name] = true
			}
		}
	}
	var names []string
	for _, e := range s.left() {
		if !listed[e.Name] {
			names = append(names, e.Name)
		}
	}
	return names
}

// kept are the files left from the set's previous manifest (left) that
// are still as it lists them (Set.Keep).
func (s Set) kept() []File {
	var files []File
	for _, e := range s.left() {
		data, err := boundedread.ReadFile(filepath.Join(s.Dir, e.Name), MaxSetFileSize)
		if err == nil && sum(data) == e.SHA256 {
			files = append(files, File{Name: e.Name, Data: data})
		}
	}
	return files
}

// rollback undoes a Write that failed with err after renaming its first
// done files into place: each goes back to its backup, or away where
// nothing was in place, and the previous manifest, removed first, comes
// back last. It returns err, with what could not be undone.
func (s Set) rollback(err error, done int, dests, backups []string, keep []bool) error {
	var failed []error
	restore := func(i int) {
		if backups[i] == "" {
			if e := fsops.remove(dests[i]); e != nil && !errors.Is(e, fs.ErrNotExist) {
				failed = append(failed, e)
			}
			return
		}
		if e := fsops.rename(backups[i], dests[i]); e != nil {
			failed = append(failed, e)
			keep[i] = true // the only copy of what was in place
			return
		}
		backups[i] = ""
	}
	for i := done - 1; i >= 0; i-- {
		restore(i)
	}
	if m := len(dests) - 1; s.Manifest != "" && done <= m && backups[m] != "" {
		restore(m)
	}
	syncDir(s.Dir)
	if len(failed) > 0 {
		return fmt.Errorf("%w; restoring the previous set failed too (%v): the files in place before are kept as .NAME.old-*", err, errors.Join(failed...))
	}
	return fmt.Errorf("%w (the previous set is left as it was)", err)
}

// backup keeps the file in place for name (fi its Lstat) under a hidden
// name beside it, and returns that name: a hard link, or where the file
// system has none, a copy.
func backup(dir, name string, fi fs.FileInfo) (string, error) {
	dest := filepath.Join(dir, name)
	for range 10 {
		b := filepath.Join(dir, fmt.Sprintf(".%s.old-%d", name, rand.Uint32()))
		err := fsops.link(dest, b)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	switch mode := fi.Mode(); {
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(dest)
		if err != nil {
			return "", err
		}
		b := filepath.Join(dir, fmt.Sprintf(".%s.old-%d", name, rand.Uint32()))
		return b, os.Symlink(target, b)
	case mode.IsRegular():
		data, err := boundedread.ReadFile(dest, MaxSetFileSize)
		if err != nil {
			return "", err
		}
		return syncedTemp(dir, "."+name+".old-*", data, mode.Perm())
	}
	return "", fmt.Errorf("%s (%v) cannot be backed up", dest, fi.Mode().Type())
}

// fsops are the calls by which Write changes what is in place; tests
// replace them to fail at a chosen call.
var fsops = struct {
	rename func(from, to string) error
	link   func(from, to string) error
	remove func(name string) error
}{os.Rename, os.Link, os.Remove}

func sum(data []byte) string { return fmt.Sprintf("%x", sha256.Sum256(data)) }

// ConflictError is a set that would take another set's files, or replace
// a set written for another owner.
type ConflictError struct {
	Dir      string
	Files    []string // the files of the set written that the other set lists
	Manifest string   // the other set's manifest
	Owner    string   // the other set's owner, if recorded
}

func (e *ConflictError) Error() string {
	other := "the set of " + e.Manifest
	if e.Owner != "" {
		other = fmt.Sprintf("%s's set (%s)", e.Owner, e.Manifest)
	}
	if len(e.Files) == 0 {
		return fmt.Sprintf("%s is the manifest of %s's set", filepath.Join(e.Dir, e.Manifest), e.Owner)
	}
	return fmt.Sprintf("%s in %s belong%s to %s", strings.Join(e.Files, " and "), e.Dir, map[bool]string{false: "s"}[len(e.Files) > 1], other)
}

// Conflicts reports what Write would refuse for the set: a *ConflictError,
// or nil. A file whose Data is nil is taken to differ from any contents:
// a run checks its output directory this way before it has the files.
func (s Set) Conflicts() error {
	return s.conflicts()
}

func (s Set) conflicts() error {
	// A missing or damaged manifest of the set's own name is the set's to
	// write.
	if own, err := readManifest(filepath.Join(s.Dir, s.Manifest)); err == nil && own.Owner != "" && s.Owner != "" && own.Owner != s.Owner {
		return &ConflictError{Dir: s.Dir, Manifest: s.Manifest, Owner: own.Owner}
	}
	others, err := matching(s.Dir, isManifest)
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	for _, path := range others {
		name := filepath.Base(path)
		if name == s.Manifest {
			continue
		}
		m, err := readManifest(path)
		if err != nil {
			continue // not a manifest of ours, or damaged: it lists nothing
		}
		listed := map[string]string{}
		for _, e := range m.Files {
			listed[e.Name] = e.SHA256
		}
		var taken []string
		for _, f := range s.Files {
			if want, ok := listed[f.Name]; ok && (f.Data == nil || sum(f.Data) != want) {
				taken = append(taken, f.Name)
			}
		}
		if len(taken) > 0 {
			return &ConflictError{Dir: s.Dir, Files: taken, Manifest: name, Owner: m.Owner}
		}
	}
	return nil
}

// readManifest reads and decodes a manifest.
func readManifest(path string) (*setManifest, error) {
	data, err := boundedread.ReadFile(path, MaxManifestSize)
	if err != nil {
		return nil, err
	}
	var m setManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Base(path), err)
	}
	return &m, nil
}

// SlowSteps, when not zero, is a pause after each step of WriteSet (a
// file written, the old manifest removed, a file renamed): fault-injection
// tests set it to kill a process between steps.
var SlowSteps time.Duration

func step() {
	if SlowSteps > 0 {
		time.Sleep(SlowSteps)
	}
}

// The most CheckSet reads of a manifest, and of each file it lists.
const (
	MaxManifestSize = 16 << 20
	MaxSetFileSize  = 1 << 30
)

// CheckSet checks the set whose manifest is dir/manifest: every file it
// lists is there with the listed sum. It returns the files' names, or an
// error wrapping fs.ErrNotExist when there is no manifest (no whole set).
func CheckSet(dir, manifest string) ([]string, error) {
	m, err := readManifest(filepath.Join(dir, manifest))
	if err != nil {
		return nil, fmt.Errorf("atomicfile: %w", err)
	}
	var names []string
	for _, e := range m.Files {
		got, err := boundedread.ReadFile(filepath.Join(dir, e.Name), MaxSetFileSize)
		if err != nil {
			// %v: a listed file that is missing is a broken set, not a
			// missing one.
			return nil, fmt.Errorf("atomicfile: %s lists %s: %v", manifest, e.Name, err)
		}
		if sum(got) != e.SHA256 {
			return nil, fmt.Errorf("atomicfile: %s does not match %s", e.Name, manifest)
		}
		names = append(names, e.Name)
	}
	return names, nil
}

// setManifest is a manifest's contents.
type setManifest struct {
	Owner string     `json:"owner,omitempty"`
	Files []setEntry `json:"files"`
}

type setEntry struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// writeTemp writes data to a synced temporary file for name in dir and
// returns its path.
func writeTemp(dir, name string, data []byte) (string, error) {
	path, err := syncedTemp(dir, "."+name+".tmp-*", data, 0o644)
	if err != nil {
		return "", fmt.Errorf("atomicfile: writing %s: %w", filepath.Join(dir, name), err)
	}
	return path, nil
}

// syncedTemp writes data to a new file in dir named after pattern
// (os.CreateTemp's), with mode perm, synced, and returns its path; on an
// error it leaves nothing behind.
func syncedTemp(dir, pattern string, data []byte, perm fs.FileMode) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// matching returns the paths of dir's entries whose names match, sorted; none
// where dir does not exist. Names are matched, not globbed: a directory
// named out[x] is a name, not a pattern.
func matching(dir string, match func(name string) bool) ([]string, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var paths []string
	for _, de := range des {
		if match(de.Name()) {
			paths = append(paths, filepath.Join(dir, de.Name()))
		}
	}
	return paths, err
}

func isManifest(name string) bool { return strings.HasSuffix(name, ManifestSuffix) }
