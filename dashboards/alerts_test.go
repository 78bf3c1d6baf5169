package dashboards_test

import (
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// alertTests is the promtool unit test file of alertRules.
const alertTests = "prometheus/alerts_test.yml"

// TestAlertRules: the rules file passes `promtool check rules` and the
// unit tests of alerts_test.yml, which cover every alert both firing and
// silent; and every alert, as a real Prometheus loads it, waits (for:),
// has a severity and says what happened and what to do.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	promtool := lookPrometheus(t, "promtool")
	for _, args := range [][]string{{"check", "rules", alertRules}, {"test", "rules", alertTests}} {
		if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
	// No target: the rules are only loaded, and evaluate to nothing.
	prom := startPrometheus(t, "127.0.0.1:1", alertRules)
	var rules []rule
	for deadline := time.Now().Add(30 * time.Second); len(rules) == 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		rules = prom.rules(t)
	}
	if len(rules) == 0 {
		t.Fatalf("Prometheus loaded no alerting rule from %s\n%s", alertRules, prom.out)
	}
	tests, err := os.ReadFile(alertTests)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.Duration <= 0 {
			t.Errorf("alert %s: no for:, so one bad scrape pages", r.Name)
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("alert %s: severity %q, want critical or warning", r.Name, s)
		}
		for _, a := range []string{"summary", "description"} {
			if r.Annotations[a] == "" {
				t.Errorf("alert %s: no %s annotation", r.Name, a)
			}
		}
		name := regexp.QuoteMeta(r.Name)
		if !regexp.MustCompile(`alertname: ` + name + `\n\s+exp_alerts:\n\s+- exp_labels:`).Match(tests) {
			t.Errorf("alert %s: %s has no test where it fires", r.Name, alertTests)
		}
		if !regexp.MustCompile(`alertname: ` + name + `, exp_alerts: \[\]`).Match(tests) {
			t.Errorf("alert %s: %s has no test where it stays silent", r.Name, alertTests)
		}
	}
}
