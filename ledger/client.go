package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ChannelRequestDone is a NOTIFY channel woken, with an empty payload, when
// any request reaches a final state. A principal's request ids are sent on
// its own channel instead, whose name ledger.notify_channel() returns: a
// shared channel would show every listener every principal's ids.
const ChannelRequestDone = "ledger_request_done"

// Client calls the ledger's SQL API. Every call acts as the principal the
// pool's login role is mapped to.
type Client struct {
	pool     *pgxpool.Pool
	submits  *submitBatcher
	listener *listener
	// recheck bounds how long Await can miss a final state whose
	// notification was lost (a dropped listener connection, say).
	recheck time.Duration
}

// NewClient returns a Client over pool. Close it to stop its listener.
func NewClient(pool *pgxpool.Pool) *Client {
	return &Client{pool: pool, submits: newSubmitBatcher(pool, int(pool.Config().MaxConns)),
		listener: newListener(pool.Config().ConnConfig, ""), recheck: time.Second}
}

// Close stops the listener Await uses. It does not close the pool.
func (c *Client) Close() { c.listener.close() }

// Submit records a tool request and returns its id. Repeating a call with
// the same IdempotencyKey returns the first call's id.
//
// Concurrent calls on one Client are sent together (see submitBatcher): a
// call made while none is in flight goes out at once as ledger.submit;
// calls made while one is in flight wait for it and then go out as one
// ledger.submit_many. Each call gets its own id or its own error, the
// same as from a call of its own.
func (c *Client) Submit(ctx context.Context, p SubmitParams) (uuid.UUID, error) {
	a, err := submitArgsOf(ctx, p)
	if err != nil {
		return uuid.Nil, err
	}
	return c.submits.submit(ctx, a)
}

// Submit is Client.Submit inside a transaction (or on a connection) the
// caller owns: the request commits with the caller's own writes. It is
// never batched with other calls.
func Submit(ctx context.Context, db DBTX, p SubmitParams) (uuid.UUID, error) {
	a, err := submitArgsOf(ctx, p)
	if err != nil {
		return uuid.Nil, err
	}
	return a.submit(ctx, db)
}

// submitArgs are one request's arguments as ledger.submit takes them.
type submitArgs struct {
	tool, input, context string
	runID, key           *string
}

// submitArgsOf checks and encodes p; its errors are the client's own.
func submitArgsOf(ctx context.Context, p SubmitParams) (submitArgs, error) {
	if p.Context.Traceparent == "" && trace.SpanContextFromContext(ctx).IsValid() {
		// The caller's span, so that the executor continues its trace.
		c := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, c)
		p.Context.Traceparent, p.Context.Tracestate = c["traceparent"], c["tracestate"]
	}
	input, err := marshalObject(p.Input)
	if err != nil {
		return submitArgs{}, fmt.Errorf("ledger: submit: %w: %v", ErrInvalidInput, err)
	}
	reqCtx, err := json.Marshal(p.Context)
	if err != nil {
		return submitArgs{}, fmt.Errorf("ledger: submit: %w: context: %v", ErrInvalidInput, err)
	}
	if hasNUL(input) || hasNUL(reqCtx) {
		return submitArgs{}, fmt.Errorf("ledger: submit: %w: input contains \\u0000 (NUL), which PostgreSQL cannot store in JSON", ErrInvalidInput)
	}
	return submitArgs{tool: p.Tool, input: string(input), context: string(reqCtx),
		runID: nullable(p.RunID), key: nullable(p.IdempotencyKey)}, nil
}

func (a submitArgs) submit(ctx context.Context, db DBTX) (uuid.UUID, error) {
	var id uuid.UUID
	err := db.QueryRow(ctx, querySubmit, a.tool, a.input, a.runID, a.key, a.context).Scan(&id)
	if err != nil {
		return uuid.Nil, sqlError("submit", err)
	}
	return id, nil
}

// SubmitMany records many requests in one call of ledger.submit_many, in
// a transaction (or on a connection) the caller owns, and returns their
// ids in order. Either all are recorded or none: an element the ledger
// refuses makes it return a *SubmitManyError naming the element, whose
// error is the one Submit would have returned for it. An idempotency key
// repeated within ps returns its first element's id.
func SubmitMany(ctx context.Context, db DBTX, ps []SubmitParams) ([]uuid.UUID, error) {
	args := make([]submitArgs, len(ps))
	for i, p := range ps {
		a, err := submitArgsOf(ctx, p)
		if err != nil {
			return nil, &SubmitManyError{Index: i, Err: err}
		}
		args[i] = a
	}
	ids, elem, err := submitMany(ctx, db, args)
	if elem != nil {
		return nil, elem
	}
	if err != nil {
		return nil, sqlError("submit many", err)
	}
	return ids, nil
}

// SubmitManyError is SubmitMany's error for one element: Index is its
// place in the slice (from 0), Err what Submit would return for it.
type SubmitManyError struct {
	Index int
	Err   error
}

func (e *SubmitManyError) Error() string {
	return fmt.Sprintf("ledger: submit many: element %d: %v", e.Index, e.Err)
}

