package procinput

import (
	"fmt"
	"strings"
	"unicode"
)

// checkShape enforces the size and form limits, before anything else.
func checkShape(in *Input, p Policy) error {
	if err := checkCommandShape(in.Command, p.MaxCommandBytes); err != nil {
		return err
	}
	if len(in.Args) > p.MaxArgs {
		return invalid(ReasonTooManyArgs, fmt.Sprintf("%d args, limit %d", len(in.Args), p.MaxArgs))
	}
	for i, a := range in.Args {
		if len(a) > p.MaxArgBytes {
			return invalid(ReasonArgTooLong, fmt.Sprintf("args[%d] is %d bytes, limit %d", i, len(a), p.MaxArgBytes))
		}
		if strings.IndexByte(a, 0) >= 0 {
			return invalid(ReasonArgNUL, fmt.Sprintf("args[%d] contains a NUL byte, which no program can receive", i))
		}
	}
	if len(in.RequestedEgressHosts) > p.MaxEgressHosts {
		return invalid(ReasonTooManyEgressHosts, fmt.Sprintf("%d requested egress hosts, limit %d", len(in.RequestedEgressHosts), p.MaxEgressHosts))
	}
	return checkTimeoutShape(in)
}

func checkCommandShape(cmd string, maxBytes int) error {
	switch {
	case cmd == "":
		return invalid(ReasonCommandEmpty, "command is empty")
	case len(cmd) > maxBytes:
		return invalid(ReasonCommandTooLong, fmt.Sprintf("command is %d bytes, limit %d", len(cmd), maxBytes))
	case strings.ContainsFunc(cmd, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return invalid(ReasonCommandWhitespace, commandWithArgsMessage(cmd))
	case strings.ContainsAny(cmd, `/\`):
		return invalid(ReasonCommandPathSeparator, fmt.Sprintf("command %q must be a bare program name, not a path; the program is looked up in the sandbox PATH", cmd))
	}
	return nil
}

// commandWithArgsMessage explains how to split "ls -la" into command and args.
func commandWithArgsMessage(cmd string) string {
	fields := strings.Fields(cmd)
	if len(fields) < 2 {
		return fmt.Sprintf("command %q must be a bare program name without white space or control characters", cmd)
	}
	return fmt.Sprintf("command %q must be a bare program name; use command=%q and args=%q", cmd, fields[0], fields[1:])
}

func checkTimeoutShape(in *Input) error {
	if in.TimeoutMS != nil && *in.TimeoutMS <= 0 {
		return invalid(ReasonTimeoutInvalid, fmt.Sprintf("timeout_ms must be > 0, got %d", *in.TimeoutMS))
	}
	b := in.Background
	if b == nil || b.LifetimeMS == nil {
		return nil
	}
	if *b.LifetimeMS <= 0 {
		return invalid(ReasonLifetimeInvalid, fmt.Sprintf("background.lifetime_ms must be > 0, got %d", *b.LifetimeMS))
	}
	if in.TimeoutMS != nil && *in.TimeoutMS != *b.LifetimeMS {
		return invalid(ReasonBackgroundTimeoutAmbiguous, "both timeout_ms and background.lifetime_ms are set and differ; send one")
	}
	return nil
}
