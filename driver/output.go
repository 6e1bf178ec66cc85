package driver

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/internal/atomicfile"
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	probe, err := os.CreateTemp(dir, ".mirage-probe-*")
	if err != nil {
		return err
	}
	probe.Close()
	return os.Remove(probe.Name())
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
	if err := atomicfile.WriteSet(out.Dir, files, out.Name+".manifest.json"); err != nil {
		return "", nil, fmt.Errorf("writing the result: %v", err)
	}
	return filepath.Join(out.Dir, out.Name+".ugraph.json"), cudaFiles, nil
}
