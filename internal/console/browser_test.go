//go:build unix

package console_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/execledger/execledger/ledger"
)

// The browser tests drive Debian's chromium (scripts/ensure-test-deps.sh
// installs it) headless through the DevTools protocol: one browser for
// the package, a fresh browser context (its own cookies) per person.

var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
}

func chromiumPath() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium on PATH: run scripts/ensure-test-deps.sh (it installs Debian's chromium)")
}

// browserContext starts the shared browser once.
func browserContext(t *testing.T) context.Context {
	t.Helper()
	browser.once.Do(func() {
		path, err := chromiumPath()
		if err != nil {
			browser.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox, // the tests run as root, where chromium's sandbox refuses to start
			chromedp.DisableGPU,
			chromedp.Flag("ignore-certificate-errors", true), // httptest's TLS certificate
			chromedp.WindowSize(1280, 900),
		)
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		if err := chromedp.Do(bctx); err != nil {
			browser.err = fmt.Errorf("start %s: %w", path, err)
		}
		browser.ctx = bctx
		browser.cancel = func() { bcancel(); acancel() }
	})
	if browser.err != nil {
		t.Fatal(browser.err)
	}
	return browser.ctx
}

func closeBrowser() {
	if browser.cancel != nil {
		browser.cancel()
	}
}

// person is one signed-in browser context.
type person struct {
	t    *testing.T
	ctx  context.Context
	base string
}

func newPerson(t *testing.T, ts *httptest.Server) *person {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserContext(t), chromedp.WithNewBrowserContext())
	ctx, cancel2 := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancel2(); cancel() })
	return &person{t: t, ctx: ctx, base: ts.URL}
}

func (p *person) run(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatal(err)
	}
}

