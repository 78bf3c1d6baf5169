package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaURL is the base URL a tool's schema is compiled at. It is
// hierarchical, so a relative $ref ("other.json") resolves beside it and is
// refused rather than read as the schema itself; .invalid names no host.
const schemaURL = "https://schema.execledger.invalid/tool.json"

// maxMessage bounds the text of a schema or validation error, in bytes.
const maxMessage = 512

// schema reads a tool's schema at key: a TOML table or a string holding
// JSON, a JSON object either way. It returns the schema's canonical JSON
// text (compact, keys sorted) and the compiled schema; both nil when key is
// absent or the schema is refused.
func (v *validator) schema(t *table, key string, input bool) (json.RawMessage, *jsonschema.Schema) {
	at := t.at.key(key)
	raw := t.value(key)
	if raw == nil {
		if input {
			v.fail(at, "missing: every tool describes its input with a JSON Schema whose type is \"object\"")
		}
		return nil, nil
	}
	text, s, err := compileSchema(raw, input)
	if err != nil {
		v.fail(at, "%s", trim(err.Error()))
		return nil, nil
	}
	return text, s
}

func compileSchema(raw any, input bool) (json.RawMessage, *jsonschema.Schema, error) {
	doc, err := schemaDoc(raw)
	if err != nil {
		return nil, nil, err
	}
	obj, ok := doc.(map[string]any)
	switch {
	case depth(doc) > maxNesting:
		return nil, nil, fmt.Errorf("nests deeper than %d levels", maxNesting)
	case usesRefs(doc):
		return nil, nil, errors.New("uses $ref, $dynamicRef or $recursiveRef: a tool's schema is written out in full " +
			"(references, even to itself, can make checking one input take exponential time in the executor's claim)")
	case !ok:
		return nil, nil, errors.New("is not a JSON Schema object")
	case input && obj["type"] != "object":
		return nil, nil, errors.New(`an input schema describes an object: its "type" must be "object"`)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{}) // the default loader reads files
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, nil, err
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, nil, compileError(err)
	}
	text, err := canonical(doc)
	return text, s, err
}

// compileError says why a schema did not compile, on one line.
func compileError(err error) error {
	var load *jsonschema.LoadURLError
	var meta *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	switch {
	case errors.As(err, &load):
		return fmt.Errorf("refers to %s: a skill's schema may refer only to itself (no file, no network)", load.URL)
	case errors.As(err, &meta) && errors.As(meta.Err, &ve):
		return fmt.Errorf("is not a valid JSON Schema (draft 2020-12 unless $schema says otherwise): %s", strings.Join(leaves(ve, nil), "; "))
	}
	return fmt.Errorf("is not a JSON Schema this Execledger can use: %s", oneLine(err.Error()))
}

// noLoader refuses every URL, so a schema refers only to itself: no file
// and no network is ever read. (The draft metaschemas are built in.)
type noLoader struct{}

func (noLoader) Load(string) (any, error) {
	return nil, errors.New("not loaded")
}

// schemaDoc is the schema as jsonschema reads JSON: numbers as
// json.Number.
func schemaDoc(raw any) (any, error) {
	switch x := raw.(type) {
	case string:
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(x))
		if err != nil {
			return nil, fmt.Errorf("is not JSON: %v", err)
		}
		return doc, nil
	case map[string]any:
		return fromTOML(x)
	}
	return nil, fmt.Errorf("is %s; want a table or a string holding JSON", typeName(raw))
}

// fromTOML converts a decoded TOML value to its JSON equivalent; dates and
// times, which JSON lacks, are refused.
func fromTOML(x any) (any, error) {
	switch x := x.(type) {
	case string, bool:
		return x, nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, errors.New("holds inf or nan, which JSON lacks")
		}
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64)), nil
	case map[string]any:
		return convertAll(x)
	case []any:
		return convertEach(x)
	case []map[string]any:
		list := make([]any, len(x))
		for i, m := range x {
			list[i] = m
		}
		return convertEach(list)
	}
	return nil, errors.New("holds a TOML date or time, which JSON lacks")
}

func convertAll(m map[string]any) (any, error) {
	out := make(map[string]any, len(m))
	for k, e := range m {
		c, err := fromTOML(e)
		if err != nil {
			return nil, err
		}
		out[k] = c
	}
	return out, nil
}

func convertEach(list []any) (any, error) {
	out := make([]any, len(list))
	for i, e := range list {
		c, err := fromTOML(e)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// usesRefs reports whether any object in x has a reference keyword.
func usesRefs(x any) bool {
	switch x := x.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "$ref" || k == "$dynamicRef" || k == "$recursiveRef" || usesRefs(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if usesRefs(e) {
				return true
			}
		}
	}
	return false
}

// depth is how deep JSON value x nests: 0 for a scalar.
func depth(x any) int {
	d := 0
	switch x := x.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, depth(e))
		}
	case []any:
		for _, e := range x {
			d = max(d, depth(e))
		}
	default:
		return 0
	}
	return d + 1
}

// canonical is doc's compact JSON text, object keys sorted, without HTML
// escaping.
func canonical(doc any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("cannot be written as JSON: %v", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ValidateInput checks input, a JSON document, against the tool's input
// schema. The error names each failing value's JSON pointer.
func (t *Tool) ValidateInput(input json.RawMessage) error {
	if t.input == nil {
		return fmt.Errorf("input: tool %s has no compiled input schema", t.ID)
	}
	return validate("input", t.input, input)
}

// ValidateOutput checks output, a JSON document, against the tool's output
// schema; without one, any JSON document passes.
func (t *Tool) ValidateOutput(output json.RawMessage) error {
	return validate("output", t.output, output)
}

// validate checks doc against s (nil: any JSON). A compiled schema is
// read-only, so this is safe for concurrent use.
func validate(what string, s *jsonschema.Schema, doc json.RawMessage) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("%s is not JSON: %s", what, trim(err.Error()))
	}
	if s == nil {
		return nil
	}
	err = s.Validate(v)
	var ve *jsonschema.ValidationError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ve):
		return fmt.Errorf("%s: %s", what, trim(strings.Join(leaves(ve, nil), "; ")))
	}
	return fmt.Errorf("%s: %s", what, trim(oneLine(err.Error())))
}

// leaves appends the innermost causes of ve, each "POINTER: MESSAGE".
func leaves(ve *jsonschema.ValidationError, out []string) []string {
	if len(ve.Causes) == 0 {
		u := ve.BasicOutput()
		msg := ""
		if u.Error != nil {
			msg = u.Error.String()
		}
		ptr := u.InstanceLocation
		if ptr == "" {
			ptr = "/"
		}
		return append(out, ptr+": "+msg)
	}
	for _, c := range ve.Causes {
		out = leaves(c, out)
	}
	return out
}

// oneLine folds a multi-line message onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// trim cuts s to maxMessage bytes, on a character boundary.
func trim(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
