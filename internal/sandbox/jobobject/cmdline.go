package jobobject

import (
	"fmt"
	"strings"
	"unicode/utf16"
)

// maxCommandLine is CreateProcess's limit on lpCommandLine, in UTF-16
// code units with the terminating NUL.
const maxCommandLine = 32767

// CommandLine returns the command line CreateProcess gets: the program in
// double quotes, then each argument quoted by quoteArg. Run also passes
// Program as lpApplicationName, so Windows never searches for the
// program or guesses where its name ends.
func (p Plan) CommandLine() (string, error) {
	if err := p.validate(); err != nil {
		return "", err
	}
	return p.commandLine()
}

// commandLine builds the command line of a plan whose program and
// arguments are valid, and refuses one over maxCommandLine.
func (p Plan) commandLine() (string, error) {
	var b strings.Builder
	// The C runtime reads argv[0] up to the next double quote, without
	// escapes; a path cannot contain one (validate refuses it).
	b.WriteString(`"` + p.Program + `"`)
	for _, a := range p.ProgramArgs {
		b.WriteByte(' ')
		quoteArg(&b, a)
	}
	s := b.String()
	if n := utf16Len(s) + 1; n > maxCommandLine {
		return "", fmt.Errorf("%w: the command line is %d UTF-16 units, over Windows' %d", ErrInvalidPlan, n, maxCommandLine)
	}
	return s, nil
}

// quoteArg appends arg so that the Microsoft C runtime's argument parser
// (and CommandLineToArgvW) reads it back unchanged. An argument that is
// not empty and has no space, tab, newline, vertical tab or double quote
// needs no quotes: backslashes are literal there. Otherwise it goes in
// double quotes, where 2n backslashes before a double quote read as n
// backslashes, so n backslashes before a quote are written as 2n+1 (the
// last escaping the quote) and n backslashes before the closing quote
// as 2n. Backslashes anywhere else are literal and written as they are.
func quoteArg(b *strings.Builder, arg string) {
	if arg != "" && !strings.ContainsAny(arg, " \t\n\v\"") {
		b.WriteString(arg)
		return
	}
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(arg); i++ {
		switch c := arg[i]; c {
		case '\\':
			slashes++
			continue
		case '"':
			b.WriteString(strings.Repeat(`\`, 2*slashes+1))
		default:
			b.WriteString(strings.Repeat(`\`, slashes))
		}
		b.WriteByte(arg[i])
		slashes = 0
	}
	b.WriteString(strings.Repeat(`\`, 2*slashes))
	b.WriteByte('"')
}

// utf16Len returns the length of s in UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
