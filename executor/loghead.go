package executor

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/internal/attest"
)

// logHeadMaxAge is how old the newest checkpoint an attestation names may
// be: the executor reads it again when its copy is older. Checkpoints are
// signed about once a second ([sealer] checkpoint_interval), so a copy
// this fresh is the newest one or the one before.
const logHeadMaxAge = 200 * time.Millisecond

// logHead is the Merkle log's newest checkpoint as the executor last read
// it, for attestations to name: the log state each was made against.
type logHead struct {
	mu   sync.Mutex
	read time.Time
	cp   *attest.LogCheckpoint
}

// logCheckpoint returns the newest checkpoint (nil while the log has
// none), reading it when the copy is older than logHeadMaxAge. A failed
// read keeps the copy: an attestation then names an older checkpoint,
// which is still true of it.
func (r *recorder) logCheckpoint(ctx context.Context) *attest.LogCheckpoint {
	h := &r.head
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.read) < logHeadMaxAge {
		return h.cp
	}
	var size int64
	var root []byte
	var origin string
	err := r.pool.QueryRow(ctx, queryNewestCheckpoint).Scan(&size, &root, &origin)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		h.cp = nil
	case err != nil:
		r.logger.Warn("newest log checkpoint not read; attestations name the last one read", slog.Any("error", err))
		return h.cp
	default:
		h.cp = &attest.LogCheckpoint{Origin: origin, Size: uint64(size), RootHash: base64.StdEncoding.EncodeToString(root)}
	}
	h.read = time.Now()
	return h.cp
}
