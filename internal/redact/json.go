package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// JSON returns raw with secrets replaced, as compact JSON in the original
// member order. The value of a sensitive key becomes the string Marker,
// whatever its type (null, booleans and "" are kept: they hold nothing);
// every other string, key and number is redacted as text (so added
// secrets, URLs, "Bearer ..." and key=value inside strings are caught)
// and a number holding an added secret becomes Marker. Valid JSON in
// gives valid JSON out. Input that is not valid JSON is redacted as text
// and returned as a JSON string, so the result is always valid JSON.
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	out, err := r.jsonValue(dec, nil, 0)
	if err == nil {
		if _, err = dec.Token(); errors.Is(err, io.EOF) {
			return out
		}
	}
	return appendJSONString(nil, r.String(string(raw)))
}

var errNotJSON = errors.New("redact: not JSON")

// maxJSONDepth bounds nesting, as encoding/json does.
const maxJSONDepth = 10000

// jsonValue copies one value from dec to b, redacting it.
func (r *Redactor) jsonValue(dec *json.Decoder, b []byte, depth int) ([]byte, error) {
	if depth > maxJSONDepth {
		return nil, errNotJSON
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return r.jsonObject(dec, b, depth+1)
		}
		if t == '[' {
			return r.jsonArray(dec, b, depth+1)
		}
		return nil, errNotJSON
	case string:
		return appendJSONString(b, r.String(t)), nil
	case json.Number:
		if r.String(string(t)) != string(t) {
			return appendJSONString(b, Marker), nil
		}
		return append(b, t...), nil
	case bool:
		if t {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case nil:
		return append(b, "null"...), nil
	}
	return nil, errNotJSON
}

func (r *Redactor) jsonObject(dec *json.Decoder, b []byte, depth int) ([]byte, error) {
	b = append(b, '{')
	for first := true; dec.More(); first = false {
		if !first {
			b = append(b, ',')
		}
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return nil, errNotJSON
		}
		b = append(appendJSONString(b, r.String(key)), ':')
		if r.isSensitiveKey(key) {
			b, err = sensitiveValue(dec, b)
		} else {
			b, err = r.jsonValue(dec, b, depth)
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func (r *Redactor) jsonArray(dec *json.Decoder, b []byte, depth int) ([]byte, error) {
	b = append(b, '[')
	for first := true; dec.More(); first = false {
		if !first {
			b = append(b, ',')
		}
		var err error
		if b, err = r.jsonValue(dec, b, depth); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return append(b, ']'), nil
}

// sensitiveValue consumes the value of a sensitive key and writes Marker,
// or the value itself when it is null, a boolean or "".
func sensitiveValue(dec *json.Decoder, b []byte) ([]byte, error) {
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	switch string(v) {
	case "null", "true", "false", `""`:
		return append(b, v...), nil
	}
	return appendJSONString(b, Marker), nil
}
