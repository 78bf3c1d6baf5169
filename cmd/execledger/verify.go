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
	"strings"
	"time"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/export"
	"github.com/execledger/execledger/ledger"
)

const verifyUsage = `execledger verify BUNDLE --log-key K --attest-key K [--attest-key K...] [--witness-key K...] [--json]
       execledger verify --db --log-key K --attest-key K [--witness-key K...] [--wait D] [--json] [--config F]
       execledger verify ATTESTATION.json --attest-key K [--attest-key K...] [--json]
       execledger verify --replay ID [--config F] [--pubkey FILE] [--json]`

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
