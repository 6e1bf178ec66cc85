package driver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mirage-go/mirage/frontend"
	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Input is a file a command reads: a program (.py) or a μGraph document
// (.ugraph.json) holding one or more kernel graphs.
type Input struct {
	Path    string
	Name    string
	File    *kernel.File      // the graphs; a program's one
	Program *frontend.Program // set for a .py program
}

// Arch is the target a μGraph document was written for, as superopt
// records it (meta.arch), when it names one of target's: its graphs' tiles
// were placed in that GPU's shared memory and ranked by its cost model.
// False for a program, or a document that names none.
func (in *Input) Arch() (target.Arch, bool) {
	if in.Program != nil || in.File == nil || len(in.File.Meta) == 0 {
		return target.Arch{}, false
	}
	var meta struct {
		Arch string `json:"arch"`
	}
	if json.Unmarshal(in.File.Meta, &meta) != nil || meta.Arch == "" {
		return target.Arch{}, false
	}
	arch, err := target.Lookup(meta.Arch)
	return arch, err == nil
}

// IsProgram says whether path names a program (.py) rather than a μGraph
// document.
func IsProgram(path string) bool { return strings.HasSuffix(path, ".py") }

// Load reads the program or μGraph document at path; a program runs with
// opts.
func Load(path string, opts frontend.Options) (*Input, error) {
	switch {
	case IsProgram(path):
		p, err := frontend.LoadFile(path, opts)
		if err != nil {
			return nil, err
		}
		return programInput(path, p), nil
	case strings.HasSuffix(path, atomicfile.ManifestSuffix):
		// A set's manifest lists files; the graphs are in the set's
		// μGraph document.
		return nil, fmt.Errorf("%s is the manifest of a set of files (their names and sums), not a μGraph document: give the set's NAME.ugraph.json", path)
	case strings.HasSuffix(path, ".json"):
		file, err := kernel.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return documentInput(path, file), nil
	}
	return nil, unknownKind(path)
}

// LoadSource is Load for a file already read: src is the text of path.
func LoadSource(path string, src []byte, opts frontend.Options) (*Input, error) {
	switch {
	case IsProgram(path):
		p, err := frontend.Load(path, src, opts)
		if err != nil {
			return nil, err
		}
		return programInput(path, p), nil
	case strings.HasSuffix(path, ".json"):
		file, err := kernel.Decode(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return documentInput(path, file), nil
	}
	return nil, unknownKind(path)
}

func unknownKind(path string) error {
	return fmt.Errorf("%s: unknown kind of file (want a .py program or a .ugraph.json μGraph file)", path)
}

func programInput(path string, p *frontend.Program) *Input {
	return &Input{Path: path, Name: p.Name, File: kernel.NewFile(p.Name, p.Graph), Program: p}
}

func documentInput(path string, file *kernel.File) *Input {
	name := file.Name
	if name == "" {
		name = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".json"), ".ugraph")
	}
	return &Input{Path: path, Name: name, File: file}
}

// Graph returns the n-th graph of the input (0 for a program).
func (in *Input) Graph(n int) (*kernel.Graph, error) {
	if n < 0 || n >= len(in.File.Graphs) {
		return nil, fmt.Errorf("%s: no candidate %d (the file holds %d graph(s), numbered from 0)", in.Path, n, len(in.File.Graphs))
	}
	return in.File.Graphs[n].Graph, nil
}

// Dynamic is a program with its dynamic rows m marked (DESIGN §9): m's
// range and the buckets that cover it.
type Dynamic struct {
	Program *kernel.Graph
	Lo, Hi  int
	Buckets []int
	// Warnings are what the caller says before it goes on (sharedAtOneRow).
	Warnings []string
}

