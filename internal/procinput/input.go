package procinput

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// MaxInputBytes bounds a process.run request, as Palyra's tool gate does.
const MaxInputBytes = 128 << 10

// Input is a process.run request as the model sent it, after Parse's
// normalisation. Nothing in it has been checked: see Check.
type Input struct {
	Command              string      `json:"command"`
	Args                 []string    `json:"args"`
	Cwd                  string      `json:"cwd,omitempty"`
	RequestedEgressHosts []string    `json:"requested_egress_hosts"`
	TimeoutMS            *int64      `json:"timeout_ms,omitempty"`
	Background           *Background `json:"background,omitempty"`
}

// Parse decodes a process.run request strictly and normalises it as
// Palyra does.
//
// Strict means: one JSON object and nothing after it but white space;
// valid UTF-8 (encoding/json would silently replace bad bytes); field
// names matched exactly (encoding/json would accept "COMMAND"); no unknown
// and no duplicate fields (a second "command" would otherwise win
// silently); strings where strings are expected and integers where
// integers are expected ("1.5", "1e3" and "30" are refused as timeout_ms).
//
// Nulls: a null field is the same as an absent one (command, cwd,
// timeout_ms, background; args and requested_egress_hosts become empty),
// but a null inside args or requested_egress_hosts is refused, because
// encoding/json would turn it into "" and hand the process an argument
// nobody sent.
//
// Normalisation: args[0] is dropped when it equals the command's base
// name (models often repeat argv[0]); then a leading "--cwd X" or
// "--cwd=X" is moved to Cwd. A leading --cwd whose value disagrees with a
// cwd field is refused rather than resolved silently.
func Parse(raw []byte) (*Input, error) {
	if len(raw) > MaxInputBytes {
		return nil, invalid(ReasonInputTooLarge, fmt.Sprintf("input is %d bytes, limit %d", len(raw), MaxInputBytes))
	}
	if !utf8.Valid(raw) {
		return nil, invalid(ReasonInputNotUTF8, "input is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	in := &Input{}
	if err := decodeFields(dec, inputFields(in)); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, malformed("trailing data after the request object", err)
	}
	if err := in.normalise(); err != nil {
		return nil, err
	}
	return in, nil
}

// inputFields maps each field name to the setter decoding its value.
func inputFields(in *Input) map[string]func(json.RawMessage) error {
	return map[string]func(json.RawMessage) error{
		"command": func(v json.RawMessage) error { return decodeString(v, "command", &in.Command) },
		"args":    func(v json.RawMessage) error { return decodeStrings(v, "args", &in.Args) },
		"cwd":     func(v json.RawMessage) error { return decodeString(v, "cwd", &in.Cwd) },
		"requested_egress_hosts": func(v json.RawMessage) error {
			return decodeStrings(v, "requested_egress_hosts", &in.RequestedEgressHosts)
		},
		"timeout_ms": func(v json.RawMessage) error { return decodeInt(v, "timeout_ms", &in.TimeoutMS) },
		"background": func(v json.RawMessage) error { return decodeBackground(v, &in.Background) },
	}
}

// normalise applies Palyra's argv[0] and --cwd rules.
func (in *Input) normalise() error {
	if in.Command != "" && len(in.Args) > 0 && in.Args[0] == baseName(in.Command) {
		in.Args = in.Args[1:]
	}
	if len(in.Args) == 0 {
		return nil
	}
	switch first := in.Args[0]; {
	case first == "--cwd":
		if len(in.Args) < 2 || in.Args[1] == "" {
			return invalid(ReasonCwdFlagMissingValue, "leading --cwd has no value; use the cwd field")
		}
		if err := in.setCwd(in.Args[1]); err != nil {
			return err
		}
		in.Args = in.Args[2:]
	case strings.HasPrefix(first, "--cwd="):
		v := strings.TrimPrefix(first, "--cwd=")
		if v == "" {
			return invalid(ReasonCwdFlagMissingValue, "leading --cwd= has no value; use the cwd field")
		}
		if err := in.setCwd(v); err != nil {
			return err
		}
		in.Args = in.Args[1:]
	}
	return nil
}

func (in *Input) setCwd(v string) error {
	if in.Cwd != "" && in.Cwd != v {
		return invalid(ReasonCwdConflict, fmt.Sprintf("cwd field %s and leading --cwd %s disagree; send only the cwd field", short(in.Cwd), short(v)))
	}
	in.Cwd = v
	return nil
}

// baseName is the part of command after its last '/' or '\'.
func baseName(command string) string {
	if i := strings.LastIndexAny(command, `/\`); i >= 0 {
		return command[i+1:]
	}
	return command
}
