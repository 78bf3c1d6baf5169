package procinput

import (
	"fmt"
	"strings"
)

// A launchRule reports how args make the program start another program
// (a description such as "find -exec"), or "" when they do not.
type launchRule func(args []string) string

// launchRules covers Palyra's gap #1: allowlisted programs that start
// other programs, shells included, whatever the allowlist says. Keyed by
// programName.
var launchRules = map[string]launchRule{
	"env":   envLaunch,
	"xargs": always("xargs runs a command for its input"),
	"find":  exactFlags("find", "-exec", "-execdir", "-ok", "-okdir"),
	"git":   gitLaunch,
	"make":  makeLaunch, "gmake": makeLaunch,
	"sed":    requireFlag("sed can run shell commands (the e command, s///e)", "--sandbox"),
	"awk":    requireFlag("awk can run shell commands (system(), pipes)", "--sandbox", "-S"),
	"gawk":   requireFlag("awk can run shell commands (system(), pipes)", "--sandbox", "-S"),
	"mawk":   always("mawk can run shell commands (system(), pipes)"),
	"nawk":   always("nawk can run shell commands (system(), pipes)"),
	"tar":    tarLaunch,
	"rsync":  optionLaunch("rsync", "e", "rsh", "rsync-path"),
	"fd":     optionLaunch("fd", "xX", "exec", "exec-batch"),
	"fdfind": optionLaunch("fd", "xX", "exec", "exec-batch"),
	"sort":   optionLaunch("sort", "", "compress-program"),
	"split":  optionLaunch("split", "", "filter"),
	"zip":    zipLaunch,
	"man":    optionLaunch("man", "PH", "pager", "html"),
	"ssh":    sshLaunch, "scp": sshLaunch, "sftp": sshLaunch,
}

// wrappers start the program named in their arguments (or a shell when
// none is named): every use is a launch.
var wrappers = []string{
	"nice", "nohup", "timeout", "stdbuf", "setsid", "chroot", "sudo", "doas", "su", "runuser",
	"ionice", "taskset", "chrt", "prlimit", "unshare", "nsenter", "strace", "ltrace", "time",
	"watch", "flock", "systemd-run", "xvfb-run", "script", "busybox", "toybox", "parallel",
	"start-stop-daemon", "setpriv", "capsh", "fakeroot", "proot", "numactl", "valgrind", "gdb",
	"catchsegv", "firejail", "bwrap", "dbus-run-session", "tmux", "screen",
	"vi", "vim", "nvim", "ex", "view", "emacs",
}

// launchRuleFor returns the rule for a program name, or nil.
func launchRuleFor(name string) launchRule {
	if r, ok := launchRules[name]; ok {
		return r
	}
	for _, w := range wrappers {
		if w == name {
			return always(name + " starts another program or a shell")
		}
	}
	return nil
}

// checkLaunchForms refuses launch forms unless interpreters are allowed.
func checkLaunchForms(cmd string, args []string, p Policy) error {
	if p.AllowInterpreters {
		return nil
	}
	rule := launchRuleFor(programName(cmd))
	if rule == nil {
		return nil
	}
	if form := rule(args); form != "" {
		return capabilityDenied(ReasonLauncherDenied, fmt.Sprintf(
			"%s, which can start a shell that no allowlist checks; the policy must set AllowInterpreters to allow it", form))
	}
	return nil
}

func always(form string) launchRule {
	return func([]string) string { return form }
}

// exactFlags matches any argument equal to one of flags.
func exactFlags(prog string, flags ...string) launchRule {
	return func(args []string) string {
		for _, a := range args {
			for _, f := range flags {
				if a == f {
					return prog + " " + f
				}
			}
		}
		return ""
	}
}

// requireFlag is a launch unless one of safe (a sandbox switch) is given.
func requireFlag(form string, safe ...string) launchRule {
	return func(args []string) string {
		for _, a := range args {
			for _, s := range safe {
				if a == s {
					return ""
				}
			}
		}
		return form + " unless " + safe[0] + " is given"
	}
}

// optionLaunch matches short options (letters in short, alone or in a
// cluster such as -avze) and long options, abbreviations included, as
// GNU getopt_long accepts them.
func optionLaunch(prog, short string, long ...string) launchRule {
	return func(args []string) string {
		for _, a := range args {
			if a == "--" {
				return ""
			}
			if l := longOption(a, long...); l != "" {
				return prog + " --" + l
			}
			if c := shortOption(a, short); c != 0 {
				return fmt.Sprintf("%s -%c", prog, c)
			}
		}
		return ""
	}
}

// longOption returns the long option among names that a ("--name" or
// "--name=value", possibly abbreviated) selects, or "".
func longOption(a string, names ...string) string {
	rest, ok := strings.CutPrefix(a, "--")
	if !ok {
		return ""
	}
	given, _, _ := strings.Cut(strings.ToLower(rest), "=")
	if len(given) < 2 {
		return ""
	}
	for _, n := range names {
		if strings.HasPrefix(n, given) {
			return n
		}
	}
	return ""
}

// shortOption returns the first letter of letters present in a short
// option cluster a ("-x", "-avx", "-xVALUE"), or 0.
func shortOption(a, letters string) byte {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' {
		return 0
	}
	for i := 1; i < len(a); i++ {
		if strings.IndexByte(letters, a[i]) >= 0 {
			return a[i]
		}
	}
	return 0
}
