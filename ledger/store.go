package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DBTX is what the store's queries run on: a pool, a connection or a transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Expected versions with a special meaning for Append.
const (
	// NoStream: the stream must not exist yet; its first event gets version 1.
	NoStream int64 = 0
	// AnyVersion: append after whatever the stream's head is when the call runs.
	AnyVersion int64 = -1
)

// Appended is where an appended event landed.
type Appended struct {
	Stream   string
	Version  int64
	Position int64
	Hash     [32]byte
}

// StreamAppend is one stream's part of a batch: events to append after Expected.
type StreamAppend struct {
	Stream   string
	Expected int64
	Events   []NewEvent
}

// Store reads and appends events.
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a Store over pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Append appends events to stream, which must be at version expected
// (NoStream for a new stream, AnyVersion for no check), in one transaction
// of its own. On a lost race it returns a *ConcurrencyError.
func (s *Store) Append(ctx context.Context, stream string, expected int64, events ...NewEvent) ([]Appended, error) {
	return s.AppendBatch(ctx, s.pool, []StreamAppend{{Stream: stream, Expected: expected, Events: events}})
}

// AppendBatch appends to several streams in one statement on db, which may
// be a transaction the caller owns: the events and the rows the caller
// derives from them then commit together. Either every event is appended or
// none is.
func (s *Store) AppendBatch(ctx context.Context, db DBTX, batch []StreamAppend) ([]Appended, error) {
	var streams, types, payloads, metas []string
	var versions []int64
	for _, sa := range batch {
		next := sa.Expected
		if sa.Expected == AnyVersion {
			if err := db.QueryRow(ctx, queryStreamHead, sa.Stream).Scan(&next); err != nil {
				return nil, fmt.Errorf("ledger: read head of %q: %w", sa.Stream, err)
			}
		} else if sa.Expected < 0 {
			return nil, &InvalidEventError{Reason: fmt.Sprintf("expected version %d of stream %q is negative", sa.Expected, sa.Stream)}
		}
		for _, ev := range sa.Events {
			p, m, err := ev.encode()
			if err != nil {
				return nil, err
			}
			next++
			streams = append(streams, sa.Stream)
			versions = append(versions, next)
			types = append(types, ev.Type)
			payloads = append(payloads, p)
			metas = append(metas, m)
		}
	}
	if len(streams) == 0 {
		return nil, nil
	}
	rows, err := db.Query(ctx, queryAppendEvents, streams, versions, types, payloads, metas)
	if err != nil {
		return nil, appendError(batch, err)
	}
	out := make([]Appended, 0, len(streams))
	for rows.Next() {
		var a Appended
		var hash []byte
		if err := rows.Scan(&a.Position, &hash); err != nil {
			rows.Close()
			return nil, fmt.Errorf("ledger: append: %w", err)
		}
		i := len(out)
		a.Stream, a.Version = streams[i], versions[i]
		copy(a.Hash[:], hash)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, appendError(batch, err)
	}
	return out, nil
}

// appendError turns a failed append into a *ConcurrencyError when a stream
// was not at its expected version.
func appendError(batch []StreamAppend, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return fmt.Errorf("ledger: append: %w", err)
	}
	switch {
	case pgErr.Code == "23505" && pgErr.ConstraintName == "events_pkey",
		pgErr.Code == "40001" && pgErr.Detail != "":
		ce := &ConcurrencyError{}
		if len(batch) == 1 {
			ce.Stream, ce.Expected = batch[0].Stream, batch[0].Expected
		} else {
			ce.Stream, ce.Expected = conflictingStream(pgErr)
		}
		return ce
	case pgErr.Code == "23514" || pgErr.Code == "22P02":
		return &InvalidEventError{Reason: pgErr.Message}
	}
	return fmt.Errorf("ledger: append: %w", err)
}

// conflictingStream names the stream of a failed batch from the error's
// detail: ledger.append_events' own "stream=S expected_version=N", or the
// unique index's "Key (stream, version)=(S, V) already exists.".
func conflictingStream(pgErr *pgconn.PgError) (string, int64) {
	d := pgErr.Detail
	if rest, ok := strings.CutPrefix(d, "stream="); ok {
		if i := strings.LastIndex(rest, " expected_version="); i >= 0 {
			v, _ := strconv.ParseInt(rest[i+len(" expected_version="):], 10, 64)
			return rest[:i], v
		}
	}
	if rest, ok := strings.CutPrefix(d, "Key (stream, version)=("); ok {
		rest = strings.TrimSuffix(rest, ") already exists.")
		if i := strings.LastIndex(rest, ", "); i >= 0 {
			v, _ := strconv.ParseInt(rest[i+2:], 10, 64)
			return rest[:i], v - 1
		}
	}
	return "", 0
}

// ReadStream returns up to limit events of stream with a version greater
// than after, in version order.
func (s *Store) ReadStream(ctx context.Context, stream string, after int64, limit int) ([]Event, error) {
	rows, err := s.pool.Query(ctx, queryReadStream, stream, after, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger: read stream %q: %w", stream, err)
	}
	return collectEvents(rows)
}

// ReadAll returns up to limit committed events after the cursor in the
// log's delivery order: ascending (TxID, Position), held back behind the
// oldest transaction still running. That order is total and stable and never
// skips an event that commits late, so a reader that stores the last
// event's Cursor and calls again sees every event exactly once. A long
// transaction anywhere in the cluster delays delivery until it ends.
func (s *Store) ReadAll(ctx context.Context, after Cursor, limit int) ([]Event, error) {
	return readAll(ctx, s.pool, queryReadAll, after, limit)
}

func readAll(ctx context.Context, db DBTX, query string, after Cursor, limit int) ([]Event, error) {
	rows, err := db.Query(ctx, query, strconv.FormatUint(after.TxID, 10), after.Position, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger: read all: %w", err)
	}
	return collectEvents(rows)
}

func collectEvents(rows pgx.Rows) ([]Event, error) {
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Event, error) {
		var e Event
		var payload, metadata string
		var hash []byte
		err := row.Scan(&e.Position, &e.TxID, &e.Stream, &e.Version, &e.Type, &payload, &metadata, &e.RecordedAt, &hash)
		e.Payload, e.Metadata = []byte(payload), []byte(metadata)
		copy(e.Hash[:], hash)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: read events: %w", err)
	}
	return events, nil
}
