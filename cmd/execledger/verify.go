package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/internal/export"
	"github.com/execledger/execledger/internal/sandbox/wasmrun"
	"github.com/execledger/execledger/ledger"
)

// queryRequestEvents reads a request's stream: each event's type and
// payload, and the input exactly as the executor passed it to the tool
// (ledger.claim_requests reads it the same way).
const queryRequestEvents = `SELECT type, payload::text, CASE WHEN version = 1 THEN (payload -> 'input')::text END
FROM ledger.events WHERE stream = $1 ORDER BY version`

const verifyUsage = `execledger verify BUNDLE --log-key K --attest-key K [--attest-key K...] [--witness-key K...] [--json]
       execledger verify --db --log-key K --attest-key K [--witness-key K...] [--wait D] [--json] [--config F]
       execledger verify ATTESTATION.json --attest-key K [--attest-key K...] [--json]
       execledger verify --replay ID [--config F] [--pubkey FILE] [--json]`

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

// runVerify checks what the ledger recorded: an export bundle offline
// (verify BUNDLE), the live log and read model (verify --db), one
// attestation envelope (verify ATTESTATION.json), or a tier A call run
// again (verify --replay ID).
func runVerify(ctx context.Context, e *env, args []string) int {
	fs, cfgPath := newFlagSet(e, "verify")
	replay := fs.String("replay", "", "request id of a tier A call to run again and compare with its attestation")
	pubPath := fs.String("pubkey", "", "attestation public key (PEM); default: [attest] key_file + \".pub\"")
	asJSON := fs.Bool("json", false, "print JSON")
	var k verifyKeyFlags
	fromDB := fs.Bool("db", false, "verify the live database's log from its first leaf, then the requests read model")
	fs.StringVar(&k.log, "log-key", "", "the log's verifier key: the FILE.pub of `execledger keygen --note`, or the key itself")
	fs.Var(&k.attest, "attest-key", "an attestation public key (PEM); repeat across key rotations")
	fs.Var(&k.witness, "witness-key", "a witness's verifier key whose cosignature the newest checkpoint must carry; repeatable")
	wait := fs.Duration("wait", export.DefaultWait, "--db: how long to wait for a clean checkpoint when the newest is not")
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	keyed := k.log != "" || len(k.attest) > 0 || len(k.witness) > 0
	switch {
	case err != nil: // the usage below
	case *replay != "" && len(pos) == 0 && !*fromDB && !keyed:
		return runReplay(ctx, e, *replay, *cfgPath, *pubPath, *asJSON)
	case *replay != "" || *pubPath != "": // --replay with another mode's arguments
	case *fromDB && len(pos) == 0:
		return runVerifyDB(ctx, e, *cfgPath, k, *wait, *asJSON)
	case !*fromDB && len(pos) == 1:
		return runVerifyFile(ctx, e, pos[0], k, *asJSON)
	}
	return e.fail(exitUsage, "usage: %s", verifyUsage)
}

