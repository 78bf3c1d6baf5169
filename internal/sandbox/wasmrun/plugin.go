package wasmrun

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// pluginInput is plugin.run's input.
type pluginInput struct {
	ModuleBase64 *string         `json:"module_base64"`
	Entrypoint   string          `json:"entrypoint"`
	Input        json.RawMessage `json:"input"`
}

// plugin is a parsed plugin.run call.
type plugin struct {
	module     []byte
	digest     string
	entrypoint string
	input      []byte // the module's input: a JSON object
}

// maxEntrypoint bounds an entrypoint name.
const maxEntrypoint = 256

// parsePlugin parses plugin.run's input {"module_base64": "...",
// "entrypoint"?: "...", "input"?: {...}}: unknown fields and trailing data
// are refused, the module must be standard base64 of at most
// MaxModuleBytes bytes starting with WebAssembly's magic, and input, when
// given, a JSON object ({} otherwise).
func (t *Tool) parsePlugin(raw json.RawMessage) (*plugin, error) {
	var in pluginInput
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the input object")
	}
	if in.ModuleBase64 == nil {
		return nil, errors.New(`input needs "module_base64"`)
	}
	limit := t.h.cfg.MaxModuleBytes
	if n := base64.StdEncoding.DecodedLen(len(*in.ModuleBase64)); n > limit+2 {
		return nil, fmt.Errorf("module is about %d bytes; the limit is %d", n, limit)
	}
	wasm, err := base64.StdEncoding.DecodeString(*in.ModuleBase64)
	if err != nil {
		return nil, fmt.Errorf("module_base64: %w", err)
	}
	if len(wasm) > limit {
		return nil, fmt.Errorf("module is %d bytes; the limit is %d", len(wasm), limit)
	}
	if !bytes.HasPrefix(wasm, wasmMagic) {
		return nil, errors.New("module_base64 is not a WebAssembly 1.0 module")
	}
	if len(in.Entrypoint) > maxEntrypoint {
		return nil, fmt.Errorf("entrypoint is %d bytes; the limit is %d", len(in.Entrypoint), maxEntrypoint)
	}
	p := &plugin{module: wasm, digest: sha256Digest(wasm), entrypoint: in.Entrypoint, input: []byte("{}")}
	if s := bytes.TrimSpace(in.Input); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
		if s[0] != '{' {
			return nil, errors.New(`"input" is not a JSON object`)
		}
		p.input = s
	}
	return p, nil
}
