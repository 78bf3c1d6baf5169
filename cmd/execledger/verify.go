package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/export"
	"github.com/execledger/execledger/ledger"
)

// verifyFlags are verify's flags.
type verifyFlags struct {
	keys            verifyKeyFlags
	db              bool
	wait            time.Duration
	replay, pubPath string
}

func newVerifyCmd(e *env) *cobra.Command {
	var f verifyFlags
	cmd := &cobra.Command{
		Use:   "verify [BUNDLE | ATTESTATION.json]",
		Short: "Verify a bundle offline, the live log and read model (--db), one attestation, or replay a tier A call",
		Long: `Verify checks what the ledger recorded, in one of four modes:

  verify BUNDLE --log-key K --attest-key K [--attest-key K...] [--witness-key K...]
      an export bundle, offline, no database
  verify --db --log-key K --attest-key K [--witness-key K...] [--wait D]
      the live database's log from its first leaf; that no event lies below the sealed horizon
      outside the tree; every attested request of the read model against its sealed attestation;
      every read model table against its rebuild from the log
  verify ATTESTATION.json --attest-key K [--attest-key K...]
      one DSSE attestation envelope
  verify --replay ID [--pubkey FILE]
      a tier A call's attestation, then the call run again and compared with it

It exits 0 when everything verifies, 3 at the first fault (printed on stdout; --json: in the
report), 1 when a file or key cannot be read or the call cannot be replayed, 5 when --replay
names no request.`,
		Example: `  execledger verify ledger.bundle --log-key log.key.pub --attest-key attest.key.pub
  execledger verify --db --log-key log.key.pub --attest-key attest.key.pub --json
  execledger verify attestation.json --attest-key attest.key.pub
  execledger verify --replay 0193f6a2-7c1e-7d4a-9b1e-2f4c5d6e7f80 --config execledger.toml`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd.Context(), e, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.replay, "replay", "", "request `ID` of a tier A call to run again and compare with its attestation")
	fl.StringVar(&f.pubPath, "pubkey", "", "--replay: the attestation public key `FILE` (PEM); default: [attest] key_file + \".pub\"")
	fl.BoolVar(&f.db, "db", false, "verify the live database's log from its first leaf, then the requests read model")
	fl.StringVar(&f.keys.log, "log-key", "", "the log's verifier `KEY`: the FILE.pub of execledger keygen --note, or the key itself")
	fl.StringArrayVar(&f.keys.attest, "attest-key", nil, "an attestation public key `FILE` (PEM); repeat across key rotations")
	fl.StringArrayVar(&f.keys.witness, "witness-key", nil, "a witness's verifier `KEY` whose cosignature the newest checkpoint must carry; repeatable")
	fl.DurationVar(&f.wait, "wait", export.DefaultWait, "--db: how long to wait for a clean checkpoint when the newest is not")
	e.jsonFlag(cmd, "print JSON")
	e.configFlag(cmd)
	return cmd
}

// runVerify checks what the ledger recorded: an export bundle offline
// (verify BUNDLE), the live log and read model (verify --db), one
// attestation envelope (verify ATTESTATION.json), or a tier A call run
// again (verify --replay ID).
func runVerify(ctx context.Context, e *env, f verifyFlags, pos []string) error {
	k := f.keys
	keyed := k.log != "" || len(k.attest) > 0 || len(k.witness) > 0
	switch {
	case f.replay != "" && len(pos) == 0 && !f.db && !keyed:
		return runReplay(ctx, e, f.replay, e.config, f.pubPath, e.json)
	case f.replay != "" || f.pubPath != "":
		return fail(exitUsage, "verify: --replay and --pubkey take no bundle, file, --db or keys")
	case f.db && len(pos) == 0:
		return runVerifyDB(ctx, e, e.config, k, f.wait, e.json)
	case !f.db && len(pos) == 1:
		return runVerifyFile(ctx, e, pos[0], k, e.json)
	case f.db:
		return fail(exitUsage, "verify: --db takes no bundle or file")
	}
	return fail(exitUsage, "verify: give a BUNDLE or ATTESTATION.json, --db or --replay ID")
}

