//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/attest"
	"github.com/execledger/execledger/internal/testrepl"
	"github.com/execledger/execledger/internal/witness"
	"github.com/execledger/execledger/ledger"
)

// TestReplicaReadsAndFailover runs serve against a primary with a
// synchronous hot standby, both started by the test (initdb,
// pg_basebackup):
//
//   - submit --wait with database.replica_url returns once the standby
//     has replayed the final state, so that the standby shows it next;
//   - the auditor commands (requests list/show, status, audit, export,
//     prove, verify --db) work from the standby alone: the primary's URL
//     they are given does not answer;
//   - a witness cosigns a checkpoint; the primary is killed with SIGKILL
//     (every process of it) and the standby promoted; serve, whose URL
//     names both servers with target_session_attrs=read-write, reconnects
//     by itself, runs new requests and seals them; the witness accepts
//     the new checkpoint as an extension of the one it saw; verify --db
//     on the new primary verifies the log across the failover.
func TestReplicaReadsAndFailover(t *testing.T) {
	t.Parallel()
	pair := testrepl.New(t, testrepl.Options{Sync: true})
	ctx := context.Background()
	rs := startReplicatedServe(t, pair)
	dir, logKey, attestKey, writer := rs.dir, rs.logKey, rs.attestKey, rs.writer
	witKey, state := rs.witKey, rs.state

	// submit --wait, read-your-writes on the replica.
	submitter := []string{"DATABASE_URL=" + writer, "EXECLEDGER_DATABASE_REPLICA_URL=" + pair.StandbyURL()}
	onStandby := []string{"EXECLEDGER_DATABASE_REPLICA_URL=" + pair.StandbyURL()}
	var ids []string
	for i, tool := range []string{"echo", "sleep", "echo"} {
		input := `{"text":"replicated"}`
		if tool == "sleep" {
			input = `{"ms":50}`
		}
		r := executeWithin(t, patience(t), submitter, "", "submit", tool, input, "--key", "pre-"+tool+string(rune('a'+i)), "--wait",
			"--timeout", patience(t).String(), "--json")
		var req ledger.Request
		if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &req) != nil || req.State != ledger.StateSucceeded || req.AttestationDigest == nil {
			t.Fatalf("submit --wait with a replica: %+v", r)
		}
		ids = append(ids, req.ID.String())
		// The standby alone (the primary's URL is the writer's, unused by status).
		if r := execute(t, onStandby, "", "status", req.ID.String(), "--json"); r.code != exitOK || !strings.Contains(r.stdout, `"state": "succeeded"`) {
			t.Fatalf("status on the standby right after submit --wait: %+v", r)
		}
	}

	// The auditor's commands on the standby, with a primary URL that does
	// not answer: they read the replica and nothing else.
	auditor := []string{"DATABASE_URL=postgres://auditor@127.0.0.1:1/postgres?connect_timeout=2",
		"EXECLEDGER_DATABASE_REPLICA_URL=" + testrepl.WithUser(pair.StandbyURL(), "auditor")}
	keys := []string{"--log-key", logKey + ".pub", "--attest-key", attestKey + ".pub"}
	waitUntil(t, "a checkpoint over the requests, replayed on the standby", func() bool {
		r := execute(t, auditor, "", append([]string{"verify", "--db", "--json"}, keys...)...)
		var rep struct {
			OK        bool
			Requests  int64
			ReadModel struct {
				Pending         int64  `json:"pending"`
				RebuildsSkipped string `json:"rebuilds_skipped"`
			} `json:"read_model"`
		}
		return r.code == exitOK && json.Unmarshal([]byte(r.stdout), &rep) == nil && rep.OK && rep.Requests == 3 && rep.ReadModel.Pending == 0 &&
			rep.ReadModel.RebuildsSkipped != ""
	})
	r := execute(t, auditor, "", append([]string{"verify", "--db"}, keys...)...)
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "ok: ") || !strings.Contains(r.stdout, "tables not compared with their rebuild: read-only session") {
		t.Fatalf("verify --db on the standby: %+v", r)
	}
	if r := execute(t, auditor, "", "requests", "list", "--json"); r.code != exitOK || strings.Count(r.stdout, `"succeeded"`) != 3 {
		t.Errorf("requests list on the standby: %+v", r)
	}
	if r := execute(t, auditor, "", "requests", "show", ids[0]); r.code != exitOK || !strings.Contains(r.stdout, "succeeded") {
		t.Errorf("requests show on the standby: %+v", r)
	}
	if r := execute(t, auditor, "", "audit", "--json"); r.code != exitOK || !strings.Contains(r.stdout, ids[1]) {
		t.Errorf("audit on the standby: %+v", r)
	}
	bundleFile := filepath.Join(dir, "standby.bundle")
	if r := execute(t, auditor, "", "export", "--out", bundleFile); r.code != exitOK {
		t.Fatalf("export on the standby: %+v", r)
	}
	if r := execute(t, nil, "", append([]string{"verify", bundleFile}, keys...)...); r.code != exitOK || !strings.HasPrefix(r.stdout, "ok: ") {
		t.Errorf("verify of the standby's export: %+v", r)
	}
	if r := execute(t, auditor, "", "prove", ids[2]); r.code != exitOK || !strings.Contains(r.stdout, "tool.requested") {
		t.Errorf("prove on the standby: %+v", r)
	}
	// Nothing these commands do needs the primary: with neither URL
	// answering they fail on the replica's.
	dead := []string{"DATABASE_URL=" + pair.PrimaryURL(), "EXECLEDGER_DATABASE_REPLICA_URL=postgres://auditor@127.0.0.1:1/postgres?connect_timeout=2"}
	if r := execute(t, dead, "", "requests", "list"); r.code != exitError || !strings.Contains(r.stderr, "database.replica_url") {
		t.Errorf("requests list with a replica URL that does not answer: %+v", r)
	}

	// A witness cosigns the newest checkpoint before the failover.
	witnessEnv := []string{"DATABASE_URL=" + testrepl.WithUser(writer, "auditor")}
	witnessArgs := []string{"witness", "--log-key", logKey + ".pub", "--key", witKey, "--state", state, "--once", "--json"}
	var before witness.Pass
	if r := execute(t, witnessEnv, "", witnessArgs...); r.code != exitOK || json.Unmarshal([]byte(r.stdout), &before) != nil || before.Result != "cosigned" {
		t.Fatalf("witness before the failover: %+v", r)
	}

	// Failover.
	if err := pair.Primary.Kill(); err != nil {
		t.Fatal(err)
	}
	promoteCtx, cancel := context.WithTimeout(ctx, patience(t))
	defer cancel()
	if err := pair.Standby.Promote(promoteCtx); err != nil {
		t.Fatal(err)
	}
	// Requests acknowledged before are there; serve runs new ones.
	newPrimary := []string{"DATABASE_URL=" + writer}
	for _, id := range ids {
		if r := execute(t, newPrimary, "", "status", id, "--json"); r.code != exitOK || !strings.Contains(r.stdout, `"state": "succeeded"`) {
			t.Errorf("request %s after the failover: %+v", id, r)
		}
	}
	var after []uuid.UUID
	for i := range 3 {
		r := executeWithin(t, patience(t), newPrimary, "", "submit", "echo", `{"text":"after"}`, "--key", "post-"+string(rune('a'+i)),
			"--wait", "--timeout", patience(t).String(), "--json")
		var req ledger.Request
		if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &req) != nil || req.State != ledger.StateSucceeded {
			t.Fatalf("submit --wait after the failover: %+v", r)
		}
		after = append(after, req.ID)
	}
	// The sealer continues the log on the new primary; the witness
	// accepts its checkpoint as an extension of the one it cosigned.
	auditorNew := []string{"DATABASE_URL=" + testrepl.WithUser(writer, "auditor")}
	waitUntil(t, "the log sealing the requests made after the failover", func() bool {
		r := execute(t, auditorNew, "", append([]string{"verify", "--db", "--json"}, keys...)...)
		var rep struct {
			OK        bool
			Requests  int64
			ReadModel struct {
				Pending int64    `json:"pending"`
				Tables  []string `json:"tables"`
			} `json:"read_model"`
		}
		return r.code == exitOK && json.Unmarshal([]byte(r.stdout), &rep) == nil && rep.OK && rep.Requests == 6 && rep.ReadModel.Pending == 0 &&
			len(rep.ReadModel.Tables) > 0
	})
	var passed witness.Pass
	if r := execute(t, witnessEnv, "", witnessArgs...); r.code != exitOK || json.Unmarshal([]byte(r.stdout), &passed) != nil || passed.Result != "cosigned" ||
		passed.TrustOnFirstUse || passed.StateSize != before.Size || passed.Size <= before.Size {
		t.Fatalf("witness after the failover: %+v (before: size %d)", r, before.Size)
	}
	t.Logf("witness cosigned size %d before the failover and size %d after it", before.Size, passed.Size)
	r = execute(t, auditorNew, "", append([]string{"verify", "--db"}, keys...)...)
	if r.code != exitOK || !strings.Contains(r.stdout, "tables equal to their rebuild from the log") {
		t.Fatalf("verify --db on the new primary: %+v", r)
	}
	t.Logf("verify --db after the failover:\n%s", r.stdout)
}

