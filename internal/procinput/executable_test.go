package procinput

import "testing"

func TestCheckExecutable(t *testing.T) {
	ws := newTestWorkspace(t)
	only := func(names ...string) func(*Policy) {
		return func(p *Policy) { p.AllowedExecutables = names }
	}
	interpreters := func(p *Policy) { p.AllowInterpreters = true }
	cases := []checkCase{
		{name: "allowlisted", in: Input{Command: "ls"}, policy: only("ls")},
		{name: "not allowlisted", in: Input{Command: "rm"}, policy: only("ls"), want: ReasonExecutableNotAllowlisted},
		{name: "allowlist is case-insensitive", in: Input{Command: "LS"}, policy: only("ls")},
		{name: "allowlist matches normalised .exe name", in: Input{Command: "ls.exe"}, policy: only("ls")},
		{name: "empty allowlist denies", in: Input{Command: "ls"}, policy: only(), want: ReasonExecutableNotAllowlisted},
		{name: "star allows anything", in: Input{Command: "anything"}, policy: only("*")},
		{name: "prefix is not a match", in: Input{Command: "lsof"}, policy: only("ls"), want: ReasonExecutableNotAllowlisted},

		{name: "bash denied", in: Input{Command: "bash"}, want: ReasonInterpreterDenied},
		{name: "sh denied even if allowlisted", in: Input{Command: "sh"}, policy: only("sh"), want: ReasonInterpreterDenied},
		{name: "Palyra list: zsh", in: Input{Command: "zsh"}, want: ReasonInterpreterDenied},
		{name: "Palyra list: fish", in: Input{Command: "fish"}, want: ReasonInterpreterDenied},
		{name: "Palyra list: powershell", in: Input{Command: "powershell"}, want: ReasonInterpreterDenied},
		{name: "Palyra list: pwsh.exe", in: Input{Command: "pwsh.exe"}, want: ReasonInterpreterDenied},
		{name: "Palyra list: cmd", in: Input{Command: "cmd"}, want: ReasonInterpreterDenied},
		{name: "Palyra list: python", in: Input{Command: "python"}, want: ReasonInterpreterDenied},
		{name: "Palyra list: python3", in: Input{Command: "python3"}, want: ReasonInterpreterDenied},
		{name: "Palyra list: node", in: Input{Command: "node"}, want: ReasonInterpreterDenied},
		{name: "Palyra list: ruby", in: Input{Command: "ruby"}, want: ReasonInterpreterDenied},
		{name: "Palyra list: perl", in: Input{Command: "perl"}, want: ReasonInterpreterDenied},
		{name: "Palyra list: deno", in: Input{Command: "deno"}, want: ReasonInterpreterDenied},
		{name: "versioned python3.11", in: Input{Command: "python3.11"}, want: ReasonInterpreterDenied},
		{name: "versioned perl5.36", in: Input{Command: "perl5.36"}, want: ReasonInterpreterDenied},
		{name: "versioned node18", in: Input{Command: "node18"}, want: ReasonInterpreterDenied},
		{name: "upper-case BASH", in: Input{Command: "BASH"}, want: ReasonInterpreterDenied},
		{name: "more shells: dash", in: Input{Command: "dash"}, want: ReasonInterpreterDenied},
		{name: "interpreter allowed by policy", in: Input{Command: "python3.11", Args: []string{"script.py"}}, policy: interpreters},
		{name: "not an interpreter: shellcheck", in: Input{Command: "shellcheck"}},
		{name: "not an interpreter: bashbug-like name", in: Input{Command: "nodemon"}},
		{name: "not an interpreter: ls", in: Input{Command: "ls"}},
	}
	runCheckCases(t, ws, cases)
}

