package export_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/note"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/bundle"
	"github.com/execledger/execledger/internal/export"
	"github.com/execledger/execledger/internal/policy"
	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

const testOrigin = "execledger.test/log"

// alice may run anything; bob may not run echo.
const testPolicy = `
permit (principal == Principal::"alice", action == Action::"tool.execute", resource);
forbid (principal == Principal::"bob", action == Action::"tool.execute", resource == Tool::"echo");
`

// testLog is a ledger run as serve runs it: an executor (started when
// asked) and the projection engine with the read models and the Merkle
// log's sealer, signing a checkpoint every 50 ms that events wait.
type testLog struct {
	db         *testdb.DB
	alice, bob *ledger.Client
	aliceSQL   *testdb.Role
	execSQL    *testdb.Role
	auditor    *testdb.Role
	logKey     note.Verifier
	noteSigner note.Signer
	signer     *attest.Signer
	pol        *policy.Engine
}

func newTestLog(t testing.TB) *testLog {
	t.Helper()
	l := &testLog{db: testdb.New(t)}
	l.aliceSQL = l.db.LoginRole(t, "alice", "ledger_submitter")
	bob := l.db.LoginRole(t, "bob", "ledger_submitter")
	l.execSQL = l.db.LoginRole(t, "", "ledger_executor")
	l.auditor = l.db.LoginRole(t, "", "ledger_auditor")
	l.alice, l.bob = ledger.NewClient(l.aliceSQL.Pool), ledger.NewClient(bob.Pool)
	t.Cleanup(l.alice.Close)
	t.Cleanup(l.bob.Close)
	path := filepath.Join(t.TempDir(), "log.key")
	if _, err := ledger.GenerateNoteKey(testOrigin, path); err != nil {
		t.Fatal(err)
	}
	var err error
	if l.noteSigner, err = ledger.LoadNoteSigner(path); err != nil {
		t.Fatal(err)
	}
	if l.logKey, err = ledger.LoadNoteVerifier(path + ".pub"); err != nil {
		t.Fatal(err)
	}
	l.signer = attest.NewSigner(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))
	if l.pol, err = policy.FromSources([]policy.Source{{Name: "test.cedar", Text: []byte(testPolicy)}}); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *testLog) keys() bundle.Keys {
	return bundle.Keys{Log: l.logKey, Attestation: []ed25519.PublicKey{l.signer.PublicKey()}}
}

// startSealer runs the projection engine with the read models and the
// sealer until the returned function or the test stops it.
func (l *testLog) startSealer(t testing.TB) func() {
	t.Helper()
	s := ledger.NewSealer(ledger.SealerConfig{Signer: l.noteSigner, CheckpointInterval: 50 * time.Millisecond})
	eng, err := projector.New(l.execSQL.Pool, projector.Config{PollInterval: 20 * time.Millisecond},
		append(projector.ReadModels(), projector.Sealer(s))...)
	if err != nil {
		t.Fatal(err)
	}
	return run(t, "engine", eng.Run)
}

// startExecutor runs an executor of echo and sleep.
func (l *testLog) startExecutor(t testing.TB) func() {
	t.Helper()
	x, err := executor.New(l.execSQL.Pool, executor.Config{Label: "export-test", PollInterval: 50 * time.Millisecond,
		RescueInterval: 50 * time.Millisecond}, l.pol, l.signer, slog.New(slog.DiscardHandler), executor.Echo{}, executor.Sleep{})
	if err != nil {
		t.Fatal(err)
	}
	return run(t, "executor", x.Run)
}

func run(t testing.TB, what string, fn func(context.Context) error) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", what, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (l *testLog) submit(t testing.TB, c *ledger.Client, tool string, input map[string]any) uuid.UUID {
	t.Helper()
	id, err := c.Submit(context.Background(), ledger.SubmitParams{Tool: tool, Input: input})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// eventually polls cond every 20 ms for up to 30 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
	}
}

// sealedBelow is the leaf after request id's last event once all its
// events are sealed, else 0.
func (l *testLog) sealedBelow(t testing.TB, id uuid.UUID) uint64 {
	t.Helper()
	var next *int64
	if err := l.db.Pool.QueryRow(context.Background(), `SELECT CASE WHEN bool_and(l.leaf_index IS NOT NULL) THEN max(l.leaf_index) + 1 END
FROM ledger.events e LEFT JOIN ledger.log_leaves l ON l.position = e.position WHERE e.stream = $1`, "request:"+id.String()).Scan(&next); err != nil {
		t.Fatal(err)
	}
	if next == nil {
		return 0
	}
	return uint64(*next)
}

// published is the newest published checkpoint's size (0: none).
func (l *testLog) published(t testing.TB) uint64 {
	t.Helper()
	cp, err := ledger.NewestCheckpoint(context.Background(), l.db.Pool, true)
	if err != nil {
		return 0
	}
	return cp.Size
}

// awaitCovered waits until request id is attested and a published
// checkpoint holds all its events.
func (l *testLog) awaitCovered(t testing.TB, c *ledger.Client, id uuid.UUID) {
	t.Helper()
	eventually(t, fmt.Sprintf("request %s attested and sealed", id), func() bool {
		r, err := c.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		n := l.sealedBelow(t, id)
		return r.AttestationDigest != nil && n > 0 && l.published(t) >= n
	})
}

// exportBytes exports opts and returns the bundle and the summary.
func (l *testLog) exportBytes(t testing.TB, opts export.Options) ([]byte, export.Summary, error) {
	t.Helper()
	var buf bytes.Buffer
	sum, err := export.Export(context.Background(), l.auditor.Pool, opts, bundle.NewWriter(&buf))
	return buf.Bytes(), sum, err
}

// verify verifies a bundle with the log's keys.
func (l *testLog) verify(t testing.TB, b []byte) bundle.Report {
	t.Helper()
	rep, err := bundle.Verify(context.Background(), bytes.NewReader(b), l.keys(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
