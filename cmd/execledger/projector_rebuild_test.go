package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
	"github.com/execledger/execledger/projector"
)

// TestProjectorRebuildAndVerify: verify says ok for read models that match
// the log and names the row that does not, with exit 3; rebuild repairs it
// through shadow tables and reports what it did; an interrupted rebuild
// (its shadow left behind) resumes, and --abort drops it.
func TestProjectorRebuildAndVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	alice := db.LoginRole(t, "alice", "ledger_submitter")
	admin := []string{"DATABASE_URL=" + db.LoginRole(t, "", "ledger_admin").URL}
	var id string
	for i := range 3 {
		if err := alice.Pool.QueryRow(ctx, `SELECT ledger.submit('echo', jsonb_build_object('n', $1::int))`, i).Scan(&id); err != nil {
			t.Fatal(err)
		}
	}

	r := execute(t, admin, "", "projector", "verify", "requests")
	if r.code != exitOK || !strings.Contains(r.stdout, "request_status") || !strings.Contains(r.stdout, "ok") {
		t.Fatalf("verify of a sound model: %+v", r)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE ledger.request_status SET tool = 'forged' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	r = execute(t, admin, "", "projector", "verify", "requests", "--json")
	var checks []projector.TableCheck
	if r.code != exitNotOK || json.Unmarshal([]byte(r.stdout), &checks) != nil || len(checks) != 1 ||
		!strings.Contains(checks[0].FirstDifference, id) || !strings.Contains(checks[0].FirstDifference, "forged") {
		t.Fatalf("verify of a tampered model: %+v", r)
	}

	// An interrupted rebuild: begun and stepped, never swapped.
	if _, err := db.Pool.Exec(ctx, `SELECT ledger.projection_rebuild_begin('requests')`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `SELECT * FROM ledger.projection_rebuild_step('requests', 1)`); err != nil {
		t.Fatal(err)
	}
	r = execute(t, admin, "", "projector", "rebuild", "requests", "--batch", "2")
	if r.code != exitOK || !strings.Contains(r.stdout, "requests rebuilt from the log") || !strings.Contains(r.stdout, "3 rows") ||
		!strings.Contains(r.stderr, "resuming") {
		t.Fatalf("rebuild: %+v", r)
	}
	if r = execute(t, admin, "", "projector", "verify"); r.code != exitOK || strings.Contains(r.stdout, "DIFFERS") {
		t.Fatalf("verify of every model after the rebuild: %+v", r)
	}

	if _, err := db.Pool.Exec(ctx, `SELECT ledger.projection_rebuild_begin('runs')`); err != nil {
		t.Fatal(err)
	}
	if r = execute(t, admin, "", "projector", "rebuild", "runs", "--abort"); r.code != exitOK || !strings.Contains(r.stdout, "aborted") {
		t.Fatalf("rebuild --abort: %+v", r)
	}
	var shadow bool
	if err := db.Pool.QueryRow(ctx, `SELECT to_regclass('ledger_rebuild.runs') IS NOT NULL`).Scan(&shadow); err != nil || shadow {
		t.Fatalf("the aborted rebuild's shadow table is still there (%v)", err)
	}
	if r = execute(t, admin, "", "projector", "rebuild", "no_such"); r.code != exitNotFound {
		t.Fatalf("rebuild of an unknown projection: %+v", r)
	}
	if r = execute(t, admin, "", "projector", "verify", "a", "b"); r.code != exitUsage {
		t.Fatalf("verify with two names: %+v", r)
	}
}

