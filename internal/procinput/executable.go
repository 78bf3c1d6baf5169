package procinput

import (
	"fmt"
	"strings"
	"unicode"
)

// family groups interpreters whose eval flags are spelled alike.
type family int

const (
	notInterpreter   family = iota
	familyShell             // -c, and clusters such as -lc
	familyFish              // -c/--command, -C/--init-command
	familyPowerShell        // -Command, -EncodedCommand and their prefixes
	familyCmd               // refused outright (Palyra)
	familyPython            // -c (also clustered) before the script
	familyNode              // --eval; -e and -p are allowed, as in Palyra
	familyDeno              // --eval and the eval subcommand
	familyOther             // Palyra's generic flags only
)

// interpreters is Palyra's denylist (bash sh zsh fish powershell pwsh cmd
// python python3 node ruby perl deno) plus the other shells and
// interpreters found on Debian. Versioned names (python3.11, perl5.36,
// node18) are reduced to these by programName.
var interpreters = map[string]family{
	"bash": familyShell, "sh": familyShell, "zsh": familyShell, "dash": familyShell, "ksh": familyShell,
	"mksh": familyShell, "ash": familyShell, "yash": familyShell, "csh": familyShell, "tcsh": familyShell,
	"rbash": familyShell, "fish": familyFish,
	"powershell": familyPowerShell, "pwsh": familyPowerShell,
	"cmd":    familyCmd,
	"python": familyPython, "python3": familyPython, "py": familyPython, "pypy": familyPython, "pythonw": familyPython,
	"node": familyNode, "nodejs": familyNode, "bun": familyNode,
	"deno": familyDeno,
	"ruby": familyOther, "irb": familyOther, "perl": familyOther, "php": familyOther, "lua": familyOther,
	"luajit": familyOther, "tclsh": familyOther, "wish": familyOther, "expect": familyOther,
	"osascript": familyOther, "rscript": familyOther, "julia": familyOther, "jshell": familyOther,
}

// programName is cmd lower-cased without a Windows executable suffix:
// the name allowlists, interpreter and launcher tables are keyed by.
func programName(cmd string) string {
	name := strings.ToLower(strings.Trim(baseName(strings.TrimSpace(cmd)), `"'`))
	for _, ext := range []string{".exe", ".cmd", ".bat", ".com"} {
		if s, ok := strings.CutSuffix(name, ext); ok && s != "" {
			return s
		}
	}
	return name
}

// interpreterFamily classifies a program name, ignoring a version suffix.
func interpreterFamily(name string) family {
	if f, ok := interpreters[name]; ok {
		return f
	}
	if unversioned := strings.TrimRight(name, "0123456789.-_"); unversioned != name {
		return interpreters[unversioned]
	}
	return notInterpreter
}

// checkExecutable applies the allowlist, then the interpreter denylist.
func checkExecutable(cmd string, p Policy) error {
	name := programName(cmd)
	if !allowlisted(cmd, name, p.AllowedExecutables) {
		return capabilityDenied(ReasonExecutableNotAllowlisted, fmt.Sprintf("executable %q is not allowlisted for process.run", cmd))
	}
	if interpreterFamily(name) != notInterpreter && !p.AllowInterpreters {
		return capabilityDenied(ReasonInterpreterDenied, fmt.Sprintf(
			"%q is a shell or language interpreter; the policy must set AllowInterpreters to run it", cmd))
	}
	return nil
}

func allowlisted(cmd, name string, allowed []string) bool {
	for _, a := range allowed {
		if a == allowAnyExecutable || strings.EqualFold(a, cmd) || strings.EqualFold(a, name) {
			return true
		}
	}
	return false
}

// checkEmbeddedCommandLine refuses a whole command line passed as the
// first argument (args=["node -e ..."] for command node), which would
// reach the program as one literal argument; and, as Palyra does, an
// explicit cmd, whose own parsing of its command line cannot be checked.
func checkEmbeddedCommandLine(cmd string, args []string) error {
	name := programName(cmd)
	if interpreterFamily(name) == familyCmd {
		return invalid(ReasonCmdDenied, "process.run does not run cmd; call the target program directly with split args")
	}
	if len(args) == 0 {
		return nil
	}
	arg := strings.TrimLeftFunc(args[0], unicode.IsSpace)
	if i := strings.IndexFunc(arg, unicode.IsSpace); i > 0 && programName(arg[:i]) == name {
		return invalid(ReasonEmbeddedCommandLine, fmt.Sprintf(
			"args[0] %s is a whole command line; put each argument in its own args entry", short(args[0])))
	}
	return nil
}
