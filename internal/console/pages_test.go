//go:build unix

package console_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/execledger/execledger/internal/bundle"
)

// hostile is an input that would run script if a page did not escape it.
const hostile = `{"text":"</pre><script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">"}`

func TestRequestsRowSecurityAndPaging(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ts := newTestServer(t, w.server(t, nil))
	var aliceIDs []uuid.UUID
	for i := 0; i < 55; i++ {
		aliceIDs = append(aliceIDs, w.submit(t, w.alice, "echo", fmt.Sprintf(`{"text":"a%d"}`, i), "run-a", fmt.Sprintf("key-%d", i)))
	}
	bobID := w.submit(t, w.bob, "echo", `{"text":"b"}`, "run-b", "")

	alice := newClient(t, ts)
	alice.mustSignIn(w.alice)
	_, page1 := alice.get("/requests")
	if strings.Contains(page1, bobID.String()) {
		t.Fatal("alice sees bob's request")
	}
	ids := requestIDs(page1)
	if len(ids) != 50 || ids[0] != aliceIDs[54].String() {
		t.Fatalf("alice's first page: %d rows, first %v", len(ids), ids[:1])
	}
	next := regexp.MustCompile(`href="(/requests\?[^"]+)" id="next-page"`).FindStringSubmatch(page1)
	if next == nil {
		t.Fatal("no next page link")
	}
	_, page2 := alice.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	ids2 := requestIDs(page2)
	if len(ids2) != 5 || ids2[4] != aliceIDs[0].String() || strings.Contains(page2, `id="next-page"`) {
		t.Fatalf("alice's second page: %v", ids2)
	}
	// Find by idempotency key, and by id; bob's id is not found for her.
	if _, body := alice.get("/requests?find=key-7"); len(requestIDs(body)) != 1 || requestIDs(body)[0] != aliceIDs[7].String() {
		t.Fatalf("find by key: %v", requestIDs(body))
	}
	if code, _ := alice.get("/requests?find=" + bobID.String()); code != http.StatusNotFound {
		t.Fatalf("alice opens bob's request: %d", code)
	}
	// Filters: run and principal.
	if _, body := alice.get("/requests?run=run-b"); len(requestIDs(body)) != 0 {
		t.Fatal("alice's run-b filter shows rows")
	}
	if code, body := alice.get("/requests?state=bogus"); code != http.StatusBadRequest || !strings.Contains(body, "not a state") {
		t.Fatalf("bad state: %d", code)
	}

	audrey := newClient(t, ts)
	audrey.mustSignIn(w.audrey)
	if _, body := audrey.get("/requests?principal=bob"); len(requestIDs(body)) != 1 || requestIDs(body)[0] != bobID.String() {
		t.Fatalf("the auditor's principal filter: %v", requestIDs(body))
	}
	if _, body := audrey.get("/requests"); !strings.Contains(body, bobID.String()) || !strings.Contains(body, aliceIDs[54].String()) {
		t.Fatal("the auditor does not see every principal's requests")
	}
	w.waitState(t, bobID, "succeeded")
	if _, body := audrey.get("/requests?state=succeeded&principal=bob&error_kind="); len(requestIDs(body)) != 1 {
		t.Fatalf("state filter: %v", requestIDs(body))
	}
	// A reader may not read requests: the page says so.
	reader := newClient(t, ts)
	reader.mustSignIn(w.reader)
	if code, body := reader.get("/requests"); code != http.StatusForbidden || !strings.Contains(body, "may not read the requests") {
		t.Fatalf("reader: %d", code)
	}
}

var requestLink = regexp.MustCompile(`<a class="mono" href="/requests/([0-9a-f-]{36})">`)

