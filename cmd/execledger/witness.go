package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/execledger/execledger/internal/contract"
	"github.com/execledger/execledger/internal/retry"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"
	"github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/internal/config"
	"github.com/execledger/execledger/ledger"
)

// A witness is run by someone other than the log's operator, as an
// auditor login. Each pass it reads the log's newest checkpoint, checks
// that the tree it commits to extends the one the witness accepted before
// (its state file), and only then cosigns it (C2SP tlog-cosignature) and
// moves its state. A log that lost, rewrote or forked what the witness
// saw gets no cosignature, and serve, which publishes a checkpoint only
// once its witnesses have cosigned it, publishes nothing new.

// Refusal kinds.
const (
	refuseRollback     = "rollback"      // the log is smaller than the witness's state
	refuseFork         = "fork"          // two different trees of one size
	refuseInconsistent = "inconsistent"  // no valid consistency proof from the state
	refuseBadSignature = "bad_signature" // the checkpoint is not the log key's
)

// Witness retry backoff while the database is unreachable (loop mode).
const (
	witnessRetryFirst = time.Second
	witnessRetryMax   = time.Minute
)

// witness checks and cosigns the log's checkpoints.
type witness struct {
	logKey note.Verifier // the log's key; its name is the log's origin
	signer note.Signer   // the witness's cosignature/v1 key
	self   note.Verifier // signer's verifier
	state  string        // the state file
}

// witnessPass is what one pass did; in --json, one line.
type witnessPass struct {
	Time    time.Time `json:"time"`
	Origin  string    `json:"origin"`
	Witness string    `json:"witness"`
	// Result: cosigned, no_new_checkpoint, no_checkpoint or refused.
	Result string `json:"result"`
	// TrustOnFirstUse: there was no state; the checkpoint was accepted on
	// its log signature alone.
	TrustOnFirstUse bool   `json:"trust_on_first_use,omitempty"`
	StateSize       uint64 `json:"state_size"`
	StateRoot       []byte `json:"state_root,omitempty"`
	Size            uint64 `json:"size"`
	Root            []byte `json:"root,omitempty"`
	ProofHashes     int    `json:"proof_hashes,omitempty"`
	Refusal         string `json:"refusal,omitempty"`
	Message         string `json:"message,omitempty"`
}

// refusal is a pass that found the log rewritten, rolled back or forked.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// refuse marks p refused and returns the refusal.
func (p *witnessPass) refuse(kind, format string, args ...any) error {
	p.Result, p.Refusal = "refused", kind
	p.Message = fmt.Sprintf("REFUSED (%s): %s; the witness accepted size %d root %s, the log's newest checkpoint is size %d root %s: "+
		"the log was rewritten or rolled back; do not cosign",
		kind, fmt.Sprintf(format, args...), p.StateSize, b64(p.StateRoot), p.Size, b64(p.Root))
	return &refusal{p.Message}
}

// dbError is a database failure, which loop mode retries when transient.
type dbError struct{ err error }

func (e dbError) Error() string { return e.err.Error() }
func (e dbError) Unwrap() error { return e.err }

// witnessFlags are witness's flags.
type witnessFlags struct {
	logKey, key, state string
	once               bool
	interval           time.Duration
}

