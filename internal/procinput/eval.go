package procinput

import (
	"errors"
	"fmt"
	"strings"
)

// checkInterpreterArgs runs only for interpreters (which reach it only when
// the policy allows them). It refuses eval flags, so that code comes from a
// file in the workspace rather than the command line, and absolute paths
// outside the workspace embedded in any argument, inline code included
// (open('/etc/passwd')). Both are tripwires, not a boundary: code can
// build any string at run time; the sandbox is what confines it.
func checkInterpreterArgs(w *workspace, dir, cmd string, args []string) error {
	if interpreterFamily(programName(cmd)) == notInterpreter {
		return nil
	}
	if err := checkEvalFlag(cmd, args); err != nil {
		return err
	}
	for i, a := range args {
		if opt, _, ok := strings.Cut(a, "="); ok && nonPathOptions[strings.ToLower(opt)] {
			continue
		}
		if i > 0 && nonPathOptions[strings.ToLower(args[i-1])] {
			continue
		}
		if err := checkEmbeddedPaths(w, dir, a); err != nil {
			return err
		}
	}
	return nil
}

// checkEvalFlag refuses an interpreter's eval flag.
func checkEvalFlag(cmd string, args []string) error {
	f := interpreterFamily(programName(cmd))
	if f == notInterpreter {
		return nil
	}
	if flag := evalFlag(f, args); flag != "" {
		return capabilityDenied(ReasonInterpreterEvalDenied, fmt.Sprintf(
			"%s cannot take code on the command line (%s); write a script in the workspace and run it", cmd, flag))
	}
	return nil
}

// evalFlag returns the first eval flag in args, or "". Palyra's flags
// (-c /c --command -command --eval, any case) count for every interpreter,
// for Python only before the script or module; beyond Palyra, flag
// clusters (bash -lc, python -Ic), --eval=CODE, PowerShell's abbreviations
// (-Com, -EncodedCommand, -e, -ec), fish's --init-command and deno eval.
func evalFlag(f family, args []string) string {
	limit := len(args)
	if f == familyPython {
		limit = pythonTarget(args)
	}
	for i, a := range args[:limit] {
		la := strings.ToLower(strings.TrimSpace(a))
		switch {
		case la == "-c" || la == "/c" || la == "--command" || la == "-command" || la == "--eval",
			strings.HasPrefix(la, "--eval=") || strings.HasPrefix(la, "--command="):
			return a
		case (f == familyShell || f == familyFish || f == familyPython) && shortCluster(a, 'c'):
			return a
		case f == familyFish && (a == "-C" || longOption(a, "init-command") != ""):
			return a
		case f == familyPowerShell && powerShellEval(la):
			return a
		case f == familyDeno && la == "eval" && firstOperand(args) == i:
			return a
		}
	}
	return ""
}

// shortCluster reports "-xyz" (letters only) containing c.
func shortCluster(a string, c byte) bool {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' {
		return false
	}
	for i := 1; i < len(a); i++ {
		if !isASCIILetter(a[i]) {
			return false
		}
	}
	return strings.IndexByte(a[1:], c) >= 0
}

// powerShellEval matches parameter names PowerShell would resolve to
// -Command, -CommandWithArgs or -EncodedCommand.
func powerShellEval(la string) bool {
	if !strings.HasPrefix(la, "-") && !strings.HasPrefix(la, "/") {
		return false
	}
	p, _, _ := strings.Cut(strings.TrimLeft(la, "-/"), ":")
	if p == "" {
		return false
	}
	return strings.HasPrefix("command", p) || strings.HasPrefix("encodedcommand", p) ||
		strings.HasPrefix("commandwithargs", p) || p == "ec" || p == "cwa"
}

// pythonTarget returns the index after which arguments belong to the
// script (or module) rather than to Python.
func pythonTarget(args []string) int {
	for i := 0; i < len(args); i++ {
		a := strings.TrimSpace(args[i])
		switch {
		case a == "--" || a == "-m":
			return min(i+2, len(args))
		case !strings.HasPrefix(a, "-") || a == "-":
			return i
		case a == "-W" || a == "-X" || a == "-Q" || a == "--check-hash-based-pycs":
			i++
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && shortCluster(a, 'c'):
			return len(args) // the -c itself is found by evalFlag
		}
	}
	return len(args)
}

func firstOperand(args []string) int {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			return i
		}
	}
	return -1
}

// checkEmbeddedPaths finds absolute paths and file: URLs inside an
// argument (split at white space, quotes, brackets, ',', ';' and '='; and
// path lists at ':') and requires each to be in the workspace.
func checkEmbeddedPaths(w *workspace, dir, a string) error {
	tokens := strings.FieldsFunc(a, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || strings.ContainsRune("\"'`,;()[]{}=", r)
	})
	for _, t := range tokens {
		parts := []string{t}
		if !strings.Contains(t, "://") && strings.Contains(t, ":") && !hasFileScheme(t) {
			parts = strings.Split(t, ":")
		}
		for _, p := range parts {
			if !strings.HasPrefix(p, "/") && !hasFileScheme(p) {
				continue
			}
			if err := checkArg(w, dir, p); err != nil {
				var e *Error
				if errors.As(err, &e) && e.Reason == ReasonPathEscape {
					e.Reason = ReasonEmbeddedPathEscape
					e.Message = fmt.Sprintf("interpreter argument %s mentions %s, outside the workspace", short(a), short(p))
				}
				return err
			}
		}
	}
	return nil
}
