package rewrite

import (
	"slices"
	"strings"
	"testing"
)

// identityRewrites are identity tests and what Source makes of them;
// FuzzSource seeds from them too (and package frontend's FuzzLoad from
// their sources).
var identityRewrites = []struct{ in, want string }{
	{"if x is None:\n", "if x == None:\n"},
	{"ok = x is not None\n", "ok = x !=     None\n"},
	{"a = b is True or c is not False\n", "a = b == True or c !=     False\n"},
	{"f(x is None, y=z is not None)\n", "f(x == None, y=z !=     None)\n"},
	{"v = [y for y in ys if y is not None]\n", "v = [y for y in ys if y !=     None]\n"},
	{"v = 1 if x is None else 2\n", "v = 1 if x == None else 2\n"},
	{"d = {k: v is None for k, v in kv}\n", "d = {k: v == None for k, v in kv}\n"},
	{"ok = (f(x)[0].y\n  is  not\n  None)\n", "ok = (f(x)[0].y\n  !=     \n  None)\n"},
	{"ok = x is \\\n None; y = 1\n", "ok = x == \\\n None; y = 1\n"},
	{"ok = None is None", "ok = None == None"},
	{"assert args.c is None, 'c'\n", assertFunc + "(args.c == None, 'c')\n"},
	// Left as they are: Constructs names them.
	{"ok = x is y\n", "ok = x is y\n"},
	{"ok = x is None + 1\n", "ok = x is None + 1\n"},
	{"ok = x is None.y\n", "ok = x is None.y\n"},
	{"ok = x is not None is None\n", "ok = x is not None == None\n"},
	{"ok = not is None\n", "ok = not is None\n"},
	{"s = 'x is None'  # y is None\n", "s = 'x is None'  # y is None\n"},
}

func TestRewriteIdentity(t *testing.T) {
	for _, tt := range identityRewrites {
		res, err := Source(tt.in, lex(tt.in), Options{})
		got := res.Code
		if err != nil || got != tt.want {
			t.Errorf("rewrite %q:\n got %q, %v\nwant %q", tt.in, got, err, tt.want)
		}
		if len(got) != len(tt.in) && !strings.Contains(tt.in, "assert") {
			t.Errorf("rewrite %q moved columns", tt.in)
		}
	}
}

// Result.Identity holds the position of every comparison an identity test
// became, and of nothing else: each is an == or != in Code, at its line and
// (character) column, and they are as many as the comparisons added.
func TestIdentityPositions(t *testing.T) {
	cases := append(slices.Clone(identityRewrites), struct{ in, want string }{
		"s = 'é' == x; ok = ('é', y is True, z == 1)\n", ""})
	for _, tt := range cases {
		res, err := Source(tt.in, lex(tt.in), Options{})
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		lines := strings.Split(res.Code, "\n")
		for p := range res.Identity {
			line := []rune(lines[p.Line-1])
			if op := string(line[p.Col-1 : p.Col+1]); op != "==" && op != "!=" {
				t.Errorf("%q: %v is at %q, not a comparison", tt.in, p, string(line[p.Col-1:]))
			}
		}
		count := func(s string) int { return strings.Count(s, "==") + strings.Count(s, "!=") }
		if added := count(res.Code) - count(tt.in); len(res.Identity) != added {
			t.Errorf("%q: %d positions, %d comparisons added", tt.in, len(res.Identity), added)
		}
	}
}
