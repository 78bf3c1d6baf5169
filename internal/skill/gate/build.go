package gate

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/sandbox/wasmrun"
	"github.com/execledger/execledger/internal/skill/artifact"
	"github.com/execledger/execledger/internal/skill/manifest"
	"github.com/execledger/execledger/internal/skill/vet"
	"github.com/execledger/execledger/ledger"
)

// artifactTools are the tools one vetted artifact serves, or why it serves
// none.
type artifactTools struct {
	err          error // the artifact cannot run
	auditErr     error // its audit fails now: only an approval by two principals lets it run
	byTool       map[string]*skillTool
	capabilities []string
	used         time.Time
}

func (b *artifactTools) close(ctx context.Context) {
	for _, t := range b.byTool {
		t.Tool.Close(ctx)
	}
}

// build vets an artifact and builds its tools.
func (g *Gate) build(ctx context.Context, files map[string][]byte, sig artifact.Signature, trusted ed25519.PublicKey, expect vet.Expect) *artifactTools {
	b := &artifactTools{byTool: map[string]*skillTool{}, used: time.Now()}
	v, err := vet.Vet(ctx, files, sig, trusted, expect, g.opts)
	if err != nil {
		b.err = err
		return b
	}
	if failed := v.Report.Failed(); len(failed) > 0 {
		var names []string
		for _, c := range failed {
			names = append(names, c.Name+" ("+c.Detail+")")
		}
		b.auditErr = fmt.Errorf("its artifact fails the audit now and no two principals approved it: %s", strings.Join(names, "; "))
	}
	caps := grantFor(v.Manifest.Capabilities)
	b.capabilities = capabilityClasses(intersect(caps, g.opts.Wasm.Policy))
	for i := range v.Manifest.Tools {
		mt := &v.Manifest.Tools[i]
		t, err := g.buildTool(ctx, v.Manifest, mt, files[mt.Module], caps)
		if err != nil {
			b.close(ctx)
			b.err = err
			b.byTool = map[string]*skillTool{}
			return b
		}
		b.byTool[mt.ID] = t
	}
	return b
}

// buildTool compiles one tool's module with the manifest's quotas within
// the configuration's limits.
func (g *Gate) buildTool(ctx context.Context, m *manifest.Manifest, mt *manifest.Tool, wasm []byte, caps wasmrun.Capabilities) (*skillTool, error) {
	mod := ModuleOf(m, mt, wasm, g.limits)
	mod.Capabilities = caps
	t, err := g.host.SkillTool(ctx, mod, wasm)
	if err != nil {
		return nil, fmt.Errorf("its tool %s does not build: %w", mt.ID, err)
	}
	return &skillTool{Tool: t, schema: mt, requiresApproval: mt.RequiresApproval}, nil
}

// ModuleOf is tier A's module of manifest m's tool mt, whose module is
// wasm: its digest, entrypoint and the manifest's quotas within limits.
// It grants no capability; the gate adds what the policy allows. verify
// --replay runs an installed skill's call again with the same module.
func ModuleOf(m *manifest.Manifest, mt *manifest.Tool, wasm []byte, limits Limits) wasmrun.Module {
	sum := sha256.Sum256(wasm)
	return wasmrun.Module{ToolID: mt.ID, SHA256: hex.EncodeToString(sum[:]), Entrypoint: mt.Entrypoint,
		FuelLimit:        lower(m.Quotas.FuelBudget, limits.Fuel),
		Timeout:          time.Duration(lower(m.Quotas.WallClockTimeoutMS, limits.Timeout.Milliseconds())) * time.Millisecond,
		MemoryLimitPages: uint32(lower(m.Quotas.MaxMemoryBytes/65536, int64(limits.MemoryPages))),
	}
}

// lower is the smaller of a manifest's quota and the limit, the limit
// when the manifest sets none.
func lower(quota, limit int64) int64 {
	if quota <= 0 || limit > 0 && quota > limit {
		return limit
	}
	return quota
}

func grantFor(c manifest.Capabilities) wasmrun.Capabilities {
	return wasmrun.Capabilities{HTTPHosts: c.HTTPEgressAllowlist, Secrets: c.Secrets, StoragePrefixes: c.StoragePrefixes,
		Channels: c.Channels}
}

// intersect is what both a and the policy list, per class (exact names).
func intersect(a, policy wasmrun.Capabilities) wasmrun.Capabilities {
	both := func(x, y []string) []string {
		var out []string
		for _, v := range x {
			if slices.Contains(y, v) {
				out = append(out, v)
			}
		}
		return out
	}
	return wasmrun.Capabilities{HTTPHosts: both(a.HTTPHosts, policy.HTTPHosts), Secrets: both(a.Secrets, policy.Secrets),
		StoragePrefixes: both(a.StoragePrefixes, policy.StoragePrefixes), Channels: both(a.Channels, policy.Channels)}
}

// skillTool is a skill's tool: tier A's, with the manifest's input schema.
type skillTool struct {
	*wasmrun.Tool
	schema           *manifest.Tool
	requiresApproval bool
}

var _ executor.Tool = (*skillTool)(nil)

// Prepare checks the input is an object that the tool's input schema
// accepts.
func (t *skillTool) Prepare(ctx context.Context, call executor.Call) (any, error) {
	p, err := t.Tool.Prepare(ctx, call)
	if err != nil {
		return nil, err
	}
	if err := t.schema.ValidateInput(call.Input); err != nil {
		return nil, &executor.Refusal{Kind: ledger.KindInvalidInput, Reason: "input_schema",
			Message: fmt.Sprintf("%s: the input does not match the tool's input schema: %v", t.Name(), err)}
	}
	return p, nil
}

// Run runs the call, checking it first when it was not prepared.
func (t *skillTool) Run(ctx context.Context, call executor.Call) executor.Result {
	if call.Prepared == nil {
		p, err := t.Prepare(ctx, call)
		if err != nil {
			return executor.Refused(err)
		}
		call.Prepared = p
	}
	return t.Tool.Run(ctx, call)
}

// CapabilityClasses are the capability classes (network, secrets_read,
// storage, channel) a skill with manifest capabilities m is granted under
// the [wasm] policy: what Cedar's context.capabilities holds for its
// calls. The MCP server evaluates the policy with them, as the executor
// does, to list only the tools the policy does not deny.
func CapabilityClasses(m manifest.Capabilities, policy wasmrun.Capabilities) []string {
	return capabilityClasses(intersect(grantFor(m), policy))
}
