package driver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mitchellh/hashstructure/v2"

	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/internal/boundedread"
	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// shardFormat numbers the layout of shard files (2: search.Stats lost
// pruned_hash).
const shardFormat = 2

// ShardHeader says which run a shard file belongs to, and which slice of
// it the file holds. The shards of one run share every field but Index,
// Exhaustive and Stopped.
type ShardHeader struct {
	Format  int    `json:"format"`
	Version string `json:"version"` // of the tool that wrote it
	Name    string `json:"name"`    // the program's
	Program string `json:"program"` // the program's canonical hash (kernel.Hash), hex
	// Config hashes what decides the answer besides the program, the arch
	// and the seed: the run's options (ShardOptions) but the time limit,
	// and the caller's meta.
	Config   string `json:"config"`
	Arch     string `json:"arch"`
	ArchHash string `json:"arch_hash"` // of the target's figures, hex
	Seed     uint64 `json:"seed"`
	Index    int    `json:"index"`
	Count    int    `json:"count"`
	// Exhaustive is false when the slice stopped early (Stopped says why):
	// the merged answer is then the best of what was searched.
	Exhaustive bool   `json:"exhaustive"`
	Stopped    string `json:"stopped,omitempty"`
	// Sum is the SHA-256 of the whole file, this field left empty (sum):
	// an edited or damaged file that is still JSON is refused as well.
	Sum string `json:"sum"`
}

// ShardOptions are the options of a sharded run that decide its answer.
type ShardOptions struct {
	Preset      string              `json:"preset,omitempty"`
	Restrict    search.Restrictions `json:"restrict"`
	TimeLimit   string              `json:"time_limit"`
	MaxStates   int64               `json:"max_states"`
	PartResults int                 `json:"part_results"`
	NoSeeds     bool                `json:"no_seeds,omitempty"`
	// MaxMemory is the slice's bound on the verifier's memory, which the
	// merge keeps unless told otherwise: a part verified within 16 GiB by
	// one process must be by the merge too. Like the time limit, a bound
	// of the machine, not of the answer's configuration (configHash).
	MaxMemory int64 `json:"max_memory"`
}

// ShardFile is what one slice of a sharded run writes,
// DIR/NAME.shard-I-of-N.json: its header, what the merge needs to finish
// the run as one process would (the program, the options, the caller's
// meta), and per part it searched, its best candidates, ranked and
// unverified (the merge verifies them).
type ShardFile struct {
	Header  ShardHeader     `json:"header"`
	Options ShardOptions    `json:"options"`
	Meta    json.RawMessage `json:"meta,omitempty"` // the caller's, opaque here
	Program json.RawMessage `json:"program"`        // a μGraph document of one graph
	Stats   search.Stats    `json:"stats"`
	Parts   []ShardFilePart `json:"parts"`

	Path string `json:"-"` // where it was read from or written to
}

