package wasmrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// SkillTool builds the tool of an installed skill from its module's bytes,
// which the caller loaded and checked against the skill's signed payload.
// m.Path is not read and may be empty; m.SHA256 must be the bytes'
// digest. The tool has a runtime of its own, as a registered module's
// has, and is not one of the host's Tools: the caller closes it
// (Tool.Close) once no call uses it. Its calls share the host's instance
// slots and limits.
func (h *Host) SkillTool(ctx context.Context, m Module, wasm []byte) (*Tool, error) {
	if !toolID.MatchString(m.ToolID) {
		return nil, fmt.Errorf("wasmrun: tool id %q is not a dotted lower-case name such as acme.hello", m.ToolID)
	}
	if err := m.Capabilities.check(); err != nil {
		return nil, fmt.Errorf("wasmrun: %s: %w", m.ToolID, err)
	}
	if m.FuelLimit < 0 || m.Timeout < 0 {
		return nil, fmt.Errorf("wasmrun: %s: negative fuel limit or timeout", m.ToolID)
	}
	if len(wasm) > h.cfg.MaxModuleBytes {
		return nil, fmt.Errorf("wasmrun: %s: module is %d bytes; the limit is %d", m.ToolID, len(wasm), h.cfg.MaxModuleBytes)
	}
	got := sha256.Sum256(wasm)
	if hex.EncodeToString(got[:]) != m.SHA256 {
		return nil, fmt.Errorf("wasmrun: %s: module has sha256 %x, not %s", m.ToolID, got, m.SHA256)
	}
	t, err := h.build(ctx, m, wasm)
	if err != nil {
		return nil, fmt.Errorf("wasmrun: %s: %w", m.ToolID, err)
	}
	return t, nil
}

// memoryPages is each instance's memory limit: the module's, else the
// host's.
func (t *Tool) memoryPages() uint32 {
	if p := t.mod.MemoryLimitPages; p > 0 && p < t.h.cfg.MemoryLimitPages {
		return p
	}
	return t.h.cfg.MemoryLimitPages
}

// Close frees a tool made by SkillTool: its runtime and compiled code.
// Calls must have ended first.
func (t *Tool) Close(ctx context.Context) error { return t.run.close(ctx) }