func (p *person) text(sel string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// eval evaluates js in the page, awaiting a promise.
func eval[T any](p *person, js string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitJS polls js in the page (generously: the machine may be loaded)
// until it is true.
func (p *person) waitJS(what, js string) {
	p.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !eval[bool](p, js) {
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out waiting for %s (%s)", what, js)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *person) open(path, waitFor string) {
	p.t.Helper()
	p.run(chromedp.Navigate(p.base+path), chromedp.WaitVisible(chromedp.CSS(waitFor)))
}

func (p *person) signIn(l *login) {
	p.t.Helper()
	p.open("/signin", "#login")
	p.run(chromedp.SendKeys(chromedp.CSS("#login"), l.Name), chromedp.SendKeys(chromedp.CSS("#password"), l.Password),
		chromedp.Click(chromedp.CSS("#signin")), chromedp.WaitVisible(chromedp.CSS("#whoami")))
}

// screenshot saves the page as NAME.png in the screenshot directory:
// $EXECLEDGER_CONSOLE_SCREENSHOTS, else a directory under the system's
// temporary directory (the test logs where).
func (p *person) screenshot(name string) {
	p.t.Helper()
	dir := os.Getenv("EXECLEDGER_CONSOLE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "execledger-console-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.t.Fatal(err)
	}
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot %s", path)
}

func TestBrowser(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ts := newTestServer(t, w.server(t, nil))
	hostileID := w.submit(t, w.alice, "echo", hostile, "run-7", "order-42")
	bobID := w.submit(t, w.bob, "echo", `{"text":"from bob"}`, "run-b", "")
	alicesSleep := w.submit(t, w.alice, "sleep", `{"ms":5}`, "run-7", "")
	bobsSleep := w.submit(t, w.bob, "sleep", `{"ms":5}`, "", "")
	refused := w.submit(t, w.bob, "sleep", `{"seconds":1}`, "run-b", "") // denied: invalid_input
	w.waitSealed(t, hostileID)
	w.waitSealed(t, refused)
	w.waitState(t, alicesSleep, "awaiting_approval")
	w.waitState(t, bobsSleep, "awaiting_approval")
	// Two witnesses for the log page: one current, one far behind. The
	// requests above may all be sealed under one checkpoint: a request
	// sealed after it makes a second.
	var oldest, newest int64
	if err := w.db.Pool.QueryRow(context.Background(), "SELECT min(size), max(size) FROM ledger.checkpoints").Scan(&oldest, &newest); err != nil {
		t.Fatal(err)
	}
	if newest == oldest {
		w.waitSealed(t, w.submit(t, w.alice, "echo", `{"text":"after the first checkpoint"}`, "", ""))
	}
	waitFor(t, "two checkpoints", func() bool {
		err := w.db.Pool.QueryRow(context.Background(), "SELECT min(size), max(size) FROM ledger.checkpoints").Scan(&oldest, &newest)
		return err == nil && newest > oldest
	})
	if _, err := w.db.Pool.Exec(context.Background(), `INSERT INTO ledger.checkpoint_cosignatures (size, key_name, key_hash, signature)
VALUES ($1, 'witness.example/stale', 3054, 'AAAA'), ($2, 'witness.example/current', 4242, 'AAAA')`, oldest, newest); err != nil {
		t.Fatal(err)
	}

	// Sign-in: a wrong password is refused with the uniform message.
	alice := newPerson(t, ts)
	alice.open("/signin", "#login")
	alice.run(chromedp.SendKeys(chromedp.CSS("#login"), w.alice.Name), chromedp.SendKeys(chromedp.CSS("#password"), "not it"),
		chromedp.Click(chromedp.CSS("#signin")), chromedp.WaitVisible(chromedp.CSS("#signin-error")))
	if got := alice.text("#signin-error"); got != failedMsg {
		t.Fatalf("wrong password: %q", got)
	}
	// The skip link is the first thing the keyboard reaches.
	alice.signIn(w.alice)
	// The keyboard reaches the skip link first.
	alice.run(chromedp.KeyEvent("\t"))
	if got := eval[string](alice, `document.activeElement.className`); got != "skip" {
		t.Errorf("the first Tab focuses %q, want the skip link", got)
	}

	// Row security: alice sees her requests, not bob's.
	table := alice.text("#requests-table")
	if !strings.Contains(table, hostileID.String()) || strings.Contains(table, bobID.String()) {
		t.Fatalf("alice's requests:\n%s", table)
	}
	alice.screenshot("requests-submitter")

	// The hostile payload is shown as text and never runs.
	alice.open("/requests/"+hostileID.String(), "#request-facts")
	if eval[bool](alice, `window.__pwned !== undefined || document.querySelectorAll('main script, main img').length > 0`) {
		t.Fatal("the hostile payload ran or was parsed as markup")
	}
	if got := alice.text("#decisions + div"); !strings.Contains(got, "policy.allow") {
		t.Errorf("alice's decisions: %q", got)
	}

	// CSRF: a POST without the token is refused, even from the console's own page.
	status := eval[int](alice, `fetch('/approvals/`+bobsSleep.String()+`', {method: 'POST', body: new URLSearchParams({decision: 'deny'})}).then(r => r.status)`)
	if status != 403 {
		t.Fatalf("POST without a CSRF token: %d, want 403", status)
	}

	// Sign out; the console is closed to the browser again.
	alice.run(chromedp.Click(chromedp.CSS("#signout")), chromedp.WaitVisible(chromedp.CSS("#signin")))
	alice.open("/requests", "#signin")

	// The auditor sees every principal's requests, and the proofs check.
	audrey := newPerson(t, ts)
	audrey.signIn(w.audrey)
	table = audrey.text("#requests-table")
	if !strings.Contains(table, hostileID.String()) || !strings.Contains(table, bobID.String()) {
		t.Fatalf("the auditor's requests:\n%s", table)
	}
	audrey.open("/requests/"+hostileID.String(), "#proofs")
	if got := audrey.text("#attestation-status"); !strings.HasPrefix(got, "Verified") {
		t.Errorf("attestation: %q", got)
	}
	if got := audrey.text("#checkpoint-status"); !strings.HasPrefix(got, "Checkpoint signed by log key") {
		t.Errorf("checkpoint: %q", got)
	}
	proofs := eval[[]string](audrey, `Array.from(document.querySelectorAll('#proofs .proof-status')).map(e => e.textContent)`)
	var events int
	if err := w.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM ledger.events WHERE stream = 'request:' || $1::text", hostileID).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if len(proofs) != events || events < 3 {
		t.Fatalf("proofs of %d events: %q", events, proofs)
	}
	for _, p := range proofs {
		if !strings.HasPrefix(p, "Included: leaf") {
			t.Errorf("an event's proof: %q", p)
		}
	}
	if eval[bool](audrey, `window.__pwned !== undefined`) {
		t.Fatal("the hostile payload ran on the auditor's page")
	}
	audrey.screenshot("request-auditor")
	for path, h1 := range map[string]string{"/audit": "Audit trail", "/quotas": "Quotas", "/skills": "Skills",
		"/log": "Transparency log", "/health": "Health", "/approvals": "Approvals"} {
		audrey.open(path, "main h1")
		if got := audrey.text("main h1"); got != h1 {
			t.Errorf("%s: h1 %q", path, got)
		}
		if path == "/quotas" || path == "/log" {
			audrey.screenshot("page-" + strings.TrimPrefix(path, "/"))
		}
	}
	// Readable at phone width: nothing wider than the screen.
	audrey.run(chromedp.EmulateViewport(390, 844), chromedp.Navigate(ts.URL+"/requests"), chromedp.WaitVisible(chromedp.CSS("#requests-table")))
	if width := eval[int](audrey, `document.documentElement.scrollWidth`); width > 390 {
		t.Errorf("the requests page is %d px wide at a 390 px viewport", width)
	}
	audrey.screenshot("requests-phone")

	// Approvals: bob may not approve his own request; carol approves alice's.
	bob := newPerson(t, ts)
	bob.signIn(w.bob)
	bob.open("/approvals", "main h1")
	bob.run(chromedp.Click(chromedp.CSS(`form[action="/approvals/`+bobsSleep.String()+`"] button[value="approve"]`)),
		chromedp.WaitVisible(chromedp.CSS("#approval-error")))
	if got := bob.text("#approval-error"); !strings.Contains(got, "may not decide its approval") {
		t.Fatalf("self-approval: %q", got)
	}
	carol := newPerson(t, ts)
	carol.signIn(w.carol)
	carol.open("/approvals", "main h1")
	// carol holds ledger_approver alone: she sees the exact input and its
	// digest all the same (ledger.awaiting_approval).
	card := `document.querySelector('form[action="/approvals/` + alicesSleep.String() + `"]').closest('section')`
	if got := eval[string](carol, card+`.querySelector('pre.payload').textContent`); got != "{\n  \"ms\": 5\n}" {
		t.Errorf("the input carol approves: %q", got)
	}
	if got := eval[string](carol, card+`.querySelector('.input-digest').textContent`); !strings.HasPrefix(got, "sha256:") || len(got) != 71 {
		t.Errorf("the digest carol approves: %q", got)
	}
	carol.screenshot("approvals")
	carol.run(chromedp.SendKeys(chromedp.CSS(`form[action="/approvals/`+alicesSleep.String()+`"] textarea`), "reviewed in the browser"))
	carol.run(chromedp.Click(chromedp.CSS(`form[action="/approvals/` + alicesSleep.String() + `"] button[value="approve"]`)))
	carol.run(chromedp.WaitVisible(chromedp.CSS(".flash")))
	if got := carol.text(".flash"); got != "Request "+alicesSleep.String()+" approved." {
		t.Fatalf("approval: %q", got)
	}
	w.waitState(t, alicesSleep, "succeeded")
}

// TestBrowserLiveUpdates: a request submitted after the requests page
// loaded appears in it, and a request's page follows its state to the
// end, both without a reload (a marker set in the page survives).
func TestBrowserLiveUpdates(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ts := newTestServer(t, w.server(t, nil))
	before := w.submit(t, w.alice, "echo", `{"text":"before the page"}`, "", "")
	w.waitState(t, before, "succeeded")

	alice := newPerson(t, ts)
	alice.signIn(w.alice)
	alice.open("/requests", "#requests-table")
	if !eval[bool](alice, `document.getElementById('live').checked`) {
		t.Fatal("live updates are off on the first page")
	}
	eval[bool](alice, `window.__samePage = true`)
	later := w.submit(t, w.alice, "sleep", `{"ms":3}`, "run-live", "")
	row := `Array.from(document.querySelectorAll('#requests-table tr')).find(r => r.textContent.includes('` + later.String() + `'))`
	alice.waitJS("the new request in the list", `!!`+row)
	alice.waitJS("its state to become awaiting_approval", row+`.querySelector('.state').textContent === 'awaiting_approval'`)
	if !eval[bool](alice, `window.__samePage === true`) {
		t.Fatal("the requests page was reloaded")
	}
	alice.screenshot("requests-live")

	// The request's page, open while it waits: an approval by another
	// login lets it run, and the page shows it end.
	alice.open("/requests/"+later.String(), "#request-state")
	if got := alice.text("#request-state"); got != "awaiting_approval" {
		t.Fatalf("the request's state: %q", got)
	}
	eval[bool](alice, `window.__samePage = true`)
	c := ledger.NewClient(w.carol.Pool)
	defer c.Close()
	if err := c.Approve(context.Background(), later, "live", ""); err != nil {
		t.Fatal(err)
	}
	alice.waitJS("the request's page to show it succeeded", `document.getElementById('request-state').textContent === 'succeeded'`)
	alice.waitJS("the page to say the request ended", `document.getElementById('request-live-status').textContent.includes('has ended')`)
	if !eval[bool](alice, `window.__samePage === true`) {
		t.Fatal("the request's page was reloaded")
	}
	if got := alice.text("#request-live-body"); !strings.Contains(got, "run-live") {
		t.Errorf("the live part lost the request's facts: %q", got)
	}
}
