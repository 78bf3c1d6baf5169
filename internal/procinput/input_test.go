package procinput

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want *Input // nil when an error is expected
		err  string // Reason
	}{
		{name: "minimal", raw: `{"command":"ls"}`, want: &Input{Command: "ls"}},
		{name: "all fields", raw: `{"command":"ls","args":["-l"],"cwd":"sub","requested_egress_hosts":["example.com"],"timeout_ms":500,"background":false}`,
			want: &Input{Command: "ls", Args: []string{"-l"}, Cwd: "sub", RequestedEgressHosts: []string{"example.com"}, TimeoutMS: ptr[int64](500)}},
		{name: "nulls are absent", raw: `{"command":"ls","args":null,"cwd":null,"requested_egress_hosts":null,"timeout_ms":null,"background":null}`,
			want: &Input{Command: "ls"}},
		{name: "white space around is fine", raw: " \n{\"command\":\"ls\"}\n\t", want: &Input{Command: "ls"}},
		{name: "escaped key is the same key", raw: `{"comm\u0061nd":"ls"}`, want: &Input{Command: "ls"}},
		{name: "missing command parses, Check refuses", raw: `{}`, want: &Input{}},

		{name: "unknown field", raw: `{"command":"ls","env":{}}`, err: ReasonUnknownField},
		{name: "field names are case-sensitive", raw: `{"COMMAND":"ls"}`, err: ReasonUnknownField},
		{name: "duplicate field", raw: `{"command":"ls","command":"rm"}`, err: ReasonDuplicateField},
		{name: "trailing object", raw: `{"command":"ls"}{"command":"rm"}`, err: ReasonInputMalformed},
		{name: "trailing garbage", raw: `{"command":"ls"} x`, err: ReasonInputMalformed},
		{name: "not an object", raw: `["ls"]`, err: ReasonInputMalformed},
		{name: "null document", raw: `null`, err: ReasonInputMalformed},
		{name: "empty document", raw: ``, err: ReasonInputMalformed},
		{name: "truncated", raw: `{"command":"ls"`, err: ReasonInputMalformed},
		{name: "command not a string", raw: `{"command":1}`, err: ReasonInputMalformed},
		{name: "args not an array", raw: `{"command":"ls","args":"-l"}`, err: ReasonInputMalformed},
		{name: "null in args", raw: `{"command":"ls","args":["-l",null]}`, err: ReasonNullElement},
		{name: "number in args", raw: `{"command":"ls","args":[1]}`, err: ReasonInputMalformed},
		{name: "null in hosts", raw: `{"command":"ls","requested_egress_hosts":[null]}`, err: ReasonNullElement},
		{name: "fractional timeout", raw: `{"command":"ls","timeout_ms":1.5}`, err: ReasonInputMalformed},
		{name: "exponent timeout", raw: `{"command":"ls","timeout_ms":1e3}`, err: ReasonInputMalformed},
		{name: "string timeout", raw: `{"command":"ls","timeout_ms":"30"}`, err: ReasonInputMalformed},
		{name: "overflowing timeout", raw: `{"command":"ls","timeout_ms":99999999999999999999}`, err: ReasonInputMalformed},
		{name: "invalid UTF-8", raw: "{\"command\":\"l\xffs\"}", err: ReasonInputNotUTF8},
		{name: "too large", raw: `{"command":"ls","cwd":"` + strings.Repeat("a", MaxInputBytes) + `"}`, err: ReasonInputTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse([]byte(c.raw))
			if r := reasonOf(t, err); r != c.err {
				t.Fatalf("reason = %q, want %q (err: %v)", r, c.err, err)
			}
			if c.want != nil && !reflect.DeepEqual(normalizeNil(got), normalizeNil(c.want)) {
				t.Fatalf("Parse = %+v, want %+v", got, c.want)
			}
		})
	}
}

// normalizeNil makes empty and nil slices compare equal.
func normalizeNil(in *Input) Input {
	out := *in
	if len(out.Args) == 0 {
		out.Args = nil
	}
	if len(out.RequestedEgressHosts) == 0 {
		out.RequestedEgressHosts = nil
	}
	return out
}

