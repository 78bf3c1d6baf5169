package deploy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serviceByImage is the one service running an image whose name starts
// with prefix.
func (s stack) serviceByImage(t *testing.T, prefix string) string {
	t.Helper()
	var names []string
	for name, svc := range s.Services {
		if strings.HasPrefix(svc.Image, prefix) {
			names = append(names, name)
		}
	}
	if len(names) != 1 {
		t.Fatalf("docker-compose.yml: want one service of image %s*, have %v", prefix, names)
	}
	return names[0]
}

// prometheusConfig is what the test reads of prometheus.yml.
type prometheusConfig struct {
	RuleFiles     []string `json:"rule_files"`
	ScrapeConfigs []struct {
		JobName       string `json:"job_name"`
		MetricsPath   string `json:"metrics_path"`
		Scheme        string `json:"scheme"`
		StaticConfigs []struct {
			Targets []string `json:"targets"`
		} `json:"static_configs"`
	} `json:"scrape_configs"`
}

// checkPrometheus checks that the Prometheus service's configuration, as
// mounted, scrapes serve's service name and port, and loads every rules
// file mounted into it (promtool checks them). It returns the metrics
// path scraped.
func checkPrometheus(t *testing.T, s stack, fsys filesystem, serveName string, port int) string {
	t.Helper()
	name := s.serviceByImage(t, "prom/prometheus")
	svc := s.Services[name]
	cfgPath := "/etc/prometheus/prometheus.yml" // the image's default
	for _, a := range svc.Command {
		if v, ok := strings.CutPrefix(a, "--config.file="); ok {
			cfgPath = v
		}
	}
	paths := fsys.paths(t, name, svc)
	hostCfg := replacePaths(cfgPath, paths)
	if hostCfg == cfgPath {
		t.Fatalf("%s: its configuration %s is not mounted", name, cfgPath)
	}
	var cfg prometheusConfig
	decodeYAMLFile(t, hostCfg, &cfg)

	want, metricsPath := fmt.Sprintf("%s:%d", serveName, port), ""
	for _, sc := range cfg.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				if target == want && (sc.Scheme == "" || sc.Scheme == "http") {
					metricsPath = sc.MetricsPath
					if metricsPath == "" {
						metricsPath = "/metrics"
					}
				}
			}
		}
	}
	if metricsPath == "" {
		t.Errorf("%s's configuration scrapes no target %s (serve's service and port)", name, want)
		metricsPath = "/metrics"
	}
	checkRuleFiles(t, name, cfgPath, cfg.RuleFiles, paths)
	return metricsPath
}

// checkRuleFiles checks that every rules file (a YAML file with groups)
// mounted into Prometheus is loaded through rule_files, and that promtool
// accepts them.
func checkRuleFiles(t *testing.T, name, cfgPath string, ruleFiles []string, paths map[string]string) {
	t.Helper()
	loaded := map[string]bool{}
	for _, p := range ruleFiles {
		c := p
		if !path.IsAbs(c) {
			c = path.Join(path.Dir(cfgPath), c) // Prometheus resolves them against its configuration's directory
		}
		h := replacePaths(c, paths)
		if h == c {
			t.Errorf("%s: rule_files %s: %s is not mounted", name, p, c)
			continue
		}
		matches, err := filepath.Glob(h)
		if err != nil || (len(matches) == 0 && !strings.ContainsAny(p, "*?[")) {
			t.Errorf("%s: rule_files %s: no such file in the mounts (%v)", name, p, err)
		}
		for _, m := range matches {
			loaded[m] = true
		}
	}
	var files []string
	for target, host := range paths {
		if target == cfgPath {
			continue
		}
		_ = filepath.WalkDir(host, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || (filepath.Ext(p) != ".yml" && filepath.Ext(p) != ".yaml") {
				return err
			}
			var rules struct {
				Groups []any `json:"groups"`
			}
			decodeYAMLFile(t, p, &rules)
			if rules.Groups != nil && !loaded[p] {
				rel, _ := filepath.Rel(host, p)
				t.Errorf("%s: the rules file %s is mounted but no rule_files entry loads it", name, path.Join(target, filepath.ToSlash(rel)))
			}
			return nil
		})
	}
	for f := range loaded {
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Logf("%s loads no alerting or recording rules", name)
		return
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed: `make test` installs it (scripts/ensure-test-deps.sh)")
	}
	if out, err := exec.Command(promtool, append([]string{"check", "rules"}, files...)...).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}

