package procinput

import (
	"errors"
	"fmt"
	"strings"
)

// A launch is what a program's arguments make it start.
type launch struct {
	// form says how, for messages ("find -exec"); "" when the arguments
	// start nothing.
	form string
	// commands are the programs started, each with its arguments.
	commands [][]string
	// unchecked marks a form whose command cannot be read from the
	// arguments: a command line handed to a shell (git -c core.pager=...,
	// tar --to-command=...) or a wrapper whose options are not modelled.
	unchecked bool
}

// A launchRule reads a program's arguments. An error means they cannot
// be read, and is a refusal: what the program would start is unknown.
type launchRule func(args []string) (launch, error)

// maxLaunchDepth bounds launchers starting launchers (env timeout env ...),
// and maxLaunched the programs checked for one command (find starts one
// per action).
const (
	maxLaunchDepth = 8
	maxLaunched    = 256
)

// launchRules covers Palyra's gap #1: allowlisted programs that start
// other programs, shells included, whatever the allowlist says. Keyed by
// programName. The argv launchers (env, find, xargs and the wrappers of
// launch_wrapper.go) are read to the program they start; sed and awk run
// commands from their own script, as interpreter code does; every other
// form is unchecked.
var launchRules = map[string]launchRule{
	"env":   envLaunch,
	"xargs": xargsLaunch,
	"find":  findLaunch,
	"nice":  niceLaunch, "nohup": nohupLaunch, "timeout": timeoutLaunch, "stdbuf": stdbufLaunch,
	"setsid": setsidLaunch, "ionice": ioniceLaunch, "chrt": chrtLaunch, "taskset": tasksetLaunch,
	"flock": flockLaunch, "time": timeLaunch,
	"git":  unchecked(gitLaunch),
	"make": unchecked(makeLaunch), "gmake": unchecked(makeLaunch),
	"sed":    ownCode(requireFlag("sed can run shell commands (the e command, s///e)", "--sandbox")),
	"awk":    ownCode(requireFlag("awk can run shell commands (system(), pipes)", "--sandbox", "-S")),
	"gawk":   ownCode(requireFlag("awk can run shell commands (system(), pipes)", "--sandbox", "-S")),
	"mawk":   ownCode(always("mawk can run shell commands (system(), pipes)")),
	"nawk":   ownCode(always("nawk can run shell commands (system(), pipes)")),
	"tar":    unchecked(tarLaunch),
	"rsync":  unchecked(optionLaunch("rsync", "e", "rsh", "rsync-path")),
	"fd":     unchecked(optionLaunch("fd", "xX", "exec", "exec-batch")),
	"fdfind": unchecked(optionLaunch("fd", "xX", "exec", "exec-batch")),
	"sort":   unchecked(optionLaunch("sort", "", "compress-program")),
	"split":  unchecked(optionLaunch("split", "", "filter")),
	"zip":    unchecked(zipLaunch),
	"man":    unchecked(optionLaunch("man", "PH", "pager", "html")),
	"ssh":    unchecked(sshLaunch), "scp": unchecked(sshLaunch), "sftp": unchecked(sshLaunch),
}

// wrappers start the program named in their arguments (or a shell when
// none is named), under options that are not modelled: every use is an
// unchecked launch.
var wrappers = []string{
	"chroot", "sudo", "doas", "su", "runuser",
	"prlimit", "unshare", "nsenter", "strace", "ltrace",
	"watch", "systemd-run", "xvfb-run", "script", "busybox", "toybox", "parallel",
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
			return unchecked(always(name + " starts another program or a shell"))
		}
	}
	return nil
}

// checkLaunchForms refuses launch forms unless interpreters are allowed;
// with them, it refuses forms whose command cannot be read, and applies
// the command rules to every program a launcher starts, recursively.
func checkLaunchForms(cmd string, args []string, p Policy) error {
	return eachLaunched(cmd, args, p, func(cmd string, args []string) error {
		return checkStarted(cmd, args)
	})
}

