package templates

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mirage-go/mirage/internal/subprocess"
)

// EmulatorFlags are g++'s options for every emulated build. The
// precompiled runtime is built with them, and g++ uses it only in a build
// with the same.
var EmulatorFlags = []string{"-std=c++17", "-O1", "-DMIRAGE_EMULATE", "-Wall", "-Wno-unknown-pragmas", "-Wno-unused-function"}

// EmulatorArgs returns g++'s arguments for an emulated build, before its
// own -I options and files: EmulatorFlags and, where the user's cache
// holds one (PrecompiledRuntime), the precompiled runtime to include first.
func EmulatorArgs(ctx context.Context, gxx string) []string {
	args := append([]string(nil), EmulatorFlags...)
	if h := PrecompiledRuntime(ctx, gxx); h != "" {
		args = append(args, "-include", h)
	}
	return args
}

// PrecompiledRuntime returns the path of a copy of mirage_runtime.cuh in
// the user's cache directory, beside the same precompiled by gxx with
// EmulatorFlags (with the emulator's headers, which it includes). A fifth
// of an emulated build's time was g++ parsing those headers: given
// -include PATH first, g++ reads the precompiled form instead, and the
// emitted code's own #include of the runtime finds its guard defined.
//
// The first call for a compiler builds the entry (a few seconds, about
// 50 MB), which later builds and other processes share. It returns ""
// where there is no entry to be had (no cache directory, a failed build):
// g++ then parses the headers, as it would without the cache. Whatever
// g++ finds there, what it compiles is the same code: a precompiled header
// it cannot use it ignores, and reads the copy beside it.
func PrecompiledRuntime(ctx context.Context, gxx string) string {
	root, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return precompiled.get(ctx, gxx, filepath.Join(root, "mirage-go", "emulator"))
}

var precompiled = pchCache{entries: map[string]string{}}

// pchCache remembers, for the process, each compiler's entry (or that
// there is none), so that parallel builds wait for one precompilation.
type pchCache struct {
	mu      sync.Mutex
	entries map[string]string // by compiler and cache directory
}

func (c *pchCache) get(ctx context.Context, gxx, root string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := gxx + "\x00" + root
	h, ok := c.entries[k]
	if ok && h != "" {
		if _, err := os.Stat(h + ".gch"); err != nil {
			ok = false // removed since (by hand): make it again
		}
	}
	if !ok {
		var err error
		h, err = precompile(ctx, gxx, root)
		if err != nil && ctx.Err() != nil {
			return "" // cancelled, not failed: a later build may try again
		}
		c.entries[k] = h
	}
	if h != "" {
		// Keep the entry from looking unused to another process's prune.
		now := time.Now()
		os.Chtimes(filepath.Dir(h), now, now)
	}
	return h
}

// pchUnused is how long an entry goes unused before a process that makes
// another entry in the same directory removes it: each change of the
// runtime or of the compiler makes a new one.
const pchUnused = 24 * time.Hour

// precompile returns the runtime's path in root/KEY, building the entry
// if it is not there. KEY is a hash of the compiler's version, the flags
// and the headers, so that no entry describes other headers than those it
// is used with. The entry is built in a temporary directory and renamed
// into place: another process sees all of it or none.
func precompile(ctx context.Context, gxx, root string) (string, error) {
	version, err := subprocess.Command(ctx, gxx, "--version").Output()
	if err != nil {
		return "", err
	}
	hash := sha256.New()
	for _, part := range []string{gxx, string(version), strings.Join(EmulatorFlags, " "), Runtime} {
		hash.Write([]byte(part))
		hash.Write([]byte{0})
	}
	if err := eachEmulatorHeader(func(name string, data []byte) error {
		hash.Write([]byte(name + "\x00"))
		hash.Write(data)
		hash.Write([]byte{0})
		return nil
	}); err != nil {
		return "", err
	}
	key := hex.EncodeToString(hash.Sum(nil))[:20]
	entry := filepath.Join(root, key)
	header := filepath.Join(entry, RuntimeName)
	if _, err := os.Stat(header + ".gch"); err == nil {
		return header, nil
	}

	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, key+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	emu := filepath.Join(tmp, "emu")
	if err := os.Mkdir(emu, 0o755); err != nil {
		return "", err
	}
	if err := WriteEmulator(emu); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, RuntimeName), []byte(Runtime), 0o644); err != nil {
		return "", err
	}
	args := append(append([]string(nil), EmulatorFlags...), "-Iemu", "-x", "c++-header", RuntimeName, "-o", RuntimeName+".gch")
	cmd := subprocess.Command(ctx, gxx, args...)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		return "", errors.Join(err, errors.New(string(out)))
	}
	// Only an entry g++ reads goes into place: one it rejected would cost
	// every build a useless read, one it choked on would fail them all.
	if err := os.WriteFile(filepath.Join(tmp, "check.cpp"), []byte("int main() { return 0; }\n"), 0o644); err != nil {
		return "", err
	}
	check := append(append([]string(nil), EmulatorFlags...), "-include", filepath.Join(tmp, RuntimeName), "-Winvalid-pch", "-H", "-fsyntax-only", "-Iemu", "check.cpp")
	cmd = subprocess.Command(ctx, gxx, check...)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("! "+filepath.Join(tmp, RuntimeName)+".gch")) {
		return "", errors.Join(err, fmt.Errorf("g++ does not read the precompiled runtime:\n%s", out))
	}
	os.Remove(filepath.Join(tmp, "check.cpp"))
	if err := os.Rename(tmp, entry); err != nil {
		// Another process renamed its entry first: use that one.
		if _, serr := os.Stat(header + ".gch"); serr != nil {
			return "", err
		}
	}
	prune(root, key)
	return header, nil
}

// prune removes the entries in root other than key's that have gone
// unused for pchUnused, and temporary directories as old (a process that
// died building one).
func prune(root, key string) {
	dirs, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, d := range dirs {
		if d.Name() == key {
			continue
		}
		if fi, err := d.Info(); err == nil && time.Since(fi.ModTime()) > pchUnused {
			os.RemoveAll(filepath.Join(root, d.Name()))
		}
	}
}
