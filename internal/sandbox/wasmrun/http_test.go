package wasmrun

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/execledger/execledger/internal/redact"
)

// fakeResolver answers from a table; unknown names fail.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
}

var testResolver = fakeResolver{
	"api.example.test": {netip.MustParseAddr("127.0.0.1")},
	"evilexample.test": {netip.MustParseAddr("127.0.0.1")},
}

// httpCall runs testdata/caps_http.wat's fetch under one call's
// capabilities: hosts (sorted, so handle 10000+i is hosts[i]) and opts.
type httpCall struct {
	t  *testing.T
	cc *callCaps
	fn func(ctx context.Context, handle int32, req string, capacity uint32) (int32, []byte)
}

func newHTTPCall(t *testing.T, opts HTTPOptions, hosts ...string) *httpCall {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	if _, err := instantiateCapabilities(ctx, rt); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.Instantiate(ctx, wat(t, "caps_http"))
	if err != nil {
		t.Fatal(err)
	}
	cc := &callCaps{granted: Capabilities{HTTPHosts: hosts}, http: opts}
	return &httpCall{t: t, cc: cc, fn: func(ctx context.Context, handle int32, req string, capacity uint32) (int32, []byte) {
		if !mod.Memory().Write(0, []byte(req)) {
			t.Fatal("request too large for the test's memory")
		}
		res, err := mod.ExportedFunction("fetch").Call(withCallCaps(ctx, cc),
			uint64(uint32(handle)), uint64(len(req)), uint64(capacity))
		if err != nil {
			t.Fatal(err)
		}
		r := int32(uint32(res[0]))
		if r < 0 || uint32(r) > capacity {
			return r, nil
		}
		out, _ := mod.Memory().Read(65536, uint32(r))
		return r, out
	}}
}

func (c *httpCall) do(handle int32, req string) (int32, []byte) {
	return c.fn(context.Background(), handle, req, 4<<20)
}

// lastUse is the call's last capability.used event.
func (c *httpCall) lastUse() map[string]any {
	c.t.Helper()
	evs := c.cc.events(callRedactor{base: redact.New(redact.Options{})})
	if len(evs) == 0 {
		c.t.Fatal("no event")
	}
	return evs[len(evs)-1].Payload.(map[string]any)
}

// localOptions allow the test server's port and loopback addresses.
func localOptions(t *testing.T, srv *httptest.Server) HTTPOptions {
	t.Helper()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return HTTPOptions{Ports: []int{p}, Resolver: testResolver,
		PrivateRanges: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
}

func request(method, url, body string, headers map[string]string) string {
	b, _ := json.Marshal(httpRequestJSON{Method: method, URL: url, Headers: headers,
		BodyBase64: base64.StdEncoding.EncodeToString([]byte(body))})
	return string(b)
}

func TestHTTPRequestAllowed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo", r.Method+" "+r.Host+" "+r.Header.Get("X-Skill")+" "+string(b))
		io.WriteString(w, "the-body")
	}))
	t.Cleanup(srv.Close)
	c := newHTTPCall(t, localOptions(t, srv), ".example.test")
	url := strings.Replace(srv.URL, "127.0.0.1", "api.example.test", 1) + "/x"
	req := request("POST", url, "ping", map[string]string{"X-Skill": "yes"})

	n, out := c.do(10_000, req)
	if n < 0 {
		t.Fatalf("http_request: %d", n)
	}
	var resp httpResponseJSON
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	body, _ := base64.StdEncoding.DecodeString(resp.BodyBase64)
	host := strings.TrimPrefix(strings.TrimSuffix(url, "/x"), "http://")
	if resp.Status != 200 || string(body) != "the-body" || resp.Headers["X-Echo"][0] != "POST "+host+" yes ping" {
		t.Errorf("response %+v, body %q", resp, body)
	}
	use := c.lastUse()
	want := map[string]any{"class": "http", "handle": int32(10_000), "name": "api.example.test",
		"outcome": "ok", "status": 200, "bytes": 8}
	for k, v := range want {
		if use[k] != v {
			t.Errorf("event %s = %v (%T), want %v", k, use[k], use[k], v)
		}
	}
	if b, _ := json.Marshal(use); strings.Contains(string(b), "the-body") || strings.Contains(string(b), resp.BodyBase64) {
		t.Errorf("event holds the body: %s", b)
	}

	if n, out := c.fn(context.Background(), 10_000, req, 10); n <= 10 || out != nil {
		t.Errorf("small buffer: %d %q", n, out)
	}
}

// TestHTTPRequestTLS dials the address checked for the name and
// verifies the server's certificate for the name.
func TestHTTPRequestTLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.TLS.ServerName)
	}))
	t.Cleanup(srv.Close)
	opts := localOptions(t, srv)
	opts.Resolver = fakeResolver{"example.com": {netip.MustParseAddr("127.0.0.1")}}
	opts.RootCAs = srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	c := newHTTPCall(t, opts, "example.com")
	url := strings.Replace(srv.URL, "127.0.0.1", "example.com", 1)
	n, out := c.do(10_000, request("GET", url, "", nil))
	var resp httpResponseJSON
	if n < 0 || json.Unmarshal(out, &resp) != nil {
		t.Fatalf("%d %s", n, out)
	}
	if body, _ := base64.StdEncoding.DecodeString(resp.BodyBase64); string(body) != "example.com" {
		t.Errorf("server name %q", body)
	}
	opts.RootCAs = nil // the system's roots do not know the test's certificate
	c = newHTTPCall(t, opts, "example.com")
	if n, _ := c.do(10_000, request("GET", url, "", nil)); n != capUnavailable {
		t.Errorf("unknown certificate: %d", n)
	}
}

func TestHTTPRequestRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("a refused request reached the server")
	}))
	t.Cleanup(srv.Close)
	opts := localOptions(t, srv)
	noPrivate := opts
	noPrivate.PrivateRanges = nil
	port := srv.URL[strings.LastIndexByte(srv.URL, ':'):]
	get := func(host string) string { return request("GET", "http://"+host+port+"/", "", nil) }
	for _, tc := range []struct {
		name    string
		opts    HTTPOptions
		handle  int32
		req     string
		want    int32
		outcome string
	}{
		{"host not granted", opts, 10_000, get("other.test"), capDenied, "denied"},
		{"not at a label boundary", opts, 10_000, get("evilexample.test"), capDenied, "denied"},
		{"handle of another class", opts, 20_000, get("api.example.test"), capDenied, "denied"},
		{"handle not granted", opts, 10_001, get("api.example.test"), capDenied, "denied"},
		{"port not allowed", opts, 10_000, request("GET", "http://api.example.test:8/", "", nil), capDenied, "denied"},
		{"private address", noPrivate, 10_000, get("api.example.test"), capPrivate, "private_address"},
		{"unresolvable", opts, 10_000, get("gone.example.test"), capUnavailable, "unavailable"},
		{"scheme", opts, 10_000, request("GET", "ftp://api.example.test"+port+"/", "", nil), capInvalid, "invalid"},
		{"not JSON", opts, 10_000, "{", capInvalid, "invalid"},
		{"method", opts, 10_000, request("CONNECT", "http://api.example.test"+port+"/", "", nil), capInvalid, "invalid"},
		{"request body", HTTPOptions{MaxRequestBody: 3}, 10_000, request("POST", "http://a.example.test/", "four", nil),
			capTooLarge, "too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newHTTPCall(t, tc.opts, ".example.test")
			if n, _ := c.do(tc.handle, tc.req); n != tc.want {
				t.Errorf("got %d, want %d", n, tc.want)
			}
			if got := c.lastUse()["outcome"]; got != tc.outcome {
				t.Errorf("outcome %v, want %s", got, tc.outcome)
			}
		})
	}
}

func TestHTTPRequestLimits(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			io.WriteString(w, strings.Repeat("x", 2000))
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-release:
			}
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		default:
			t.Errorf("request for %s", r.URL.Path)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	// Requests that must finish get a minute, far more than a loaded
	// machine needs; only /slow, which answers nothing until the test
	// ends, runs out of time, and the bound on how long that takes is
	// well under the minute.
	opts := localOptions(t, srv)
	opts.MaxResponseBody, opts.Timeout = 1000, time.Minute
	c := newHTTPCall(t, opts, "127.0.0.1")

	if n, _ := c.do(10_000, request("GET", srv.URL+"/big", "", nil)); n != capTooLarge {
		t.Errorf("body over the cap: %d", n)
	}
	if u := c.lastUse(); u["outcome"] != "too_large" || u["status"] != 200 {
		t.Errorf("event %v", u)
	}
	short := opts
	short.Timeout = 100 * time.Millisecond
	sc := newHTTPCall(t, short, "127.0.0.1")
	began := time.Now()
	if n, _ := sc.do(10_000, request("GET", srv.URL+"/slow", "", nil)); n != capTimeout {
		t.Errorf("slow: %d", n)
	}
	if d := time.Since(began); d > 2*time.Minute {
		t.Errorf("slow took %v", d)
	}
	if u := sc.lastUse(); u["outcome"] != "timed_out" {
		t.Errorf("event %v", u)
	}
	// The call's own time bounds a request too: its context has no
	// deadline (see Tool.execute).
	long := newHTTPCall(t, opts, "127.0.0.1")
	long.cc.deadline = time.Now().Add(150 * time.Millisecond)
	began = time.Now()
	if n, _ := long.do(10_000, request("GET", srv.URL+"/slow", "", nil)); n != capTimeout {
		t.Errorf("slow past the call's deadline: %d", n)
	}
	if d := time.Since(began); d > 2*time.Minute {
		t.Errorf("slow past the call's deadline took %v", d)
	}
	n, out := c.do(10_000, request("GET", srv.URL+"/redirect", "", nil))
	var resp httpResponseJSON
	if n < 0 || json.Unmarshal(out, &resp) != nil || resp.Status != http.StatusFound || resp.Headers["Location"][0] != "/elsewhere" {
		t.Errorf("redirect: %d %s", n, out)
	}
}

// TestHTTPRequestDefaultsRefusePrivate runs a registered module: without
// private ranges a granted 127.0.0.1 is refused before anything is dialled.
func TestHTTPRequestDefaultsRefusePrivate(t *testing.T) {
	t.Parallel()
	caps := Capabilities{HTTPHosts: []string{"127.0.0.1"}}
	h := capsHost(t, "caps_http", caps, caps, "run")
	res := run(t, h, tool("run"), `{}`)
	wantOutput(t, res, `{"result":-8}`)
	if h.Tool(tool("run")).SafeToRepeat() {
		t.Error("a tool granted http is SafeToRepeat")
	}
	var found bool
	for _, ev := range res.Events {
		p, _ := ev.Payload.(map[string]any)
		if ev.Type == "capability.used" && p["class"] == "http" {
			found = p["name"] == "127.0.0.1" && p["outcome"] == "private_address"
		}
	}
	if !found {
		t.Errorf("events %+v", res.Events)
	}
}
