package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

// checkpoint is a verified checkpoint of the bundle.
type checkpoint struct {
	size uint64
	root []byte
	note *note.Note // its verified signatures: the log's and witnesses'
}

// checkpoint verifies a checkpoint record: its note signed by the log key
// (and any witness signature on it valid), its body a checkpoint of the
// pinned origin with the record's size and root, larger than the previous
// one, which a consistency proof must have joined to its own predecessor.
func (v *Verifier) checkpoint(c *Checkpoint) *Fault {
	if v.phase != phaseCheckpoints {
		return fault(Malformed, "checkpoint %d after the first range", c.Size)
	}
	n, err := note.Open([]byte(c.Note), v.notes)
	if err != nil {
		return v.noteFault(c.Size, err).atCheckpoint(c.Size)
	}
	if !signedBy(n, v.keys.Log) {
		return fault(UnknownKey, "checkpoint %d is not signed by the log key %s, only by witnesses", c.Size, Fingerprint(v.keys.Log)).
			atCheckpoint(c.Size)
	}
	var body log.Checkpoint
	if _, err := body.Unmarshal([]byte(n.Text)); err != nil {
		return fault(Malformed, "checkpoint %d: the signed note is not a checkpoint: %v", c.Size, err).atCheckpoint(c.Size)
	}
	switch {
	case body.Origin != v.origin:
		return fault(BadSignature, "checkpoint %d is signed for origin %q, not %q", c.Size, body.Origin, v.origin).atCheckpoint(c.Size)
	case body.Size != c.Size || !bytes.Equal(body.Hash, c.Root):
		return fault(BadSignature, "the checkpoint record says size %d, the note it carries signs size %d with another root", c.Size, body.Size).
			atCheckpoint(c.Size)
	case c.Size == 0 && !bytes.Equal(c.Root, rfc6962.DefaultHasher.EmptyRoot()):
		return fault(InconsistentCheckpoints, "checkpoint 0 does not have the empty tree's root").atCheckpoint(0)
	}
	if len(v.checkpoints) > 0 {
		prev := v.newest()
		if c.Size <= prev.size {
			return fault(InconsistentCheckpoints, "checkpoint %d follows checkpoint %d: sizes must increase", c.Size, prev.size).atCheckpoint(c.Size)
		}
		if f := v.uncovered(); f != nil {
			return f
		}
	}
	v.checkpoints = append(v.checkpoints, checkpoint{size: c.Size, root: c.Root, note: n})
	v.covered = len(v.checkpoints) == 1
	v.rep.Checkpoints++
	return nil
}

// noteFault explains why note.Open refused a checkpoint's note.
func (v *Verifier) noteFault(size uint64, err error) *Fault {
	var invalid *note.InvalidSignatureError
	var unverified *note.UnverifiedNoteError
	switch {
	case errors.As(err, &invalid):
		if invalid.Name == v.keys.Log.Name() && invalid.Hash == v.keys.Log.KeyHash() {
			return fault(BadSignature, "checkpoint %d: the log key's signature does not verify", size)
		}
		return fault(BadSignature, "checkpoint %d: the cosignature of witness %s+%08x does not verify", size, invalid.Name, invalid.Hash)
	case errors.As(err, &unverified):
		var signers []string
		for _, s := range unverified.Note.UnverifiedSigs {
			signers = append(signers, fmt.Sprintf("%s+%08x", s.Name, s.Hash))
		}
		return fault(UnknownKey, "checkpoint %d is signed only by keys not given (%s); the log key is %s",
			size, strings.Join(signers, ", "), Fingerprint(v.keys.Log))
	}
	return fault(Malformed, "checkpoint %d: not a signed note: %v", size, err)
}

// consistency verifies the consistency proof between the last two
// checkpoints.
func (v *Verifier) consistency(c *Consistency) *Fault {
	if v.phase != phaseCheckpoints {
		return fault(Malformed, "consistency proof after the first range")
	}
	n := len(v.checkpoints)
	if n < 2 || v.covered || v.checkpoints[n-2].size != c.From || v.checkpoints[n-1].size != c.To {
		return fault(InconsistentCheckpoints, "a consistency proof from %d to %d, which is not the pair of checkpoints it follows", c.From, c.To).
			atCheckpoint(c.To)
	}
	from, to := v.checkpoints[n-2], v.checkpoints[n-1]
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, from.size, to.size, c.Hashes, from.root, to.root); err != nil {
		return fault(InconsistentCheckpoints, "checkpoint %d does not extend checkpoint %d: %v", to.size, from.size, err).atCheckpoint(to.size)
	}
	v.covered = true
	return nil
}

// uncovered reports a pair of consecutive checkpoints that no consistency
// proof joins.
func (v *Verifier) uncovered() *Fault {
	if v.covered {
		return nil
	}
	n := len(v.checkpoints)
	from, to := v.checkpoints[n-2].size, v.checkpoints[n-1].size
	return fault(InconsistentCheckpoints, "no consistency proof from checkpoint %d to checkpoint %d", from, to).atCheckpoint(to)
}

// beginEvents ends the checkpoints: at the first range, event or end it
// checks that there is a newest checkpoint, joined to the others, and
// cosigned by every witness given.
func (v *Verifier) beginEvents() *Fault {
	if v.phase != phaseCheckpoints {
		return nil
	}
	if len(v.checkpoints) == 0 {
		return fault(Malformed, "the bundle holds no checkpoint")
	}
	if f := v.uncovered(); f != nil {
		return f
	}
	newest := v.newest()
	for _, w := range v.keys.Witnesses {
		if !signedBy(newest.note, w) {
			return fault(BadSignature, "checkpoint %d has no valid cosignature from witness %s", newest.size, Fingerprint(w)).
				atCheckpoint(newest.size)
		}
	}
	v.rep.Witnesses = len(v.keys.Witnesses)
	v.phase = phaseEvents
	return nil
}

// newest is the bundle's last checkpoint (there is one).
func (v *Verifier) newest() checkpoint { return v.checkpoints[len(v.checkpoints)-1] }

// signedBy reports whether n has a verified signature by k.
func signedBy(n *note.Note, k note.Verifier) bool {
	for _, s := range n.Sigs {
		if s.Name == k.Name() && s.Hash == k.KeyHash() {
			return true
		}
	}
	return false
}
