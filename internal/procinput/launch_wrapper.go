package procinput

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The options every GNU coreutils and util-linux program has.
var (
	gnuStandard  = []flag{{long: []string{"help"}}, {long: []string{"version"}}}
	utilStandard = []flag{{short: "h", long: []string{"help"}}, {short: "V", long: []string{"version"}}}
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

var (
	nohupLaunch   = wrapper{name: "nohup", flags: gnuStandard}.launch
	stdbufLaunch  = wrapper{name: "stdbuf", flags: withFlags(gnuStandard, "i", "input", "o", "output", "e", "error")}.launch
	setsidLaunch  = wrapper{name: "setsid", flags: append(slices.Clip(utilStandard), flag{short: "c", long: []string{"ctty"}}, flag{short: "f", long: []string{"fork"}}, flag{short: "w", long: []string{"wait"}})}.launch
	timeoutLaunch = wrapper{name: "timeout", count: 1, operands: duration, flags: append(
		withFlags(gnuStandard, "k", "kill-after", "s", "signal"),
		flag{short: "f", long: []string{"foreground"}}, flag{short: "p", long: []string{"preserve-status"}},
		flag{short: "v", long: []string{"verbose"}})}.launch
	ioniceLaunch = wrapper{name: "ionice", onPIDs: []string{"pid", "pgid", "uid"}, flags: append(
		withFlags(utilStandard, "c", "class", "n", "classdata", "p", "pid", "P", "pgid", "u", "uid"),
		flag{short: "t", long: []string{"ignore"}})}.launch
	chrtLaunch = wrapper{name: "chrt", count: 1, operands: integer, onPIDs: []string{"pid"}, flags: append(
		withFlags(utilStandard, "T", "sched-runtime", "P", "sched-period", "D", "sched-deadline"),
		noArgFlags("a", "all-tasks", "b", "batch", "d", "deadline", "f", "fifo", "i", "idle", "o", "other",
			"r", "rr", "R", "reset-on-fork", "m", "max", "p", "pid", "v", "verbose")...)}.launch
	tasksetLaunch = wrapper{name: "taskset", count: 1, onPIDs: []string{"pid"},
		flags: append(slices.Clip(utilStandard), noArgFlags("a", "all-tasks", "c", "cpu-list", "p", "pid")...)}.launch
	timeLaunch = wrapper{name: "time", flags: append(withFlags([]flag{{short: "V", long: []string{"version"}}, {long: []string{"help"}}},
		"f", "format", "o", "output"), noArgFlags("a", "append", "p", "portability", "q", "quiet", "v", "verbose")...)}.launch
)

// withFlags returns base and options taking a value, given as pairs of
// short and long name.
func withFlags(base []flag, pairs ...string) []flag {
	fs := slices.Clip(base)
	for i := 0; i < len(pairs); i += 2 {
		fs = append(fs, flag{short: pairs[i], long: []string{pairs[i+1]}, arg: requiredArg})
	}
	return fs
}

// noArgFlags returns options without a value, given as pairs of short
// and long name.
func noArgFlags(pairs ...string) []flag {
	var fs []flag
	for i := 0; i < len(pairs); i += 2 {
		fs = append(fs, flag{short: pairs[i], long: []string{pairs[i+1]}})
	}
	return fs
}

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

var niceFlags = withFlags(gnuStandard, "n", "adjustment")

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

var flockFlags = append(withFlags(utilStandard, "E", "conflict-exit-code"),
	flag{short: "w", long: []string{"timeout", "wait"}, arg: requiredArg},
	flag{short: "s", long: []string{"shared"}}, flag{short: "xe", long: []string{"exclusive"}},
	flag{short: "u", long: []string{"unlock"}}, flag{short: "n", long: []string{"nonblock", "nb"}},
	flag{short: "o", long: []string{"close"}}, flag{short: "F", long: []string{"no-fork"}},
	flag{long: []string{"verbose"}})

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

var xargsFlags = append(withFlags(gnuStandard, "a", "arg-file", "d", "delimiter", "L", "max-lines",
	"n", "max-args", "P", "max-procs", "s", "max-chars"),
	flag{short: "E", arg: requiredArg}, flag{short: "I", arg: requiredArg},
	flag{short: "e", long: []string{"eof"}, arg: optionalArg},
	flag{short: "i", long: []string{"replace"}, arg: optionalArg},
	flag{short: "l", arg: optionalArg},
	flag{long: []string{"process-slot-var"}, arg: requiredArg},
	flag{short: "0", long: []string{"null"}}, flag{short: "o", long: []string{"open-tty"}},
	flag{short: "p", long: []string{"interactive"}}, flag{short: "r", long: []string{"no-run-if-empty"}},
	flag{short: "t", long: []string{"verbose"}}, flag{short: "x", long: []string{"exit"}},
	flag{long: []string{"show-limits"}})

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
