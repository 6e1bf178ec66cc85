package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeProgram writes a program that applies exp to one input of the given
// dims (a Python tuple) and returns its path.
func writeProgram(t *testing.T, dims string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.py")
	src := "import mirage as mi\ngraph = mi.new_kernel_graph()\nX = graph.new_input(dims=" + dims + ", dtype=mi.float16)\ngraph.mark_output(graph.exp(X))\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSizeLimits: shapes whose sizes overflow an int64 are unusable input,
// and so is work that is legal by shape but would not fit in memory: exit
// status 2 and a message that names the file and says why (how much memory
// it would need), never a panic, a wrapped size or a result of zeros.
func TestSizeLimits(t *testing.T) {
	wraps := writeProgram(t, "(1<<30,)*4")            // 2^120 elements, 0 in an int64
	overflows := writeProgram(t, "(1<<30, 1<<30, 4)") // 2^62 elements, 2^65 bytes in float64
	atLimit := writeProgram(t, "(1<<24, 1<<24)")      // 2^48 elements: legal, 2 PiB in float64
	square := writeProgram(t, "(32768, 32768)")       // 8 GiB in float64
	rm, rmFused := examplePath("rmsnorm_matmul.py"), examplePath("rmsnorm_matmul_mugraph.py")
	out := t.TempDir()
	tooMany := "has more than 2^48 elements, the limit of one tensor"
	tests := []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"eval, elements wrap to 0", []string{"eval", wraps}, []string{wraps + ":3: new_input", tooMany}},
		{"superopt, elements wrap to 0", []string{"superopt", "--no-cache", "-o", out, wraps}, []string{wraps + ":3: new_input", tooMany}},
		{"eval, elements past int64", []string{"eval", overflows}, []string{overflows + ":3: new_input", tooMany}},
		{"eval at the element limit", []string{"eval", atLimit}, []string{atLimit + ": evaluating it in float64 needs 4 PiB of memory, more than the limit of 4 GiB; its largest tensor, t0 [16777216, 16777216], takes 2 PiB (--max-memory raises the limit)"}},
		{"eval, 32768x32768", []string{"eval", square}, []string{square + ": evaluating it in float64 needs 16 GiB of memory, more than the limit of 4 GiB"}},
		{"verify float, 32768x32768", []string{"verify", "--method", "float", square, square}, []string{square + ": evaluating it in float64 needs 16 GiB"}},
		{"verify ff, 32768x32768", []string{"verify", square, square}, []string{"ffverify: evaluating the program and the candidate on one draw needs 32 GiB of memory, more than the limit of 4 GiB", "(--max-memory raises the limit)"}},
		// X is dropped once normed: the matmul holds D, W and O, 8 bytes
		// each of 16·4096 + 4096·6144 + 16·6144 values (193.25 MiB).
		{"eval within a lower limit", []string{"eval", "--max-memory", "1MiB", rm}, []string{rm + ": evaluating it in float64 needs 193 MiB of memory, more than the limit of 1 MiB"}},
		// Each program alone fits 194 MiB; both need W and X once (192.5
		// MiB), O twice (0.75 MiB each) and the kernel's tiles (64 KiB):
		// the fused kernel reads X and W at once.
		{"verify float within a lower limit", []string{"verify", "--method", "float", "--max-memory", "194MiB", rm, rmFused}, []string{rm + " and " + rmFused + ": evaluating both in float64 needs 194 MiB (203489408 bytes)"}},
		// The matmul holds D and O (512 and 768 KiB) and a panel of W (128 KiB), never W.
		{"verify ff within a lower limit", []string{"verify", "--max-memory", "1MiB", rm, rmFused}, []string{"more than the limit of 1 MiB; the program peaks at op 3 (matmul) with 1.38 MiB"}},
		// Both processes at the emulator's run: the inputs drawn, 8 bytes
		// each of 16·4096 + 4096·6144 elements (201.9 MB); the emulator's
		// fp16 inputs and output (50.7 MB); W as one row of floats while it
		// is read in (100.7 MB): 353,173,504 bytes.
		{"verify emu within a lower limit", []string{"verify", "--method", "emu", "--max-memory", "1MiB", rm, rmFused}, []string{rmFused + " against " + rm + " in the CPU emulator: checking it in the CPU emulator needs 337 MiB of memory, more than the limit of 1 MiB"}},
		{"a limit that is no size", []string{"eval", "--max-memory", "lots", rm}, []string{`invalid argument "lots" for "--max-memory"`}},
	}
	for _, tt := range tests {
		code, stdout, stderr := mirage(t, tt.args...)
		if code != exitUnusable || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and no output", tt.name, code, stdout, stderr)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr %q lacks %q", tt.name, stderr, w)
			}
		}
	}
	// superopt answers every program that loads (#14): one too large for
	// the verifier keeps its own ops, and its part says why.
	code, stdout, stderr := mirage(t, "superopt", "--no-cache", "--no-emit", "--json", "-o", out, square)
	var res superoptJSON
	if code != exitOK || json.Unmarshal([]byte(stdout), &res) != nil || len(res.Candidates) != 1 || !res.Candidates[0].Unfused ||
		len(res.Parts) != 1 || !strings.Contains(res.Parts[0].WhyNot, "needs 24 GiB of memory, more than the limit of 4 GiB") {
		t.Errorf("superopt, 32768x32768: exit %d, %s, %s; want the unfused program and a part that says it needs 24 GiB", code, stdout, stderr)
	}
	// A raised limit lets the same work run: the inputs are counted once.
	if code, stdout, stderr := mirage(t, "verify", "--max-memory", "1GiB", rm, rmFused); code != exitOK {
		t.Errorf("verify --max-memory 1GiB: exit %d, %q, %q", code, stdout, stderr)
	}
	if code, stdout, stderr := mirage(t, "verify", "--method", "float", "--max-memory", "195MiB", rm, rmFused); code != exitOK {
		t.Errorf("verify --method float --max-memory 195MiB: exit %d, %q, %q", code, stdout, stderr)
	}
}
