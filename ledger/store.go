package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
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
	f, err := flatten(batch, func(stream string) (int64, error) {
		var head int64
		if err := db.QueryRow(ctx, queryStreamHead, stream).Scan(&head); err != nil {
			return 0, fmt.Errorf("ledger: read head of %q: %w", stream, err)
		}
		return head, nil
	})
	if err != nil || len(f.streams) == 0 {
		return nil, err
	}
	versions := make([]int64, len(f.versions))
	for i, v := range f.versions {
		versions[i] = *v
	}
	return f.run(db.Query(ctx, queryAppendEvents, f.streams, versions, f.types, f.payloads, f.metas))
}

// Record is what an executor writes about requests in one call of
// ledger.executor_record: per request (Requests[i], under Claims[i]) the
// state change that follows (Kinds[i]: "start", "await_approval",
// "requeue", "finish", "attest", or nil for none) with its details, and
// the events. A stream appended at AnyVersion (a channel:<name> stream)
// takes its next versions in the database.
type Record struct {
	Requests, Claims []uuid.UUID
	Events           []StreamAppend

	Kinds                                      []*string
	Charges                                    []bool
	States, ErrorKinds, Errors, Outputs, Tiers []*string
	ApprovalTimeout                            time.Duration
}

// Record writes r through ledger.executor_record, the only way an executor
// login writes about requests: every event and state change must be one
// the caller may make under its claims (its own claim on the request, or
// an expired lease or approval it settles). Appended rows of AnyVersion
// streams have Version 0.
func (s *Store) Record(ctx context.Context, db DBTX, r Record) ([]Appended, error) {
	f, err := flatten(r.Events, nil)
	if err != nil {
		return nil, err
	}
	return f.run(db.Query(ctx, queryExecutorRecord, r.Requests, r.Claims, f.streams, f.versions, f.types, f.payloads, f.metas,
		r.Kinds, r.Charges, r.States, r.ErrorKinds, r.Errors, r.Outputs, r.Tiers, r.ApprovalTimeout.String()))
}

// flat is a batch as the parallel arrays the append functions take.
type flat struct {
	batch                           []StreamAppend
	streams, types, payloads, metas []string
	versions                        []*int64 // nil: the stream's next, chosen in the database
}

// flatten encodes batch. head, when not nil, resolves AnyVersion streams
// to their current head; otherwise their versions stay nil.
func flatten(batch []StreamAppend, head func(stream string) (int64, error)) (*flat, error) {
	f := &flat{batch: batch}
	for _, sa := range batch {
		next, known := sa.Expected, true
		switch {
		case sa.Expected == AnyVersion && head != nil:
			h, err := head(sa.Stream)
			if err != nil {
				return nil, err
			}
			next = h
		case sa.Expected == AnyVersion:
			known = false
		case sa.Expected < 0:
			return nil, &InvalidEventError{Reason: fmt.Sprintf("expected version %d of stream %q is negative", sa.Expected, sa.Stream)}
		}
		for _, ev := range sa.Events {
			p, m, err := ev.Encode()
			if err != nil {
				return nil, err
			}
			var v *int64
			if known {
				next++
				v = new(next)
			}
			f.streams = append(f.streams, sa.Stream)
			f.versions = append(f.versions, v)
			f.types = append(f.types, ev.Type)
			f.payloads = append(f.payloads, p)
			f.metas = append(f.metas, m)
		}
	}
	return f, nil
}

// run reads the positions and hashes an append function returns.
func (f *flat) run(rows pgx.Rows, err error) ([]Appended, error) {
	if err != nil {
		return nil, appendError(f.batch, err)
	}
	out := make([]Appended, 0, len(f.streams))
	for rows.Next() {
		var a Appended
		var hash []byte
		if err := rows.Scan(&a.Position, &hash); err != nil {
			rows.Close()
			return nil, fmt.Errorf("ledger: append: %w", err)
		}
		i := len(out)
		a.Stream = f.streams[i]
		if v := f.versions[i]; v != nil {
			a.Version = *v
		}
		copy(a.Hash[:], hash)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, appendError(f.batch, err)
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
		return &InvalidEventError{Reason: pgErr.Message, Err: err}
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

// ReadAllOn is ReadAll on db (a connection or a transaction).
func ReadAllOn(ctx context.Context, db DBTX, after Cursor, limit int) ([]Event, error) {
	return readAll(ctx, db, queryReadAll, after, limit)
}

func readAll(ctx context.Context, db DBTX, query string, after Cursor, limit int) ([]Event, error) {
	rows, err := db.Query(ctx, query, strconv.FormatUint(after.TxID, 10), after.Position, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger: read all: %w", err)
	}
	return collectEvents(rows)
}

// StreamEvent is an event of a stream with its place in the Merkle log.
type StreamEvent struct {
	Event
	// Leaf is the event's leaf index; nil while it is not sealed.
	Leaf *int64
	// Unsealed is, for an event no leaf will ever cover, why
	// (ReasonBehindSealer, ReasonFutureTransaction): it is not part of the
	// record, whatever it says. "" for every other event.
	Unsealed string
}

// ReadStreamSealed is ReadStream on db with each event's leaf, for readers
// that present a stream as the record: they leave out (and name) the
// events whose Unsealed is set.
func ReadStreamSealed(ctx context.Context, db DBTX, stream string, after int64, limit int) ([]StreamEvent, error) {
	rows, err := db.Query(ctx, queryReadStreamSealed, stream, after, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger: read stream %q: %w", stream, err)
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (StreamEvent, error) {
		var e StreamEvent
		var payload, metadata string
		var hash []byte
		err := row.Scan(&e.Position, &e.TxID, &e.Stream, &e.Version, &e.Type, &payload, &metadata, &e.RecordedAt, &hash,
			&e.Leaf, &e.Unsealed)
		e.Payload, e.Metadata = []byte(payload), []byte(metadata)
		copy(e.Hash[:], hash)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: read stream %q: %w", stream, err)
	}
	return events, nil
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
