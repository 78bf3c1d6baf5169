package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/execledger/execledger/internal/testdb"
	"github.com/execledger/execledger/ledger"
)

// timeFlagCommands are the commands with --since and --until.
var timeFlagCommands = [][]string{{"requests", "list"}, {"audit"}, {"export", "--out", "x.bundle"}}

// TestTimeFlagsMeanTheSameEverywhere: each command takes the same time
// values and refuses the same ones with the same words (before it
// connects: the database here is unreachable).
func TestTimeFlagsMeanTheSameEverywhere(t *testing.T) {
	t.Parallel()
	environ := []string{"DATABASE_URL=postgres://postgres@127.0.0.1:1/x?connect_timeout=2"}
	for _, cmd := range timeFlagCommands {
		for _, good := range [][]string{{"--since", "24h"}, {"--until", "90m"}, {"--since", "7d"}, {"--since", "2026-11-24"},
			{"--since", "2026-11-24T09:00:00Z", "--until", "2026-11-24T10:00:00.5+01:00"}} {
			r := execute(t, environ, "", append(append([]string{}, cmd...), good...)...)
			if r.code != exitError || !strings.Contains(r.stderr, "connect to") {
				t.Errorf("%v %v: %+v", cmd, good, r)
			}
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--since", "yesterday"}, `--since: "yesterday": want an RFC 3339 time (2026-11-24T09:00:00Z), a date (2026-11-24) or a duration ago`},
			{[]string{"--until", "2026-13-01"}, `--until: "2026-13-01": want an RFC 3339 time`},
			{[]string{"--since", "-1h"}, "must be positive"},
			{[]string{"--since", "24h", "--until", "48h"}, "is not before --until"},
			{[]string{"--limit", "-1"}, "--limit: -1 is negative (0 means no limit)"},
		} {
			if cmd[0] == "export" && tc.args[0] == "--limit" {
				continue // export has no --limit: it exports whole streams
			}
			r := execute(t, environ, "", append(append([]string{}, cmd...), tc.args...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("%v %v: %+v; want %q", cmd, tc.args, r, tc.want)
			}
		}
	}
}

func TestParseTimeFlagDate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	got, err := parseTimeFlag("2026-11-24", now)
	if err != nil || !got.Equal(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("a date: %v, %v", got, err)
	}
	if got, err := parseTimeFlag("24h", now); err != nil || !got.Equal(now.Add(-24*time.Hour)) {
		t.Errorf("24h is a day ago: %v, %v", got, err)
	}
}

// TestRequestsListLimitAndTimes: --limit 0 lists every request, past
// the 1,000 of one page, each once, in order, also when many share their
// submitted_at (one statement submitted them); --since 24h is the last
// day, --until 24h before it.
func TestRequestsListLimitAndTimes(t *testing.T) {
	t.Parallel()
	db := testdb.New(t)
	sub := db.LoginRole(t, "bulk", "ledger_submitter")
	const n = ledger.MaxListLimit + 205
	if _, err := sub.Pool.Exec(context.Background(), "SELECT ledger.submit('echo', '{}') FROM generate_series(1, $1)", n); err != nil {
		t.Fatal(err)
	}
	environ := []string{"DATABASE_URL=" + sub.URL}
	list := func(args ...string) []ledger.Request {
		t.Helper()
		r := execute(t, environ, "", append([]string{"requests", "list", "--json"}, args...)...)
		var reqs []ledger.Request
		if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &reqs) != nil {
			t.Fatalf("requests list %v: %+v", args, r)
		}
		return reqs
	}
	all := list("--limit", "0", "--since", "24h")
	seen := map[string]bool{}
	for i, r := range all {
		if seen[r.ID.String()] {
			t.Fatalf("request %s listed twice", r.ID)
		}
		seen[r.ID.String()] = true
		if i > 0 && (r.SubmittedAt.After(all[i-1].SubmittedAt) || r.SubmittedAt.Equal(all[i-1].SubmittedAt) && r.ID.String() > all[i-1].ID.String()) {
			t.Fatalf("out of order at %d", i)
		}
	}
	if len(all) != n {
		t.Errorf("--limit 0: %d requests, want %d", len(all), n)
	}
	if got := list("--limit", "1003"); len(got) != 1003 || got[1002].ID != all[1002].ID {
		t.Errorf("--limit 1003: %d requests", len(got))
	}
	if got := list(); len(got) != 50 {
		t.Errorf("the default limit: %d requests", len(got))
	}
	if got := list("--until", "24h"); len(got) != 0 {
		t.Errorf("--until 24h: %d requests, want none submitted before a day ago", len(got))
	}
}
