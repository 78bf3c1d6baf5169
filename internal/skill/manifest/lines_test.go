package manifest

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestKeyLines(t *testing.T) {
	t.Parallel()
	doc := "\ufeff# a comment with \"quotes\" and [brackets]\n" + // 1
		"a = 1 # = b\n" + // 2
		"s = '''\n" + // 3
		"x = [\n" + // 4
		"'''\n" + // 5
		"m = \"\"\"\\\n" + // 6
		"  \"\" \\\"\"\"\n" + // 7
		"\"\"\"\"\"\n" + // 8
		"d.e . 'f g' = 2024-01-01 10:00:00 # a date\n" + // 9
		"\"k\\u0065y\\t\" = 1\n" + // 10
		"arr = [\n" + // 11
		"  1, # one\n" + // 12
		"  [2, 3],\n" + // 13
		"  { t = 4,\n" + // 14
		"    u = 5 },\n" + // 15
		"]\n" + // 16
		"[[tools]]\n" + // 17
		"id = 'a'\n" + // 18
		"[tools.risk]\n" + // 19
		"level = 1\n" + // 20
		"[[tools]]\r\n" + // 21
		"id = 'b'\r\n" + // 22
		"[ tools . risk ]\n" + // 23
		"[[tools.sub]]\n" + // 24
		"[[tools.sub]]\n" + // 25
		"x = 1\n" // 26
	want := map[string]int{
		"a": 2, "s": 3, "m": 6, "d": 9, "d.e": 9, `d.e."f g"`: 9, `"key\t"`: 10,
		"arr": 11, "arr.0": 12, "arr.1": 13, "arr.1.0": 13, "arr.1.1": 13, "arr.2": 14, "arr.2.t": 14, "arr.2.u": 15,
		"tools": 17, "tools.0": 17, "tools.0.id": 18, "tools.0.risk": 19, "tools.0.risk.level": 20,
		"tools.1": 21, "tools.1.id": 22, "tools.1.risk": 23, "tools.1.sub": 24, "tools.1.sub.0": 24, "tools.1.sub.1": 25,
		"tools.1.sub.1.x": 26,
	}
	var decoded map[string]any
	if _, err := toml.Decode(doc, &decoded); err != nil {
		t.Fatalf("the test's document is not TOML: %v", err)
	}
	got := map[string]int{}
	lines, tooDeep := keyLines([]byte(doc))
	if tooDeep != 0 {
		t.Errorf("tooDeep = %d", tooDeep)
	}
	for id, line := range lines {
		got[path(strings.Split(id, "\x00")).String()] = line
	}
	for k, line := range want {
		if got[k] != line {
			t.Errorf("%s: line %d, want %d", k, got[k], line)
		}
	}
	if len(got) != len(want) {
		t.Errorf("found %d paths, want %d: %v", len(got), len(want), got)
	}
}

// TestKeyLinesNotTOML: on input the decoder refuses, keyLines still ends.
func TestKeyLinesNotTOML(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"", "[", "[[", "a", "a =", `a = "`, "a = '''", `a = """\`, "a = [", "a = {", "a = {,",
		"a = [,}", "= 1", "]]]", "a = \"\\u12", "[a.]\nb = 1", "\"a\\"} {
		keyLines([]byte(doc))
	}
}
