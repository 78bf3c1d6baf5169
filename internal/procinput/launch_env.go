package procinput

import (
	"errors"
	"fmt"
	"strings"
)

// envFlags are GNU env's options (coreutils 9; --argv0 from 9.5).
var envFlags = flags("i:ignore-environment", "0:null", "u:unset=", "C:chdir=", "S:split-string=", "a:argv0=",
	"v:debug", ":block-signal[=]", ":default-signal[=]", ":ignore-signal[=]", ":list-signal-handling",
	":help", ":version")

// maxEnvSplits bounds -S inside -S.
const maxEnvSplits = 16

// envLaunch reads env's arguments as GNU env does: options; -S STRING
// split into words that take its place, options included; then "-"
// (like -i), NAME=VALUE assignments and the command, if any. env without
// a command prints the environment and starts nothing.
func envLaunch(args []string) (launch, error) {
	for range maxEnvSplits {
		rest, words, split, err := envOptions(args)
		if err != nil {
			return launch{}, err
		}
		if !split {
			return envCommand(rest), nil
		}
		args = append(words, rest...)
	}
	return launch{}, errors.New("too many nested -S")
}

// envOptions reads options up to the first operand, or up to a -S: it
// then returns the arguments after the -S and its split string.
func envOptions(args []string) (rest, words []string, split bool, err error) {
	p := &optParser{flags: envFlags, args: args}
	for {
		o, ok, err := p.next()
		switch {
		case err != nil:
			return nil, nil, false, err
		case !ok:
			return args[p.i:], nil, false, nil
		case o.id == "split-string":
			words, err := splitString(o.value)
			return args[p.i:], words, true, err
		}
	}
}

func envCommand(operands []string) launch {
	if len(operands) > 0 && operands[0] == "-" {
		operands = operands[1:]
	}
	for i, a := range operands {
		if !strings.Contains(a, "=") {
			return launch{form: "env", commands: [][]string{operands[i:]}}
		}
	}
	return launch{}
}

// splitString splits env -S's string as GNU env does: unquoted white space
// separates words; '...' quotes everything but \\ and \'; "..." quotes
// white space and quotes; backslash escapes \\ \' \" \# \$ \f \n \r \t \v,
// \_ (a separator, a space within "..."), and \c (ends the string); a #
// starting a word ends the string. ${NAME} is refused: the value of a
// variable is not known here.
func splitString(s string) ([]string, error) {
	sp := splitter{}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case sp.sq:
			i = sp.singleQuoted(s, i)
		case c == '\'' && !sp.dq:
			sp.sq, sp.started = true, true
		case c == '"':
			sp.dq, sp.started = !sp.dq, true
		case strings.IndexByte(" \t\n\v\f\r", c) >= 0 && !sp.dq:
			sp.end()
		case c == '#' && !sp.dq && !sp.started:
			return sp.words, nil
		case c == '$':
			return nil, errors.New("env -S expands ${NAME}, whose value cannot be checked")
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New("env -S string ends in a backslash")
			}
			i++
			stop, err := sp.escape(s[i])
			if err != nil || stop {
				return sp.words, err
			}
		default:
			sp.add(c)
		}
	}
	if sp.sq || sp.dq {
		return nil, errors.New("env -S string has an unterminated quote")
	}
	sp.end()
	return sp.words, nil
}

// splitter is the state of splitString.
type splitter struct {
	words   []string
	word    strings.Builder
	started bool // a word has begun, possibly empty ('')
	sq, dq  bool
}

func (sp *splitter) add(c byte) {
	sp.word.WriteByte(c)
	sp.started = true
}

func (sp *splitter) end() {
	if sp.started {
		sp.words = append(sp.words, sp.word.String())
		sp.word.Reset()
		sp.started = false
	}
}

// singleQuoted handles s[i] inside '...' and returns the index consumed.
func (sp *splitter) singleQuoted(s string, i int) int {
	switch {
	case s[i] == '\'':
		sp.sq = false
	case s[i] == '\\' && i+1 < len(s) && (s[i+1] == '\\' || s[i+1] == '\''):
		i++
		sp.add(s[i])
	default:
		sp.add(s[i])
	}
	return i
}

// escape handles the character after a backslash; stop reports \c.
func (sp *splitter) escape(e byte) (stop bool, err error) {
	switch e {
	case '"', '#', '$', '\'', '\\':
		sp.add(e)
	case '_':
		if sp.dq {
			sp.add(' ')
		} else {
			sp.end()
		}
	case 'c':
		if sp.dq {
			return false, errors.New(`env -S string has \c within double quotes`)
		}
		sp.end()
		return true, nil
	case 'f', 'n', 'r', 't', 'v':
		sp.add(map[byte]byte{'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}[e])
	default:
		return false, fmt.Errorf(`env -S string has an unknown escape \%c`, e)
	}
	return false, nil
}