// grafanaProvisioning is what the test reads of Grafana's provisioning files.
type grafanaProvisioning struct {
	Datasources []struct {
		Type     string `json:"type"`
		URL      string `json:"url"`
		User     string `json:"user"`
		JSONData struct {
			Database string `json:"database"`
		} `json:"jsonData"`
	} `json:"datasources"`
	Providers []struct {
		Options struct {
			Path string `json:"path"`
		} `json:"options"`
	} `json:"providers"`
}

// checkGrafana checks Grafana's provisioning as mounted: a Prometheus data
// source on the Prometheus service, a PostgreSQL one on the database as a
// read-only login that the one-shot services made (in the test database),
// and every dashboard of dashboards/grafana/dashboards.
func checkGrafana(t *testing.T, s stack, fsys filesystem, dbURL, dbHost string) {
	t.Helper()
	name := s.serviceByImage(t, "grafana/grafana")
	svc := s.Services[name]
	env := func(k string) string {
		if v := svc.Environment[k]; v != nil {
			return *v
		}
		return ""
	}
	paths := fsys.paths(t, name, svc)
	prov := replacePaths("/etc/grafana/provisioning", paths)
	if prov == "/etc/grafana/provisioning" {
		t.Fatalf("%s: /etc/grafana/provisioning is not mounted", name)
	}
	var p grafanaProvisioning
	for _, dir := range []string{"datasources", "dashboards"} {
		files, _ := filepath.Glob(filepath.Join(prov, dir, "*.y*ml"))
		for _, f := range files {
			var one grafanaProvisioning
			decodeYAMLFile(t, f, &one)
			p.Datasources = append(p.Datasources, one.Datasources...)
			p.Providers = append(p.Providers, one.Providers...)
		}
	}
	promName := s.serviceByImage(t, "prom/prometheus")
	wantProm := fmt.Sprintf("http://%s:%d", promName, s.Services[promName].publishedPort(t, promName))
	kinds := map[string]bool{}
	for _, ds := range p.Datasources {
		switch url := os.Expand(ds.URL, env); ds.Type {
		case "prometheus":
			kinds[ds.Type] = url == wantProm
		case "postgres", "grafana-postgresql-datasource":
			host, _, _ := strings.Cut(url, ":")
			kinds["postgres"] = host == dbHost
			checkReadOnlyLogin(t, dbURL, os.Expand(ds.User, env))
		}
	}
	if !kinds["prometheus"] || !kinds["postgres"] {
		t.Errorf("%s: data sources %+v: want Prometheus at %s and PostgreSQL on %s", name, p.Datasources, wantProm, dbHost)
	}
	dashboards, _ := filepath.Glob(filepath.Join(repoRoot, "dashboards", "grafana", "dashboards", "*.json"))
	for _, d := range dashboards {
		found := false
		for _, pr := range p.Providers {
			if _, err := os.Stat(filepath.Join(replacePaths(pr.Options.Path, paths), filepath.Base(d))); err == nil {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no dashboards provider loads %s", name, d)
		}
	}
}

// checkReadOnlyLogin checks that login exists, reads through ledger_reader
// only, and acts as no principal.
func checkReadOnlyLogin(t *testing.T, dbURL, login string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := connectAs(ctx, t, dbURL, login)
	var reader, submitter, super bool
	var readOnly string
	err := conn.QueryRow(ctx, `SELECT pg_has_role(current_user, 'ledger_reader', 'MEMBER'),
		pg_has_role(current_user, 'ledger_submitter', 'MEMBER'),
		EXISTS (SELECT FROM pg_roles r WHERE r.rolname = current_user AND r.rolsuper),
		current_setting('default_transaction_read_only')`).Scan(&reader, &submitter, &super, &readOnly)
	if err != nil || !reader || submitter || super || readOnly != "on" {
		t.Errorf("Grafana's login %s: ledger_reader %v, ledger_submitter %v, superuser %v, read-only %s (%v): want a read-only ledger_reader",
			login, reader, submitter, super, readOnly, err)
	}
	var mapped bool
	if err := connectAs(ctx, t, dbURL, "postgres").QueryRow(ctx,
		"SELECT EXISTS (SELECT FROM ledger.principals WHERE login_role = $1)", login).Scan(&mapped); err != nil || mapped {
		t.Errorf("Grafana's login %s is mapped to a principal (%v): it must act as none", login, err)
	}
}