// replicatedServe is serve (executor, read models, sealer with a note key)
// on a pair's multi-host read-write URL, as the executor login, with the
// pair's superuser mapped to principal ops and an auditor login.
type replicatedServe struct {
	dir, logKey, attestKey, witKey, state, writer string
}

func startReplicatedServe(t *testing.T, pair *testrepl.Pair) replicatedServe {
	t.Helper()
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, pair.PrimaryURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, q := range []string{
		"INSERT INTO ledger.principals (login_role, principal) VALUES ('postgres', 'ops')",
		"CREATE ROLE auditor LOGIN",
		"GRANT ledger_auditor TO auditor",
		"CREATE ROLE executor LOGIN",
		"GRANT ledger_executor TO executor",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dir := t.TempDir()
	rs := replicatedServe{dir: dir, attestKey: filepath.Join(dir, "attest.key"), logKey: filepath.Join(dir, "log.key"),
		witKey: filepath.Join(dir, "witness.key"), state: filepath.Join(dir, "witness.state"), writer: pair.WriterURL()}
	pol := filepath.Join(dir, "ops.cedar")
	if err := os.WriteFile(pol, []byte(`permit (principal == Principal::"ops", action == Action::"tool.execute", resource);`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := attest.GenerateKeyFiles(rs.attestKey, rs.attestKey+".pub"); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.GenerateNoteKey("execledger.test/replica", rs.logKey); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.GenerateWitnessKey("witness.test", rs.witKey); err != nil {
		t.Fatal(err)
	}
	_, out := startCommand(t, []string{"DATABASE_URL=" + testrepl.WithUser(rs.writer, "executor"), "EXECLEDGER_SERVE_LISTEN=",
		"EXECLEDGER_POLICY_FILES=" + pol, "EXECLEDGER_ATTEST_KEY_FILE=" + rs.attestKey, "EXECLEDGER_SEALER_NOTE_KEY_FILE=" + rs.logKey,
		"EXECLEDGER_SEALER_CHECKPOINT_INTERVAL=100ms", "EXECLEDGER_EXECUTOR_POLL_INTERVAL=100ms", "EXECLEDGER_EXECUTOR_LEASE=5s",
		"EXECLEDGER_EXECUTOR_RESCUE_INTERVAL=500ms"}, "serve")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve:\n%s", out.String())
		}
	})
	return rs
}

