package procinput

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// decodeFields reads the members of an object whose '{' has been consumed,
// up to and including its '}', giving each value to its setter. Names are
// matched exactly; unknown and duplicate names are refused.
func decodeFields(dec *json.Decoder, fields map[string]func(json.RawMessage) error) error {
	seen := make(map[string]bool, len(fields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return malformed("bad object member", err)
		}
		name, _ := tok.(string)
		set, ok := fields[name]
		if !ok {
			return invalid(ReasonUnknownField, fmt.Sprintf("unknown field %q; known fields: %s", name, knownFields(fields)))
		}
		if seen[name] {
			return invalid(ReasonDuplicateField, fmt.Sprintf("field %q appears more than once", name))
		}
		seen[name] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return malformed(fmt.Sprintf("bad value for %q", name), err)
		}
		if err := set(v); err != nil {
			return err
		}
	}
	return expectDelim(dec, '}')
}

func knownFields(fields map[string]func(json.RawMessage) error) string {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// expectDelim reads one token and refuses anything but d.
func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return malformed("expected "+d.String(), err)
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return malformed(fmt.Sprintf("expected %s, got %v", d, tok), nil)
	}
	return nil
}

func malformed(msg string, err error) *Error {
	e := invalid(ReasonInputMalformed, msg)
	e.Err = err
	return e
}

func isNull(v json.RawMessage) bool { return string(v) == "null" }

// decodeString sets *dst from a JSON string; null leaves it empty.
func decodeString(v json.RawMessage, name string, dst *string) error {
	if isNull(v) {
		*dst = ""
		return nil
	}
	if len(v) == 0 || v[0] != '"' {
		return malformed(fmt.Sprintf("%s must be a string", name), nil)
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return malformed(fmt.Sprintf("%s must be a string", name), err)
	}
	return nil
}

// decodeStrings sets *dst from a JSON array of strings; null leaves it
// empty; a null element is refused.
func decodeStrings(v json.RawMessage, name string, dst *[]string) error {
	if isNull(v) {
		*dst = nil
		return nil
	}
	var elems []json.RawMessage
	if len(v) == 0 || v[0] != '[' {
		return malformed(fmt.Sprintf("%s must be an array of strings", name), nil)
	}
	if err := json.Unmarshal(v, &elems); err != nil {
		return malformed(fmt.Sprintf("%s must be an array of strings", name), err)
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		if isNull(e) {
			return invalid(ReasonNullElement, fmt.Sprintf("%s[%d] is null", name, i))
		}
		if err := decodeString(e, fmt.Sprintf("%s[%d]", name, i), &out[i]); err != nil {
			return err
		}
	}
	*dst = out
	return nil
}

// decodeInt sets *dst from a JSON integer; null leaves it nil.
func decodeInt(v json.RawMessage, name string, dst **int64) error {
	if isNull(v) {
		*dst = nil
		return nil
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return malformed(fmt.Sprintf("%s must be an integer", name), err)
	}
	*dst = &n
	return nil
}
