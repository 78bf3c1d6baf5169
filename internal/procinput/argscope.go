package procinput

import (
	"net/url"
	"strings"
)

// Options whose value is a pattern, never a path (Palyra's list).
var nonPathOptions = map[string]bool{
	"--test-name-pattern": true, "--testnamepattern": true, "--grep": true, "--grep-invert": true,
}

// checkArgScope checks every argument that may name a file against the
// workspace, as Palyra does, without rewriting any of them (Palyra's gap
// #6: its rewriting corrupted arguments that were not paths):
//
//   - a file: URL names its path;
//   - "--opt=VALUE" and "-oVALUE" (when VALUE looks like a path: "./x",
//     "/x", "file:...") name VALUE;
//   - any other argument not starting with '-' is a path relative to the
//     working directory: it must not have a ".." component and must
//     resolve inside the workspace (most such arguments are words that
//     name nothing and pass trivially). Unlike Palyra, URLs are not
//     exempt: "https:/a/../../etc/passwd" is a relative path to cat;
//   - beyond Palyra, "NAME=/abs" and "--opt=NAME=/abs" (dd if=/etc/shadow,
//     make PREFIX=/etc, -Dkey=/etc) name /abs.
//
// Values of options that take patterns (--grep ...), of python -m and of
// node -e/-p are skipped here, as in Palyra; interpreter arguments are
// additionally scanned by checkInterpreterArgs.
func checkArgScope(w *workspace, dir, cmd string, args []string) error {
	name := programName(cmd)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if skipsNextAsNonPath(name, a) {
			i++
			continue
		}
		if opt, _, ok := strings.Cut(a, "="); ok && nonPathOptions[strings.ToLower(opt)] {
			continue
		}
		if err := checkArg(w, dir, a); err != nil {
			return err
		}
		if t := strings.TrimSpace(a); t != a {
			if err := checkArg(w, dir, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// skipsNextAsNonPath reports an option whose next argument is not a path.
func skipsNextAsNonPath(name, a string) bool {
	la := strings.ToLower(a)
	switch {
	case nonPathOptions[la]:
		return true
	case (name == "node" || name == "nodejs") && (la == "-e" || la == "-p"):
		return true
	case interpreterFamily(name) == familyPython && la == "-m":
		return true
	}
	return false
}

func checkArg(w *workspace, dir, a string) error {
	if a == "" {
		return nil
	}
	if p, ok, err := fileURLPath(a); ok || err != nil {
		if err != nil {
			return err
		}
		_, err := w.resolve(dir, p, false)
		return err
	}
	if strings.HasPrefix(a, "-") {
		return checkOptionValue(w, dir, a)
	}
	if _, err := w.resolve(dir, a, false); err != nil {
		return err
	}
	return checkAssignedAbsolute(w, dir, a)
}

// checkOptionValue checks the value of "--opt=VALUE" or "-oVALUE".
func checkOptionValue(w *workspace, dir, a string) error {
	if _, v, ok := strings.Cut(a, "="); ok {
		if strings.HasPrefix(v, "-") {
			return nil
		}
		return checkArg(w, dir, v)
	}
	if len(a) < 3 || a[1] == '-' || !isASCIILetter(a[1]) {
		return nil
	}
	if v := a[2:]; looksLikePath(v) {
		return checkArg(w, dir, v)
	}
	return nil
}

// checkAssignedAbsolute checks the value of NAME=VALUE when it is an
// absolute path or file: URL (a relative one was checked with the whole
// argument).
func checkAssignedAbsolute(w *workspace, dir, a string) error {
	name, v, ok := strings.Cut(a, "=")
	if !ok || !isIdentifier(name) || !(strings.HasPrefix(v, "/") || hasFileScheme(v)) {
		return nil
	}
	return checkArg(w, dir, v)
}

func looksLikePath(v string) bool {
	return strings.HasPrefix(v, ".") || strings.HasPrefix(v, "/") || hasFileScheme(v)
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isASCIILetter(c) && !(c >= '0' && c <= '9') && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

func hasFileScheme(s string) bool {
	return len(s) >= 5 && strings.EqualFold(s[:5], "file:")
}

// fileURLPath returns the path of a file: URL. ok is false for anything
// else; a file: URL with a remote host or a bad escape is an error.
func fileURLPath(s string) (string, bool, error) {
	if !hasFileScheme(s) {
		return "", false, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", true, scopeDenied(ReasonFileURLInvalid, "file URL "+short(s)+" cannot be parsed", err)
	}
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return "", true, scopeDenied(ReasonFileURLInvalid, "file URL "+short(s)+" names a remote host", nil)
	}
	p := u.Path
	if p == "" {
		p = u.Opaque
	}
	if p == "" {
		return "", true, scopeDenied(ReasonFileURLInvalid, "file URL "+short(s)+" has no path", nil)
	}
	return p, true, nil
}
