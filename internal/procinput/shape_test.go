package procinput

import (
	"strings"
	"testing"
)

func TestCheckShape(t *testing.T) {
	ws := newTestWorkspace(t)
	many := make([]string, DefaultMaxArgs+1)
	for i := range many {
		many[i] = "a"
	}
	cases := []checkCase{
		{name: "plain command", in: Input{Command: "ls"}},
		{name: "empty command", in: Input{}, want: ReasonCommandEmpty},
		{name: "256-byte command", in: Input{Command: strings.Repeat("a", 256)}},
		{name: "257-byte command", in: Input{Command: strings.Repeat("a", 257)}, want: ReasonCommandTooLong},
		{name: "command with space", in: Input{Command: "ls -la"}, want: ReasonCommandWhitespace},
		{name: "command with tab", in: Input{Command: "ls\t"}, want: ReasonCommandWhitespace},
		{name: "command with NUL", in: Input{Command: "ls\x00"}, want: ReasonCommandWhitespace},
		{name: "command with no-break space", in: Input{Command: "ls\u00a0x"}, want: ReasonCommandWhitespace},
		{name: "command with slash", in: Input{Command: "/bin/ls"}, want: ReasonCommandPathSeparator},
		{name: "relative command path", in: Input{Command: "./ls"}, want: ReasonCommandPathSeparator},
		{name: "command with backslash", in: Input{Command: `bin\ls`}, want: ReasonCommandPathSeparator},
		{name: "128 args", in: Input{Command: "echo", Args: many[:128]}},
		{name: "129 args", in: Input{Command: "echo", Args: many}, want: ReasonTooManyArgs},
		{name: "4096-byte arg", in: Input{Command: "echo", Args: []string{strings.Repeat("a", 4096)}}},
		{name: "4097-byte arg", in: Input{Command: "echo", Args: []string{strings.Repeat("a", 4097)}}, want: ReasonArgTooLong},
		{name: "NUL in arg", in: Input{Command: "echo", Args: []string{"a\x00b"}}, want: ReasonArgNUL},
		{name: "policy limit lowers args", in: Input{Command: "echo", Args: []string{"a", "b"}},
			policy: func(p *Policy) { p.MaxArgs = 1 }, want: ReasonTooManyArgs},
		{name: "timeout 1", in: Input{Command: "ls", TimeoutMS: ptr[int64](1)}},
		{name: "timeout 0", in: Input{Command: "ls", TimeoutMS: ptr[int64](0)}, want: ReasonTimeoutInvalid},
		{name: "timeout negative", in: Input{Command: "ls", TimeoutMS: ptr[int64](-5)}, want: ReasonTimeoutInvalid},
		{name: "lifetime 0", in: Input{Command: "sleep", Background: &Background{Mode: BackgroundRunOwned, LifetimeMS: ptr[int64](0)}},
			want: ReasonLifetimeInvalid},
		{name: "timeout and equal lifetime", in: Input{Command: "sleep", TimeoutMS: ptr[int64](5), Background: &Background{Mode: BackgroundRunOwned, LifetimeMS: ptr[int64](5)}}},
		{name: "timeout and different lifetime", in: Input{Command: "sleep", TimeoutMS: ptr[int64](5), Background: &Background{Mode: BackgroundRunOwned, LifetimeMS: ptr[int64](6)}},
			want: ReasonBackgroundTimeoutAmbiguous},
		{name: "32 hosts", in: Input{Command: "ls", RequestedEgressHosts: repeat("example.com", 32)}},
		{name: "33 hosts", in: Input{Command: "ls", RequestedEgressHosts: repeat("example.com", 33)}, want: ReasonTooManyEgressHosts},
	}
	runCheckCases(t, ws, cases)
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}
