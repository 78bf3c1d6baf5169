// Package dashboards_test checks the deployment files: docker-compose.yml
// and prometheus.yml are valid, every Grafana dashboard parses, and every
// query of every panel returns data: the Prometheus ones from a real
// Prometheus scraping a real, loaded `execledger serve`, the PostgreSQL
// ones from the database as a login that holds only ledger_reader, as
// Grafana's data source does.
package dashboards_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/execledger/execledger/internal/testdb"
)

func TestComposeFileIsValid(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatal("docker-compose is not installed: `make test` installs it (scripts/ensure-test-deps.sh)")
	}
	cmd := exec.Command(bin, "-f", "../docker-compose.yml", "config", "-q")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, out)
	}
	// Every file the compose file mounts exists.
	compose, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`- \./([^:]+):`).FindAllStringSubmatch(string(compose), -1) {
		if _, err := os.Stat(filepath.Join("..", m[1])); err != nil {
			t.Errorf("docker-compose.yml mounts %s: %v", m[1], err)
		}
	}
}

func TestPrometheusConfigIsValid(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(lookPrometheus(t, "promtool"), "check", "config", "prometheus.yml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config prometheus.yml: %v\n%s", err, out)
	}
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashboard struct {
	file       string
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title      string     `json:"title"`
		Datasource datasource `json:"datasource"`
		Targets    []struct {
			RefID      string      `json:"refId"`
			Expr       string      `json:"expr"`
			RawSQL     string      `json:"rawSql"`
			Datasource *datasource `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

// loadDashboards parses every dashboard and checks what Grafana needs of
// it: a uid of its own, a title, panels, and data sources that are
// provisioned.
func loadDashboards(t *testing.T) []dashboard {
	t.Helper()
	files, err := filepath.Glob("grafana/dashboards/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards found (%v)", err)
	}
	provisioned := provisionedDatasources(t)
	uids := map[string]string{}
	var out []dashboard
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := dashboard{file: f}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
			t.Errorf("%s: needs a uid, a title and panels", f)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share uid %s", f, other, d.UID)
		}
		uids[d.UID] = f
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				ds := p.Datasource
				if tg.Datasource != nil {
					ds = *tg.Datasource
				}
				if provisioned[ds.UID] != ds.Type {
					t.Errorf("%s, panel %q: data source %s (%s) is not provisioned with that type", f, p.Title, ds.UID, ds.Type)
				}
			}
		}
		out = append(out, d)
	}
	return out
}

// provisionedDatasources maps the uid of each data source in
// grafana/provisioning/datasources to its type.
func provisionedDatasources(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("grafana/provisioning/datasources/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no provisioned data sources (%v)", err)
	}
	out := map[string]string{}
	field := regexp.MustCompile(`(?m)^\s+-?\s*(uid|type):\s*(\S+)`)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var uid, typ string
		for _, m := range field.FindAllStringSubmatch(string(raw), -1) {
			if m[1] == "uid" {
				uid = m[2]
			} else {
				typ = m[2]
			}
		}
		out[uid] = typ
	}
	return out
}

var metricName = regexp.MustCompile(`\bexecledger_[a-z0-9_]+`)

// checkExported fails for every metric a dashboard queries that is not
// in metrics, serve's /metrics.
func checkExported(t *testing.T, dashboards []dashboard, metrics []byte) {
	t.Helper()
	exported := map[string]bool{}
	for _, name := range metricName.FindAllString(string(metrics), -1) {
		exported[name] = true
	}
	for _, d := range dashboards {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				for _, name := range metricName.FindAllString(tg.Expr, -1) {
					if !exported[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")] {
						t.Errorf("%s, panel %q: %s is not exported by execledger serve", d.file, p.Title, name)
					}
				}
			}
		}
	}
}

// TestDashboardsReturnData runs every query of every dashboard against a
// real Prometheus scraping a loaded serve, and against the database: each
// must return data. The quota panels wait for the projection engine to
// apply the load, so they are polled with a deadline.
func TestDashboardsReturnData(t *testing.T) {
	t.Parallel()
	dashboards := loadDashboards(t)
	s := startServe(t)
	prom := startPrometheus(t, s.addr)
	s.load(t)
	reader := s.db.LoginRole(t, "", "ledger_reader")

	var checks []*check
	// Every quota counter a dashboard shows has moved: the load reached
	// the projection.
	for _, name := range quotaCounters(dashboards) {
		checks = append(checks, &check{what: "the load in " + name, run: func() (int, error) { return prom.query("sum(" + name + ") > 0") }})
	}
	// ops, the principal with the most calls, has series of its own; bob,
	// with quota_metrics_top_k 1, is in other.
	checks = append(checks, &check{what: "variable principal", run: func() (int, error) {
		got := strings.Join(prom.labelValues(t, "execledger_quota_calls_total", "principal"), " ")
		if got != "ops other" {
			return 0, errors.New("label_values(execledger_quota_calls_total, principal) = [" + got + "], want [ops other]")
		}
		return 1, nil
	}})
	for _, d := range dashboards {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				for _, principal := range []string{allValue, "ops"} {
					where := fmt.Sprintf("%s, panel %q %s, principal=%s", d.file, p.Title, tg.RefID, principal)
					checks = append(checks, panelCheck(prom, reader.Pool, where, tg.Expr, tg.RawSQL, principal))
				}
			}
		}
	}
	waitForData(t, checks, 2*time.Minute, s.out)
	// Now that the projection has applied the load, every labelled series
	// is there too.
	checkExported(t, dashboards, get(t, "http://"+s.addr+"/metrics"))
}

// quotaCounters lists the execledger_quota_*_total counters the
// dashboards query.
func quotaCounters(dashboards []dashboard) []string {
	counter := regexp.MustCompile(`\bexecledger_quota_[a-z_]+_total\b`)
	seen := map[string]bool{}
	var out []string
	for _, d := range dashboards {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				for _, name := range counter.FindAllString(tg.Expr, -1) {
					if !seen[name] {
						seen[name] = true
						out = append(out, name)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// allValue is the dashboards' value of a variable set to All.
const allValue = ".*"

// check is one query that must return data.
type check struct {
	what string
	run  func() (int, error)
	n    int
	err  error
}

// panelCheck is the check of one panel target with the template
// variable principal set to principal: a PromQL expression or, as the
// ledger_reader login, a SQL query.
func panelCheck(prom *prometheus, pool *pgxpool.Pool, what, expr, sql, principal string) *check {
	vars := map[string]string{"principal": principal, "__rate_interval": "1m"}
	if sql != "" {
		return &check{what: what, run: func() (int, error) {
			q, err := expand(sql, vars)
			if err != nil {
				return 0, fmt.Errorf("%w: %w", errQuery, err)
			}
			return countRows(pool, q)
		}}
	}
	return &check{what: what, run: func() (int, error) {
		q, err := expand(expr, vars)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", errQuery, err)
		}
		return prom.query(q)
	}}
}

// countRows runs q and counts the rows it returns.
func countRows(pool *pgxpool.Pool, q string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := pool.Query(ctx, q)
	if err != nil {
		return 0, sqlError(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n, sqlError(rows.Err())
}

// sqlError marks syntax errors, undefined objects and missing privileges
// (SQLSTATE class 42) as errQuery.
func sqlError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "42") {
		return fmt.Errorf("%w: %w", errQuery, err)
	}
	return err
}

// errQuery marks an error of the query itself (its syntax, a column that
// does not exist), as opposed to data that is not there yet.
var errQuery = errors.New("the query is wrong")

// waitForData runs the checks that have not returned data yet, once a
// second, until all have or the deadline passes, and then fails for each
// that has not.
func waitForData(t *testing.T, checks []*check, within time.Duration, serveOut *syncBuffer) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	pending := checks
	for len(pending) > 0 && time.Now().Before(deadline) {
		var still []*check
		for _, c := range pending {
			c.n, c.err = c.run()
			if errors.Is(c.err, errQuery) {
				t.Errorf("%s: %v", c.what, c.err) // waiting will not mend it
			} else if c.err != nil || c.n == 0 {
				still = append(still, c)
			}
		}
		pending = still
		if len(pending) > 0 {
			time.Sleep(time.Second)
		}
	}
	t.Logf("%d of %d queries returned data, after %s", countData(checks), len(checks), time.Since(start).Round(time.Millisecond))
	for _, c := range pending {
		t.Errorf("%s: no data within %s (%v)", c.what, within, c.err)
	}
	if len(pending) > 0 {
		log := serveOut.String()
		t.Logf("serve's last output:\n%s", log[max(0, len(log)-4000):])
	}
}

func countData(checks []*check) int {
	n := 0
	for _, c := range checks {
		if c.err == nil && c.n > 0 {
			n++
		}
	}
	return n
}

var templateVar = regexp.MustCompile(`\$\{(\w+)(?::(\w+))?\}|\$(\w+)`)

// expand substitutes Grafana's template variables as Grafana does for
// these dashboards: a regex format escapes a value's metacharacters, the
// All value (.*) is used as is.
func expand(q string, vars map[string]string) (string, error) {
	var err error
	out := templateVar.ReplaceAllStringFunc(q, func(m string) string {
		sub := templateVar.FindStringSubmatch(m)
		name, format := sub[1]+sub[3], sub[2]
		v, ok := vars[name]
		if !ok {
			err = errors.New("unknown template variable " + m)
			return m
		}
		if format == "regex" && v != allValue {
			v = regexp.QuoteMeta(v)
		}
		return v
	})
	return out, err
}

// TestGrafanaReaderIsReadOnly: the role Grafana's PostgreSQL data source
// uses reads every principal's quota rows and the projection checkpoints,
// and nothing else of the ledger; it writes nothing.
func TestGrafanaReaderIsReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.New(t)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO ledger.quota_usage (principal, calls_requested, updated_at) VALUES ('a', 1, now()), ('b', 2, now());
INSERT INTO ledger.quota_usage_runs (principal, run_id, updated_at) VALUES ('a', 'r', now())`); err != nil {
		t.Fatal(err)
	}
	reader := db.LoginRole(t, "", "ledger_reader")
	for table, want := range map[string]int{"ledger.quota_usage": 2, "ledger.quota_usage_runs": 1, "ledger.quota_denials": 0,
		"ledger.quota_usage_buckets": 0} {
		var n int
		if err := reader.Pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != want {
			t.Errorf("ledger_reader reads %d rows of %s (%v), want %d", n, table, err, want)
		}
	}
	if _, err := reader.Pool.Exec(ctx, "SELECT name, position FROM ledger.projections"); err != nil {
		t.Errorf("ledger_reader cannot read ledger.projections: %v", err)
	}
	for _, stmt := range []string{
		"SELECT 1 FROM ledger.events LIMIT 1", "SELECT 1 FROM ledger.requests LIMIT 1",
		"SELECT 1 FROM ledger.audit_trail LIMIT 1", "SELECT 1 FROM ledger.principals LIMIT 1",
		"SELECT 1 FROM ledger.queue LIMIT 1", "SELECT 1 FROM ledger.runs LIMIT 1",
		"SELECT * FROM ledger.read_all('0', 0, 1)", "SELECT ledger.submit('echo', '{}')",
		"INSERT INTO ledger.quota_usage (principal, updated_at) VALUES ('c', now())",
		"UPDATE ledger.quota_usage SET calls_requested = 0", "DELETE FROM ledger.quota_usage_runs",
	} {
		_, err := reader.Pool.Exec(ctx, stmt)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			t.Errorf("ledger_reader: %s: %v, want insufficient_privilege (42501)", stmt, err)
		}
	}
}