// MarkDynamic marks m in in's program as the flags --dynamic (specs,
// INPUT:DIM=LO..HI each) and --buckets (sizes; "": the default) say, or
// returns an error naming the program's line of an op that mixes rows.
func (in *Input) MarkDynamic(specs []string, buckets string) (*Dynamic, error) {
	if buckets != "" && len(specs) == 0 {
		return nil, errors.New("--buckets needs --dynamic")
	}
	if in.Program == nil {
		return nil, fmt.Errorf("%s: --dynamic takes a program (.py)", in.Path)
	}
	var flags []DynamicFlag
	for _, s := range specs {
		fl, err := ParseDynamicFlag(s)
		if err != nil {
			return nil, err
		}
		flags = append(flags, fl)
	}
	g, lo, hi, err := MarkDynamic(in.Program.Graph, flags, in.Program.Names, in.Program.Computed)
	if de, ok := errors.AsType[*kernel.DynamicError](err); ok {
		op := &in.Program.Graph.Ops[de.Op]
		line := 0
		if len(op.Out) > 0 && int(op.Out[0]) < len(in.Program.Lines) {
			line = in.Program.Lines[op.Out[0]]
		}
		return nil, fmt.Errorf("%s:%d: --dynamic %s: %v", in.Path, line, strings.Join(specs, " --dynamic "), de.Err)
	}
	if err != nil {
		return nil, err
	}
	d := &Dynamic{Program: g, Lo: lo, Hi: hi, Buckets: DefaultBuckets(lo, hi)}
	if w := sharedAtOneRow(in.Program.Graph, g, in.Program.Names); w != "" {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%s: --dynamic %s: %s", in.Path, strings.Join(specs, " --dynamic "), w))
	}
	if buckets != "" {
		if d.Buckets, err = ParseBuckets(buckets, lo, hi); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// sharedAtOneRow warns of a program written at one row (every input with
// m has extent 1 there as written) whose inputs without m broadcast along
// it: a per-token mask written for one token, [1, 1, 16], is then read as
// one row for every token, which the shape rules cannot tell from a bias.
// Written at two rows or more, such a mask has a static extent that m
// would meet, and is refused unless it has --dynamic too. "" when there is
// nothing to say.
func sharedAtOneRow(written, dynamic *kernel.Graph, names map[string]int) string {
	ins := dynamic.Inputs()
	for _, t := range ins {
		if d := dynamic.Tensors[t].Shape.DynamicDim(); d >= 0 && written.Tensors[t].Shape.Dim(d) != 1 {
			return ""
		}
	}
	nameOf := map[int]string{}
	for name, k := range names {
		nameOf[k] = name
	}
	var shared []string
	seen := map[kernel.TensorID]bool{}
	for _, op := range dynamic.Ops {
		if op.Kind.Info().Class != ugraph.ClassBinary {
			continue
		}
		out := dynamic.Tensors[op.Out[0]].Shape
		d := out.DynamicDim()
		if d < 0 {
			continue
		}
		for _, t := range op.In {
			s := dynamic.Tensors[t].Shape
			k := slices.Index(ins, t)
			// A row of values along m's columns (a mask's, a bias's); not a
			// factor per head, of extent 1 from m on.
			dd := d - (out.Rank() - s.Rank())
			if k < 0 || seen[t] || s.IsDynamic() || dd < 0 || s.Dim(dd) != 1 {
				continue
			}
			cols := 1
			for i := dd + 1; i < s.Rank(); i++ {
				cols *= s.Dim(i)
			}
			if cols == 1 {
				continue
			}
			seen[t] = true
			name := nameOf[k]
			if name == "" {
				name = fmt.Sprintf("input %d", k)
			}
			shared = append(shared, fmt.Sprintf("%s %v", name, s))
		}
	}
	if len(shared) == 0 {
		return ""
	}
	verb, each := "broadcast", "each is"
	if len(shared) == 1 {
		verb, each = "broadcasts", "it is"
	}
	return fmt.Sprintf("the program is written at one row of m, and %s %s along m: %s read as one row for every token. "+
		"If one holds a row per token (a mask), write the program at two rows or more and give it --dynamic too", strings.Join(shared, ", "), verb, each)
}
