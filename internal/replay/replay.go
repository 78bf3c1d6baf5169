package replay

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/sandbox/wasmrun"
	"github.com/execledger/execledger/ledger"
)

// Report is a replay's finding; verify --replay --json prints it.
type Report struct {
	RequestID    string `json:"request_id"`
	Tool         string `json:"tool"`
	KeyID        string `json:"key_id"`
	ModuleDigest string `json:"module_digest"`
	Outcome      Check  `json:"outcome"`
	OutputDigest Check  `json:"output_digest"`
	FuelUsed     CheckN `json:"fuel_used"`
	OK           bool   `json:"ok"`
}

// Check compares a recorded value with the replayed one.
type Check struct {
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	Match    bool   `json:"match"`
}

// CheckN compares a recorded count with the replayed one.
type CheckN struct {
	Recorded *int64 `json:"recorded"` // null: none recorded (not metered)
	Replayed *int64 `json:"replayed"`
	Match    bool   `json:"match"`
}

// Run replays the call st attests, with input, under tier A's
// configuration w, and compares it with the attestation. An error says
// the call cannot be replayed; a Report that is not OK says what differs.
// The Report's KeyID is the caller's to fill in.
//
// A tool no [[wasm.modules]] entry registers that the attestation names
// an installed skill of is found in the ledger's skill storage through
// db (SkillConfig); db may be nil.
func Run(ctx context.Context, w config.Wasm, db ledger.DBTX, st *attest.Statement, input []byte) (Report, error) {
	p := st.Predicate
	if err := Replayable(p); err != nil {
		return Report{}, err
	}
	wcfg, digest, err := Config(w, p)
	if errors.Is(err, errNotRegistered) && p.Skill != nil && db != nil {
		var cleanup func()
		wcfg, digest, cleanup, err = SkillConfig(ctx, w, db, p)
		if cleanup != nil {
			defer cleanup()
		}
	}
	if err != nil {
		return Report{}, err
	}
	r, err := wasmrun.Replay(ctx, wcfg, p.Tool, input)
	if err != nil {
		return Report{}, err
	}
	rep := Compare(st, r)
	rep.ModuleDigest = digest
	return rep, nil
}

// Replayable refuses what a replay cannot repeat: a call outside tier A
// or not of a registered module, a denial, an outcome that depended on
// the wall clock or a cancellation, and a call granted capabilities.
func Replayable(p attest.Execution) error {
	switch {
	case p.Tier != "A" || p.Executor != "sandbox_tier_a":
		return fmt.Errorf("tool %s ran in tier %q (%s); only tier A calls are replayed", p.Tool, p.Tier, p.Executor)
	case p.Tool == wasmrun.PluginTool:
		return fmt.Errorf("%s runs a module sent in its input; only registered skills are replayed", p.Tool)
	case p.Decision != attest.DecisionAllow:
		return fmt.Errorf("it was %s (%s) and never ran", p.Decision, p.DecisionReason)
	case p.TimedOut || ledger.ErrorKind(p.ErrorKind) == ledger.KindTimedOut || ledger.ErrorKind(p.ErrorKind) == ledger.KindCancelled:
		return fmt.Errorf("it ended %s, which depends on the wall clock or on a cancellation, not only on its input", p.ErrorKind)
	}
	if _, ok := p.Enforcement["module_digest"].(string); !ok {
		return fmt.Errorf("its attestation records no module_digest (%s)", p.DecisionReason)
	}
	caps, _ := p.Enforcement["capabilities"].(map[string]any)
	for class, names := range caps {
		if l, _ := names.([]any); len(l) > 0 {
			return fmt.Errorf("it was granted %s capabilities %v, which are not deterministic (%w)", class, l, wasmrun.ErrNotReplayable)
		}
	}
	return nil
}

// Config is tier A's configuration as serve builds it from [wasm], for a
// replay of p, and the digest of the module that ran: the configured
// module must be that one. It grants nothing: Replayable has refused a
// call whose attestation records a granted capability, and no secret,
// storage or channel is reached.
func Config(w config.Wasm, p attest.Execution) (wasmrun.Config, string, error) {
	ran, _ := p.Enforcement["module_digest"].(string)
	cfg := wasmrun.Config{Engine: w.Engine, MemoryLimitPages: uint32(w.MemoryLimitPages), FuelLimit: int64(w.FuelLimit),
		MaxModuleBytes: w.MaxModuleBytes, Timeout: w.Timeout.Duration}
	for _, m := range w.Modules {
		if m.Tool != p.Tool {
			continue
		}
		if "sha256:"+m.SHA256 != ran {
			return cfg, "", fmt.Errorf("module digest mismatch: [[wasm.modules]] %s pins sha256:%s, the attested call ran %s", m.Tool, m.SHA256, ran)
		}
		path, err := filepath.Abs(m.Path)
		if err != nil {
			return cfg, "", fmt.Errorf("wasm.modules %s path: %w", m.Tool, err)
		}
		cfg.Modules = []wasmrun.Module{{ToolID: m.Tool, Path: path, SHA256: m.SHA256, Entrypoint: m.Entrypoint,
			FuelLimit: int64(m.FuelLimit), Timeout: m.Timeout.Duration}}
		return cfg, ran, nil
	}
	if p.Skill != nil {
		return cfg, "", fmt.Errorf("%w %s, and no database to read installed skill %s from", errNotRegistered, p.Tool, p.Skill.ID)
	}
	return cfg, "", fmt.Errorf("%w %s (give the --config serve ran with)", errNotRegistered, p.Tool)
}

// errNotRegistered is Config's error for a tool [wasm] does not register.
var errNotRegistered = errors.New("no [[wasm.modules]] entry registers")

// Compare checks a replay against the attested outcome.
func Compare(st *attest.Statement, r wasmrun.Replayed) Report {
	p := st.Predicate
	rep := Report{RequestID: p.RequestID, Tool: p.Tool}
	rep.Outcome = Check{Recorded: Outcome(p.ErrorKind), Replayed: Outcome(r.ErrorKind)}
	rep.Outcome.Match = rep.Outcome.Recorded == rep.Outcome.Replayed
	rep.OutputDigest = Check{Recorded: SubjectDigest(st, attest.SubjectOutput), Replayed: attest.Digest(r.Output)}
	rep.OutputDigest.Match = rep.OutputDigest.Recorded == rep.OutputDigest.Replayed
	if f, ok := p.Resources["fuel_used"]; ok {
		rep.FuelUsed.Recorded = &f
	}
	if r.Metered {
		rep.FuelUsed.Replayed = &r.FuelUsed
	}
	a, b := rep.FuelUsed.Recorded, rep.FuelUsed.Replayed
	rep.FuelUsed.Match = a == nil && b == nil || a != nil && b != nil && *a == *b
	rep.OK = rep.Outcome.Match && rep.OutputDigest.Match && rep.FuelUsed.Match
	return rep
}

// Outcome is a call's outcome as a Report states it: succeeded, or
// "failed: " and its error kind.
func Outcome(errorKind string) string {
	if errorKind == "" {
		return string(ledger.StateSucceeded)
	}
	return "failed: " + errorKind
}