func TestCheckEmbeddedCommandLine(t *testing.T) {
	ws := newTestWorkspace(t)
	interpreters := func(p *Policy) { p.AllowInterpreters = true }
	cases := []checkCase{
		{name: "whole command line in args[0]", in: Input{Command: "git", Args: []string{"git status"}}, want: ReasonEmbeddedCommandLine},
		{name: "after leading white space", in: Input{Command: "git", Args: []string{"  git  status"}}, want: ReasonEmbeddedCommandLine},
		{name: "matching case-insensitively and .exe", in: Input{Command: "git", Args: []string{"GIT.exe status"}}, want: ReasonEmbeddedCommandLine},
		{name: "node -e line", in: Input{Command: "node", Args: []string{"node -e 1"}}, policy: interpreters, want: ReasonEmbeddedCommandLine},
		{name: "split args pass", in: Input{Command: "git", Args: []string{"status", "--short"}}},
		{name: "message with spaces passes", in: Input{Command: "echo", Args: []string{"hello world"}}},
		{name: "other program's name passes", in: Input{Command: "echo", Args: []string{"git status"}}},
		{name: "explicit cmd refused even when interpreters allowed", in: Input{Command: "cmd", Args: []string{"dir"}}, policy: interpreters, want: ReasonCmdDenied},
	}
	runCheckCases(t, ws, cases)
}

func TestCheckKillScope(t *testing.T) {
	ws := newTestWorkspace(t)
	interpreters := func(p *Policy) { p.AllowInterpreters = true }
	cases := []checkCase{
		{name: "pkill", in: Input{Command: "pkill", Args: []string{"node"}}, want: ReasonNameKillDenied},
		{name: "killall", in: Input{Command: "killall", Args: []string{"node"}}, want: ReasonNameKillDenied},
		{name: "killall5", in: Input{Command: "killall5"}, want: ReasonNameKillDenied},
		{name: "taskkill /IM", in: Input{Command: "taskkill", Args: []string{"/IM", "node.exe"}}, want: ReasonNameKillDenied},
		{name: "taskkill /im lower", in: Input{Command: "taskkill", Args: []string{"/f", "/im", "node.exe"}}, want: ReasonNameKillDenied},
		{name: "taskkill filter by image name", in: Input{Command: "taskkill", Args: []string{"/FI", "IMAGENAME eq node.exe"}}, want: ReasonNameKillDenied},
		{name: "taskkill -PID passes", in: Input{Command: "taskkill", Args: []string{"-PID", "1234", "-T", "-F"}}},
		{name: "Stop-Process -Name", in: Input{Command: "Stop-Process", Args: []string{"-Name", "node"}}, want: ReasonNameKillDenied},
		{name: "Stop-Process -na abbreviation", in: Input{Command: "Stop-Process", Args: []string{"-na", "node"}}, want: ReasonNameKillDenied},
		{name: "Stop-Process -Id passes", in: Input{Command: "Stop-Process", Args: []string{"-Id", "1234"}}},
		{name: "pwsh Stop-Process -Name", in: Input{Command: "pwsh", Args: []string{"-File", "x.ps1", "Stop-Process", "-Name", "node"}},
			policy: interpreters, want: ReasonNameKillDenied},
		{name: "kill pid passes", in: Input{Command: "kill", Args: []string{"1234"}}},
		{name: "kill -9 pid passes", in: Input{Command: "kill", Args: []string{"-9", "1234"}}},
		{name: "kill -s TERM pid passes", in: Input{Command: "kill", Args: []string{"-s", "TERM", "1234"}}},
		{name: "kill -l passes", in: Input{Command: "kill", Args: []string{"-l"}}},
		{name: "kill -9 -1 (everything)", in: Input{Command: "kill", Args: []string{"-9", "-1"}}, want: ReasonGroupKillDenied},
		{name: "kill -- -1", in: Input{Command: "kill", Args: []string{"--", "-1"}}, want: ReasonGroupKillDenied},
		{name: "kill 0 (own group)", in: Input{Command: "kill", Args: []string{"0"}}, want: ReasonGroupKillDenied},
		{name: "kill -TERM -4321 (a group)", in: Input{Command: "kill", Args: []string{"-TERM", "-4321"}}, want: ReasonGroupKillDenied},
		{name: "kill by name (util-linux)", in: Input{Command: "kill", Args: []string{"node"}}, want: ReasonNameKillDenied},
	}
	runCheckCases(t, ws, cases)
}
