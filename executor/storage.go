package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/execledger/execledger/ledger"
)

// queryStoreWrites upserts a batch's skill storage writes, one statement.
const queryStoreWrites = `
INSERT INTO ledger.skill_storage (key, value)
SELECT * FROM unnest($1::text[], $2::bytea[])
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = clock_timestamp()`

// maxStorageKey is the longest key ledger.skill_storage takes, in bytes
// (skill_storage_key_check; wasmrun.MaxStorageKey).
const maxStorageKey = 512

// errStorageKey is a write of a key ledger.skill_storage refuses.
var errStorageKey = errors.New("a storage write's key is empty, over 512 bytes, not UTF-8 or holds NUL")

// checkStorageWrites refuses the writes of a key the table would: the
// CHECK's violation is no data error (SQLSTATE 23514, not class 22), so
// completeWithRetry would retry the whole batch until it gave up instead of
// failing the one call.
func checkStorageWrites(ws []StorageWrite) error {
	for _, w := range ws {
		if len(w.Key) == 0 || len(w.Key) > maxStorageKey || !utf8.ValidString(w.Key) || strings.IndexByte(w.Key, 0) >= 0 {
			return fmt.Errorf("%w: %q", errStorageKey, clipKey(w.Key))
		}
	}
	return nil
}

// clipKey is at most 64 bytes of key, for a message.
func clipKey(key string) string {
	if len(key) > 64 {
		return key[:64] + "..."
	}
	return key
}

// refuseUnstorable replaces in batch the result of a call that succeeded
// with writes the table refuses by a runtime_failure, which keeps the
// call's events and usage and writes nothing.
func (c *completer) refuseUnstorable(batch []outcome) {
	for i, o := range batch {
		if o.result.ErrorKind != "" {
			continue
		}
		if err := checkStorageWrites(o.result.StorageWrites); err != nil {
			c.logger.Error("tool returned a storage write the ledger cannot store", slog.String("tool", o.job.tool),
				slog.String("request_id", o.job.id.String()), slog.Any("error", err))
			f := failure(ledger.KindRuntimeFailure, o.job.tool+": "+storableText(err.Error()))
			f.Resources, f.Enforcement, f.Events = o.result.Resources, o.result.Enforcement, o.result.Events
			batch[i].result = f
		}
	}
}

// storageWrites are the writes of a completion batch's successful calls,
// the last of each key winning, applied in key order so that concurrent
// completions lock rows in one order.
type storageWrites map[string][]byte

// add takes a result's writes, after those of results before it.
func (s *storageWrites) add(ws []StorageWrite) {
	if len(ws) == 0 {
		return
	}
	if *s == nil {
		*s = storageWrites{}
	}
	for _, w := range ws {
		v := w.Value
		if v == nil {
			v = []byte{} // the column is NOT NULL; nil is the empty value
		}
		(*s)[w.Key] = v
	}
}

// exec writes them in tx, in one statement: ON CONFLICT may not touch a
// row twice, which the map's one value per key rules out.
func (s storageWrites) exec(ctx context.Context, tx pgx.Tx) error {
	if len(s) == 0 {
		return nil
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	values := make([][]byte, len(keys))
	for i, k := range keys {
		values[i] = s[k]
	}
	if _, err := tx.Exec(ctx, queryStoreWrites, keys, values); err != nil {
		return fmt.Errorf("complete: skill storage: %w", err)
	}
	return nil
}
