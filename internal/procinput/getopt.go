package procinput

import (
	"fmt"
	"strings"
)

// argKind says whether an option takes a value.
type argKind int

const (
	noArg       argKind = iota
	requiredArg         // -xVALUE, -x VALUE, --name=VALUE, --name VALUE
	optionalArg         // attached only: -xVALUE, --name=VALUE
)

// A flag is one option of a launcher: its one-letter names, its long
// names (the first is its id) and whether it takes a value.
type flag struct {
	short string
	long  []string
	arg   argKind
}

func (f flag) id() string {
	if len(f.long) > 0 {
		return f.long[0]
	}
	return f.short[:1]
}

// flags builds an option table from specs "SHORT:LONG" as --help lists
// them: SHORT holds the one-letter names (none, or aliases), LONG the long
// names separated by '|' (none allowed); a trailing "=" marks an option
// taking a value, "[=]" one taking an attached value only.
// flags("k:kill-after=", "n:nonblock|nb", "E:=", ":help").
func flags(specs ...string) []flag {
	fs := make([]flag, 0, len(specs))
	for _, s := range specs {
		var f flag
		switch {
		case strings.HasSuffix(s, "[=]"):
			s, f.arg = strings.TrimSuffix(s, "[=]"), optionalArg
		case strings.HasSuffix(s, "="):
			s, f.arg = strings.TrimSuffix(s, "="), requiredArg
		}
		short, long, _ := strings.Cut(s, ":")
		f.short = short
		if long != "" {
			f.long = strings.Split(long, "|")
		}
		fs = append(fs, f)
	}
	return fs
}

// An opt is an option read from the command line.
type opt struct {
	id    string // the flag's id
	value string
}

// optParser reads options as GNU getopt_long does with "+" leading its
// option string (as env, timeout, xargs and util-linux's launchers all
// do): options end at the first operand or after "--"; a lone "-" is an
// operand; short options cluster (-fw, -n5); long names may be
// abbreviated to a unique prefix. Anything it does not know is an error:
// a launcher's arguments that cannot be read are refused, not skipped.
type optParser struct {
	flags []flag
	args  []string
	i     int // the next argument
	j     int // the next letter within args[i] when inside a cluster
}

// next returns the next option; ok is false at the first operand, whose
// index is then p.i.
func (p *optParser) next() (o opt, ok bool, err error) {
	if p.j > 0 {
		return p.short()
	}
	if p.i >= len(p.args) {
		return opt{}, false, nil
	}
	a := p.args[p.i]
	switch {
	case a == "--":
		p.i++
		return opt{}, false, nil
	case strings.HasPrefix(a, "--"):
		return p.long(a[2:])
	case len(a) > 1 && a[0] == '-':
		p.j = 1
		return p.short()
	}
	return opt{}, false, nil
}

func (p *optParser) short() (opt, bool, error) {
	a := p.args[p.i]
	c := a[p.j]
	p.j++
	f, found := p.byShort(c)
	if !found {
		return opt{}, false, fmt.Errorf("unknown option -%c", c)
	}
	rest := a[p.j:]
	if f.arg == noArg {
		if rest == "" {
			p.i, p.j = p.i+1, 0
		}
		return opt{id: f.id()}, true, nil
	}
	p.i, p.j = p.i+1, 0
	if rest != "" || f.arg == optionalArg {
		return opt{id: f.id(), value: rest}, true, nil
	}
	return p.value(f, fmt.Sprintf("-%c", c))
}

func (p *optParser) long(a string) (opt, bool, error) {
	name, value, hasValue := strings.Cut(a, "=")
	f, err := p.byLong(name)
	if err != nil {
		return opt{}, false, err
	}
	p.i++
	switch {
	case hasValue && f.arg == noArg:
		return opt{}, false, fmt.Errorf("option --%s takes no value", name)
	case hasValue || f.arg != requiredArg:
		return opt{id: f.id(), value: value}, true, nil
	}
	return p.value(f, "--"+name)
}

// value takes the next argument as f's value.
func (p *optParser) value(f flag, given string) (opt, bool, error) {
	if p.i >= len(p.args) {
		return opt{}, false, fmt.Errorf("option %s lacks its value", given)
	}
	p.i++
	return opt{id: f.id(), value: p.args[p.i-1]}, true, nil
}

func (p *optParser) byShort(c byte) (flag, bool) {
	for _, f := range p.flags {
		if strings.IndexByte(f.short, c) >= 0 {
			return f, true
		}
	}
	return flag{}, false
}

// byLong resolves a long name, exact or a prefix of exactly one flag's
// names, as getopt_long does.
func (p *optParser) byLong(name string) (flag, error) {
	var match []flag
	for _, f := range p.flags {
		for _, l := range f.long {
			if l == name {
				return f, nil
			}
			if strings.HasPrefix(l, name) && name != "" && !containsFlag(match, f) {
				match = append(match, f)
			}
		}
	}
	switch len(match) {
	case 0:
		return flag{}, fmt.Errorf("unknown option --%s", name)
	case 1:
		return match[0], nil
	}
	return flag{}, fmt.Errorf("ambiguous option --%s", name)
}

func containsFlag(fs []flag, f flag) bool {
	for _, g := range fs {
		if g.id() == f.id() {
			return true
		}
	}
	return false
}

// parseOpts reads all the options of args and returns them with the
// index of the first operand.
func parseOpts(flags []flag, args []string) ([]opt, int, error) {
	p := &optParser{flags: flags, args: args}
	var opts []opt
	for {
		o, ok, err := p.next()
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			return opts, p.i, nil
		}
		opts = append(opts, o)
	}
}

func hasOpt(opts []opt, ids ...string) bool {
	for _, o := range opts {
		for _, id := range ids {
			if o.id == id {
				return true
			}
		}
	}
	return false
}
