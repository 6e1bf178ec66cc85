package driver

import (
	"fmt"
	"time"

	"github.com/mirage-go/mirage/codegen/cuda"
	"github.com/mirage-go/mirage/cost"
	"github.com/mirage-go/mirage/search"
	"github.com/mirage-go/mirage/target"
)

// Settings are what a user chooses of a run, as superopt's and bench's
// flags give them; Configure turns them and the program into Options.
type Settings struct {
	Arch          target.Arch
	Preset        string // a preset for every part; "": the program's, else one per part
	TimeLimit     time.Duration
	Workers       int
	Seed          uint64
	MaxStates     int64
	NoSeeds       bool
	MaxCandidates int    // verified candidates kept per part; 0: all of them
	Profile       string // measured times (a file or directory of profiles); "": the model alone
	CacheDir      string // "": the user cache directory
	NoCache       bool
	MaxMemory     int64        // bound of each verifier's evaluations; 0: memlimit.Default
	Log           func(string) // a line per part as it is searched; may be nil
}

// Preset returns the preset every part of in is searched with (preset if
// given, else the program's superoptimize(config=...), else "": one per
// part) and the restrictions of the program's other superoptimize
// arguments.
func (in *Input) Preset(preset string) (string, search.Restrictions) {
	var r search.Restrictions
	if prog := in.Program; prog != nil && prog.Superopt != nil {
		if preset == "" {
			preset = prog.Superopt.Config
		}
		r = search.Restrictions(prog.Superopt.Lists)
	}
	return preset, r
}

// CheckPreset returns an error unless name is "" or a preset
// configuration.
func CheckPreset(name string) error {
	if name == "" {
		return nil
	}
	_, err := search.NamedConfig(name)
	return err
}

// PresetNames are the names of the preset configurations.
func PresetNames() []string { return search.ConfigNames() }

// Options returns the options of a run of in with settings s, as the
// search sees them: the preset (checked) and restrictions (Input.Preset),
// the default time limit where s has none, and the verified candidates
// kept per part. It loads nothing: Configure adds measured times and the
// cache, which a benchmark leaves out.
func (s Settings) Options(in *Input) (Options, error) {
	preset, r := in.Preset(s.Preset)
	if err := CheckPreset(preset); err != nil {
		if s.Preset == "" && in.Program != nil && in.Program.Superopt != nil {
			// The program's superoptimize(config=...) named it.
			return Options{}, fmt.Errorf("%s:%d: superoptimize: %v", in.Path, in.Program.Superopt.Line, err)
		}
		return Options{}, fmt.Errorf("%s: %v", in.Path, err)
	}
	opts := Options{
		Name: in.Name, Arch: s.Arch, Preset: preset, Restrict: r,
		TimeLimit: s.TimeLimit, Workers: s.Workers, Seed: s.Seed, MaxStates: s.MaxStates, NoSeeds: s.NoSeeds,
		PartResults: PartResults(s.MaxCandidates), MaxMemory: s.MaxMemory, Log: s.Log,
	}
	if opts.TimeLimit == 0 {
		opts.TimeLimit = DefaultTimeLimit
	}
	return opts, nil
}

// Configure returns the options of a run of in with settings s
// (Settings.Options), measured times loaded, and the result cache unless
// s.NoCache or measured times are given (they change the ranking a cache
// holds). warn is told when no cache directory can be found (the run goes
// on without one).
func Configure(in *Input, s Settings, warn func(string)) (Options, error) {
	var profiles *cost.Profiles
	if s.Profile != "" {
		p, err := cost.LoadProfiles(s.Profile)
		if err != nil {
			return Options{}, fmt.Errorf("--profile: %v", err)
		}
		profiles = p
	}
	opts, err := s.Options(in)
	if err != nil {
		return Options{}, err
	}
	opts.Profiles = profiles
	if profiles != nil && !profiles.Holds(opts.Arch.Name, opts.Name) {
		// A profile of another arch or program (--arch, tune --program)
		// would rank nothing, silently.
		warn(fmt.Sprintf("--profile %s measured no graph of %s on %s: the model alone ranks", s.Profile, opts.Name, opts.Arch.Name))
	}
	if s.NoCache || s.Profile != "" {
		return opts, nil
	}
	dir := s.CacheDir
	if dir == "" {
		d, err := search.DefaultCacheDir()
		if err != nil {
			warn(fmt.Sprintf("no cache directory (%v); caching is off", err))
			return opts, nil
		}
		dir = d
	}
	opts.Cache = &search.Cache{Dir: dir}
	return opts, nil
}

// PartResults is Options.PartResults for a count of verified candidates
// kept per part where 0 means all of them: the driver's 0 is its default,
// and all of them is -1.
func PartResults(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// NewOutput is the output set superopt and merge write: NAME.* in dir,
// the answers' document with meta, and the CUDA of the best candidate
// that lowers for arch unless !emit (its header names source). warn is
// told of candidates that do not lower.
func NewOutput(dir, name, source string, meta any, arch target.Arch, emit bool, warn func(string)) Output {
	out := Output{Dir: dir, Name: name, Meta: meta, Warn: warn}
	if emit {
		out.CUDA = &cuda.Options{Arch: arch, Source: source}
	}
	return out
}