// sum is the SHA-256 of f, its header's Sum left empty (ShardHeader.Sum).
func (f *ShardFile) sum() string {
	h := f.Header
	h.Sum = ""
	data, err := json.Marshal(struct {
		Header  ShardHeader
		Options ShardOptions
		Meta    json.RawMessage
		Program json.RawMessage
		Stats   search.Stats
		Parts   []ShardFilePart
	}{h, f.Options, f.Meta, f.Program, f.Stats, f.Parts})
	if err != nil {
		return "" // matches no sum
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

// ShardFilePart is one part's search in a slice.
type ShardFilePart struct {
	Key        string          `json:"key"`       // search.Key of the part's whole search
	Subtrees   []int           `json:"subtrees"`  // explored by the slice, ascending
	NSubtrees  int             `json:"nsubtrees"` // of the part's search
	Stats      search.Stats    `json:"stats"`
	Candidates json.RawMessage `json:"candidates,omitempty"` // a μGraph document, best first; none: omitted
	// Dropped is how many of the worst-ranked candidates were left out
	// for the file to fit in MaxShardFileSize (fitParts).
	Dropped int `json:"dropped,omitempty"`

	kept int // how many candidates it holds, when made by NewShardFile
}

// keep sets p's candidates to the best n of r's, and Dropped to the rest.
func (p *ShardFilePart) keep(r *search.Result, n int) error {
	p.Candidates, p.Dropped, p.kept = nil, len(r.Candidates)-n, n
	if n == 0 { // a μGraph document has graphs
		return nil
	}
	kept := *r
	kept.Candidates = r.Candidates[:n]
	doc, err := kept.File("part", nil)
	if err != nil {
		return err
	}
	p.Candidates, err = encodeDocument(doc)
	return err
}

// NewShardFile makes the file of slice res.Shard of a run of program with
// opts; version is the tool's, meta (if not nil) the caller's, for the
// merge to write the answer as the one process would.
func NewShardFile(program *kernel.Graph, opts Options, res *ShardResult, version string, meta any) (*ShardFile, error) {
	if opts.Arch.Name == "" {
		opts.Arch = target.MustLookup(target.Default)
	}
	f := &ShardFile{Options: shardOptions(opts), Stats: res.Stats}
	var err error
	if meta != nil {
		if f.Meta, err = json.Marshal(meta); err != nil {
			return nil, err
		}
	}
	if f.Program, err = encodeDocument(&kernel.File{Name: opts.Name, Graphs: []kernel.Entry{{Graph: program}}}); err != nil {
		return nil, err
	}
	var results []*search.Result
	for _, p := range res.Parts {
		part := ShardFilePart{Key: p.Key, Subtrees: nonNilInts(p.Subtrees), NSubtrees: p.NSubtrees, Stats: p.Result.Stats}
		if err := part.keep(p.Result, len(p.Result.Candidates)); err != nil {
			return nil, err
		}
		f.Parts = append(f.Parts, part)
		results = append(results, p.Result)
	}
	f.Header = ShardHeader{Format: shardFormat, Version: version, Name: opts.Name,
		Program: hex64(kernel.Hash(program)), Config: configHash(f.Options, f.Meta),
		Arch: opts.Arch.Name, ArchHash: archHash(opts.Arch), Seed: opts.Seed,
		Index: res.Shard.Index, Count: res.Shard.Count, Exhaustive: res.Stopped == "", Stopped: res.Stopped}
	if err := f.fitParts(results, MaxShardFileSize); err != nil {
		return nil, err
	}
	f.Header.Sum = f.sum()
	return f, nil
}

// droppedCandidates is the Stopped of a part, and of a shard, whose
// worst-ranked candidates fitParts left out.
const droppedCandidates = "the shard file's size"

// fitParts leaves out the worst-ranked candidates of the largest parts
// until the file fits in limit bytes (MaxShardFileSize: a file the merge
// refuses would lose the whole slice), and says so in their stats and the
// header: the merge then warns that the answer is the best of what was
// kept. (A search keeps up to 65,536 candidates a part: with
// --max-candidates 0, a program of three small outputs wrote 263 MB.)
func (f *ShardFile) fitParts(results []*search.Result, limit int) error {
	for {
		size, err := f.size()
		if err != nil {
			return err
		}
		excess := size - limit
		if excess <= 0 {
			return nil
		}
		i := 0
		for j, p := range f.Parts {
			if len(p.Candidates) > len(f.Parts[i].Candidates) {
				i = j
			}
		}
		p := &f.Parts[i]
		n := len(results[i].Candidates) - p.Dropped
		if len(p.Candidates) == 0 {
			return fmt.Errorf("driver: a shard file holds %d bytes, and this one's program and figures pass that", limit)
		}
		// Candidates are of about one size: cut in proportion, a
		// hundredth more, and at least one.
		keep := int(float64(n) * float64(len(p.Candidates)-excess) / float64(len(p.Candidates)) * 0.99)
		if err := p.keep(results[i], max(0, min(keep, n-1))); err != nil {
			return err
		}
		p.Stats.Stopped = cmp.Or(p.Stats.Stopped, droppedCandidates)
		f.Header.Exhaustive = false
		f.Header.Stopped = cmp.Or(f.Header.Stopped, droppedCandidates)
	}
}

// size is the length of the file Write writes, with its sum: the file
// without the parts' documents, and theirs, which json.Marshal copies as
// they are (compact already), each with its key. Marshaling the whole file
// each time fitParts cuts took 14 GB for a file of 256 MiB.
func (f *ShardFile) size() (int, error) {
	g := *f
	g.Header.Sum = strings.Repeat("0", sha256.Size*2)
	g.Parts = slices.Clone(f.Parts)
	n := 0
	for i := range g.Parts {
		if c := g.Parts[i].Candidates; len(c) > 0 {
			n += len(`,"candidates":`) + len(c)
			g.Parts[i].Candidates = nil
		}
	}
	data, err := g.marshal()
	return len(data) + n, err
}

// marshal is the file as Write writes it: compact, since MarshalIndent
// would indent the documents inside it as well (it re-indents raw
// messages), which made them a third larger.
func (f *ShardFile) marshal() ([]byte, error) {
	data, err := json.Marshal(f)
	return append(data, '\n'), err
}

func shardOptions(opts Options) ShardOptions {
	if opts.TimeLimit <= 0 {
		opts.TimeLimit = DefaultTimeLimit
	}
	if opts.PartResults == 0 {
		opts.PartResults = 2
	}
	return ShardOptions{Preset: opts.Preset, Restrict: opts.Restrict, TimeLimit: opts.TimeLimit.String(),
		MaxStates: opts.MaxStates, PartResults: opts.PartResults, NoSeeds: opts.NoSeeds,
		MaxMemory: cmp.Or(opts.MaxMemory, memlimit.Default)}
}

// encodeDocument returns f's document, compact.
func encodeDocument(f *kernel.File) (json.RawMessage, error) {
	var b, c bytes.Buffer
	if err := f.Encode(&b); err != nil {
		return nil, err
	}
	if err := json.Compact(&c, b.Bytes()); err != nil {
		return nil, err
	}
	return c.Bytes(), nil
}

func hex64(h uint64) string { return fmt.Sprintf("%016x", h) }

// configHash hashes what decides a run's answer, besides the program, the
// arch and the seed. Not the time limit: it bounds how long each process
// searches (a retried shard may get another), and a slice that ran out of
// it says so (ShardHeader.Exhaustive). Nor the memory bound, a bound of the
// machine the slice ran on.
func configHash(o ShardOptions, meta json.RawMessage) string {
	o.TimeLimit, o.MaxMemory = "", 0
	var compact bytes.Buffer
	if len(meta) > 0 {
		if err := json.Compact(&compact, meta); err != nil {
			compact.Write(meta) // a bad meta hashes as it is; decoding it fails later
		}
	}
	h, err := hashstructure.Hash(struct {
		Options ShardOptions
		Meta    string
	}{o, compact.String()}, hashstructure.FormatV2, nil)
	if err != nil {
		panic(fmt.Sprintf("driver: hashing the options: %v", err)) // only hashable types
	}
	return hex64(h)
}

func archHash(a target.Arch) string {
	h, err := hashstructure.Hash(a, hashstructure.FormatV2, nil)
	if err != nil {
		panic(fmt.Sprintf("driver: hashing the arch: %v", err))
	}
	return hex64(h)
}

// ShardFileName is the name of slice sh's file of the program name.
func ShardFileName(name string, sh Shard) string {
	return fmt.Sprintf("%s.shard-%d-of-%d.json", name, sh.Index, sh.Count)
}

// MaxShardFileSize bounds what a shard file may hold: a slice's kept
// candidates, each a μGraph document's worth at most.
const MaxShardFileSize = 4 * kernel.MaxFileSize

var shardFileName = regexp.MustCompile(`^(.+)\.shard-(\d+)-of-(\d+)\.json$`)

// Write writes f into dir as one unit (a temp file, then a rename): a
// killed or retried task leaves the whole file or none.
func (f *ShardFile) Write(dir string) error {
	data, err := f.marshal()
	if err != nil {
		return err
	}
	if len(data) > MaxShardFileSize { // fitParts: a file no merge reads is of no use
		return fmt.Errorf("driver: the shard file would hold %d bytes, past the %d a merge reads", len(data), MaxShardFileSize)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f.Path = filepath.Join(dir, ShardFileName(f.Header.Name, Shard{f.Header.Index, f.Header.Count}))
	return atomicfile.WriteFile(f.Path, data, 0o644)
}

// formatError refuses the file at path, of shard format format.
func formatError(path string, format int) error {
	return fmt.Errorf("%s: shard format %d, this mirage reads %d", path, format, shardFormat)
}

// ReadShardFile reads a shard file; a truncated or edited one is an error
// that names it.
func ReadShardFile(path string) (*ShardFile, error) {
	data, err := boundedread.ReadFile(path, MaxShardFileSize)
	if err != nil {
		return nil, err
	}
	var f ShardFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		// Another format's fields are not this one's: say so rather
		// than call the file corrupted.
		var head struct {
			Header struct {
				Format *int `json:"format"`
			} `json:"header"`
		}
		if json.Unmarshal(data, &head) == nil && head.Header.Format != nil && *head.Header.Format != shardFormat {
			return nil, formatError(path, *head.Header.Format)
		}
		return nil, fmt.Errorf("%s: not a shard file (corrupted or truncated?): %v", path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: not a shard file: more after its JSON object", path)
	}
	f.Path = path
	h := f.Header
	switch {
	case h.Format != shardFormat:
		return nil, formatError(path, h.Format)
	case (Shard{h.Index, h.Count}).Check() != nil:
		return nil, fmt.Errorf("%s: %v", path, Shard{h.Index, h.Count}.Check())
	case f.sum() != h.Sum:
		return nil, fmt.Errorf("%s: its content does not match its header's sum (edited or corrupted)", path)
	case configHash(f.Options, f.Meta) != h.Config:
		return nil, fmt.Errorf("%s: its options do not match its header's hash (edited or corrupted)", path)
	}
	if m := shardFileName.FindStringSubmatch(filepath.Base(path)); m != nil {
		i, _ := strconv.Atoi(m[2])
		n, _ := strconv.Atoi(m[3])
		if m[1] != h.Name || i != h.Index || n != h.Count {
			return nil, fmt.Errorf("%s: the file holds shard %d of %d of %s (renamed?)", path, h.Index, h.Count, h.Name)
		}
	}
	return &f, nil
}

// ReadShardDir reads every shard file (NAME.shard-I-of-N.json) in dir.
// They must be the shards of one program.
func ReadShardDir(dir string) ([]*ShardFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := map[string][]string{}
	for _, e := range entries {
		if m := shardFileName.FindStringSubmatch(e.Name()); m != nil && !e.IsDir() {
			names[m[1]] = append(names[m[1]], e.Name())
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no shard files (NAME.shard-I-of-N.json)", dir)
	}
	if len(names) > 1 {
		var sets []string
		for name, fs := range names {
			sets = append(sets, fmt.Sprintf("%s (%s)", name, strings.Join(fs, ", ")))
		}
		slices.Sort(sets)
		return nil, fmt.Errorf("%s: shards of more than one program: %s; give each set a directory of its own", dir, strings.Join(sets, "; "))
	}
	var files []*ShardFile
	for _, fs := range names {
		for _, name := range fs {
			f, err := ReadShardFile(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
	}
	return files, nil
}

// Merged is a sharded run put back together (MergeShards), ready for Run:
// its Options.Searched hold the parts' merged searches.
type Merged struct {
	Program *kernel.Graph
	Options Options
	Meta    json.RawMessage // the caller's, as the shards recorded it
	Count   int             // shards
	// Incomplete are the shards that stopped early (by index): the merged
	// answer is the best of what was searched, not of the whole space.
	Incomplete []ShardHeader
	Stats      search.Stats // totals over the shards
}

// ErrShards reports a set of shard files that cannot be merged.
var ErrShards = errors.New("driver: the shard files cannot be merged")

// MergeShards checks that files are the whole set of one run's shards
// (every index once, one header, written by this version, each whole:
// ReadShardFile checks its sum), reads back the program and options, and
// gathers each part's shares of its search for Run, which verifies them
// together (search.VerifyMerged). Errors name the files.
func MergeShards(files []*ShardFile, version string) (*Merged, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no shard files", ErrShards)
	}
	slices.SortFunc(files, func(a, b *ShardFile) int { return a.Header.Index - b.Header.Index })
	first := files[0]
	for _, f := range files {
		if f.Header.Version != version {
			return nil, fmt.Errorf("%w: %s was written by mirage %s, this is %s", ErrShards, f.Path, f.Header.Version, version)
		}
		if field, a, b := headerDiff(first.Header, f.Header); field != "" {
			return nil, fmt.Errorf("%w: %s and %s are shards of different runs: %s %v vs %v", ErrShards, first.Path, f.Path, field, a, b)
		}
	}
	for _, f := range files { // MergeShards may be given files ReadShardFile did not check
		if err := (Shard{f.Header.Index, f.Header.Count}).Check(); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrShards, f.Path, err)
		}
	}
	n := first.Header.Count
	byIndex := make([][]string, n)
	for _, f := range files {
		byIndex[f.Header.Index] = append(byIndex[f.Header.Index], f.Path)
	}
	var missing []string
	for i, paths := range byIndex {
		switch {
		case len(paths) == 0:
			missing = append(missing, strconv.Itoa(i))
		case len(paths) > 1:
			return nil, fmt.Errorf("%w: shard %d of %d is there twice: %s", ErrShards, i, n, strings.Join(paths, ", "))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: shard(s) %s of %d (0..%d) missing in %s; run them (again) and merge then",
			ErrShards, strings.Join(missing, ", "), n, n-1, filepath.Dir(first.Path))
	}

	m := &Merged{Meta: first.Meta, Count: n}
	var err error
	if m.Program, err = decodeProgram(first); err != nil {
		return nil, err
	}
	if m.Options, err = first.options(); err != nil {
		return nil, err
	}
	d, _, done, err := begin(context.Background(), m.Program, m.Options)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrShards, first.Path, err)
	}
	defer done()
	todo, err := d.firstOutcomes()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrShards, first.Path, err)
	}
	parts := map[string]*outcome{}
	for _, o := range todo {
		parts[d.wholeKey(o)] = o
	}
	found := map[string][]*search.Result{}
	var keys []string
	for _, f := range files {
		if !f.Header.Exhaustive {
			m.Incomplete = append(m.Incomplete, f.Header)
		}
		m.Stats.Add(f.Stats)
		m.Stats.Seconds = max(m.Stats.Seconds, f.Stats.Seconds)
		for _, p := range f.Parts {
			o := parts[p.Key]
			if o == nil {
				return nil, fmt.Errorf("%w: %s: part %s is none of the program's parts", ErrShards, f.Path, p.Key)
			}
			r, err := decodeCandidates(f, p)
			if err != nil {
				return nil, err
			}
			if found[p.Key] == nil {
				keys = append(keys, p.Key)
			}
			found[p.Key] = append(found[p.Key], r)
		}
	}
	if err := checkCoverage(files, parts); err != nil {
		return nil, err
	}
	m.Options.Searched = map[string][]*search.Result{}
	for _, k := range keys {
		m.Options.Searched[k] = found[k]
	}
	return m, nil
}