// verifyKeyFlags are the keys verify's offline modes trust.
type verifyKeyFlags struct {
	log             string
	attest, witness []string
}

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
func runVerifyFile(ctx context.Context, e *env, path string, k verifyKeyFlags, asJSON bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fail(exitError, "verify: %v", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	kind, err := sniffFile(br)
	if err != nil {
		return fail(exitError, "verify: %s: %v", path, err)
	}
	if kind == "" && k.log == "" {
		return fail(exitError, "verify: %s is neither an export bundle (its first line is not a bundle record) nor a DSSE envelope", path)
	}
	if kind == "envelope" {
		if len(k.attest) == 0 || k.log != "" || len(k.witness) > 0 {
			return fail(exitUsage, "verify: %s is an attestation envelope: give --attest-key (only)", path)
		}
		return verifyEnvelopeFile(e, br, k, asJSON)
	}
	if k.log == "" || len(k.attest) == 0 {
		return fail(exitUsage, "verify: a bundle needs --log-key and --attest-key")
	}
	keys, err := k.load()
	if err != nil {
		return fail(exitError, "verify: %v", err)
	}
	bar := newProgressLine(e.io.err, "verified")
	rep, err := bundle.Verify(ctx, br, keys, func(n int64) { bar.update(n, 0) })
	bar.finish()
	if err != nil {
		return fail(exitError, "verify: %s: %v", path, err)
	}
	if rep.OK && rep.Events == 0 {
		// Intact, but an auditor who reads "ok" would think the scope's
		// requests verified: there were none.
		what := "the whole log"
		if rep.Scope != nil {
			what = scopeText(*rep.Scope)
		}
		rep.OK = false
		rep.Fault = &bundle.Fault{Code: bundle.Empty, Message: fmt.Sprintf("the bundle holds no events: it proves nothing about %s "+
			"(did the export's --principal, --since or --until match no request? --until 24h means before 24 hours ago)", what)}
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
func runVerifyDB(ctx context.Context, e *env, cfgPath string, k verifyKeyFlags, wait time.Duration, asJSON bool) error {
	if k.log == "" || len(k.attest) == 0 || wait < 0 {
		return fail(exitUsage, "verify --db needs --log-key and --attest-key (and --wait ≥ 0)")
	}
	keys, err := k.load()
	if err != nil {
		return fail(exitError, "verify: %v", err)
	}
	_, pool, err := e.connectReader(ctx, cfgPath)
	if err != nil {
		return fail(exitError, "%v", err)
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
		return fail(exitError, "verify --db: %v", err)
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
		if rep.Archived > 0 {
			fmt.Fprintf(w, "archived: %d leaves checked against the tree by their archives' compact ranges (ledger.event_archives), not their events\n", rep.Archived)
		}
		if m := rep.ReadModel; m.Checked {
			fmt.Fprintf(w, "read model: %d final requests, %d pending (ended in the last %s or attested but not yet sealed)",
				m.Final, m.Pending, export.DefaultPendingAfter)
			if len(m.PendingRequests) > 0 {
				fmt.Fprintf(w, ": %s", strings.Join(m.PendingRequests, " "))
			}
			fmt.Fprintf(w, "\nread model: %d attested requests match their sealed attestation; ", m.Compared)
			if m.RebuildsSkipped != "" {
				fmt.Fprintf(w, "tables not compared with their rebuild: %s\n", m.RebuildsSkipped)
			} else {
				fmt.Fprintf(w, "tables equal to their rebuild from the log: %s\n", strings.Join(m.Tables, ", "))
			}
		}
	})
}

// printVerdict prints a verification's report: full as JSON, or a
// summary line of rep and then what more writes; exit 3 on a fault.
func printVerdict(e *env, rep bundle.Report, keys bundle.Keys, asJSON bool, full any, more func(io.Writer)) error {
	code := exitOK
	if !rep.OK {
		code = exitNotOK
	}
	if asJSON {
		if err := printJSON(e, full); err != nil {
			return err
		}
		return exitCode(code)
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
	return exitCode(code)
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
func verifyEnvelopeFile(e *env, r io.Reader, k verifyKeyFlags, asJSON bool) error {
	raw, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return fail(exitError, "verify: %v", err)
	}
	raw = bytes.TrimSpace(raw)
	var pubs []ed25519.PublicKey
	for _, f := range k.attest {
		pub, err := attest.LoadPublicKey(f)
		if err != nil {
			return fail(exitError, "verify: --attest-key: %v", err)
		}
		pubs = append(pubs, pub)
	}
	rep := checkEnvelope(raw, pubs)
	code := exitOK
	if !rep.OK {
		code = exitNotOK
	}
	if asJSON {
		if err := printJSON(e, rep); err != nil {
			return err
		}
		return exitCode(code)
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
	return exitCode(code)
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
		return string(ledger.StateSucceeded)
	case p.Decision == attest.DecisionDeny:
		return "denied: " + p.ErrorKind
	}
	return "failed: " + p.ErrorKind
}
