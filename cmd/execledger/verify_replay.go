package main

// verify --replay: a recorded tier A call run again and compared with its
// attestation.

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/sandbox/wasmrun"
	"github.com/execledger/execledger/ledger"
)

// queryRequestEvents reads a request's stream: each event's type and
// payload, and the input exactly as the executor passed it to the tool
// (ledger.claim_requests reads it the same way).
const queryRequestEvents = `SELECT type, payload::text, CASE WHEN version = 1 THEN (payload -> 'input')::text END
FROM ledger.events WHERE stream = $1 ORDER BY version`

var errNoRequest = errors.New("no such request")

// recorded is what the ledger holds of a request for its replay.
type recorded struct {
	input    []byte // tool.requested's input, as the tool got it
	envelope []byte // the last attestation.signed's DSSE envelope
}

// replayReport is verify --replay's finding.
type replayReport struct {
	RequestID    string       `json:"request_id"`
	Tool         string       `json:"tool"`
	KeyID        string       `json:"key_id"`
	ModuleDigest string       `json:"module_digest"`
	Outcome      replayCheck  `json:"outcome"`
	OutputDigest replayCheck  `json:"output_digest"`
	FuelUsed     replayCheckN `json:"fuel_used"`
	OK           bool         `json:"ok"`
}

type replayCheck struct {
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	Match    bool   `json:"match"`
}

type replayCheckN struct {
	Recorded *int64 `json:"recorded"` // null: none recorded (not metered)
	Replayed *int64 `json:"replayed"`
	Match    bool   `json:"match"`
}

// runReplay is verify --replay: it checks a recorded tier A call's
// attestation and runs the call again to compare its output and fuel.
func runReplay(ctx context.Context, e *env, replay, cfgPath, pubPath string, asJSON bool) error {
	id, err := uuid.Parse(replay)
	if err != nil {
		return fail(exitUsage, "%q is not a request id (a UUID)", replay)
	}
	cfg, pool, err := e.connectReader(ctx, cfgPath)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer pool.Close()
	pub, err := verifyKey(cfg, pubPath)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	rec, err := readRecorded(ctx, pool, id)
	if errors.Is(err, errNoRequest) {
		return fail(exitNotFound, "no request %s", id)
	}
	if err != nil {
		return fail(exitError, "request %s: %v", id, err)
	}
	st, err := attest.Verify(rec.envelope, pub)
	if err != nil {
		return fail(exitNotOK, "request %s: not ok: its attestation does not verify: %v", id, err)
	}
	if st.Predicate.RequestID != id.String() || subjectDigest(st, attest.SubjectInput) != attest.Digest(rec.input) {
		return fail(exitNotOK, "request %s: not ok: the recorded request or input is not the attested one", id)
	}
	return replayAndReport(ctx, e, cfg, st, rec.input, attest.PublicKeyID(pub), asJSON)
}

// replayAndReport replays the attested call and prints the comparison.
func replayAndReport(ctx context.Context, e *env, cfg config.Config, st *attest.Statement, input []byte, keyID string, asJSON bool) error {
	p := st.Predicate
	if err := replayable(p); err != nil {
		return fail(exitError, "request %s: cannot replay: %v", p.RequestID, err)
	}
	wcfg, digest, err := replayConfig(cfg.Wasm, p)
	if err != nil {
		return fail(exitError, "request %s: cannot replay: %v", p.RequestID, err)
	}
	r, err := wasmrun.Replay(ctx, wcfg, p.Tool, input)
	if err != nil {
		return fail(exitError, "request %s: cannot replay: %v", p.RequestID, err)
	}
	rep := compare(st, r)
	rep.KeyID, rep.ModuleDigest = keyID, digest
	if asJSON {
		if err := printJSON(e, rep); err != nil {
			return err
		}
	} else {
		printReplay(e, rep)
	}
	if !rep.OK {
		return exitCode(exitNotOK) // the report says what differs
	}
	return nil
}

// verifyKey loads the attestation public key: path, else the one
// execledger keygen wrote beside [attest] key_file.
func verifyKey(cfg config.Config, path string) (ed25519.PublicKey, error) {
	if path == "" {
		if cfg.Attest.KeyFile == "" {
			return nil, errors.New("no public key: give --pubkey FILE or set [attest] key_file (its FILE.pub is read)")
		}
		path = cfg.Attest.KeyFile + ".pub"
	}
	return attest.LoadPublicKey(path)
}