// checkCoverage checks that the shards searched every part of the first
// round, and every subtree of each part's search exactly once.
func checkCoverage(files []*ShardFile, parts map[string]*outcome) error {
	// times is a map, not a slice of n: n is the files' word, and a file
	// that claims 10¹⁵ subtrees is refused, not allocated for.
	type cover struct {
		n     int
		times map[int]int
		path  string
	}
	covers := map[string]*cover{}
	for _, f := range files {
		for _, p := range f.Parts {
			c := covers[p.Key]
			if c == nil {
				c = &cover{n: p.NSubtrees, times: map[int]int{}, path: f.Path}
				covers[p.Key] = c
			}
			if p.NSubtrees != c.n {
				return fmt.Errorf("%w: %s and %s list part %s with %d and %d subtrees", ErrShards, c.path, f.Path, p.Key, c.n, p.NSubtrees)
			}
			for _, i := range p.Subtrees {
				if i < 0 || i >= c.n {
					return fmt.Errorf("%w: %s: part %s has no subtree %d", ErrShards, f.Path, p.Key, i)
				}
				c.times[i]++
			}
		}
	}
	var keys []string
	for k := range parts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c := covers[k]
		if c == nil {
			return fmt.Errorf("%w: no shard searched part %s (%s)", ErrShards, k, files[0].Path)
		}
		// The first subtree not searched once is at most len(times) when
		// one is missing; else n is len(times).
		for i := range min(c.n, len(c.times)+1) {
			if t := c.times[i]; t != 1 {
				return fmt.Errorf("%w: subtree %d of part %s was searched by %d shards, want 1 (shards of other builds of mirage?)", ErrShards, i, k, t)
			}
		}
	}
	return nil
}

