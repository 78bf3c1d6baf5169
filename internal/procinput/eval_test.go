package procinput

import (
	"path/filepath"
	"testing"
)

func TestCheckInterpreterGuards(t *testing.T) {
	ws := newTestWorkspace(t)
	interpreters := func(p *Policy) { p.AllowInterpreters = true }
	inRoot := func(p string) string { return filepath.Join(ws.root, p) }
	type a = []string
	cases := []checkCase{
		{name: "bash script passes", in: Input{Command: "bash", Args: a{"sub/x.sh"}}},
		{name: "bash -c", in: Input{Command: "bash", Args: a{"-c", "id"}}, want: ReasonInterpreterEvalDenied},
		{name: "sh -lc cluster", in: Input{Command: "sh", Args: a{"-lc", "id"}}, want: ReasonInterpreterEvalDenied},
		{name: "bash -ec cluster", in: Input{Command: "bash", Args: a{"-ec", "id"}}, want: ReasonInterpreterEvalDenied},
		{name: "bash -x passes", in: Input{Command: "bash", Args: a{"-x", "sub/x.sh"}}},
		{name: "bash --command", in: Input{Command: "bash", Args: a{"--command", "id"}}, want: ReasonInterpreterEvalDenied},
		{name: "upper-case -C counts for Palyra's flags", in: Input{Command: "zsh", Args: a{"-C"}}, want: ReasonInterpreterEvalDenied},
		{name: "fish --init-command", in: Input{Command: "fish", Args: a{"--init-command=id", "x.fish"}}, want: ReasonInterpreterEvalDenied},
		{name: "pwsh -Command", in: Input{Command: "pwsh", Args: a{"-Command", "id"}}, want: ReasonInterpreterEvalDenied},
		{name: "pwsh -Com abbreviation", in: Input{Command: "pwsh", Args: a{"-Com", "id"}}, want: ReasonInterpreterEvalDenied},
		{name: "pwsh -EncodedCommand", in: Input{Command: "pwsh", Args: a{"-EncodedCommand", "aQBkAA=="}}, want: ReasonInterpreterEvalDenied},
		{name: "pwsh -ec", in: Input{Command: "pwsh", Args: a{"-ec", "aQBkAA=="}}, want: ReasonInterpreterEvalDenied},
		{name: "pwsh -File passes", in: Input{Command: "pwsh", Args: a{"-NoProfile", "-File", "sub/x.ps1"}}},
		{name: "python -c", in: Input{Command: "python3", Args: a{"-c", "print(1)"}}, want: ReasonInterpreterEvalDenied},
		{name: "python -Ic cluster", in: Input{Command: "python3", Args: a{"-Ic", "print(1)"}}, want: ReasonInterpreterEvalDenied},
		{name: "python script -c belongs to the script", in: Input{Command: "python3", Args: a{"x.py", "-c", "conf"}}},
		{name: "python -m mod -c belongs to the module", in: Input{Command: "python3", Args: a{"-m", "pytest", "-c", "x.ini"}}},
		{name: "python -W value then -c", in: Input{Command: "python3", Args: a{"-W", "ignore", "-c", "1"}}, want: ReasonInterpreterEvalDenied},
		{name: "node --eval", in: Input{Command: "node", Args: a{"--eval", "1"}}, want: ReasonInterpreterEvalDenied},
		{name: "node --eval=", in: Input{Command: "node", Args: a{"--eval=1"}}, want: ReasonInterpreterEvalDenied},
		{name: "node -e allowed as in Palyra", in: Input{Command: "node", Args: a{"-e", "console.log(1)"}}},
		{name: "deno eval", in: Input{Command: "deno", Args: a{"eval", "1"}}, want: ReasonInterpreterEvalDenied},
		{name: "deno run passes", in: Input{Command: "deno", Args: a{"run", "x.ts"}}},
		{name: "ruby /c", in: Input{Command: "ruby", Args: a{"/c"}}, want: ReasonInterpreterEvalDenied},
		{name: "perl -command", in: Input{Command: "perl", Args: a{"-command"}}, want: ReasonInterpreterEvalDenied},
		{name: "flags are not checked for non-interpreters", in: Input{Command: "git", Args: a{"-c", "user.name=x", "log"}}},

		{name: "embedded path outside in code", in: Input{Command: "node", Args: a{"-e", "require('fs').readFileSync('/etc/passwd')"}},
			want: ReasonEmbeddedPathEscape},
		{name: "embedded path inside in code", in: Input{Command: "node", Args: a{"-e", "require('fs').readFileSync('" + inRoot("file.txt") + "')"}}},
		{name: "embedded file URL outside", in: Input{Command: "node", Args: a{"-e", "fetch(\"file:///etc/passwd\")"}}, want: ReasonEmbeddedPathEscape},
		{name: "embedded path list outside", in: Input{Command: "python3", Args: a{"x.py", "--path=lib:/etc"}}, want: ReasonEmbeddedPathEscape},
		{name: "embedded after = outside", in: Input{Command: "perl", Args: a{"x.pl", "conf=/etc/x"}}, want: ReasonEmbeddedPathEscape},
		{name: "embedded symlink escape", in: Input{Command: "ruby", Args: a{"x.rb", inRoot("link-etc") + "/passwd"}}, want: ReasonEmbeddedPathEscape},
		{name: "code without paths passes", in: Input{Command: "node", Args: a{"-p", "1+1"}}},
		{name: "URL in code is not a path", in: Input{Command: "node", Args: a{"x.js", "https://example.com/a"}}},
	}
	for i := range cases {
		cases[i].policy = interpreters
	}
	runCheckCases(t, ws, cases)
}
