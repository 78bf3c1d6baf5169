package procinput

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitString(t *testing.T) {
	// Expectations from GNU env 9.1 (env -S"printf <%s> $s").
	cases := []struct {
		s    string
		want []string // nil: an error
	}{
		{`a b`, []string{"a", "b"}},
		{`a  'b c'`, []string{"a", "b c"}},
		{`"d\_e" f\_g`, []string{"d e", "f", "g"}},
		{`'it\'s' x`, []string{"it's", "x"}},
		{`a #c d`, []string{"a"}},
		{`a#b c`, []string{"a#b", "c"}},
		{`"x#y" '$z'`, []string{"x#y", "$z"}},
		{`a\tb`, []string{"a\tb"}},
		{`a '' b`, []string{"a", "", "b"}},
		{`a \c b c`, []string{"a"}},
		{`"a'b"`, []string{"a'b"}},
		{`a\\b`, []string{`a\b`}},
		{`x\#y`, []string{"x#y"}},
		{`\q`, nil},
		{`"\c"`, nil},
		{`${HOME}`, nil},
		{`$HOME`, nil},
		{`'a`, nil},
		{`a\`, nil},
	}
	for _, c := range cases {
		got, err := splitString(c.s)
		if c.want == nil {
			if err == nil {
				t.Errorf("splitString(%q) = %q, want an error", c.s, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("splitString(%q) = %q, %v; want %q", c.s, got, err, c.want)
		}
	}
}

// FuzzSplitString: words that split, quoted again, split into themselves.
func FuzzSplitString(f *testing.F) {
	for _, s := range []string{`a 'b c'`, `"d\_e" f\_g`, `x\#y #c`, `a '' b`, `a \c b`, `'it\'s'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := splitString(s)
		if err != nil {
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(w) + "'"
		}
		again, err := splitString(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(again, words) {
			t.Fatalf("%q split into %q, which quoted split into %q, %v", s, words, again, err)
		}
	})
}
