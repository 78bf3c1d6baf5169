package procinput

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// A wrapper starts the command that follows its options and a fixed
// number of operands (timeout's DURATION), with the options read as the
// GNU coreutils or util-linux program reads them.
type wrapper struct {
	name     string
	flags    []flag
	operands func([]string) error // checks the operands before the command; nil when there are none
	count    int                  // how many there are
	onPIDs   []string             // options that make it act on running processes, starting nothing
}

// The options of coreutils programs (gnu) and util-linux ones (util).
const gnuHelp, gnuVersion, utilHelp, utilVersion = ":help", ":version", "h:help", "V:version"

var (
	nohupLaunch   = wrapper{name: "nohup", flags: flags(gnuHelp, gnuVersion)}.launch
	stdbufLaunch  = wrapper{name: "stdbuf", flags: flags(gnuHelp, gnuVersion, "i:input=", "o:output=", "e:error=")}.launch
	setsidLaunch  = wrapper{name: "setsid", flags: flags(utilHelp, utilVersion, "c:ctty", "f:fork", "w:wait")}.launch
	timeoutLaunch = wrapper{name: "timeout", count: 1, operands: duration, flags: flags(gnuHelp, gnuVersion,
		"k:kill-after=", "s:signal=", "f:foreground", "p:preserve-status", "v:verbose")}.launch
	ioniceLaunch = wrapper{name: "ionice", onPIDs: []string{"pid", "pgid", "uid"}, flags: flags(utilHelp, utilVersion,
		"c:class=", "n:classdata=", "p:pid=", "P:pgid=", "u:uid=", "t:ignore")}.launch
	chrtLaunch = wrapper{name: "chrt", count: 1, operands: integer, onPIDs: []string{"pid"}, flags: flags(utilHelp, utilVersion,
		"a:all-tasks", "b:batch", "d:deadline", "f:fifo", "i:idle", "o:other", "r:rr", "R:reset-on-fork",
		"T:sched-runtime=", "P:sched-period=", "D:sched-deadline=", "m:max", "p:pid", "v:verbose")}.launch
	tasksetLaunch = wrapper{name: "taskset", count: 1, onPIDs: []string{"pid"}, flags: flags(utilHelp, utilVersion,
		"a:all-tasks", "c:cpu-list", "p:pid")}.launch
	timeLaunch = wrapper{name: "time", flags: flags(gnuHelp, "V:version",
		"a:append", "f:format=", "o:output=", "p:portability", "q:quiet", "v:verbose")}.launch
)

func (w wrapper) launch(args []string) (launch, error) {
	opts, i, err := parseOpts(w.flags, args)
	if err != nil {
		return launch{}, err
	}
	l := launch{form: w.name}
	if hasOpt(opts, w.onPIDs...) || len(args) <= i+w.count {
		return l, nil
	}
	if w.operands != nil {
		if err := w.operands(args[i : i+w.count]); err != nil {
			return launch{}, fmt.Errorf("%s: %w", w.name, err)
		}
	}
	l.commands = [][]string{args[i+w.count:]}
	return l, nil
}

var (
	durationRE = regexp.MustCompile(`^([0-9]+\.?[0-9]*|\.[0-9]+)[smhd]?$`)
	integerRE  = regexp.MustCompile(`^[-+]?[0-9]+$`)
)

// duration accepts the durations timeout documents (5, 0.5, 10s, 2m);
// timeout's strtod would also read hex, exponents and "inf", which are
// refused here rather than guessed at.
func duration(ops []string) error {
	if !durationRE.MatchString(ops[0]) {
		return fmt.Errorf("duration %s is not a plain number with an optional s, m, h or d", short(ops[0]))
	}
	return nil
}

func integer(ops []string) error {
	if !integerRE.MatchString(ops[0]) {
		return fmt.Errorf("priority %s is not an integer", short(ops[0]))
	}
	return nil
}

var niceFlags = flags(gnuHelp, gnuVersion, "n:adjustment=")

// niceLaunch reads nice's options, among which coreutils also accepts an
// adjustment written -N, --N or -+N, then the command, if any.
func niceLaunch(args []string) (launch, error) {
	p := &optParser{flags: niceFlags, args: args}
	for {
		if p.j == 0 && p.i < len(args) && integerRE.MatchString(trimOneDash(args[p.i])) {
			p.i++
			continue
		}
		_, ok, err := p.next()
		if err != nil {
			return launch{}, err
		}
		if !ok {
			break
		}
	}
	l := launch{form: "nice"}
	if p.i < len(args) {
		l.commands = [][]string{args[p.i:]}
	}
	return l, nil
}

// trimOneDash returns a without its leading '-', or "" when it has none:
// "-5", "--5" and "-+5" become "5", "-5" and "+5".
func trimOneDash(a string) string {
	if len(a) < 2 || a[0] != '-' {
		return ""
	}
	return a[1:]
}

var flockFlags = flags(utilHelp, utilVersion, "s:shared", "xe:exclusive", "u:unlock", "n:nonblock|nb",
	"w:timeout|wait=", "E:conflict-exit-code=", "o:close", "F:no-fork", ":verbose")

// flockLaunch reads util-linux flock: options, the lock file (or a file
// descriptor number, starting nothing), then either -c/--command and a
// command line for the shell, or the command itself, read literally.
func flockLaunch(args []string) (launch, error) {
	_, i, err := parseOpts(flockFlags, args)
	if err != nil {
		return launch{}, err
	}
	l := launch{form: "flock"}
	rest := args[min(i+1, len(args)):]
	switch {
	case len(rest) == 0:
	case rest[0] == "-c" || rest[0] == "--command":
		if len(rest) != 2 {
			return launch{}, errors.New("flock -c takes exactly one command line")
		}
		l.commands = [][]string{{"sh", "-c", rest[1]}}
	default:
		l.commands = [][]string{rest}
	}
	return l, nil
}

var xargsFlags = flags(gnuHelp, gnuVersion, "0:null", "a:arg-file=", "d:delimiter=", "E:=", "e:eof[=]",
	"I:=", "i:replace[=]", "L:max-lines=", "l:[=]", "n:max-args=", "o:open-tty", "P:max-procs=",
	"p:interactive", ":process-slot-var=", "r:no-run-if-empty", "s:max-chars=", ":show-limits",
	"t:verbose", "x:exit")

// xargsLaunch reads GNU xargs: options, then the command (echo when none)
// to which it adds words read from its input. A program named by the
// replace string (-I, -i) would come from the input, and is refused.
func xargsLaunch(args []string) (launch, error) {
	opts, i, err := parseOpts(xargsFlags, args)
	if err != nil {
		return launch{}, err
	}
	cmd := args[i:]
	if len(cmd) == 0 {
		cmd = []string{"echo"}
	}
	for _, o := range opts {
		r := o.value
		if o.id == "replace" && r == "" {
			r = "{}"
		}
		if (o.id == "replace" || o.id == "I") && strings.Contains(cmd[0], r) {
			return launch{}, fmt.Errorf("xargs %s would take the program from its input", r)
		}
	}
	return launch{form: "xargs", commands: [][]string{cmd}}, nil
}
