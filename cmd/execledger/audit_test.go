package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/audit"
	"github.com/execledger/execledger/internal/testdb"
)

// auditSeed is a row of ledger.audit_trail written as the superuser, ago
// before the test starts.
type auditSeed struct {
	position  int64
	ago       time.Duration
	principal string
	tool      string
	request   uuid.UUID
	outcome   string // "" for a decision row, else the final state
	reason    string // a decision's reason code, an outcome's error kind
}

func seedAudit(t *testing.T, db *testdb.DB, seeds []auditSeed) {
	t.Helper()
	for _, s := range seeds {
		kind, eventType := "decision", "policy.decided"
		var decision, reason, state, errorKind *string
		switch {
		case s.outcome != "":
			kind, eventType, state = "outcome", "execution.finished", &s.outcome
			if s.reason != "" {
				errorKind = &s.reason
			}
		case s.reason != "":
			decision, reason = ptr("deny"), &s.reason
		default:
			decision = ptr("allow")
		}
		_, err := db.Pool.Exec(context.Background(), `INSERT INTO ledger.audit_trail
			(position, tx_id, recorded_at, kind, event_type, request_id, principal, tool, run_id, attempt,
			 decision, stage, reason_code, determining_policies, policy_digest, state, tier, error_kind,
			 resources, output_bytes, request_position)
			VALUES ($1::bigint, '1', now() - $2::interval, $3, $4, $5, $6, $7, 'r1', 1,
			        $8, CASE WHEN $3 = 'decision' THEN 'policy' END, $9,
			        CASE WHEN $3 = 'decision' THEN ARRAY['policy0'] END, CASE WHEN $3 = 'decision' THEN 'sha256:abc' END,
			        $10, CASE WHEN $3 = 'outcome' THEN 'tier_a' END, $11,
			        CASE WHEN $3 = 'outcome' THEN '{"fuel_used": 10}'::jsonb END,
			        CASE WHEN $3 = 'outcome' THEN 42 END, $1::bigint - 1)`,
			s.position, fmt.Sprintf("%d seconds", int(s.ago.Seconds())), kind, eventType, s.request, s.principal, s.tool,
			decision, reason, state, errorKind)
		if err != nil {
			t.Fatalf("seed %d: %v", s.position, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// auditPositions runs audit --json with args and returns the positions it
// printed, in order.
func auditPositions(t *testing.T, environ []string, args ...string) ([]int64, result) {
	t.Helper()
	r := execute(t, environ, "", append([]string{"audit", "--json"}, args...)...)
	if r.code != exitOK {
		t.Fatalf("audit %v: %+v", args, r)
	}
	positions := []int64{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if line == "" {
			continue
		}
		var row audit.Row
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("audit %v: line %q: %v", args, line, err)
		}
		positions = append(positions, row.Position)
	}
	return positions, r
}

func TestAudit(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	reqA, reqB, reqC, reqD := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	seedAudit(t, db, []auditSeed{
		{10, 3 * time.Hour, "alice", "echo", reqA, "", ""},
		{11, 3*time.Hour - time.Second, "alice", "echo", reqA, "succeeded", ""},
		{20, 2 * time.Hour, "bob", "http.get", reqB, "", "policy_denied"},
		{21, 2 * time.Hour, "bob", "http.get", reqB, "denied", "policy_denied"},
		{30, 30 * time.Minute, "alice", "process.run", reqC, "", ""},
		{31, 29 * time.Minute, "alice", "process.run", reqC, "failed", "timeout"},
		{40, 10 * time.Minute, "carol", "echo", reqD, "", ""},
	})
	auditor := []string{"DATABASE_URL=" + db.LoginRole(t, "", "ledger_auditor").URL}
	admin := []string{"DATABASE_URL=" + db.LoginRole(t, "", "ledger_admin").URL}
	alice := []string{"DATABASE_URL=" + db.LoginRole(t, "alice", "ledger_submitter").URL}
	since := time.Now().Add(-150 * time.Minute).UTC().Format(time.RFC3339)

	for _, tc := range []struct {
		who     string
		environ []string
		args    []string
		want    []int64
	}{
		{"auditor", auditor, nil, []int64{10, 11, 20, 21, 30, 31, 40}},
		{"admin", admin, nil, []int64{10, 11, 20, 21, 30, 31, 40}},
		{"submitter", alice, nil, []int64{10, 11, 30, 31}},
		{"submitter", alice, []string{"--principal", "bob"}, []int64{}},
		{"submitter", alice, []string{"--tool", "echo"}, []int64{10, 11}},
		{"auditor", auditor, []string{"--principal", "bob"}, []int64{20, 21}},
		{"auditor", auditor, []string{"--tool", "echo"}, []int64{10, 11, 40}},
		{"auditor", auditor, []string{"--principal", "alice", "--tool", "echo"}, []int64{10, 11}},
		{"auditor", auditor, []string{"--since", "1h"}, []int64{30, 31, 40}},
		{"auditor", auditor, []string{"--until", "1h"}, []int64{10, 11, 20, 21}},
		{"auditor", auditor, []string{"--since", "150m", "--until", "20m"}, []int64{20, 21, 30, 31}},
		{"auditor", auditor, []string{"--since", since, "--until", "20m"}, []int64{20, 21, 30, 31}},
		{"auditor", auditor, []string{"--since", "1d"}, []int64{10, 11, 20, 21, 30, 31, 40}},
		{"auditor", auditor, []string{"--request", reqC.String()}, []int64{30, 31}},
		{"auditor", auditor, []string{"--limit", "7"}, []int64{10, 11, 20, 21, 30, 31, 40}},
		{"auditor", auditor, []string{"--limit", "0"}, []int64{10, 11, 20, 21, 30, 31, 40}},
	} {
		got, r := auditPositions(t, tc.environ, tc.args...)
		if !slices.Equal(got, tc.want) {
			t.Errorf("audit %v as %s: %v, want %v", tc.args, tc.who, got, tc.want)
		}
		if r.stderr != "" {
			t.Errorf("audit %v as %s: stderr %q", tc.args, tc.who, r.stderr)
		}
	}

	// A limit that cuts: the earliest rows, and a note on stderr.
	got, r := auditPositions(t, auditor, "--limit", "3")
	if !slices.Equal(got, []int64{10, 11, 20}) || !strings.Contains(r.stderr, "the first 3 rows; more match") {
		t.Errorf("audit --limit 3: %v, stderr %q", got, r.stderr)
	}

	// JSON carries every column: nulls where a row kind has none.
	r = execute(t, auditor, "", "audit", "--json", "--request", reqB.String())
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("audit --json: %q: %v", line, err)
		}
		rows = append(rows, row)
	}
	if len(rows) != 2 || rows[0]["decision"] != "deny" || rows[0]["reason_code"] != "policy_denied" ||
		rows[0]["state"] != nil || rows[1]["state"] != "denied" || rows[1]["error_kind"] != "policy_denied" ||
		rows[1]["output_bytes"] != 42.0 || rows[1]["tier"] != "tier_a" || rows[0]["request_id"] != reqB.String() {
		t.Errorf("audit --json --request: %s", r.stdout)
	}
	if _, ok := rows[0]["attestation_digest"]; !ok {
		t.Errorf("audit --json omits attestation_digest: %s", r.stdout)
	}

	// The table: a row per line, columns aligned, decision or outcome in RESULT.
	r = execute(t, alice, "", "audit")
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if r.code != exitOK || len(lines) != 5 {
		t.Fatalf("audit as alice: %+v", r)
	}
	col := strings.Index(lines[0], "RESULT")
	for i, want := range []string{"allow ", "succeeded ", "allow ", "failed "} {
		if !strings.HasPrefix(lines[i+1][col:], want) {
			t.Errorf("line %d: RESULT is not %q:\n%s", i+1, want, r.stdout)
		}
	}
	if !strings.Contains(lines[4], "timeout") || !strings.Contains(lines[4], reqC.String()) {
		t.Errorf("outcome line lacks its error kind or request: %q", lines[4])
	}
}

func TestAuditBadFlags(t *testing.T) {
	t.Parallel()
	// No database: each is refused before any connection.
	environ := []string{"DATABASE_URL=postgres://postgres@127.0.0.1:1/x?connect_timeout=2"}
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--since", "yesterday"}, `--since: "yesterday": want an RFC 3339 time`},
		{[]string{"--until", "2025-13-01"}, `--until: "2025-13-01": want an RFC 3339 time`},
		{[]string{"--since", "-1h"}, "must be positive"},
		{[]string{"--since", "0s"}, "must be positive"},
		{[]string{"--since", "xd"}, "want an RFC 3339 time"},
		{[]string{"--since", "1h", "--until", "2h"}, "is not before --until"},
		{[]string{"--request", "nope"}, `--request: "nope" is not a request id`},
		{[]string{"--limit", "-1"}, "--limit: -1 is negative"},
		{[]string{"--limit", "many"}, "usage: execledger audit"},
		{[]string{"--frobnicate"}, "usage: execledger audit"},
		{[]string{"alice"}, "usage: execledger audit"},
	} {
		r := execute(t, environ, "", append([]string{"audit"}, tc.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("audit %v: code %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, exitUsage, tc.stderr)
		}
	}
}

func TestParseTimeFlag(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 31, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                            {},
		"90m":                         now.Add(-90 * time.Minute),
		"7d":                          now.Add(-7 * 24 * time.Hour),
		"2025-01-30T09:00:00Z":        time.Date(2025, 1, 30, 9, 0, 0, 0, time.UTC),
		"2025-01-30T09:00:00.5+01:00": time.Date(2025, 1, 30, 8, 0, 0, 5e8, time.UTC),
	} {
		got, err := parseTimeFlag(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseTimeFlag(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