// witness runs one pass of the witness on the writer URL as the auditor.
func (rs replicatedServe) witness(t *testing.T) (witness.Pass, result) {
	t.Helper()
	r := execute(t, []string{"DATABASE_URL=" + testrepl.WithUser(rs.writer, "auditor")}, "", "witness", "--log-key", rs.logKey+".pub",
		"--key", rs.witKey, "--state", rs.state, "--once", "--json")
	var p witness.Pass
	_ = json.Unmarshal([]byte(r.stdout), &p)
	return p, r
}

// submitWait submits on the writer URL and waits until the request is final.
func (rs replicatedServe) submitWait(t *testing.T, key string) ledger.Request {
	t.Helper()
	r := executeWithin(t, patience(t), []string{"DATABASE_URL=" + rs.writer}, "", "submit", "echo", `{"text":"`+key+`"}`, "--key", key,
		"--wait", "--timeout", patience(t).String(), "--json")
	var req ledger.Request
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &req) != nil || req.State != ledger.StateSucceeded {
		t.Fatalf("submit --wait %s: %+v", key, r)
	}
	return req
}

// sealedCheckpoint waits until the newest checkpoint covers every event of
// request id, and returns its size.
func (rs replicatedServe) sealedCheckpoint(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) uint64 {
	t.Helper()
	var size uint64
	waitUntil(t, "a checkpoint over request "+id.String(), func() bool {
		c, err := ledger.NewestCheckpoint(context.Background(), pool, false)
		if err != nil {
			return false
		}
		var covered bool
		err = pool.QueryRow(context.Background(), `SELECT count(*) > 0 AND bool_and(l.leaf_index < $2)
FROM ledger.events e LEFT JOIN ledger.log_leaves l ON l.position = e.position WHERE e.stream = 'request:' || $1`,
			id.String(), int64(c.Size)).Scan(&covered)
		size = c.Size
		return err == nil && covered
	})
	return size
}