// runReplay is verify --replay: it checks a recorded tier A call's
// attestation and runs the call again to compare its output and fuel.
func runReplay(ctx context.Context, e *env, replay, cfgPath, pubPath string, asJSON bool) int {
	id, err := uuid.Parse(replay)
	if err != nil {
		return e.fail(exitUsage, "%q is not a request id (a UUID)", replay)
	}
	cfg, pool, err := e.connect(ctx, cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	pub, err := verifyKey(cfg, pubPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	rec, err := readRecorded(ctx, pool, id)
	if errors.Is(err, errNoRequest) {
		return e.fail(exitNotFound, "no request %s", id)
	}
	if err != nil {
		return e.fail(exitError, "request %s: %v", id, err)
	}
	st, err := attest.Verify(rec.envelope, pub)
	if err != nil {
		return e.fail(exitNotOK, "request %s: not ok: its attestation does not verify: %v", id, err)
	}
	if st.Predicate.RequestID != id.String() || subjectDigest(st, attest.SubjectInput) != attest.Digest(rec.input) {
		return e.fail(exitNotOK, "request %s: not ok: the recorded request or input is not the attested one", id)
	}
	return replayAndReport(ctx, e, cfg, st, rec.input, attest.PublicKeyID(pub), asJSON)
}

// replayAndReport replays the attested call and prints the comparison.
func replayAndReport(ctx context.Context, e *env, cfg config.Config, st *attest.Statement, input []byte, keyID string, asJSON bool) int {
	p := st.Predicate
	if err := replayable(p); err != nil {
		return e.fail(exitError, "request %s: cannot replay: %v", p.RequestID, err)
	}
	wcfg, digest, err := replayConfig(cfg.Wasm, p)
	if err != nil {
		return e.fail(exitError, "request %s: cannot replay: %v", p.RequestID, err)
	}
	r, err := wasmrun.Replay(ctx, wcfg, p.Tool, input)
	if err != nil {
		return e.fail(exitError, "request %s: cannot replay: %v", p.RequestID, err)
	}
	rep := compare(st, r)
	rep.KeyID, rep.ModuleDigest = keyID, digest
	if asJSON {
		if code := printJSON(e, rep); code != exitOK {
			return code
		}
	} else {
		printReplay(e, rep)
	}
	if !rep.OK {
		return exitNotOK
	}
	return exitOK
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
	case p.TimedOut || p.ErrorKind == "timed_out" || p.ErrorKind == "cancelled":
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
		return "succeeded"
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

// verifyKeyFlags are the keys verify's offline modes trust.
type verifyKeyFlags struct {
	log             string
	attest, witness listFlag
}

// listFlag is a flag that may be given more than once.
type listFlag []string

func (l *listFlag) String() string     { return fmt.Sprint([]string(*l)) }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// load reads the keys: the log key from a file or as the key itself
// (name+hash+base64), attestation keys from PEM files, witness keys like
// the log key.
func (k verifyKeyFlags) load() (bundle.Keys, error) {
	var keys bundle.Keys
	var err error
	if keys.Log, err = ledger.LoadNoteVerifier(k.log); err != nil {
		return keys, fmt.Errorf("--log-key: %w", err)
	}
	for _, f := range k.attest {
		pub, err := attest.LoadPublicKey(f)
		if err != nil {
			return keys, fmt.Errorf("--attest-key: %w", err)
		}
		keys.Attestation = append(keys.Attestation, pub)
	}
	for _, f := range k.witness {
		w, err := ledger.LoadWitnessVerifier(f)
		if err != nil {
			return keys, fmt.Errorf("--witness-key: %w", err)
		}
		keys.Witnesses = append(keys.Witnesses, w)
	}
	return keys, nil
}

// runVerifyFile verifies a bundle or an attestation envelope, told apart
// by their first bytes: a bundle's first line is its header record, an
// envelope is one JSON object with a payloadType.
func runVerifyFile(ctx context.Context, e *env, path string, k verifyKeyFlags, asJSON bool) int {
	f, err := os.Open(path)
	if err != nil {
		return e.fail(exitError, "verify: %v", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	kind, err := sniffFile(br)
	if err != nil {
		return e.fail(exitError, "verify: %s: %v", path, err)
	}
	if kind == "" && k.log == "" {
		return e.fail(exitError, "verify: %s is neither an export bundle (its first line is not a bundle record) nor a DSSE envelope", path)
	}
	if kind == "envelope" {
		if len(k.attest) == 0 || k.log != "" || len(k.witness) > 0 {
			return e.fail(exitUsage, "verify: %s is an attestation envelope: give --attest-key (only)\nusage: %s", path, verifyUsage)
		}
		return verifyEnvelopeFile(e, br, k, asJSON)
	}
	if k.log == "" || len(k.attest) == 0 {
		return e.fail(exitUsage, "verify: a bundle needs --log-key and --attest-key\nusage: %s", verifyUsage)
	}
	keys, err := k.load()
	if err != nil {
		return e.fail(exitError, "verify: %v", err)
	}
	bar := newProgressLine(e.io.err, "verified")
	rep, err := bundle.Verify(ctx, br, keys, func(n int64) { bar.update(n, 0) })
	bar.finish()
	if err != nil {
		return e.fail(exitError, "verify: %s: %v", path, err)
	}
	return printVerdict(e, rep, keys, asJSON, rep, nil)
}

// sniffFile says what br holds: "bundle" when its first line is a JSON
// object with a "kind" (the verifier says whether it is a good one),
// "envelope" when it is one JSON object with a payloadType, else "". It
// only peeks.
func sniffFile(br *bufio.Reader) (string, error) {
	head, err := br.Peek(br.Size())
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return "", err
	}
	first, _, _ := bytes.Cut(head, []byte("\n"))
	var rec struct {
		Kind        *string `json:"kind"`
		PayloadType *string `json:"payloadType"`
	}
	if json.Unmarshal(first, &rec) == nil && rec.Kind != nil {
		return "bundle", nil
	}
	rec.PayloadType = nil
	if json.Unmarshal(head, &rec) == nil && rec.PayloadType != nil {
		return "envelope", nil
	}
	return "", nil
}

// runVerifyDB is verify --db: the live log from its first leaf, then the
// requests read model against it.
func runVerifyDB(ctx context.Context, e *env, cfgPath string, k verifyKeyFlags, wait time.Duration, asJSON bool) int {
	if k.log == "" || len(k.attest) == 0 || wait < 0 {
		return e.fail(exitUsage, "verify --db needs --log-key and --attest-key\nusage: %s", verifyUsage)
	}
	keys, err := k.load()
	if err != nil {
		return e.fail(exitError, "verify: %v", err)
	}
	_, pool, err := e.connect(ctx, cfgPath)
	if err != nil {
		return e.fail(exitError, "%v", err)
	}
	defer pool.Close()
	bar := newProgressLine(e.io.err, "verified")
	opts := export.VerifyOptions{Wait: wait, Progress: bar.update}
	if wait == 0 {
		opts.Wait = -1
	}
	rep, err := export.VerifyDB(ctx, pool, keys, opts)
	bar.finish()
	if err != nil {
		return e.fail(exitError, "verify --db: %v", err)
	}
	return printVerdict(e, rep.Report, keys, asJSON, rep, func(w io.Writer) {
		published := "published"
		if !rep.Published {
			published = "not yet published"
		}
		fmt.Fprintf(w, "checkpoint %d is %s", rep.NewestSize, published)
		if rep.Unclean != nil {
			fmt.Fprintf(w, "; newer checkpoint %d not verified: %s", rep.Unclean.Size, rep.Unclean)
		}
		fmt.Fprintln(w)
		if m := rep.ReadModel; m.Checked {
			fmt.Fprintf(w, "read model: %d final requests, %d pending (ended in the last %s or attested but not yet sealed)",
				m.Final, m.Pending, export.DefaultPendingAfter)
			if len(m.PendingRequests) > 0 {
				fmt.Fprintf(w, ": %s", strings.Join(m.PendingRequests, " "))
			}
			fmt.Fprintln(w)
		}
	})
}

// printVerdict prints a verification's report: full as JSON, or a
// summary line of rep and then what more writes; exit 3 on a fault.
func printVerdict(e *env, rep bundle.Report, keys bundle.Keys, asJSON bool, full any, more func(io.Writer)) int {
	code := exitOK
	if !rep.OK {
		code = exitNotOK
	}
	if asJSON {
		if c := printJSON(e, full); c != exitOK {
			return c
		}
		return code
	}
	w := e.io.out
	if rep.OK {
		fmt.Fprintf(w, "ok: %d events, %d requests, %d attestations, %d checkpoints; newest checkpoint %d %s; log key %s",
			rep.Events, rep.Requests, rep.Attestations, rep.Checkpoints, rep.NewestSize,
			base64.StdEncoding.EncodeToString(rep.NewestRoot), bundle.Fingerprint(keys.Log))
		if rep.Witnesses > 0 {
			fmt.Fprintf(w, "; cosigned by %d witnesses", rep.Witnesses)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "not ok: %s\n", rep.Fault)
		fmt.Fprintf(w, "checked before the fault: %d events, %d requests, %d attestations, %d checkpoints\n",
			rep.Events, rep.Requests, rep.Attestations, rep.Checkpoints)
	}
	if more != nil {
		more(w)
	}
	return code
}

// envelopeReport is verify ATTESTATION.json's finding.
type envelopeReport struct {
	OK            bool                  `json:"ok"`
	Code          string                `json:"code,omitempty"` // bundle's fault codes: bad_signature, unknown_key, subject_mismatch
	Message       string                `json:"message,omitempty"`
	KeyIDs        []string              `json:"key_ids"`            // the envelope's signatures' key ids
	Verified      bool                  `json:"statement_verified"` // the fields below are signed by a given key
	RequestID     string                `json:"request_id,omitempty"`
	Tool          string                `json:"tool,omitempty"`
	Outcome       string                `json:"outcome,omitempty"`
	LogCheckpoint *attest.LogCheckpoint `json:"log_checkpoint,omitempty"`
}

// verifyEnvelopeFile verifies one DSSE envelope with the attestation keys.
func verifyEnvelopeFile(e *env, r io.Reader, k verifyKeyFlags, asJSON bool) int {
	raw, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return e.fail(exitError, "verify: %v", err)
	}
	raw = bytes.TrimSpace(raw)
	var pubs []ed25519.PublicKey
	for _, f := range k.attest {
		pub, err := attest.LoadPublicKey(f)
		if err != nil {
			return e.fail(exitError, "verify: --attest-key: %v", err)
		}
		pubs = append(pubs, pub)
	}
	rep := checkEnvelope(raw, pubs)
	code := exitOK
	if !rep.OK {
		code = exitNotOK
	}
	if asJSON {
		if c := printJSON(e, rep); c != exitOK {
			return c
		}
		return code
	}
	w := e.io.out
	if rep.OK {
		fmt.Fprintf(w, "ok: attestation of request %s: tool %s, %s; signed by %s\n", rep.RequestID, rep.Tool, rep.Outcome, strings.Join(rep.KeyIDs, ", "))
	} else {
		fmt.Fprintf(w, "not ok: %s: %s\n", rep.Code, rep.Message)
		if rep.RequestID != "" {
			fmt.Fprintf(w, "unverified statement: request %s: tool %s, %s\n", rep.RequestID, rep.Tool, rep.Outcome)
		}
	}
	if c := rep.LogCheckpoint; c != nil {
		fmt.Fprintf(w, "names log checkpoint %d %s (origin %s)\n", c.Size, c.RootHash, c.Origin)
	}
	return code
}

// checkEnvelope verifies envelope JSON with the keys whose id one of its
// signatures names (or all, for a signature without a key id).
func checkEnvelope(raw []byte, pubs []ed25519.PublicKey) envelopeReport {
	var rep envelopeReport
	var env attest.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		rep.Code, rep.Message = bundle.Malformed, fmt.Sprintf("not a DSSE envelope: %v", err)
		return rep
	}
	var tried []ed25519.PublicKey
	for _, s := range env.Signatures {
		rep.KeyIDs = append(rep.KeyIDs, s.KeyID)
		for _, p := range pubs {
			if s.KeyID == "" || s.KeyID == attest.PublicKeyID(p) {
				tried = append(tried, p)
			}
		}
	}
	var st *attest.Statement
	var err error
	for _, p := range tried {
		if st, err = attest.Verify(raw, p); err == nil {
			break
		}
	}
	switch {
	case len(tried) == 0:
		given := make([]string, len(pubs))
		for i, p := range pubs {
			given[i] = attest.PublicKeyID(p)
		}
		rep.Code = bundle.UnknownKey
		rep.Message = fmt.Sprintf("signed by key ids %q, none of them a given --attest-key (%s)", rep.KeyIDs, strings.Join(given, ", "))
	case err != nil:
		rep.Code, rep.Message = bundle.BadSignature, err.Error()
		if errors.Is(err, attest.ErrInvalidStatement) || errors.Is(err, attest.ErrStatementType) || errors.Is(err, attest.ErrPredicateType) {
			rep.Code = bundle.SubjectMismatch
		}
	default:
		rep.OK, rep.Verified = true, true
	}
	if st == nil {
		st = unverifiedStatement(env)
	}
	if st != nil {
		p := st.Predicate
		rep.RequestID, rep.Tool, rep.Outcome, rep.LogCheckpoint = p.RequestID, p.Tool, outcomeOf(p), p.LogCheckpoint
	}
	return rep
}

// unverifiedStatement decodes an envelope's statement without checking
// it, to say what an envelope that does not verify claims.
func unverifiedStatement(env attest.Envelope) *attest.Statement {
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return nil
	}
	var st attest.Statement
	if json.Unmarshal(payload, &st) != nil {
		return nil
	}
	return &st
}

func outcomeOf(p attest.Execution) string {
	switch {
	case p.Success:
		return "succeeded"
	case p.Decision == attest.DecisionDeny:
		return "denied: " + p.ErrorKind
	}
	return "failed: " + p.ErrorKind
}