// checkStarted applies to a started program the rules that need no file
// system: no cmd and no whole command line, no name or group kills, no
// eval flags. It needs no allowlist entry: a launcher starts any program.
func checkStarted(cmd string, args []string) error {
	if err := checkEmbeddedCommandLine(cmd, args); err != nil {
		return err
	}
	if err := checkKillScope(cmd, args); err != nil {
		return err
	}
	return checkEvalFlag(cmd, args)
}

// eachLaunched calls visit for every program cmd's arguments start, and
// for the programs those start, depth first; it refuses launch forms the
// policy does not allow and forms whose command cannot be read.
func eachLaunched(cmd string, args []string, p Policy, visit func(cmd string, args []string) error) error {
	w := launchWalk{policy: p, visit: visit, left: maxLaunched}
	return w.walk(cmd, args, nil)
}

type launchWalk struct {
	policy Policy
	visit  func(cmd string, args []string) error
	left   int // programs that may still be visited
}

// walk applies the rules to what a program started through via starts.
func (w *launchWalk) walk(cmd string, args []string, via []string) error {
	rule := launchRuleFor(programName(cmd))
	if rule == nil {
		return nil
	}
	l, err := rule(args)
	switch {
	case err != nil:
		return through(via, capabilityDenied(ReasonLauncherDenied, fmt.Sprintf(
			"the arguments of %s cannot be read (%v), so what it would start cannot be checked", cmd, err)))
	case l.form == "":
		return nil
	case !w.policy.AllowInterpreters:
		return through(via, capabilityDenied(ReasonLauncherDenied, fmt.Sprintf(
			"%s, which can start a shell that no allowlist checks; the policy must set AllowInterpreters to allow it", l.form)))
	case l.unchecked:
		return through(via, capabilityDenied(ReasonLauncherDenied, fmt.Sprintf(
			"%s: what it starts cannot be checked, whatever the policy; write a script in the workspace and run it", l.form)))
	case len(l.commands) > 0 && len(via) == maxLaunchDepth:
		return through(via, capabilityDenied(ReasonLauncherDenied, fmt.Sprintf(
			"launchers nested more than %d deep", maxLaunchDepth)))
	case len(l.commands) > w.left:
		return through(via, capabilityDenied(ReasonLauncherDenied, fmt.Sprintf(
			"launchers start more than %d programs", maxLaunched)))
	}
	w.left -= len(l.commands)
	inner := append(via[:len(via):len(via)], l.form)
	for _, c := range l.commands {
		if err := w.visit(c[0], c[1:]); err != nil {
			return through(inner, err)
		}
		if err := w.walk(c[0], c[1:], inner); err != nil {
			return err
		}
	}
	return nil
}

// through says in err's message which launchers started the program it
// refuses.
func through(via []string, err error) error {
	var e *Error
	if len(via) == 0 || !errors.As(err, &e) {
		return err
	}
	c := *e
	c.Message = "started through " + strings.Join(via, " then ") + ": " + e.Message
	return &c
}

// unchecked adapts a rule that only detects a form: what the form starts
// is a command line in an option value or in configuration, which a shell
// or the program itself interprets.
func unchecked(detect func([]string) string) launchRule {
	return func(args []string) (launch, error) {
		form := detect(args)
		return launch{form: form, unchecked: form != ""}, nil
	}
}

// ownCode adapts the rules of sed and awk: the commands they run come from
// their script, code in their own language, which AllowInterpreters allows
// as it allows a script given to perl or node.
func ownCode(detect func([]string) string) launchRule {
	return func(args []string) (launch, error) {
		return launch{form: detect(args)}, nil
	}
}

func always(form string) func([]string) string {
	return func([]string) string { return form }
}

// requireFlag is a launch unless one of safe (a sandbox switch) is given.
func requireFlag(form string, safe ...string) func([]string) string {
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
func optionLaunch(prog, short string, long ...string) func([]string) string {
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
