// Package dashboards_test checks the deployment files: docker-compose.yml
// and prometheus.yml are valid, every Grafana dashboard parses, and every
// query of every panel returns data: the Prometheus ones from a real
// Prometheus scraping a real, loaded `execledger serve`, the PostgreSQL
// ones from the database as a login that holds only ledger_reader, as
// Grafana's data source does. The alert rules pass promtool's checks and
// unit tests, and evaluate without error on the same real Prometheus.
package dashboards_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
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

// requiredVariables are the template variables every dashboard has: the
// Prometheus data source, and the executor (serve.label) whose series it
// shows. Every Prometheus query of every panel uses both.
var requiredVariables = []string{"datasource", "executor"}

// loadDashboards parses every dashboard and checks what Grafana needs of
// it: a uid of its own, a title, panels, and data sources that are
// provisioned or a data source variable of a provisioned type; and what
// operators need of it: the variables of requiredVariables, used by every
// Prometheus query.
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
		dsVars := datasourceVariables(t, d)
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				ds := p.Datasource
				if tg.Datasource != nil {
					ds = *tg.Datasource
				}
				if name, isVar := variableRef(ds.UID); isVar {
					if dsVars[name] != ds.Type || !slices.Contains(slices.Collect(maps.Values(provisioned)), ds.Type) {
						t.Errorf("%s, panel %q: data source variable %s is not one of type %s, or none of that type is provisioned", f, p.Title, ds.UID, ds.Type)
					}
				} else if provisioned[ds.UID] != ds.Type {
					t.Errorf("%s, panel %q: data source %s (%s) is not provisioned with that type", f, p.Title, ds.UID, ds.Type)
				}
				if ds.Type != "prometheus" {
					continue
				}
				if ds.UID != "${datasource}" {
					t.Errorf("%s, panel %q %s: queries data source %s, not the variable ${datasource}", f, p.Title, tg.RefID, ds.UID)
				}
				if !strings.Contains(tg.Expr, `executor=~"$executor"`) {
					t.Errorf("%s, panel %q %s: does not select executor=~\"$executor\": %s", f, p.Title, tg.RefID, tg.Expr)
				}
			}
		}
		out = append(out, d)
	}
	return out
}

// datasourceVariables checks that d has the variables of
// requiredVariables and maps each of its data source variables to the
// type of data source it selects.
func datasourceVariables(t *testing.T, d dashboard) map[string]string {
	t.Helper()
	out := map[string]string{}
	names := map[string]bool{}
	for _, v := range d.Templating.List {
		names[v.Name] = true
		if v.Type == "datasource" {
			var typ string
			if err := json.Unmarshal(v.Query, &typ); err != nil {
				t.Errorf("%s: data source variable %s: query is not a type name: %s", d.file, v.Name, v.Query)
			}
			out[v.Name] = typ
		}
	}
	for _, want := range requiredVariables {
		if !names[want] {
			t.Errorf("%s: no template variable %s", d.file, want)
		}
	}
	return out
}

// variableRef tells whether s is a reference to a template variable,
// ${name} or $name, and returns the name.
func variableRef(s string) (string, bool) {
	m := templateVar.FindStringSubmatch(s)
	if m == nil || m[0] != s {
		return "", false
	}
	return m[1] + m[3], true
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

// query is a PromQL expression and where it comes from.
type query struct{ where, expr string }

// dashboardQueries lists every Prometheus query of every panel.
func dashboardQueries(dashboards []dashboard) []query {
	var out []query
	for _, d := range dashboards {
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				if tg.Expr != "" {
					out = append(out, query{fmt.Sprintf("%s, panel %q %s", d.file, p.Title, tg.RefID), tg.Expr})
				}
			}
		}
	}
	return out
}

// checkExported fails for every metric a query names that is not in
// metrics, serve's /metrics.
func checkExported(t *testing.T, queries []query, metrics []byte) {
	t.Helper()
	exported := map[string]bool{}
	for _, name := range metricName.FindAllString(string(metrics), -1) {
		exported[name] = true
	}
	for _, q := range queries {
		for _, name := range metricName.FindAllString(q.expr, -1) {
			if !exported[family(name)] {
				t.Errorf("%s: %s is not exported by execledger serve", q.where, name)
			}
		}
	}
}

// family is the metric family of a series name: a histogram's without
// _bucket, _sum or _count.
func family(name string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f, ok := strings.CutSuffix(name, suffix); ok {
			return f
		}
	}
	return name
}

// alertRules is the rules file prometheus.yml loads.
const alertRules = "prometheus/alerts.yml"

