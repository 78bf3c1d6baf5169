//go:build unix

package console_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/console"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

const testOrigin = "execledger.test/console"

// Every principal may run echo and sleep; sleep waits for approval.
const testPolicy = `permit (principal, action == Action::"tool.execute", resource);`

// login is a login role made for one test, with a password.
type login struct {
	Name, Password string
	Principal      string
	Pool           *pgxpool.Pool
}

// world is a ledger run as serve runs it (executor, read models, sealer)
// with logins: alice and bob submit, bob and carol approve, audrey audits.
type world struct {
	db                *testdb.DB
	alice, bob, carol *login
	audrey, executorL *login
	reader            *login
	keys              console.Keys
	loginURL          string
	signer            *attest.Signer
}

func newWorld(t testing.TB) *world {
	t.Helper()
	w := &world{db: testdb.New(t)}
	u, _ := url.Parse(w.db.URL)
	u.User = nil
	w.loginURL = u.String()
	w.alice = w.newLogin(t, "alice", "ledger_submitter")
	w.bob = w.newLogin(t, "bob", "ledger_submitter", "ledger_approver")
	w.carol = w.newLogin(t, "carol", "ledger_approver")
	w.audrey = w.newLogin(t, "", "ledger_auditor")
	w.reader = w.newLogin(t, "", "ledger_reader")
	w.executorL = w.newLogin(t, "", "ledger_executor")

	path := filepath.Join(t.TempDir(), "log.key")
	if _, err := ledger.GenerateNoteKey(testOrigin, path); err != nil {
		t.Fatal(err)
	}
	noteSigner, err := ledger.LoadNoteSigner(path)
	if err != nil {
		t.Fatal(err)
	}
	if w.keys.Log, err = ledger.LoadNoteVerifier(path + ".pub"); err != nil {
		t.Fatal(err)
	}
	w.signer = attest.NewSigner(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize)))
	w.keys.Attestation = []ed25519.PublicKey{w.signer.PublicKey()}
	pol, err := policy.FromSources([]policy.Source{{Name: "test.cedar", Text: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	s := ledger.NewSealer(ledger.SealerConfig{Signer: noteSigner, CheckpointInterval: 50 * time.Millisecond})
	eng, err := projector.New(w.executorL.Pool, projector.Config{PollInterval: 20 * time.Millisecond},
		append(projector.ReadModels(), projector.Sealer(s))...)
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, "engine", eng.Run)
	x, err := executor.New(w.executorL.Pool, executor.Config{Label: "console-test", PollInterval: 50 * time.Millisecond,
		RescueInterval: 50 * time.Millisecond, Sensitive: []string{"sleep"}, ApprovalTimeout: time.Hour},
		pol, w.signer, slog.New(slog.DiscardHandler), executor.Echo{}, executor.Sleep{})
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, "executor", x.Run)
	return w
}

// newLogin creates a login role with a password, maps it to principal
// (none when "") and grants it roles; it is dropped when t ends.
func (w *world) newLogin(t testing.TB, principal string, grants ...string) *login {
	t.Helper()
	ctx := context.Background()
	name := "cs_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	if principal != "" {
		name += "_" + principal
	}
	l := &login{Name: name, Password: "pw-" + uuid.NewString(), Principal: principal}
	id := pgx.Identifier{name}.Sanitize()
	if _, err := w.db.Pool.Exec(ctx, "CREATE ROLE "+id+" LOGIN PASSWORD '"+l.Password+"'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := w.db.Pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+id); err != nil {
			t.Errorf("drop role %s: %v", name, err)
		}
	})
	for _, g := range grants {
		if _, err := w.db.Pool.Exec(ctx, "GRANT "+pgx.Identifier{g}.Sanitize()+" TO "+id); err != nil {
			t.Fatal(err)
		}
	}
	if principal != "" {
		if err := w.db.MapPrincipal(ctx, name, principal); err != nil {
			t.Fatal(err)
		}
	}
	u, _ := url.Parse(w.db.URL)
	u.User = url.UserPassword(name, l.Password)
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	l.Pool = pool
	return l
}

// submit submits as l and returns the id.
func (w *world) submit(t testing.TB, l *login, tool, input, run, key string) uuid.UUID {
	t.Helper()
	id, err := ledger.Submit(context.Background(), l.Pool, ledger.SubmitParams{Tool: tool, Input: []byte(input), RunID: run, IdempotencyKey: key})
	if err != nil {
		t.Fatalf("submit %s as %s: %v", tool, l.Name, err)
	}
	return id
}

// waitFor polls cond (generously: the machine may be loaded) until it
// holds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitState waits until request id is in state (read as the superuser).
func (w *world) waitState(t testing.TB, id uuid.UUID, state string) {
	t.Helper()
	waitFor(t, "request "+id.String()+" "+state, func() bool {
		var s string
		err := w.db.Pool.QueryRow(context.Background(), "SELECT state FROM ledger.request_status WHERE id = $1", id).Scan(&s)
		return err == nil && s == state
	})
}

// waitSealed waits until a published checkpoint holds every event of
// request id, and the audit trail has its outcome.
func (w *world) waitSealed(t testing.TB, id uuid.UUID) {
	t.Helper()
	waitFor(t, "request "+id.String()+" sealed", func() bool {
		var ok bool
		err := w.db.Pool.QueryRow(context.Background(), `SELECT
  (SELECT count(*) FROM ledger.audit_trail WHERE request_id = $1 AND kind = 'outcome') > 0 AND
  NOT EXISTS (SELECT 1 FROM ledger.events e LEFT JOIN ledger.log_leaves l ON l.position = e.position
              WHERE e.stream = 'request:' || $1::text
                AND (l.position IS NULL OR l.leaf_index >= coalesce((SELECT max(size) FROM ledger.checkpoints WHERE published_at IS NOT NULL), 0)))`,
			id).Scan(&ok)
		return err == nil && ok
	})
}

func (w *world) server(t testing.TB, mutate func(*console.Options)) *console.Server {
	t.Helper()
	opts := console.Options{LoginURL: w.loginURL, Keys: w.keys, SignInAttempts: 50}
	if mutate != nil {
		mutate(&opts)
	}
	s, err := console.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func runUntilCleanup(t testing.TB, what string, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", what, err)
			}
		})
	})
}