func requestIDs(body string) []string {
	var out []string
	for _, m := range requestLink.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestRequestPageProvesAndEscapes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ts := newTestServer(t, w.server(t, nil))
	id := w.submit(t, w.alice, "echo", hostile, "r1", "")
	w.waitState(t, id, "succeeded")
	w.waitSealed(t, id)

	audrey := newClient(t, ts)
	audrey.mustSignIn(w.audrey)
	code, body := audrey.get("/requests/" + id.String())
	if code != http.StatusOK {
		t.Fatalf("request page: %d\n%s", code, body)
	}
	for _, want := range []string{
		"Verified: the signature checks with configured key",
		"Checkpoint signed by log key",
		"Included: leaf",
		"tool.requested", "execution.completed", "request.decided",
		"&lt;script&gt;window.__pwned=1&lt;/script&gt;",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the request page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script>window.__pwned") || strings.Contains(body, "<img src=x") {
		t.Error("the hostile payload reached the page unescaped")
	}
	if strings.Contains(body, "does not check") || strings.Contains(body, "Not verified") {
		t.Errorf("a check failed:\n%s", body)
	}

	// The bundle verifies offline, and through the log page's upload.
	code, b := audrey.get("/requests/" + id.String() + "/bundle")
	if code != http.StatusOK {
		t.Fatalf("bundle: %d %s", code, b)
	}
	keys := bundle.Keys{Log: w.keys.Log, Attestation: w.keys.Attestation}
	rep, err := bundle.Verify(context.Background(), strings.NewReader(b), keys, nil)
	if err != nil || !rep.OK || rep.Requests != 1 {
		t.Fatalf("the downloaded bundle: %+v %v", rep, err)
	}
	if _, page := upload(t, audrey, []byte(b)); !strings.Contains(page, "Verified.") {
		t.Fatalf("upload of a good bundle:\n%s", page)
	}
	tampered := bytes.Replace([]byte(b), []byte(`a%22`), []byte(`b%22`), 1)
	if bytes.Equal(tampered, []byte(b)) {
		tampered = tamperBundle(t, []byte(b))
	}
	if _, page := upload(t, audrey, tampered); !strings.Contains(page, "Not verified.") || !strings.Contains(page, "fault <code>") {
		t.Fatalf("upload of a tampered bundle:\n%s", page)
	}

	// The submitter sees the request and its decisions but not the log.
	alice := newClient(t, ts)
	alice.mustSignIn(w.alice)
	_, body = alice.get("/requests/" + id.String())
	if !strings.Contains(body, "may not read the log") || !strings.Contains(body, "policy.allow") {
		t.Errorf("alice's request page:\n%s", body)
	}
	if strings.Contains(body, "<script>window.__pwned") {
		t.Error("alice's page has the payload unescaped")
	}
}

// tamperBundle changes one byte of the first event's payload in a bundle.
func tamperBundle(t *testing.T, b []byte) []byte {
	t.Helper()
	i := bytes.Index(b, []byte(`"type":"tool.requested"`))
	j := bytes.Index(b[i:], []byte(`a`))
	if i < 0 || j < 0 {
		t.Fatal("no event to tamper with")
	}
	out := append([]byte{}, b...)
	out[i+j] = 'b'
	return out
}

func upload(t *testing.T, c *client, data []byte) (int, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("csrf", c.csrf)
	fw, _ := mw.CreateFormFile("bundle", "b.bundle")
	_, _ = fw.Write(data)
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, c.base+"/log/verify", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return c.do(req)
}