func newWitnessCmd(e *env) *cobra.Command {
	var f witnessFlags
	cmd := &cobra.Command{
		Use:   "witness --log-key K --key WITNESS_KEY --state FILE",
		Short: "Check that the log's newest checkpoint extends the last one this witness accepted, then cosign it",
		Long: `Witness is run by someone other than the log's operator, as an auditor login. Each pass it
reads the log's newest checkpoint, checks that the tree it commits to extends the one the
witness accepted before (--state; trust on first use when missing or empty), and only then
cosigns it (C2SP tlog-cosignature) and moves its state. It exits 3 when it refuses a
checkpoint: rollback, fork, inconsistent, bad signature. Without --once it passes every
--interval until stopped.`,
		Example: `  execledger witness --log-key log.key.pub --key witness.key --state witness.state --once
  execledger witness --log-key log.key.pub --key witness.key --state witness.state --interval 30s --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWitness(cmd.Context(), e, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.logKey, "log-key", "", "the log's verifier `KEY`: the FILE.pub that execledger keygen --note writes, or the key text")
	fl.StringVar(&f.key, "key", "", "the witness's signer key `FILE` (execledger keygen --witness writes it)")
	fl.StringVar(&f.state, "state", "", "the state `FILE`: the last checkpoint the witness accepted (missing or empty: trust on first use)")
	fl.BoolVar(&f.once, "once", false, "one pass, then exit")
	fl.DurationVar(&f.interval, "interval", 5*time.Second, "time between passes")
	e.jsonFlag(cmd, "print a JSON object per pass")
	e.configFlag(cmd)
	return cmd
}

func runWitness(ctx context.Context, e *env, f witnessFlags) error {
	for _, fl := range []struct{ name, v string }{{"--log-key", f.logKey}, {"--key", f.key}, {"--state", f.state}} {
		if fl.v == "" {
			return fail(exitUsage, "witness needs %s", fl.name)
		}
	}
	if f.interval <= 0 {
		return fail(exitUsage, "--interval must be positive")
	}
	w, err := newWitness(f.logKey, f.key, f.state)
	if err != nil {
		return fail(exitError, "witness: %v", err)
	}
	cfg, err := e.loadConfig(e.config)
	if err == nil && cfg.Database.URL == "" {
		err = errNoDatabase
	}
	if err != nil {
		return fail(exitError, "witness: %v", err)
	}
	r := &witnessRunner{w: w, e: e, cfg: cfg, logger: e.logger(cfg).With(slog.String("component", "witness")), json: e.json}
	return r.run(ctx, f.once, f.interval)
}

func newWitness(logKey, key, state string) (*witness, error) {
	v, err := ledger.LoadNoteVerifier(logKey)
	if err != nil {
		return nil, err
	}
	s, err := ledger.LoadWitnessSigner(key)
	if err != nil {
		return nil, err
	}
	// LoadWitnessSigner's signer knows its verifier; the witness checks
	// its own line with it before storing it.
	cs, ok := s.(*fnote.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: a witness signer without a verifier (%T)", key, s)
	}
	return &witness{logKey: v, signer: s, self: cs.Verifier(), state: state}, nil
}

// pass checks the log's newest checkpoint against the state and cosigns
// it when it extends what the witness accepted before.
func (w *witness) pass(ctx context.Context, db ledger.DBTX) (witnessPass, error) {
	p := witnessPass{Time: time.Now().UTC(), Origin: w.logKey.Name(), Witness: w.signer.Name()}
	prev, err := w.readState()
	if err != nil {
		return p, err
	}
	if prev != nil {
		p.StateSize, p.StateRoot = prev.Size, prev.Hash
	}
	row, err := ledger.NewestCheckpoint(ctx, db, false)
	switch {
	case errors.Is(err, ledger.ErrNoCheckpoint) && prev == nil:
		p.Result = "no_checkpoint"
		return p, nil
	case errors.Is(err, ledger.ErrNoCheckpoint):
		return p, p.refuse(refuseRollback, "the log has no checkpoint at all")
	case err != nil:
		return p, dbError{err}
	}
	p.Size, p.Root = row.Size, row.Root // as the row claims, until its note verifies
	cp, body, err := w.open(row, &p)
	if err != nil {
		return p, err
	}
	p.Size, p.Root = cp.Size, cp.Hash
	if prev == nil {
		p.TrustOnFirstUse = true
	} else if same, err := w.extends(ctx, db, prev, cp, &p); err != nil || same {
		if same {
			p.Result = "no_new_checkpoint"
		}
		return p, err
	}
	return p, w.accept(ctx, db, cp, body, row.Note, &p)
}

// open verifies row's note with the log key and returns the checkpoint it
// signs and the signed text.
func (w *witness) open(row ledger.Checkpoint, p *witnessPass) (*log.Checkpoint, string, error) {
	cp, _, n, err := log.ParseCheckpoint(row.Note, w.logKey.Name(), w.logKey)
	if err != nil {
		return nil, "", p.refuse(refuseBadSignature, "the newest checkpoint is not signed by the log key %s+%08x (%v)", w.logKey.Name(), w.logKey.KeyHash(), err)
	}
	if cp.Size != row.Size || string(cp.Hash) != string(row.Root) {
		return nil, "", p.refuse(refuseInconsistent, "the checkpoint row says size %d root %s, its signed note size %d root %s",
			row.Size, b64(row.Root), cp.Size, b64(cp.Hash))
	}
	return cp, n.Text, nil
}

// extends checks that cp extends prev; same: cp is prev.
func (w *witness) extends(ctx context.Context, db ledger.DBTX, prev, cp *log.Checkpoint, p *witnessPass) (same bool, err error) {
	switch {
	case cp.Size < prev.Size:
		return false, p.refuse(refuseRollback, "the newest checkpoint is smaller than the one the witness accepted: the log lost checkpoints or leaves")
	case cp.Size == prev.Size && string(cp.Hash) != string(prev.Hash):
		return false, p.refuse(refuseFork, "the log signed two different trees of size %d", cp.Size)
	case cp.Size == prev.Size:
		return true, nil
	}
	old, err := ledger.CheckpointAt(ctx, db, prev.Size)
	switch {
	case errors.Is(err, ledger.ErrNoCheckpoint):
	case err != nil:
		return false, dbError{err}
	case string(old.Root) != string(prev.Hash):
		return false, p.refuse(refuseFork, "the log's checkpoint of size %d now has root %s, not the one the witness accepted", prev.Size, b64(old.Root))
	}
	hashes, err := ledger.ConsistencyProof(ctx, db, prev.Size, cp.Size)
	if errors.Is(err, ledger.ErrLogNodeMissing) {
		return false, p.refuse(refuseInconsistent, "the log cannot prove size %d is a prefix of size %d (%v)", prev.Size, cp.Size, err)
	}
	if err != nil {
		return false, dbError{err}
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, prev.Size, cp.Size, hashes, prev.Hash, cp.Hash); err != nil {
		return false, p.refuse(refuseInconsistent, "the consistency proof from size %d to %d does not verify (%v): what the witness saw before is not a prefix of the log",
			prev.Size, cp.Size, err)
	}
	p.ProofHashes = len(hashes)
	return false, nil
}

// accept cosigns cp and then makes signed (its note) the state. The new
// state is written to a temporary file first, so that a state that cannot
// be written stops the witness before it cosigns.
func (w *witness) accept(ctx context.Context, db ledger.DBTX, cp *log.Checkpoint, body string, signed []byte, p *witnessPass) error {
	st, err := stageFile(w.state, signed)
	if err != nil {
		return err
	}
	defer st.abort()
	if err := w.cosign(ctx, db, cp.Size, body); err != nil {
		return err
	}
	if err := st.commit(); err != nil {
		return err
	}
	p.Result = "cosigned"
	return nil
}

// cosign signs body with the witness key and stores the line as a
// cosignature of checkpoint size.
func (w *witness) cosign(ctx context.Context, db ledger.DBTX, size uint64, body string) error {
	signed, err := note.Sign(&note.Note{Text: body}, w.signer)
	if err != nil {
		return fmt.Errorf("cosign checkpoint %d: %w", size, err)
	}
	n, err := note.Open(signed, note.VerifierList(w.self))
	if err != nil {
		return fmt.Errorf("cosign checkpoint %d: the witness's own line does not verify: %w", size, err)
	}
	line := n.Sigs[0]
	if _, err := ledger.AddCosignature(ctx, db, size, ledger.Cosignature{KeyName: line.Name, KeyHash: line.Hash, Signature: line.Base64}); err != nil {
		return dbError{err}
	}
	return nil
}

// witnessRunner runs passes and reports them.
type witnessRunner struct {
	w      *witness
	e      *env
	cfg    config.Config
	logger *slog.Logger
	json   bool
	pool   *pgxpool.Pool
}

// run runs one pass (once) or one every interval until ctx ends or a
// pass refuses.
func (r *witnessRunner) run(ctx context.Context, once bool, interval time.Duration) error {
	defer func() {
		if r.pool != nil {
			r.pool.Close()
		}
	}()
	backoff := witnessRetryFirst
	for {
		p, err := r.pass(ctx)
		var ref *refusal
		switch {
		case !once && ctx.Err() != nil:
			return nil
		case errors.As(err, &ref):
			r.report(p)
			return fail(exitNotOK, "witness %v", err)
		case err == nil:
			r.report(p)
			backoff = witnessRetryFirst
			if once || !retry.Sleep(ctx, interval) {
				return nil
			}
			continue
		case once || !transient(err):
			return fail(exitError, "witness: %v", err)
		}
		r.logger.Warn("witness pass failed; retrying", slog.Any("error", err), slog.Duration("retry_in", backoff))
		if !retry.Sleep(ctx, backoff) {
			return nil
		}
		backoff = min(backoff*2, witnessRetryMax)
	}
}

func (r *witnessRunner) pass(ctx context.Context) (witnessPass, error) {
	if r.pool == nil {
		pool, err := openPool(ctx, r.cfg)
		if err != nil {
			return witnessPass{}, dbError{err}
		}
		r.pool = pool
	}
	return r.w.pass(ctx, r.pool)
}

// report prints p: one JSON object with --json, else one line (a
// refusal's line goes to stderr, from run).
func (r *witnessRunner) report(p witnessPass) {
	if r.json {
		_ = json.NewEncoder(r.e.io.out).Encode(p)
		return
	}
	out := r.e.io.out
	switch {
	case p.Result == "no_checkpoint":
		fmt.Fprintf(out, "witness: the log %s has no checkpoint yet; nothing to cosign\n", p.Origin)
	case p.Result == "no_new_checkpoint":
		fmt.Fprintf(out, "witness: no new checkpoint: %s is still at size %d root %s\n", p.Origin, p.Size, b64(p.Root))
	case p.Result == "cosigned" && p.TrustOnFirstUse:
		fmt.Fprintf(out, "witness: TRUST ON FIRST USE: no state in %s, so checkpoint %s size %d root %s was accepted on its log signature alone, without a consistency proof; cosigned as %s\n",
			r.w.state, p.Origin, p.Size, b64(p.Root), p.Witness)
	case p.Result == "cosigned":
		fmt.Fprintf(out, "witness: checkpoint %s size %d root %s is consistent with size %d root %s (%d proof hashes); cosigned as %s\n",
			p.Origin, p.Size, b64(p.Root), p.StateSize, b64(p.StateRoot), p.ProofHashes, p.Witness)
	}
}

func b64(b []byte) string {
	if b == nil {
		return "(none)"
	}
	return base64.StdEncoding.EncodeToString(b)
}

// The state file holds the last checkpoint the witness accepted: the
// log's signed note (C2SP tlog-checkpoint) exactly as the log stored it.
// Missing or empty, the witness trusts the first checkpoint it sees; once
// written it is never given up: a state the log key does not verify
// stops the witness rather than sending it back to trust on first use.

// readState returns the state's checkpoint, nil when there is none.
func (w *witness) readState() (*log.Checkpoint, error) {
	b, err := os.ReadFile(w.state)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(b) == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the state: %w", err)
	}
	cp, _, _, err := log.ParseCheckpoint(b, w.logKey.Name(), w.logKey)
	if err != nil {
		return nil, fmt.Errorf("the state file %s holds no checkpoint of %s signed by the log key (%v); "+
			"the witness does not fall back to trust on first use: give the log key it was written with, or move the file aside to start over",
			w.state, w.logKey.Name(), err)
	}
	return cp, nil
}

// stagedFile is a file's new content, written and synced to a temporary
// file beside it, that commit renames into place.
type stagedFile struct {
	path, tmp string
}

func stageFile(path string, data []byte) (*stagedFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("write the state: %w", err)
	}
	st := &stagedFile{path: path, tmp: f.Name()}
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		st.abort()
		return nil, fmt.Errorf("write the state: %w", err)
	}
	return st, nil
}

// commit renames the staged file into place and syncs the directory.
func (st *stagedFile) commit() error {
	if err := os.Rename(st.tmp, st.path); err != nil {
		return fmt.Errorf("write the state: %w", err)
	}
	st.tmp = ""
	d, err := os.Open(filepath.Dir(st.path))
	if err != nil {
		return fmt.Errorf("write the state: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write the state: sync %s: %w", filepath.Dir(st.path), err)
	}
	return nil
}

// abort removes the staged file unless it was committed.
func (st *stagedFile) abort() {
	if st.tmp != "" {
		_ = os.Remove(st.tmp)
		st.tmp = ""
	}
}

// transient reports whether err is a database failure worth retrying: the
// server is unreachable, restarting or overloaded, or a transaction was
// rolled back (contract.Transient), or the failure carries no SQLSTATE at
// all (a broken connection); not one that refuses the witness (privileges,
// a missing checkpoint).
func transient(err error) bool {
	var d dbError
	return errors.As(err, &d) && (contract.SQLState(err) == "" || contract.Transient(err))
}