// headerDiff returns the first field in which two shards' headers of one
// run may not differ, and the two values; "" when none.
func headerDiff(a, b ShardHeader) (field string, x, y any) {
	for _, f := range []struct {
		name string
		x, y any
	}{
		{"format", a.Format, b.Format},
		{"program name", a.Name, b.Name},
		{"program hash", a.Program, b.Program},
		{"arch", a.Arch, b.Arch},
		{"arch hash", a.ArchHash, b.ArchHash},
		{"seed", a.Seed, b.Seed},
		{"shard count", a.Count, b.Count},
		{"configuration hash", a.Config, b.Config}, // last: it covers the caller's meta, which may repeat the others
	} {
		if f.x != f.y {
			return f.name, f.x, f.y
		}
	}
	return "", nil, nil
}

func decodeProgram(f *ShardFile) (*kernel.Graph, error) {
	doc, err := kernel.Decode(bytes.NewReader(f.Program))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: the program: %v", ErrShards, f.Path, err)
	}
	if len(doc.Graphs) != 1 {
		return nil, fmt.Errorf("%w: %s: the program is %d graphs, want 1", ErrShards, f.Path, len(doc.Graphs))
	}
	g := doc.Graphs[0].Graph
	if hex64(kernel.Hash(g)) != f.Header.Program {
		return nil, fmt.Errorf("%w: %s: the program does not match its header's hash (edited or corrupted)", ErrShards, f.Path)
	}
	return g, nil
}