// Unwrap returns the element's error, so errors.Is(err, ErrInvalidInput) and the like hold.
func (e *SubmitManyError) Unwrap() error { return e.Err }

// elementError matches the message ledger.submit_many raises for one
// element: its index from 1, then submit's own words.
var elementError = regexp.MustCompile(`^ledger\.submit_many: element ([0-9]+): `)

// submitMany calls ledger.submit_many. An element's error comes back as
// a *SubmitManyError; any other as the driver's.
func submitMany(ctx context.Context, db DBTX, args []submitArgs) ([]uuid.UUID, *SubmitManyError, error) {
	if len(args) == 0 {
		return []uuid.UUID{}, nil, nil
	}
	tools := make([]string, len(args))
	inputs := make([]string, len(args))
	contexts := make([]string, len(args))
	var runIDs, keys []*string
	for i, a := range args {
		tools[i], inputs[i], contexts[i] = a.tool, a.input, a.context
		if a.runID != nil && runIDs == nil {
			runIDs = make([]*string, len(args))
		}
		if a.key != nil && keys == nil {
			keys = make([]*string, len(args))
		}
		if runIDs != nil {
			runIDs[i] = a.runID
		}
		if keys != nil {
			keys[i] = a.key
		}
	}
	var ids []uuid.UUID
	err := db.QueryRow(ctx, querySubmitMany, tools, inputs, runIDs, keys, contexts).Scan(&ids)
	if err == nil && len(ids) != len(args) {
		err = fmt.Errorf("ledger.submit_many returned %d ids for %d requests", len(ids), len(args))
	}
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			if m := elementError.FindStringSubmatch(pgErr.Message); m != nil {
				if i, convErr := strconv.Atoi(m[1]); convErr == nil && i >= 1 && i <= len(args) {
					// The element's error as ledger.submit words it.
					one := *pgErr
					one.Message = "ledger.submit: " + pgErr.Message[len(m[0]):]
					return nil, &SubmitManyError{Index: i - 1, Err: sqlError("submit", &one)}, nil
				}
			}
		}
		return nil, nil, err
	}
	return ids, nil, nil
}

// Cancel cancels a request: at once when it has not started, by telling its
// executor when it runs. It reports false when the request was already final.
func (c *Client) Cancel(ctx context.Context, id uuid.UUID, reason string) (bool, error) {
	var ok bool
	if err := c.pool.QueryRow(ctx, queryCancel, id, nullable(reason)).Scan(&ok); err != nil {
		return false, sqlError("cancel", err)
	}
	return ok, nil
}

// Get returns the request with id, or ErrNotFound when it does not exist or
// belongs to a principal the caller may not see.
func (c *Client) Get(ctx context.Context, id uuid.UUID) (*Request, error) {
	var r Request
	var output []byte
	// Not a prepared statement: its generic plan, made while the table was
	// small, would read all of ledger.request_status at every call for the
	// connection's life (executor.TestHotPlansIgnoreStatistics). Planned
	// at each call with the table's current size, it is an index probe.
	err := c.pool.QueryRow(ctx, queryGetRequest, pgx.QueryExecModeExec, id).Scan(&r.ID, &r.Principal, &r.Tool, &r.RunID, &r.State,
		&r.ErrorKind, &r.Error, &output, &r.Tier, &r.AttestationDigest, &r.SubmittedAt, &r.FinishedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("ledger: get %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, sqlError("get", err)
	}
	r.Output = output
	return &r, nil
}

// Await waits until the request reaches a final state and returns it. It
// listens on the principal's own completion channel (ledger.notify_channel;
// ChannelRequestDone for a login role with no principal, where every
// completion wakes it) and also re-reads the request every second,
// so a lost notification delays it by at most that. It returns the
// context's error (wrapped) when ctx ends first, and ErrNotFound at once for
// a request the caller cannot see.
func (c *Client) Await(ctx context.Context, id uuid.UUID) (*Request, error) {
	done, unsubscribe := c.listener.subscribe(ctx, id.String())
	defer unsubscribe()
	ticker := time.NewTicker(c.recheck)
	defer ticker.Stop()
	for {
		r, err := c.Get(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("ledger: await %s: %w", id, ctx.Err())
			}
			return nil, err
		}
		if r.State.Final() {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("ledger: await %s: still %s: %w", id, r.State, ctx.Err())
		case <-done:
		case <-ticker.C:
		}
	}
}

func marshalObject(v any) ([]byte, error) {
	var b []byte
	switch t := v.(type) {
	case json.RawMessage:
		b = t
	case []byte:
		b = t
	case nil:
		return nil, errors.New("input is nil")
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	if !isJSONObject(b) {
		return nil, errors.New("input is not a JSON object")
	}
	return b, nil
}

// hasNUL reports whether JSON text b holds the escape \u0000: a u0000
// after an odd number of backslashes (an even number escapes backslashes).
func hasNUL(b []byte) bool {
	for i := 0; ; {
		k := bytes.Index(b[i:], []byte("u0000"))
		if k < 0 {
			return false
		}
		at := i + k
		n := 0
		for j := at - 1; j >= 0 && b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 1 {
			return true
		}
		i = at + 1
	}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