// readRecorded reads request id's input and its last attestation.
func readRecorded(ctx context.Context, pool *pgxpool.Pool, id uuid.UUID) (recorded, error) {
	rows, err := pool.Query(ctx, queryRequestEvents, "request:"+id.String())
	if err != nil {
		return recorded{}, fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	var rec recorded
	n := 0
	for rows.Next() {
		var typ, payload string
		var input *string
		if err := rows.Scan(&typ, &payload, &input); err != nil {
			return recorded{}, fmt.Errorf("read events: %w", err)
		}
		n++
		switch {
		case typ == "tool.requested" && input != nil:
			rec.input = []byte(*input)
		case typ == "attestation.signed":
			var p struct {
				Envelope string `json:"envelope"`
			}
			if err := json.Unmarshal([]byte(payload), &p); err != nil {
				return recorded{}, fmt.Errorf("attestation.signed: %w", err)
			}
			rec.envelope = []byte(p.Envelope)
		}
	}
	if err := rows.Err(); err != nil {
		return recorded{}, fmt.Errorf("read events: %w", err)
	}
	switch {
	case n == 0:
		return recorded{}, errNoRequest
	case rec.input == nil:
		return recorded{}, errors.New("no tool.requested event with an input")
	case rec.envelope == nil:
		return recorded{}, errors.New("no attestation yet: the request is not final")
	}
	return rec, nil
}

// replayable refuses what a replay cannot repeat: a call outside tier A
// or not of a registered module, a denial, an outcome that depended on
// the wall clock or a cancellation, and a call granted capabilities.
func replayable(p attest.Execution) error {
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

// replayConfig is tier A's configuration as serve builds it from [wasm],
// for a replay of p: the configured module must be the one that ran. It
// grants nothing: replayable has refused a call whose attestation records
// a granted capability, and no secret, storage or channel is reached.
func replayConfig(w config.Wasm, p attest.Execution) (wasmrun.Config, string, error) {
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
	return cfg, "", fmt.Errorf("no [[wasm.modules]] entry registers %s (give the --config serve ran with)", p.Tool)
}

// compare checks a replay against the attested outcome.
func compare(st *attest.Statement, r wasmrun.Replayed) replayReport {
	p := st.Predicate
	rep := replayReport{RequestID: p.RequestID, Tool: p.Tool}
	rep.Outcome = replayCheck{Recorded: outcome(p.ErrorKind), Replayed: outcome(r.ErrorKind)}
	rep.Outcome.Match = rep.Outcome.Recorded == rep.Outcome.Replayed
	rep.OutputDigest = replayCheck{Recorded: subjectDigest(st, attest.SubjectOutput), Replayed: attest.Digest(r.Output)}
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

func outcome(errorKind string) string {
	if errorKind == "" {
		return string(ledger.StateSucceeded)
	}
	return "failed: " + errorKind
}

// subjectDigest is the statement's digest of subject name, as
// attest.Digest formats one; "" when there is none.
func subjectDigest(st *attest.Statement, name string) string {
	for _, s := range st.Subject {
		if s.Name == name && s.Digest["sha256"] != "" {
			return "sha256:" + s.Digest["sha256"]
		}
	}
	return ""
}

func printReplay(e *env, rep replayReport) {
	w := e.io.out
	fmt.Fprintf(w, "request:      %s\ntool:         %s (tier A)\n", rep.RequestID, rep.Tool)
	fmt.Fprintf(w, "attestation:  signature ok (key %s)\nmodule:       %s, as attested\n", rep.KeyID, rep.ModuleDigest)
	line := func(what string, c bool, recorded, replayed string) {
		if c {
			fmt.Fprintf(w, "%s matches: %s\n", what, recorded)
		} else {
			fmt.Fprintf(w, "%s differs: recorded %s, replayed %s\n", what, recorded, replayed)
		}
	}
	line("outcome", rep.Outcome.Match, rep.Outcome.Recorded, rep.Outcome.Replayed)
	line("output digest", rep.OutputDigest.Match, rep.OutputDigest.Recorded, rep.OutputDigest.Replayed)
	line("fuel", rep.FuelUsed.Match, fuelText(rep.FuelUsed.Recorded), fuelText(rep.FuelUsed.Replayed))
	if rep.OK {
		fmt.Fprintln(w, "ok")
	} else {
		fmt.Fprintln(w, "not ok")
	}
}

func fuelText(f *int64) string {
	if f == nil {
		return "none"
	}
	return fmt.Sprint(*f)
}
