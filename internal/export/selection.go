package export

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/execledger/execledger/internal/contract"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/ledger"
)

// selectionWhere is the WHERE clause on ledger.requests r that scope
// selects, with its arguments numbered from $2 ($1 is the tree size).
func selectionWhere(s bundle.Scope) (string, []any) {
	var conds []string
	args := []any{}
	add := func(cond string, arg any) {
		args = append(args, arg)
		conds = append(conds, fmt.Sprintf(cond, len(args)+1))
	}
	if s.Request != "" {
		add("r.id = $%d::uuid", s.Request)
	}
	if s.Principal != "" {
		add("r.principal = $%d", s.Principal)
	}
	if s.Run != "" {
		add("r.run_id = $%d", s.Run)
	}
	if s.Since != nil {
		add("r.submitted_at >= $%d", *s.Since)
	}
	if s.Until != nil {
		add("r.submitted_at < $%d", *s.Until)
	}
	if len(conds) == 0 {
		return "", args
	}
	return "WHERE " + strings.Join(conds, " AND "), args
}

// selection is what a partial scope selects below a tree size.
type selection struct {
	requests    int64    // requests selected
	leaves      []uint64 // their events' leaves, ascending
	checkpoints []uint64 // the checkpoints their attestations name, ascending
	keyIDs      []string // the keys their attestations are signed with
	unsealed    int64    // their events not below the size
}

// selectLeaves reads the leaves below size of the requests scope selects,
// and what their attestations name.
func selectLeaves(ctx context.Context, db ledger.DBTX, scope bundle.Scope, size uint64) (selection, error) {
	where, args := selectionWhere(scope)
	args = append([]any{int64(size)}, args...)
	rows, err := db.Query(ctx, fmt.Sprintf(querySelectedLeaves, where), args...)
	if err != nil {
		return selection{}, fmt.Errorf("export: select requests: %w", err)
	}
	defer rows.Close()
	var sel selection
	named, keys := map[uint64]bool{}, map[string]bool{}
	for rows.Next() {
		var leaf int64
		var envelope *string
		if err := rows.Scan(&leaf, &envelope); err != nil {
			return selection{}, fmt.Errorf("export: select requests: %w", err)
		}
		sel.leaves = append(sel.leaves, uint64(leaf))
		if envelope != nil {
			cp, ids := envelopeFacts(*envelope)
			if cp != nil && cp.Size < size {
				named[cp.Size] = true
			}
			for _, id := range ids {
				keys[id] = true
			}
		}
	}
	if err := rows.Err(); err != nil {
		return selection{}, fmt.Errorf("export: select requests: %w", err)
	}
	if err := db.QueryRow(ctx, fmt.Sprintf(querySelectedUnsealed, where), args...).Scan(&sel.requests, &sel.unsealed); err != nil {
		return selection{}, fmt.Errorf("export: select requests: %w", err)
	}
	for s := range named {
		sel.checkpoints = append(sel.checkpoints, s)
	}
	slices.Sort(sel.checkpoints)
	for k := range keys {
		sel.keyIDs = append(sel.keyIDs, k)
	}
	slices.Sort(sel.keyIDs)
	return sel, nil
}

// envelopeFacts reads, without checking any signature, the checkpoint an
// attestation envelope's statement names and the key ids of its
// signatures. The verifier checks both.
func envelopeFacts(envelope string) (*attest.LogCheckpoint, []string) {
	var env attest.Envelope
	if err := json.Unmarshal([]byte(envelope), &env); err != nil {
		return nil, nil
	}
	var ids []string
	for _, s := range env.Signatures {
		ids = append(ids, s.KeyID)
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		if payload, err = base64.URLEncoding.DecodeString(env.Payload); err != nil {
			return nil, ids
		}
	}
	var st struct {
		Predicate struct {
			LogCheckpoint *attest.LogCheckpoint `json:"log_checkpoint"`
		} `json:"predicate"`
	}
	if json.Unmarshal(payload, &st) != nil {
		return nil, ids
	}
	return st.Predicate.LogCheckpoint, ids
}

// requestSealed returns a function giving the tree size that holds every
// event request id has now: the leaf after its last one, or MaxUint64
// while one is not sealed yet.
func requestSealed(db ledger.DBTX, id string) func(ctx context.Context) (uint64, error) {
	return func(ctx context.Context) (uint64, error) {
		var n int64
		var next *int64
		if err := db.QueryRow(ctx, queryStreamSealed, contract.RequestStream(id)).Scan(&n, &next); err != nil {
			return 0, fmt.Errorf("export: request %s: %w", id, err)
		}
		if next == nil {
			return math.MaxUint64, nil
		}
		return uint64(*next), nil
	}
}

// checkRequest returns ErrNoRequest when ledger.requests has no request id.
func checkRequest(ctx context.Context, db ledger.DBTX, id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return fmt.Errorf("export: %w: %q is not a request id (a UUID)", ErrNoRequest, id)
	}
	var ok bool
	if err := db.QueryRow(ctx, queryRequestExists, id).Scan(&ok); err != nil {
		return fmt.Errorf("export: request %s: %w", id, err)
	}
	if !ok {
		return fmt.Errorf("export: %w %s", ErrNoRequest, id)
	}
	return nil
}