func TestApprovals(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ts := newTestServer(t, w.server(t, nil))
	mine := w.submit(t, w.bob, "sleep", `{"ms":1}`, "", "")
	other := w.submit(t, w.alice, "sleep", `{"ms":1}`, "", "")
	denied := w.submit(t, w.alice, "sleep", `{"ms":2}`, "", "")
	for _, id := range []uuid.UUID{mine, other, denied} {
		w.waitState(t, id, "awaiting_approval")
	}

	// A submitter sees its own waiting requests; the SQL list is for
	// approvers, auditors and administrators.
	alice := newClient(t, ts)
	alice.mustSignIn(w.alice)
	if _, page := alice.get("/approvals"); !strings.Contains(page, other.String()) || strings.Contains(page, mine.String()) ||
		strings.Contains(page, `name="decision"`) {
		t.Fatalf("alice's approvals page:\n%s", page)
	}
	if _, err := w.alice.Pool.Exec(context.Background(), "SELECT * FROM ledger.awaiting_approval()"); err == nil || !strings.Contains(err.Error(), "42501") {
		t.Fatalf("a submitter calls ledger.awaiting_approval: %v", err)
	}

	bob := newClient(t, ts)
	bob.mustSignIn(w.bob)
	_, page := bob.get("/approvals")
	digest := regexp.MustCompile(`name="input_digest" value="(sha256:[0-9a-f]{64})"`).FindStringSubmatch(page)
	// An approver sees the exact input as recorded, from
	// ledger.awaiting_approval: it reads neither the log nor the queue.
	if digest == nil || !strings.Contains(page, mine.String()) || !strings.Contains(page, `{
  &#34;ms&#34;: 1
}`) || strings.Contains(page, "may not call") {
		t.Fatalf("bob's approvals page:\n%s", page)
	}
	// The two-person rule: bob may not approve his own request.
	code, body := bob.post("/approvals/"+mine.String(), url.Values{"decision": {"approve"}, "input_digest": {digest[1]}})
	if code != http.StatusForbidden || !strings.Contains(body, "may not decide its approval") {
		t.Fatalf("self-approval: %d\n%s", code, body)
	}
	// An approval bound to another input is refused.
	code, body = bob.post("/approvals/"+other.String(), url.Values{"decision": {"approve"}, "input_digest": {"sha256:" + strings.Repeat("0", 64)}})
	if code != http.StatusConflict || !strings.Contains(body, "not the") {
		t.Fatalf("approval of another input: %d\n%s", code, body)
	}
	var otherDigest string
	if err := w.db.Pool.QueryRow(context.Background(), "SELECT 'sha256:' || encode(input_digest, 'hex') FROM ledger.request_status WHERE id = $1", other).Scan(&otherDigest); err != nil {
		t.Fatal(err)
	}

	carol := newClient(t, ts)
	carol.mustSignIn(w.carol)
	carol.get("/approvals")
	if code, body := carol.post("/approvals/"+other.String(), url.Values{"decision": {"approve"}, "input_digest": {otherDigest}, "note": {"looks fine"}}); code != http.StatusOK || !strings.Contains(body, "approved") {
		t.Fatalf("carol approves: %d\n%s", code, body)
	}
	if code, body := carol.post("/approvals/"+denied.String(), url.Values{"decision": {"deny"}, "note": {"no"}}); code != http.StatusOK || !strings.Contains(body, "denied") {
		t.Fatalf("carol denies: %d\n%s", code, body)
	}
	w.waitState(t, other, "succeeded")
	w.waitState(t, denied, "denied")
	// Decided, they leave the approver's page, inputs and all.
	if _, page := carol.get("/approvals"); strings.Contains(page, other.String()) || strings.Contains(page, denied.String()) ||
		!strings.Contains(page, mine.String()) {
		t.Fatalf("carol's approvals page once decided:\n%s", page)
	}
	// The decisions are events attributed to carol's login.
	var actor, loginRole string
	if err := w.db.Pool.QueryRow(context.Background(), `SELECT metadata->>'actor', metadata->>'login_role' FROM ledger.events
WHERE stream = 'request:' || $1::text AND type = 'approval.granted'`, other).Scan(&actor, &loginRole); err != nil || actor != "carol" || loginRole != w.carol.Name {
		t.Fatalf("approval.granted by %q / %q (%v)", actor, loginRole, err)
	}
	// An auditor sees the exact input of what waits.
	audrey := newClient(t, ts)
	audrey.mustSignIn(w.audrey)
	if _, body := audrey.get("/approvals"); !strings.Contains(body, mine.String()) || !strings.Contains(body, "&#34;ms&#34;: 1") {
		t.Fatalf("the auditor's approvals page:\n%s", body)
	}
}