// TestAsyncFailoverLossIsNamed shows what docs/replication.md says
// asynchronous replication can lose, and how it shows: with the standby
// stopped, the primary acknowledges a request, seals it and a witness
// cosigns a checkpoint over it; the primary is killed and the standby,
// started again, promoted. The request is gone (status exits 5), the new
// primary's log still verifies from leaf 0 (what survived is a prefix),
// and the witness refuses the new primary's checkpoints, naming the fault.
func TestAsyncFailoverLossIsNamed(t *testing.T) {
	t.Parallel()
	pair := testrepl.New(t, testrepl.Options{})
	ctx := context.Background()
	rs := startReplicatedServe(t, pair)
	primary, err := pgxpool.New(ctx, pair.PrimaryURL())
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	kept := rs.submitWait(t, "kept")
	rs.sealedCheckpoint(t, primary, kept.ID)
	if err := pair.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if p, r := rs.witness(t); p.Result != "cosigned" {
		t.Fatalf("witness on the first checkpoint: %+v", r)
	}

	pair.StopStandby(t)
	lost := rs.submitWait(t, "lost") // acknowledged by an asynchronous primary
	seen := rs.sealedCheckpoint(t, primary, lost.ID)
	if p, r := rs.witness(t); p.Result != "cosigned" || p.Size < seen {
		t.Fatalf("witness on the checkpoint over the request the failover loses: %+v", r)
	}
	primary.Close()
	if err := pair.Primary.Kill(); err != nil {
		t.Fatal(err)
	}
	pair.StartStandbyAgain(t)
	promoteCtx, cancel := context.WithTimeout(ctx, patience(t))
	defer cancel()
	if err := pair.Standby.Promote(promoteCtx); err != nil {
		t.Fatal(err)
	}

	env := []string{"DATABASE_URL=" + rs.writer}
	if r := execute(t, env, "", "status", kept.ID.String()); r.code != exitOK {
		t.Errorf("the request replicated before the standby stopped: %+v", r)
	}
	if r := execute(t, env, "", "status", lost.ID.String()); r.code != exitNotFound {
		t.Errorf("the acknowledged request asynchronous replication lost: %+v", r)
	}
	// The new primary goes on: serve runs and seals a new request.
	after := rs.submitWait(t, "after")
	newPrimary, err := pgxpool.New(ctx, pair.StandbyURL())
	if err != nil {
		t.Fatal(err)
	}
	defer newPrimary.Close()
	rs.sealedCheckpoint(t, newPrimary, after.ID)
	keys := []string{"--log-key", rs.logKey + ".pub", "--attest-key", rs.attestKey + ".pub"}
	if r := execute(t, []string{"DATABASE_URL=" + testrepl.WithUser(rs.writer, "auditor")}, "", append([]string{"verify", "--db"}, keys...)...); r.code != exitOK {
		t.Errorf("verify --db on the new primary (what survived is a prefix of the history): %+v", r)
	}
	p, r := rs.witness(t)
	if r.code != exitNotOK || p.Result != "refused" || p.Refusal == "" {
		t.Fatalf("the witness after the lossy failover: %+v", r)
	}
	t.Logf("the witness, which had cosigned size %d, refuses the new primary's checkpoint of size %d: %s", p.StateSize, p.Size, p.Refusal)
}