// variableSets are the values the template variables take in the checks:
// All, and one real value each where a panel of every dashboard has data
// for it (ops is the principal with series of its own, serveLabel the
// test serve's executor).
var variableSets = []map[string]string{
	{"principal": allValue, "executor": allValue, "tier": allValue, "tool": allValue},
	{"principal": "ops", "executor": serveLabel, "tier": allValue, "tool": allValue},
}

// mayStayZero are counters a dashboard shows that the load does not move,
// and why.
var mayStayZero = map[string]string{
	"execledger_lease_rescues_total": "no lease expires under the load",
}

// TestDashboardsReturnData runs every query of every dashboard against a
// real Prometheus scraping a loaded serve, and against the database: each
// must return data. The quota panels wait for the projection engine to
// apply the load, so they are polled with a deadline. The same Prometheus
// evaluates the alert rules: each must evaluate without error on serve's
// real series.
func TestDashboardsReturnData(t *testing.T) {
	t.Parallel()
	dashboards := loadDashboards(t)
	s := startServe(t)
	prom := startPrometheus(t, s.addr, alertRules)
	s.load(t)
	reader := s.db.LoginRole(t, "", "ledger_reader")

	var checks []*check
	// Every counter and histogram a dashboard shows has moved: the load
	// reached the executor's metrics and the quota projection.
	for _, name := range countersShown(dashboards) {
		if mayStayZero[name] != "" {
			continue
		}
		q := fmt.Sprintf("sum(%s{executor=%q}) > 0", name, serveLabel)
		checks = append(checks, &check{what: "the load in " + name, run: func() (int, error) { return prom.query(q) }})
	}
	// Kills of each reason the load provokes, and egress both ways.
	for _, sel := range []string{`execledger_sandbox_kills_total{tier="C", reason="timeout"}`,
		`execledger_sandbox_kills_total{tier="C", reason="output_limit"}`, `execledger_sandbox_kills_total{tier="A", reason="fuel"}`,
		`execledger_egress_connections_total{tier="C", allowed="true"}`, `execledger_egress_connections_total{tier="C", allowed="false"}`,
		`execledger_requests_finished_total{error_kind="budget_exhausted"}`} {
		checks = append(checks, &check{what: "the load in " + sel, run: func() (int, error) { return prom.query("sum(" + sel + ") > 0") }})
	}
	checks = append(checks, &check{what: "variable executor", run: func() (int, error) {
		for _, metric := range []string{"execledger_executor_inflight", "execledger_database_up", "execledger_quota_up"} {
			if got := strings.Join(prom.labelValues(t, metric, "executor"), " "); got != serveLabel {
				return 0, fmt.Errorf("label_values(%s, executor) = [%s], want [%s]", metric, got, serveLabel)
			}
		}
		return 1, nil
	}})
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
				for _, vars := range variableSets {
					where := fmt.Sprintf("%s, panel %q %s, principal=%s executor=%s", d.file, p.Title, tg.RefID, vars["principal"], vars["executor"])
					checks = append(checks, panelCheck(prom, reader.Pool, where, tg.Expr, tg.RawSQL, vars))
				}
			}
		}
	}
	// Every alert rule has been evaluated on serve's series, without error.
	checks = append(checks, &check{what: "the alert rules of " + alertRules, run: func() (int, error) {
		rules := prom.rules(t)
		for _, r := range rules {
			if r.Health != "ok" {
				return 0, fmt.Errorf("rule %s: health %q %s", r.Name, r.Health, r.LastError)
			}
		}
		return len(rules), nil
	}})
	waitForData(t, checks, 2*time.Minute, s.out)
	// Now that the projection has applied the load, every labelled series
	// is there too, and every series an alert reads.
	queries := dashboardQueries(dashboards)
	for _, r := range prom.rules(t) {
		queries = append(queries, query{alertRules + ", alert " + r.Name, r.Query})
	}
	checkExported(t, queries, get(t, "http://"+s.addr+"/metrics"))
}

// countersShown lists the counters (execledger_*_total) and histograms
// (by their _count) the dashboards query.
func countersShown(dashboards []dashboard) []string {
	counter := regexp.MustCompile(`\bexecledger_[a-z0-9_]+(_total|_bucket|_sum|_count)\b`)
	seen := map[string]bool{}
	var out []string
	for _, q := range dashboardQueries(dashboards) {
		for _, name := range counter.FindAllString(q.expr, -1) {
			if !strings.HasSuffix(name, "_total") {
				name = family(name) + "_count"
			}
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
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
// variables set to values: a PromQL expression or, as the ledger_reader
// login, a SQL query.
func panelCheck(prom *prometheus, pool *pgxpool.Pool, what, expr, sql string, values map[string]string) *check {
	vars := map[string]string{"__rate_interval": "1m"}
	maps.Copy(vars, values)
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