func TestAuditExport(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ts := newTestServer(t, w.server(t, nil))
	a := w.submit(t, w.alice, "echo", `{"text":"=cmd|' /C calc'!A0"}`, "r1", "")
	b := w.submit(t, w.bob, "echo", `{"text":"b"}`, "", "")
	w.waitSealed(t, a)
	w.waitSealed(t, b)

	alice := newClient(t, ts)
	alice.mustSignIn(w.alice)
	_, page := alice.get("/audit")
	if !strings.Contains(page, a.String()) || strings.Contains(page, b.String()) {
		t.Fatalf("alice's audit page:\n%s", page)
	}
	code, out := alice.get("/audit/export?format=csv")
	if code != http.StatusOK {
		t.Fatalf("csv: %d %s", code, out)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) < 3 || recs[0][0] != "position" {
		t.Fatalf("csv: %v %v", err, recs)
	}
	for _, r := range recs[1:] {
		if r[4] != a.String() {
			t.Errorf("alice's export has request %s", r[4])
		}
	}
	audrey := newClient(t, ts)
	audrey.mustSignIn(w.audrey)
	_, out = audrey.get("/audit/export?format=jsonl")
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var row struct {
			RequestID string `json:"request_id"`
			Kind      string `json:"kind"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("jsonl line %q: %v", sc.Text(), err)
		}
		seen[row.RequestID] = true
	}
	if !seen[a.String()] || !seen[b.String()] {
		t.Fatalf("the auditor's export lacks a request: %v", seen)
	}
	_, out = audrey.get("/audit/export?format=jsonl&principal=bob&kind=outcome")
	if n := strings.Count(out, "\n"); n != 1 || !strings.Contains(out, b.String()) {
		t.Fatalf("filtered export: %q", out)
	}
}

func TestPagesRender(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ts := newTestServer(t, w.server(t, nil))
	id := w.submit(t, w.alice, "echo", `{"text":"x"}`, "r9", "")
	w.waitSealed(t, id)
	// A denial (an input sleep refuses), counted by reason per hour.
	bad := w.submit(t, w.alice, "sleep", `{"seconds":1}`, "", "")
	w.waitSealed(t, bad)
	ctx := context.Background()
	waitFor(t, "the denial in quota_denial_buckets", func() bool {
		var n int
		err := w.db.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.quota_denial_buckets WHERE principal = 'alice'").Scan(&n)
		return err == nil && n > 0
	})
	// Two witnesses: one cosigned the first checkpoint only, one the
	// newest.
	var oldest, newest int64
	waitFor(t, "two checkpoints", func() bool {
		err := w.db.Pool.QueryRow(ctx, "SELECT min(size), max(size) FROM ledger.checkpoints").Scan(&oldest, &newest)
		return err == nil && newest > oldest
	})
	if _, err := w.db.Pool.Exec(ctx, `INSERT INTO ledger.checkpoint_cosignatures (size, key_name, key_hash, signature)
VALUES ($1, 'witness.behind', 1, 'AAAA'), ($2, 'witness.current', 2, 'AAAA')`, oldest, newest); err != nil {
		t.Fatal(err)
	}
	audrey := newClient(t, ts)
	audrey.mustSignIn(w.audrey)
	for path, want := range map[string][]string{
		"/health":                 {"audit_trail", "Queue depth"},
		"/quotas":                 {"Calls allowed per hour", "<svg", "r9", "Calls denied per hour, by reason", `class="s0"><title>`, "invalid_input: 1"},
		"/quotas?principal=alice": {"for alice"},
		"/skills":                 {"Trust store"},
		"/log":                    {"Tree size at each checkpoint", "execledger.test/console", "witness.behind+00000001", "witness.current+00000002"},
		"/quotas?principal=bob":   {"No denials in the last 48 hours."},
		"/audit?kind=bogus":       {"not decision or outcome"},
	} {
		code, body := audrey.get(path)
		if code != http.StatusOK && !strings.Contains(path, "bogus") {
			t.Errorf("%s: %d", path, code)
		}
		for _, s := range want {
			if !strings.Contains(body, s) {
				t.Errorf("%s lacks %q", path, s)
			}
		}
	}
	// The witness behind is behind by the checkpoints after the first; the
	// page counts them as SQL does.
	var behind int64
	if err := w.db.Pool.QueryRow(ctx, "SELECT count(*) FROM ledger.checkpoints WHERE size > $1", oldest).Scan(&behind); err != nil {
		t.Fatal(err)
	}
	_, logPage := audrey.get("/log")
	row := regexp.MustCompile(`witness\.behind\+00000001(?s:.*?)witness-behind">(\d+)<`).FindStringSubmatch(logPage)
	if row == nil {
		t.Fatalf("no lag for the witness behind:\n%s", logPage)
	}
	if n, _ := strconv.ParseInt(row[1], 10, 64); n < behind || n < 1 {
		t.Errorf("the witness behind is %d checkpoints behind, SQL counted at least %d", n, behind)
	}
	// A submitter sees its own quotas, and is told what it may not read.
	alice := newClient(t, ts)
	alice.mustSignIn(w.alice)
	if _, body := alice.get("/health"); !strings.Contains(body, "may not read") {
		t.Errorf("alice's health page says nothing of what she may not read")
	}
	_ = io.Discard
}