// TestReplicaWaitTimesOut: submit --wait whose replica never replays the
// final state (a standby paused with pg_wal_replay_pause) ends with exit
// 4 and says so, the request being final on the primary.
func TestReplicaWaitTimesOut(t *testing.T) {
	t.Parallel()
	pair := testrepl.New(t, testrepl.Options{})
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, pair.PrimaryURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(ctx, "INSERT INTO ledger.principals (login_role, principal) VALUES ('postgres', 'ops')"); err != nil {
		t.Fatal(err)
	}
	pair.PauseReplay(t)
	_, out := startCommand(t, append([]string{"DATABASE_URL=" + pair.PrimaryURL(), "EXECLEDGER_SERVE_LISTEN=", "EXECLEDGER_SEALER_ENABLED=false",
		"EXECLEDGER_PROJECTOR_ENABLED=false", "EXECLEDGER_EXECUTOR_POLL_INTERVAL=100ms"}, serviceFiles(t)...), "serve")
	// Final on the primary first (however long a loaded machine takes),
	// then the same submit again (its idempotency key: the same request)
	// with the replica: only the replica's wait can time out.
	if r := executeWithin(t, patience(t), []string{"DATABASE_URL=" + pair.PrimaryURL()}, "", "submit", "echo", `{"text":"paused"}`,
		"--key", "paused", "--wait", "--timeout", patience(t).String()); r.code != exitOK {
		t.Fatalf("submit --wait on the primary: %+v\n%s", r, out.String())
	}
	env := []string{"DATABASE_URL=" + pair.PrimaryURL(), "EXECLEDGER_DATABASE_REPLICA_URL=" + pair.StandbyURL()}
	r := executeWithin(t, patience(t), env, "", "submit", "echo", `{"text":"paused"}`, "--key", "paused", "--wait", "--timeout", "2s")
	if r.code != exitTimeout || !strings.Contains(r.stderr, "is final on the primary, but the replica") {
		t.Fatalf("submit --wait on a paused replica: %+v\n%s", r, out.String())
	}
	id := strings.TrimSpace(r.stdout)
	var state string
	if err := admin.QueryRow(ctx, "SELECT state FROM ledger.requests WHERE id = $1", id).Scan(&state); err != nil || state != "succeeded" {
		t.Fatalf("request %s on the primary: %s, %v", id, state, err)
	}
	pair.ResumeReplay(t)
	waitUntil(t, "the resumed standby", func() bool {
		r := execute(t, env, "", "status", id)
		return r.code == exitOK && strings.Contains(r.stdout, "succeeded")
	})
}