// options are the Run options the shards ran with.
func (f *ShardFile) options() (Options, error) {
	arch, err := target.Lookup(f.Header.Arch)
	if err != nil {
		return Options{}, fmt.Errorf("%w: %s: %v", ErrShards, f.Path, err)
	}
	if archHash(arch) != f.Header.ArchHash {
		return Options{}, fmt.Errorf("%w: %s: the figures of %s differ from this mirage's", ErrShards, f.Path, arch.Name)
	}
	limit, err := time.ParseDuration(f.Options.TimeLimit)
	if err != nil || limit <= 0 {
		return Options{}, fmt.Errorf("%w: %s: time limit %q", ErrShards, f.Path, f.Options.TimeLimit)
	}
	if f.Options.Preset != "" {
		if _, err := search.NamedConfig(f.Options.Preset); err != nil {
			return Options{}, fmt.Errorf("%w: %s: %v", ErrShards, f.Path, err)
		}
	}
	return Options{Name: f.Header.Name, Arch: arch, Preset: f.Options.Preset, Restrict: f.Options.Restrict,
		TimeLimit: limit, Seed: f.Header.Seed, MaxStates: f.Options.MaxStates, PartResults: f.Options.PartResults,
		NoSeeds: f.Options.NoSeeds, MaxMemory: f.Options.MaxMemory}, nil
}

// decodeCandidates reads part p's candidates in f. They are not trusted
// for all that: the merge verifies them as one process verifies its own.
func decodeCandidates(f *ShardFile, p ShardFilePart) (*search.Result, error) {
	if len(p.Candidates) == 0 {
		return &search.Result{Stats: p.Stats}, nil
	}
	doc, err := kernel.DecodeBytes(p.Candidates) // ReadShardFile has bounded it
	if err != nil {
		return nil, fmt.Errorf("%w: %s: part %s: %v", ErrShards, f.Path, p.Key, err)
	}
	r, err := search.ResultFromFile(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: part %s: %v", ErrShards, f.Path, p.Key, err)
	}
	r.Stats = p.Stats
	return r, nil
}
