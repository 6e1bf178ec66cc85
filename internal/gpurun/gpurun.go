// Package gpurun reads the runs of bench/gpu that calibrate the cost
// model: cost/testdata/GPU-DATE-COMMIT, a directory a run, which
// bench/gpu/measured.py writes. A run holds
//
//   - WORKLOAD.measured.ugraph.json: the graphs it timed, each with
//     meta.measured_us; the document's meta.arch names the target they
//     were emitted for and timed on;
//   - emitted.txt and runtime.txt: the sums of the code that was measured
//     (codegen/cuda's TestMeasuredCodeIsCurrent records and checks them);
//   - stale.txt: the graphs whose code has changed since, with why;
//   - launch.json, where the launch plan's defaults have changed since
//     the run: the launch.Options that plan the code it measured
//     ({"dependent": "none"} before dependent launches after cuBLASLt
//     calls became the default), so that the code is emitted, and
//     estimated, as it ran.
//
// emitted.txt, runtime.txt and stale.txt are keyed files: lines "WORKLOAD
// INDEX REST", # starting a comment.
package gpurun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mirage-go/mirage/internal/boundedread"
	"github.com/mirage-go/mirage/launch"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Doc is one measured document of a run.
type Doc struct {
	Path     string
	Workload string      // from the file's name
	Arch     target.Arch // meta.arch's target
	File     *kernel.File
	// Launch plans the code the run measured (launch.json; the defaults
	// without one).
	Launch launch.Options
}

// Key is how the keyed files name graph i of the document.
func (d Doc) Key(i int) string { return fmt.Sprintf("%s %d", d.Workload, i) }

// Runs returns the run directories under root (those holding measured
// documents), sorted: within a GPU's name, by date.
func Runs(root string) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "*"))
	if err != nil {
		return nil, err
	}
	dirs = slices.DeleteFunc(dirs, func(d string) bool {
		docs, _ := filepath.Glob(filepath.Join(d, "*.measured.ugraph.json"))
		return len(docs) == 0
	})
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no measured runs under %s", root)
	}
	slices.Sort(dirs)
	return dirs, nil
}

// Docs reads the measured documents of the run in dir, by workload name.
func Docs(dir string) ([]Doc, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.measured.ugraph.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no measured graphs in %s (%v)", dir, err)
	}
	slices.Sort(files)
	opts, err := launchOptions(filepath.Join(dir, "launch.json"))
	if err != nil {
		return nil, err
	}
	docs := make([]Doc, 0, len(files))
	for _, path := range files {
		f, err := kernel.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var meta struct {
			Arch string `json:"arch"`
		}
		if len(f.Meta) > 0 {
			if err := json.Unmarshal(f.Meta, &meta); err != nil {
				return nil, fmt.Errorf("%s: meta: %w", path, err)
			}
		}
		arch, err := target.Lookup(meta.Arch)
		if err != nil {
			return nil, fmt.Errorf("%s: meta.arch: %w", path, err)
		}
		w := strings.TrimSuffix(filepath.Base(path), ".measured.ugraph.json")
		docs = append(docs, Doc{Path: path, Workload: w, Arch: arch, File: f, Launch: opts})
	}
	return docs, nil
}

// launchOptions reads a run's launch.json: {"dependent": NAME}, a
// launch.Dependence's name. No file is the defaults.
func launchOptions(path string) (launch.Options, error) {
	var opts launch.Options
	data, err := boundedread.ReadFile(path, keyedLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return opts, nil
	}
	if err != nil {
		return opts, err
	}
	var doc struct {
		Dependent launch.Dependence `json:"dependent"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return opts, fmt.Errorf("%s: %w", path, err)
	}
	opts.Dependent = doc.Dependent
	return opts, nil
}

// keyedLimit bounds a keyed file: a line of sums per measured graph.
const keyedLimit = 4 << 20

// Keyed reads a keyed file into a map from "WORKLOAD INDEX" to the rest
// of its line; a missing file is empty.
func Keyed(path string) (map[string]string, error) {
	out := map[string]string{}
	data, err := boundedread.ReadFile(path, keyedLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.SplitN(line, " ", 3)
		if len(fs) < 3 {
			return nil, fmt.Errorf("%s: %q: want WORKLOAD INDEX and more", path, line)
		}
		out[fs[0]+" "+fs[1]] = fs[2]
	}
	return out, nil
}
