package driver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/templates"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Output says where a Result is written and what goes with it.
type Output struct {
	Dir  string // made if need be
	Name string // the files are Name.ugraph.json, Name.cu, Name.h, Name.manifest.json
	Meta any    // the μGraph document's "meta", if not nil
	// CUDA, unless nil, has the best candidate that lowers written as CUDA
	// beside the μGraph.
	CUDA *cuda.Options
	Warn func(string) // told of candidates that do not lower; may be nil
}

// Written says what Write wrote.
type Written struct {
	Graph     string   // the .ugraph.json's path
	Candidate int      // whose CUDA was written; -1: none
	CUDA      []string // the CUDA files' paths
}

// CheckOutputDir makes dir if need be and checks that files can be made in
// it: a run checks this before its search, not after.
func CheckOutputDir(dir string) error {
	top := topMissing(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if top != "" {
		made.Lock()
		made.dirs = append(made.dirs, madeDir{dir, top})
		made.Unlock()
	}
	probe, err := os.CreateTemp(dir, ".mirage-probe-*")
	if err != nil {
		return err
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// made are the output directories CheckOutputDir made, so that a process
// that exits at once (a second interrupt) takes away those it left empty.
var made struct {
	sync.Mutex
	dirs []madeDir
}

// madeDir is a directory made with its missing parents, top the highest.
type madeDir struct{ dir, top string }

// topMissing is the highest of dir and its parents that does not exist;
// "" when dir does.
func topMissing(dir string) string {
	top := ""
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			return top
		}
		top = d
		if filepath.Dir(d) == d {
			return top
		}
	}
}

// RemoveMadeDirs removes the directories CheckOutputDir made that are
// still empty, each with the parents it made that are left empty: a
// command that ends having written nothing there (a failure, a shard
// interrupted) leaves no directory behind.
func RemoveMadeDirs() {
	made.Lock()
	defer made.Unlock()
	for _, m := range made.dirs {
		for d := m.dir; os.Remove(d) == nil && d != m.top; d = filepath.Dir(d) {
		}
	}
	made.dirs = nil
}

// Check checks, before a run, that out can be written: its directory (as
// CheckOutputDir), and that its files are not another set's. Two programs
// whose names a C identifier reads alike (my-layer and my_layer; 日本 and
// 中文, both __) write the same CUDA files: the second is refused here,
// rather than overwriting the first's after its search.
func (out Output) Check() error {
	if err := CheckOutputDir(out.Dir); err != nil {
		return err
	}
	planned := out.plannedFiles()
	for _, f := range append(planned, atomicfile.File{Name: out.Name + atomicfile.ManifestSuffix}) {
		if fi, err := os.Lstat(filepath.Join(out.Dir, f.Name)); err == nil && fi.IsDir() {
			return fmt.Errorf("%s is a directory: the run writes a file there", filepath.Join(out.Dir, f.Name))
		}
	}
	if err := caseTwin(out.Dir, out.Name); err != nil {
		return err
	}
	return explainConflict(out.set(planned).Conflicts(), out.Name)
}

// caseTwin refuses a set named name in dir beside another program's whose
// C name differs from name's only in case (Layer and layer): their
// headers' guards and macros (MIRAGE_LAYER_H, MIRAGE_LAYER_M_MAX) are one,
// so a caller that includes both silently gets one, and a file system
// that ignores case would take one set's files for the other's (found by
// review).
func caseTwin(dir, name string) error {
	manifests, err := filepath.Glob(filepath.Join(dir, "*"+atomicfile.ManifestSuffix))
	if err != nil {
		return nil
	}
	c := cuda.Sanitize(name)
	for _, m := range manifests {
		other := strings.TrimSuffix(filepath.Base(m), atomicfile.ManifestSuffix)
		if oc := cuda.Sanitize(other); oc != c && strings.EqualFold(oc, c) {
			return fmt.Errorf("%s: %s's set is there, whose C name differs from %s's only in case: their headers would share the macros MIRAGE_%s_*; write %s to another directory, or name it otherwise (--name)",
				dir, other, name, strings.ToUpper(c), name)
		}
	}
	return nil
}

// plannedFiles are the files out will hold, their contents unknown but
// the runtime header's, which every set shares.
func (out Output) plannedFiles() []atomicfile.File {
	files := []atomicfile.File{{Name: out.Name + ".ugraph.json"}}
	if out.CUDA != nil {
		c := cuda.Sanitize(out.Name)
		files = append(files, atomicfile.File{Name: c + ".cu"}, atomicfile.File{Name: c + ".h"},
			atomicfile.File{Name: templates.RuntimeName, Data: []byte(templates.Runtime)})
	}
	return files
}

// set is the output set of files, owned by the program's name; it
// replaces the program's previous set whole (a run with --no-emit leaves
// no CUDA of an earlier run beside its document).
func (out Output) set(files []atomicfile.File) atomicfile.Set {
	return atomicfile.Set{Dir: out.Dir, Files: files, Manifest: out.Name + atomicfile.ManifestSuffix, Owner: out.Name, Drop: true}
}

// explainConflict says what to do when a set would take another's files.
func explainConflict(err error, name string) error {
	var c *atomicfile.ConflictError
	if !errors.As(err, &c) {
		return err
	}
	if olderRuntime(c) {
		return olderRuntimeError(c, name)
	}
	return fmt.Errorf("%v: %s would overwrite another program's output (names that differ only in characters a C identifier cannot hold share the CUDA files' names); write it to another directory, or remove that set first", err, name)
}

// olderRuntime reports whether the one file c's set would take is the
// runtime header every set shares: the other set was written by a build
// of mirage whose runtime differs (found by review: the error blamed the
// programs' names, and after an upgrade no set could be written there).
func olderRuntime(c *atomicfile.ConflictError) bool {
	return len(c.Files) == 1 && c.Files[0] == templates.RuntimeName
}

func olderRuntimeError(c *atomicfile.ConflictError, name string) error {
	return fmt.Errorf("%v, written by another build of mirage, whose runtime header differs from this one's (a set's CUDA and its header go together): write %s to another directory, or remove the other build's sets there first", c, name)
}

// Write writes r's candidates as a μGraph document and the best one's CUDA
// as one set (atomicfile.WriteSet): NAME.manifest.json, written last, lists
// the files with their sums. On an error (a full disk) the previous set is
// left as it was.
func (r *Result) Write(out Output) (*Written, error) {
	file, err := r.File(out.Name, out.Meta)
	if err != nil {
		return nil, err
	}
	w := &Written{Candidate: -1}
	var code *cuda.Result
	for i, c := range r.Candidates {
		if out.CUDA == nil {
			break
		}
		res, err := cuda.Emit(out.Name, c.Graph, *out.CUDA)
		if err != nil {
			if out.Warn != nil {
				out.Warn(fmt.Sprintf("candidate %d: no CUDA: %v", i, err))
			}
			continue
		}
		w.Candidate, code = i, res
		break
	}
	if w.Graph, w.CUDA, err = out.write(file, code); err != nil {
		return nil, err
	}
	return w, nil
}

// write writes file as NAME.ugraph.json and code's files (if not nil)
// beside it, as one set (atomicfile.WriteSet), and returns their paths.
func (out Output) write(file *kernel.File, code *cuda.Result) (graph string, cudaFiles []string, err error) {
	var data bytes.Buffer
	if err := file.Encode(&data); err != nil {
		return "", nil, err
	}
	files := []atomicfile.File{{Name: out.Name + ".ugraph.json", Data: data.Bytes()}}
	if code != nil {
		for _, f := range code.Files {
			files = append(files, atomicfile.File{Name: f.Name, Data: f.Data})
			cudaFiles = append(cudaFiles, filepath.Join(out.Dir, f.Name))
		}
	}
	if err := os.MkdirAll(out.Dir, 0o755); err != nil {
		return "", nil, err
	}
	if err := out.set(files).Write(); err != nil {
		var c *atomicfile.ConflictError
		if errors.As(err, &c) {
			return "", nil, explainConflict(err, out.Name)
		}
		return "", nil, fmt.Errorf("writing the result: %v", err)
	}
	return filepath.Join(out.Dir, out.Name+".ugraph.json"), cudaFiles, nil
}