func TestParseNormalisation(t *testing.T) {
	cases := []struct {
		name     string
		raw      string
		wantArgs []string
		wantCwd  string
		err      string
	}{
		{name: "argv0 equal to command dropped", raw: `{"command":"ls","args":["ls","-l"]}`, wantArgs: []string{"-l"}},
		{name: "argv0 equal to basename dropped", raw: `{"command":"ls","args":["ls"]}`, wantArgs: nil},
		{name: "argv0 different kept", raw: `{"command":"ls","args":["-l","ls"]}`, wantArgs: []string{"-l", "ls"}},
		{name: "argv0 differing in case kept", raw: `{"command":"ls","args":["LS"]}`, wantArgs: []string{"LS"}},
		{name: "only the first argv0 dropped", raw: `{"command":"echo","args":["echo","echo"]}`, wantArgs: []string{"echo"}},
		{name: "leading --cwd X moved", raw: `{"command":"ls","args":["--cwd","sub","-l"]}`, wantArgs: []string{"-l"}, wantCwd: "sub"},
		{name: "leading --cwd=X moved", raw: `{"command":"ls","args":["--cwd=sub"]}`, wantCwd: "sub"},
		{name: "--cwd after argv0 moved", raw: `{"command":"ls","args":["ls","--cwd","sub"]}`, wantCwd: "sub"},
		{name: "--cwd later is an argument", raw: `{"command":"ls","args":["-l","--cwd","sub"]}`, wantArgs: []string{"-l", "--cwd", "sub"}},
		{name: "--cwd agreeing with field", raw: `{"command":"ls","cwd":"sub","args":["--cwd=sub"]}`, wantCwd: "sub"},
		{name: "--cwd conflicting with field", raw: `{"command":"ls","cwd":"a","args":["--cwd=b"]}`, err: ReasonCwdConflict},
		{name: "--cwd without value", raw: `{"command":"ls","args":["--cwd"]}`, err: ReasonCwdFlagMissingValue},
		{name: "--cwd= empty", raw: `{"command":"ls","args":["--cwd="]}`, err: ReasonCwdFlagMissingValue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := Parse([]byte(c.raw))
			if r := reasonOf(t, err); r != c.err {
				t.Fatalf("reason = %q, want %q (err: %v)", r, c.err, err)
			}
			if err != nil {
				return
			}
			if len(in.Args) != len(c.wantArgs) || (len(in.Args) > 0 && !reflect.DeepEqual(in.Args, c.wantArgs)) {
				t.Errorf("Args = %q, want %q", in.Args, c.wantArgs)
			}
			if in.Cwd != c.wantCwd {
				t.Errorf("Cwd = %q, want %q", in.Cwd, c.wantCwd)
			}
		})
	}
}

func TestParseBackground(t *testing.T) {
	cases := []struct {
		raw  string
		want *Background
		err  string
	}{
		{raw: `true`, want: &Background{Mode: BackgroundRunOwned}},
		{raw: `false`},
		{raw: `null`},
		{raw: `{}`, want: &Background{Mode: BackgroundRunOwned}},
		{raw: `{"mode":"detached","lifetime_ms":1000}`, want: &Background{Mode: BackgroundDetached, LifetimeMS: ptr[int64](1000)}},
		{raw: `{"mode":"run_owned","lifetime_ms":null}`, want: &Background{Mode: BackgroundRunOwned}},
		{raw: `{"mode":"forever"}`, err: ReasonBackgroundInvalid},
		{raw: `{"mode":"detached","extra":1}`, err: ReasonUnknownField},
		{raw: `{"mode":"detached","mode":"run_owned"}`, err: ReasonDuplicateField},
		{raw: `{"lifetime_ms":1.5}`, err: ReasonInputMalformed},
		{raw: `"yes"`, err: ReasonBackgroundInvalid},
		{raw: `1`, err: ReasonBackgroundInvalid},
	}
	for _, c := range cases {
		t.Run(c.raw, func(t *testing.T) {
			in, err := Parse([]byte(`{"command":"sleep","background":` + c.raw + `}`))
			if r := reasonOf(t, err); r != c.err {
				t.Fatalf("reason = %q, want %q (err: %v)", r, c.err, err)
			}
			if err == nil && !reflect.DeepEqual(in.Background, c.want) {
				t.Fatalf("Background = %+v, want %+v", in.Background, c.want)
			}
		})
	}
}

func TestParseErrorIsInvalidInput(t *testing.T) {
	_, err := Parse([]byte(`{"command":"ls","x":1}`))
	if !bytes.Contains([]byte(err.Error()), []byte(ReasonUnknownField)) {
		t.Fatalf("error %q does not name its reason", err)
	}
	if !errors.Is(err, ErrInvalidInput) || errors.Is(err, ErrEgressDenied) {
		t.Fatalf("errors.Is mismatch for %v", err)
	}
}