// TestProjectorRebuildSurvivesKill9: a rebuild killed with SIGKILL in the
// middle leaves the live tables as they were and a shadow to resume, and
// the next rebuild resumes it and swaps.
func TestProjectorRebuildSurvivesKill9(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if err := db.MapPrincipal(ctx, "postgres", "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `DO $$ BEGIN
    FOR i IN 1..1500 LOOP PERFORM ledger.submit('echo', jsonb_build_object('n', i)); END LOOP; END $$`); err != nil {
		t.Fatal(err)
	}
	digest := func() string {
		var d string
		if err := db.Pool.QueryRow(ctx, `SELECT md5(string_agg(r::text, '' ORDER BY r.id)) FROM ledger.request_status r`).Scan(&d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	before := digest()
	// read_all delivers nothing past the cluster's oldest running
	// transaction (other tests' too): wait until it delivers the seed, so
	// that the rebuild has steps to show before it is killed.
	for deadline := time.Now().Add(time.Minute); ; {
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.read_all('0', 0, 100000)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= 1500 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("read_all delivers %d of 1500 events after a minute", n)
		}
		time.Sleep(50 * time.Millisecond)
	}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(self, "projector", "rebuild", "requests", "--batch", "5")
	child.Env = append(os.Environ(), "RUN_AS_EXECLEDGER=1", "DATABASE_URL="+db.URL)
	stderr, err := child.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil || !strings.Contains(line, "rebuild requests: position") {
		_ = child.Process.Kill()
		t.Fatalf("first progress line %q: %v", line, err)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	if got := digest(); got != before {
		t.Fatal("the killed rebuild changed the live table")
	}
	var at *int64
	if err := db.Pool.QueryRow(ctx, `SELECT rebuild_position FROM ledger.projections WHERE name = 'requests'`).Scan(&at); err != nil || at == nil || *at == 0 {
		t.Fatalf("no rebuild left to resume (%v, %v)", at, err)
	}
	environ := []string{"DATABASE_URL=" + db.URL}
	r := execute(t, environ, "", "projector", "rebuild", "requests")
	if r.code != exitOK || !strings.Contains(r.stderr, "resuming") || !strings.Contains(r.stdout, "1500 rows") {
		t.Fatalf("the resumed rebuild: %+v", r)
	}
	if got := digest(); got != before {
		t.Fatal("the rebuilt table differs from the live one")
	}
	if r = execute(t, environ, "", "projector", "verify", "requests"); r.code != exitOK {
		t.Fatalf("verify after the resumed rebuild: %+v", r)
	}
}

// TestProjectorVerifyAfterTheSealer: once the Merkle log's sealer has run,
// `projector verify` with no name still verifies every read model and exits
// 0: the log, which is not rebuilt from the events but checked by `verify
// --db`, is listed as skipped with that reason. Named, the log is refused
// by verify and rebuild alike with the same reason; status and retry treat
// it as the projection it is.
func TestProjectorVerifyAfterTheSealer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	alice := db.LoginRole(t, "alice", "ledger_submitter")
	for i := range 3 {
		if _, err := alice.Pool.Exec(ctx, `SELECT ledger.submit('echo', jsonb_build_object('n', $1::int))`, i); err != nil {
			t.Fatal(err)
		}
	}
	var events int64
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger.events`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	eng, err := projector.New(db.Pool, projector.Config{PollInterval: 20 * time.Millisecond},
		append(projector.ReadModels(), projector.Sealer(ledger.NewSealer(ledger.SealerConfig{})))...)
	if err != nil {
		t.Fatal(err)
	}
	stop := runUntilStopped(t, "projection engine", eng.Run)
	// read_all delivers nothing past the cluster's oldest running
	// transaction (other tests' too): wait for the sealer, however long.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		var size int64
		if err := db.Pool.QueryRow(ctx, `SELECT ledger.log_size()`).Scan(&size); err != nil {
			t.Fatal(err)
		}
		if size >= events {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sealer sealed %d of %d events in two minutes", size, events)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()

	for _, role := range []string{"ledger_admin", "ledger_auditor"} {
		environ := []string{"DATABASE_URL=" + db.LoginRole(t, "", role).URL}
		r := execute(t, environ, "", "projector", "verify")
		if r.code != exitOK || strings.Contains(r.stdout, "DIFFERS") || !strings.Contains(r.stdout, "request_status") ||
			!strings.Contains(r.stdout, "audit_trail") || !regexp.MustCompile(`(?m)^log\s+log_leaves\s.*skipped: .*execledger verify --db`).MatchString(r.stdout) {
			t.Fatalf("verify as %s after the sealer ran: %+v", role, r)
		}
		r = execute(t, environ, "", "projector", "verify", "--json")
		var checks []projector.TableCheck
		if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &checks) != nil {
			t.Fatalf("verify --json as %s: %+v", role, r)
		}
		compared, skipped := map[string]bool{}, map[string]string{}
		for _, c := range checks {
			if c.Skipped != "" {
				skipped[c.Table] = c.Skipped
			} else if c.OK() {
				compared[c.Projection] = true
			}
		}
		for _, p := range []string{"requests", "runs", "processes", "audit_trail", "quota_usage", "skill_status"} {
			if !compared[p] {
				t.Errorf("verify --json as %s did not compare %s: %s", role, p, r.stdout)
			}
		}
		if len(skipped) != 2 || skipped["log_leaves"] == "" || skipped["log_nodes"] == "" || compared["log"] {
			t.Errorf("verify --json as %s: the log's tables are not skipped: %s", role, r.stdout)
		}
	}

	admin := []string{"DATABASE_URL=" + db.LoginRole(t, "", "ledger_admin").URL}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"projector", "verify", "log"}, exitUsage, "log is the Merkle log"},
		{[]string{"projector", "rebuild", "log"}, exitUsage, "log is the Merkle log"},
		{[]string{"projector", "retry", "log"}, exitNotFailed, "log is not failed"},
	} {
		if r := execute(t, admin, "", tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) ||
			(tc.code == exitUsage && !strings.Contains(r.stderr, "execledger verify --db")) {
			t.Errorf("%v: code %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.stderr)
		}
	}
	r := execute(t, admin, "", "projector", "status", "--json")
	var statuses []projectionStatus
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &statuses) != nil {
		t.Fatalf("status: %+v", r)
	}
	for _, s := range statuses {
		if s.Name == "log" && (s.Mode != "sealer" || s.State != "active" || s.Checkpoint.Position == 0) {
			t.Errorf("status of the log: %+v", s)
		}
	}
}
