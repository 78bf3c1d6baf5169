package witness

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/transparency-dev/formats/log"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/ledger"
)

// Refusal kinds.
const (
	RefuseRollback     = "rollback"      // the log is smaller than the witness's state
	RefuseFork         = "fork"          // two different trees of one size
	RefuseInconsistent = "inconsistent"  // no valid consistency proof from the state
	RefuseBadSignature = "bad_signature" // the checkpoint is not the log key's
)

// Pass results.
const (
	ResultCosigned        = "cosigned"
	ResultNoNewCheckpoint = "no_new_checkpoint"
	ResultNoCheckpoint    = "no_checkpoint"
	ResultRefused         = "refused"
)

// Witness checks and cosigns the log's checkpoints.
type Witness struct {
	logKey note.Verifier // the log's key; its name is the log's origin
	signer note.Signer   // the witness's cosignature/v1 key
	self   note.Verifier // signer's verifier
	state  string        // the state file
}

// Pass is what one pass did; witness --json prints it as one line.
type Pass struct {
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

// Refusal is a pass that found the log rewritten, rolled back or forked.
type Refusal struct {
	Kind string // one of the Refuse kinds
	msg  string
}

func (r *Refusal) Error() string { return r.msg }

// refuse marks p refused and returns the refusal.
func (p *Pass) refuse(kind, format string, args ...any) error {
	p.Result, p.Refusal = ResultRefused, kind
	p.Message = fmt.Sprintf("REFUSED (%s): %s; the witness accepted size %d root %s, the log's newest checkpoint is size %d root %s: "+
		"the log was rewritten or rolled back; do not cosign",
		kind, fmt.Sprintf(format, args...), p.StateSize, Base64(p.StateRoot), p.Size, Base64(p.Root))
	return &Refusal{Kind: kind, msg: p.Message}
}

// dbError is a database failure, which Runner retries when transient.
type dbError struct{ err error }

func (e dbError) Error() string { return e.err.Error() }
func (e dbError) Unwrap() error { return e.err }

// New loads the log's verifier key (a file or the key text), the
// witness's signer key file, and names its state file.
func New(logKey, key, state string) (*Witness, error) {
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
	return &Witness{logKey: v, signer: s, self: cs.Verifier(), state: state}, nil
}

// State is the witness's state file.
func (w *Witness) State() string { return w.state }

// Pass checks the log's newest checkpoint against the state and cosigns
// it when it extends what the witness accepted before. A *Refusal error
// says the log was rewritten, rolled back or forked; p says how.
func (w *Witness) Pass(ctx context.Context, db ledger.DBTX) (Pass, error) {
	p := Pass{Time: time.Now().UTC(), Origin: w.logKey.Name(), Witness: w.signer.Name()}
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
		p.Result = ResultNoCheckpoint
		return p, nil
	case errors.Is(err, ledger.ErrNoCheckpoint):
		return p, p.refuse(RefuseRollback, "the log has no checkpoint at all")
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
			p.Result = ResultNoNewCheckpoint
		}
		return p, err
	}
	return p, w.accept(ctx, db, cp, body, row.Note, &p)
}

// open verifies row's note with the log key and returns the checkpoint it
// signs and the signed text.
func (w *Witness) open(row ledger.Checkpoint, p *Pass) (*log.Checkpoint, string, error) {
	cp, _, n, err := log.ParseCheckpoint(row.Note, w.logKey.Name(), w.logKey)
	if err != nil {
		return nil, "", p.refuse(RefuseBadSignature, "the newest checkpoint is not signed by the log key %s+%08x (%v)", w.logKey.Name(), w.logKey.KeyHash(), err)
	}
	if cp.Size != row.Size || string(cp.Hash) != string(row.Root) {
		return nil, "", p.refuse(RefuseInconsistent, "the checkpoint row says size %d root %s, its signed note size %d root %s",
			row.Size, Base64(row.Root), cp.Size, Base64(cp.Hash))
	}
	return cp, n.Text, nil
}

// extends checks that cp extends prev; same: cp is prev.
func (w *Witness) extends(ctx context.Context, db ledger.DBTX, prev, cp *log.Checkpoint, p *Pass) (same bool, err error) {
	switch {
	case cp.Size < prev.Size:
		return false, p.refuse(RefuseRollback, "the newest checkpoint is smaller than the one the witness accepted: the log lost checkpoints or leaves")
	case cp.Size == prev.Size && string(cp.Hash) != string(prev.Hash):
		return false, p.refuse(RefuseFork, "the log signed two different trees of size %d", cp.Size)
	case cp.Size == prev.Size:
		return true, nil
	}
	old, err := ledger.CheckpointAt(ctx, db, prev.Size)
	switch {
	case errors.Is(err, ledger.ErrNoCheckpoint):
	case err != nil:
		return false, dbError{err}
	case string(old.Root) != string(prev.Hash):
		return false, p.refuse(RefuseFork, "the log's checkpoint of size %d now has root %s, not the one the witness accepted", prev.Size, Base64(old.Root))
	}
	hashes, err := ledger.ConsistencyProof(ctx, db, prev.Size, cp.Size)
	if errors.Is(err, ledger.ErrLogNodeMissing) {
		return false, p.refuse(RefuseInconsistent, "the log cannot prove size %d is a prefix of size %d (%v)", prev.Size, cp.Size, err)
	}
	if err != nil {
		return false, dbError{err}
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, prev.Size, cp.Size, hashes, prev.Hash, cp.Hash); err != nil {
		return false, p.refuse(RefuseInconsistent, "the consistency proof from size %d to %d does not verify (%v): what the witness saw before is not a prefix of the log",
			prev.Size, cp.Size, err)
	}
	p.ProofHashes = len(hashes)
	return false, nil
}

// accept cosigns cp and then makes signed (its note) the state. The new
// state is written to a temporary file first, so that a state that cannot
// be written stops the witness before it cosigns.
func (w *Witness) accept(ctx context.Context, db ledger.DBTX, cp *log.Checkpoint, body string, signed []byte, p *Pass) error {
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
	p.Result = ResultCosigned
	return nil
}

// cosign signs body with the witness key and stores the line as a
// cosignature of checkpoint size.
func (w *Witness) cosign(ctx context.Context, db ledger.DBTX, size uint64, body string) error {
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

// Base64 is a root hash as the witness prints it: standard base64, or
// "(none)".
func Base64(b []byte) string {
	if b == nil {
		return "(none)"
	}
	return base64.StdEncoding.EncodeToString(b)
}
