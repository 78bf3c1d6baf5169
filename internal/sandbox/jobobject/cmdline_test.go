package jobobject

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// parseCommandLine splits a command line as the Microsoft C runtime
// (UCRT, and msvcrt since 2008) does: argv[0] up to the next double quote
// when it starts with one, without escapes, else up to whitespace; then
// arguments separated by spaces and tabs outside quotes, where 2n
// backslashes before a double quote give n backslashes and the quote
// toggles quoting, 2n+1 give n backslashes and a literal quote, other
// backslashes are literal, and "" inside quotes is a literal quote.
func parseCommandLine(s string) []string {
	var argv []string
	i := 0
	if strings.HasPrefix(s, `"`) {
		end := strings.IndexByte(s[1:], '"')
		if end < 0 {
			return []string{s[1:]}
		}
		argv = append(argv, s[1:1+end])
		i = 2 + end
	} else {
		for i < len(s) && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		argv = append(argv, s[:i])
	}
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i == len(s) {
			return argv
		}
		var arg strings.Builder
		quoted := false
		for i < len(s) && (quoted || (s[i] != ' ' && s[i] != '\t')) {
			switch {
			case s[i] == '\\':
				n := 0
				for i < len(s) && s[i] == '\\' {
					n++
					i++
				}
				if i < len(s) && s[i] == '"' {
					arg.WriteString(strings.Repeat(`\`, n/2))
					if n%2 == 1 {
						arg.WriteByte('"')
						i++
					}
				} else {
					arg.WriteString(strings.Repeat(`\`, n))
				}
			case s[i] == '"':
				if quoted && i+1 < len(s) && s[i+1] == '"' {
					arg.WriteByte('"')
					i += 2
					continue
				}
				quoted = !quoted
				i++
			default:
				arg.WriteByte(s[i])
				i++
			}
		}
		argv = append(argv, arg.String())
	}
}

func quoted(arg string) string {
	var b strings.Builder
	quoteArg(&b, arg)
	return b.String()
}

func TestQuoteArg(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{``, `""`},
		{`a`, `a`},
		{`a b`, `"a b"`},
		{"a\tb", "\"a\tb\""},
		{"a\nb", "\"a\nb\""},
		{"a\vb", "\"a\vb\""},
		{`a\b`, `a\b`},
		{`a\\b`, `a\\b`},
		{`a\`, `a\`},
		{`a"b`, `"a\"b"`},
		{`"`, `"\""`},
		{`""`, `"\"\""`},
		{`\"`, `"\\\""`},
		{`a\"b`, `"a\\\"b"`},
		{`a\\"b`, `"a\\\\\"b"`},
		{`a b\`, `"a b\\"`},
		{`a b\\`, `"a b\\\\"`},
		{`C:\Program Files\x\`, `"C:\Program Files\x\\"`},
		{`\\server\share dir\`, `"\\server\share dir\\"`},
		{`--name="x y"`, `"--name=\"x y\""`},
		{`%PATH%^&|<>`, `%PATH%^&|<>`},
		{"ü 日本 🙂", "\"ü 日本 🙂\""},
	} {
		got := quoted(c.in)
		if got != c.want {
			t.Errorf("quoteArg(%q) = %s, want %s", c.in, got, c.want)
		}
		if back := parseCommandLine(`"C:\p.exe" ` + got); !slices.Equal(back, []string{`C:\p.exe`, c.in}) {
			t.Errorf("%s parses back as %q", got, back)
		}
	}
}

// TestQuoteArgRoundTrip checks random arguments made of the characters
// the rules treat specially.
func TestQuoteArgRoundTrip(t *testing.T) {
	alphabet := []string{"a", " ", "\t", `\`, `"`, "\n", "\v", "é", "🙂", "="}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		args := make([]string, r.IntN(4))
		for i := range args {
			var b strings.Builder
			for range r.IntN(12) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			args[i] = b.String()
		}
		p := Plan{Program: `C:\Tools\tool.exe`, ProgramArgs: args, Dir: `C:\ws`}
		line, err := p.CommandLine()
		if err != nil {
			t.Fatal(err)
		}
		if got := parseCommandLine(line); !slices.Equal(got, append([]string{p.Program}, args...)) {
			t.Fatalf("%q: command line %s parses back as %q", args, line, got)
		}
	}
}

func FuzzQuoteArg(f *testing.F) {
	for _, s := range []string{"", `a\`, `a b\\`, `\"`, `"\\"`, "\t\"\\\\\"", `x\\\"y z`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		if strings.ContainsRune(arg, 0) || !utf8.ValidString(arg) {
			return // refused by validate
		}
		line := `"C:\p.exe" ` + quoted(arg) + ` next`
		if got := parseCommandLine(line); !slices.Equal(got, []string{`C:\p.exe`, arg, "next"}) {
			t.Fatalf("%q: %s parses back as %q", arg, line, got)
		}
	})
}

func TestCommandLine(t *testing.T) {
	p := Plan{Program: `C:\Program Files\Git\cmd\git.exe`, ProgramArgs: []string{"log", "--format=%H %s", ""}, Dir: `C:\ws`}
	line, err := p.CommandLine()
	if err != nil {
		t.Fatal(err)
	}
	if want := `"C:\Program Files\Git\cmd\git.exe" log "--format=%H %s" ""`; line != want {
		t.Errorf("command line %s, want %s", line, want)
	}

	for name, args := range map[string][]string{
		"NUL":           {"a\x00b"},
		"invalid UTF-8": {"\xff"},
		"too long":      {strings.Repeat("x", maxCommandLine)},
	} {
		p := Plan{Program: `C:\t.exe`, ProgramArgs: args, Dir: `C:\ws`}
		if _, err := p.CommandLine(); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("%s: error %v, want ErrInvalidPlan", name, err)
		}
	}
	// `"C:\t.exe" ` is 11 units; the NUL makes the rest fit exactly.
	fits := Plan{Program: `C:\t.exe`, ProgramArgs: []string{strings.Repeat("x", maxCommandLine-12)}, Dir: `C:\ws`}
	if _, err := fits.CommandLine(); err != nil {
		t.Errorf("a command line of exactly the limit: %v", err)
	}
	astral := Plan{Program: `C:\t.exe`, ProgramArgs: []string{strings.Repeat("🙂", (maxCommandLine-12)/2+1)}, Dir: `C:\ws`}
	if _, err := astral.CommandLine(); !errors.Is(err, ErrInvalidPlan) {
		t.Errorf("a command line over the limit in UTF-16 but not in runes: %v", err)
	}
}

func TestPaths(t *testing.T) {
	good := []string{`C:\Windows\System32\where.exe`, `d:\tools\x.com`, `C:\Program Files\a b\tool.EXE`, `C:\ü\日本\t.exe`}
	for _, prog := range good {
		if _, err := (Plan{Program: prog, Dir: `C:\ws`}).Job(); err != nil {
			t.Errorf("program %q: %v", prog, err)
		}
	}
	bad := []string{
		``, `tool.exe`, `\tools\t.exe`, `C:tools\t.exe`, `C:/tools/t.exe`, `C:\tools/t.exe`,
		`\\server\share\t.exe`, `\\?\C:\t.exe`, `\\.\C:\t.exe`, `C:\`, `C:\tools\`, `C:\tools\\t.exe`,
		`C:\tools\..\t.exe`, `C:\.\t.exe`, `C:\tools.\t.exe`, `C:\tools \t.exe`, `C:\t.exe:stream`,
		`C:\t"x.exe`, `C:\t*.exe`, `C:\t?.exe`, `C:\t|x.exe`, "C:\\t\x00.exe", "C:\\t\n.exe", "C:\\\xff.exe",
		`C:\CON.exe`, `C:\nul\t.exe`, `C:\tools\com1.exe`, `C:\LPT9 .txt\t.exe`, `C:\conin$.exe`,
		`C:\run.bat`, `C:\run.cmd`, `C:\run.ps1`, `C:\run`, `C:\run.exe.txt`,
	}
	for _, prog := range bad {
		if _, err := (Plan{Program: prog, Dir: `C:\ws`}).Job(); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("program %q: error %v, want ErrInvalidPlan", prog, err)
		}
	}
	for _, dir := range []string{``, `ws`, `C:\`, `C:\ws\..`, `\\server\share`} {
		if _, err := (Plan{Program: `C:\t.exe`, Dir: dir}).Job(); !errors.Is(err, ErrInvalidPlan) {
			t.Errorf("dir %q: error %v, want ErrInvalidPlan", dir, err)
		}
	}
}
