package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/execledger/execledger/internal/testdb"
)

// projectorSetup makes a database with two projections, "alpha" active and
// "broken" failed at position 7, and a login for admins.
func projectorSetup(t *testing.T) (*testdb.DB, []string) {
	t.Helper()
	ctx := context.Background()
	db := testdb.New(t)
	if _, err := db.Pool.Exec(ctx, "SELECT ledger.projection_register('alpha')"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO ledger.projections
		(name, state, failed_tx_id, failed_position, failed_type, last_error)
		VALUES ('broken', 'failed', '5', 7, 'tool.requested', 'failed at position 7: payload: unexpected end of JSON input')`); err != nil {
		t.Fatal(err)
	}
	admin := db.LoginRole(t, "", "ledger_admin")
	return db, []string{"DATABASE_URL=" + admin.URL}
}

func TestProjectorStatus(t *testing.T) {
	t.Parallel()
	db, environ := projectorSetup(t)
	auditor := []string{"DATABASE_URL=" + db.LoginRole(t, "", "ledger_auditor").URL}

	r := execute(t, auditor, "", "projector", "status", "--json")
	var got []projectionStatus
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &got) != nil {
		t.Fatalf("projector status --json: %+v", r)
	}
	byName := map[string]projectionStatus{}
	for _, s := range got {
		byName[s.Name] = s
	}
	alpha, broken := byName["alpha"], byName["broken"]
	if requests, audit := byName["requests"], byName["audit_trail"]; requests.Mode != "inline" || audit.Mode != "async" {
		t.Errorf("modes: requests %q, audit_trail %q", requests.Mode, audit.Mode)
	}
	if alpha.Mode != "async" || alpha.State != "active" || alpha.LastError != nil || alpha.FailedAt != nil || alpha.Checkpoint != (cursorJSON{"0", 0}) {
		t.Errorf("alpha: %+v", alpha)
	}
	if broken.State != "failed" || broken.FailedAt == nil || *broken.FailedAt != (cursorJSON{"5", 7}) ||
		broken.LastError == nil || !strings.HasPrefix(*broken.LastError, "failed at position 7: ") ||
		broken.FailedType == nil || *broken.FailedType != "tool.requested" {
		t.Errorf("broken: %+v", broken)
	}

	r = execute(t, environ, "", "projector", "status")
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if r.code != exitOK || len(lines) != len(got)+1 {
		t.Fatalf("projector status: %+v", r)
	}
	// Aligned: each row's state starts under STATE, its mode under MODE.
	col, modeCol := strings.Index(lines[0], "STATE"), strings.Index(lines[0], "MODE")
	for _, line := range lines[1:] {
		if !strings.HasPrefix(line[modeCol:], "async ") && !strings.HasPrefix(line[modeCol:], "inline ") && !strings.HasPrefix(line[modeCol:], "sealer ") {
			t.Errorf("mode not under MODE:\n%s", r.stdout)
		}
		if !strings.HasPrefix(line[col:], "active ") && !strings.HasPrefix(line[col:], "failed ") {
			t.Errorf("state not under STATE:\n%s", r.stdout)
		}
		if strings.HasPrefix(line, "broken ") && !strings.HasSuffix(line, "failed at position 7: payload: unexpected end of JSON input") {
			t.Errorf("broken's line lacks its error: %q", line)
		}
	}
}

func TestProjectorRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, environ := projectorSetup(t)

	r := execute(t, environ, "", "projector", "retry", "broken", "--note", "payload fixed by hand")
	if r.code != exitOK || !strings.Contains(r.stdout, "broken retried") {
		t.Fatalf("projector retry broken: %+v", r)
	}
	var state string
	var lastError *string
	if err := db.Pool.QueryRow(ctx, "SELECT state, last_error FROM ledger.projections WHERE name = 'broken'").Scan(&state, &lastError); err != nil {
		t.Fatal(err)
	}
	if state != "active" || lastError != nil {
		t.Errorf("after retry: state %s, last_error %v", state, lastError)
	}
	var payload struct {
		Projection string `json:"projection"`
		Position   int64  `json:"position"`
		Note       string `json:"note"`
	}
	if err := db.Pool.QueryRow(ctx, `SELECT payload FROM ledger.events
		WHERE stream = 'projection:broken' AND type = 'projection.retried'`).Scan(&payload); err != nil {
		t.Fatalf("projection.retried: %v", err)
	}
	if payload.Projection != "broken" || payload.Position != 7 || payload.Note != "payload fixed by hand" {
		t.Errorf("projection.retried: %+v", payload)
	}

	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"projector", "retry", "broken"}, exitNotFailed, "broken is not failed"},
		{[]string{"projector", "retry", "alpha"}, exitNotFailed, "alpha is not failed"},
		{[]string{"projector", "retry", "nosuch"}, exitNotFound, `no projection "nosuch"`},
		{[]string{"projector", "retry"}, exitUsage, "usage: execledger projector retry NAME"},
		{[]string{"projector", "retry", "a", "b"}, exitUsage, "usage: execledger projector retry NAME"},
		{[]string{"projector", "status", "extra"}, exitUsage, "usage: execledger projector status"},
		{[]string{"projector"}, exitUsage, "missing command (one of rebuild, retry, status, verify)"},
		{[]string{"projector", "frobnicate"}, exitUsage, `unknown command "frobnicate" for "execledger projector"`},
	} {
		if r := execute(t, environ, "", tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%v: code %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.stderr)
		}
	}
	var retried int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.events WHERE type = 'projection.retried'").Scan(&retried); err != nil || retried != 1 {
		t.Errorf("projection.retried events: %d, %v; want 1", retried, err)
	}
}
