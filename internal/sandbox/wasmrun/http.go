package wasmrun

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/execledger/execledger/internal/egress"
)

// Defaults of HTTPOptions' zero fields.
const (
	DefaultHTTPTimeout      = 10 * time.Second
	DefaultHTTPResponseBody = 1 << 20
	DefaultHTTPRequestBody  = 1 << 20
	maxHTTPBody             = 16 << 20 // bound of both body limits, so that a response's JSON fits an i32
	maxHTTPResponseHeader   = 64 << 10
)

// httpMethods are the methods http_request sends.
var httpMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions}

// DefaultHTTPPorts are the ports requests may go to when
// HTTPOptions.Ports is empty.
var DefaultHTTPPorts = egress.DefaultPorts

// HTTPOptions are the limits of http_request. The zero value takes the
// defaults noted.
type HTTPOptions struct {
	// Ports requests may go to; empty means DefaultHTTPPorts.
	Ports []int
	// PrivateRanges are special ranges (egress.IsSpecial) a granted host
	// may be or resolve into; outside them such addresses are refused,
	// whatever the grant lists.
	PrivateRanges []netip.Prefix
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver egress.Resolver
	// Timeout bounds a request, response body included, within the
	// call's own time; 0 means DefaultHTTPTimeout.
	Timeout time.Duration
	// MaxResponseBody and MaxRequestBody bound bodies, in bytes; 0 means
	// the defaults, and neither may exceed 16 MiB.
	MaxResponseBody int
	MaxRequestBody  int
	// RootCAs verifies https servers; nil means the system's roots.
	RootCAs *x509.CertPool
}

func (o HTTPOptions) withDefaults() HTTPOptions {
	if len(o.Ports) == 0 {
		o.Ports = DefaultHTTPPorts
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	o.Timeout = orDefault(o.Timeout, DefaultHTTPTimeout)
	o.MaxResponseBody = min(orDefault(o.MaxResponseBody, DefaultHTTPResponseBody), maxHTTPBody)
	o.MaxRequestBody = min(orDefault(o.MaxRequestBody, DefaultHTTPRequestBody), maxHTTPBody)
	return o
}

// httpRequestJSON is what a module sends to http_request.
type httpRequestJSON struct {
	Method     string            `json:"method"`
	URL        string            `json:"url"`
	Headers    map[string]string `json:"headers,omitempty"`
	BodyBase64 string            `json:"body_base64,omitempty"`
}

// httpResponseJSON is what http_request writes back.
type httpResponseJSON struct {
	Status     int                 `json:"status"`
	Headers    map[string][]string `json:"headers"`
	BodyBase64 string              `json:"body_base64"`
}

// httpRequest is http_request(handle, req, req_len, buf, cap) -> i32: it
// sends the request described by the JSON at req to a host the handle's
// grant allows and returns the length of the response's JSON, written at
// buf when it fits in cap bytes, or a negative error. It is charged
// req_len and the response's length.
func httpRequest(ctx context.Context, m api.Module, handle, req, reqLen, buf, capacity uint32) int32 {
	cc, refused := callerCaps(ctx, m, uint64(reqLen))
	if refused != 0 {
		return refused
	}
	u := capabilityUse{class: classHTTP, handle: int32(handle)}
	r := func() int32 {
		opts := cc.http.withDefaults()
		entry, granted := cc.granted.lookup(classHTTP, int32(handle))
		hr, r := readHTTPRequest(m, req, reqLen, opts)
		if hr != nil {
			u.name = eventHost(hr.URL.Hostname())
		}
		switch {
		case !granted:
			return capDenied
		case r < 0:
			return r
		}
		ctx, cancel := cc.bound(ctx)
		defer cancel()
		resp, r := send(ctx, entry, hr, opts)
		if r < 0 {
			return r
		}
		u.status, u.bytes = resp.Status, resp.bytes
		if resp.err < 0 {
			return resp.err
		}
		out, err := json.Marshal(resp.httpResponseJSON)
		switch {
		case err != nil:
			return capUnavailable
		case uint32(len(out)) <= capacity && !m.Memory().Write(buf, out):
			return capMemory
		}
		return int32(len(out))
	}()
	u.outcome = outcomeOf(r)
	recorded := cc.record(u)
	cc.produced(m, r)
	if !recorded {
		return capQuota
	}
	return r
}

// eventHost is host as an event records it: at most maxCapabilityName
// bytes of UTF-8.
func eventHost(host string) string {
	if len(host) > maxCapabilityName {
		host = host[:maxCapabilityName]
	}
	return strings.ToValidUTF8(host, "")
}

// readHTTPRequest reads and checks the request at req.
func readHTTPRequest(m api.Module, req, length uint32, opts HTTPOptions) (*http.Request, int32) {
	if int64(length) > int64(opts.MaxRequestBody)*4/3+64<<10 {
		return nil, capTooLarge
	}
	b, ok := m.Memory().Read(req, length)
	if !ok {
		return nil, capMemory
	}
	var in httpRequestJSON
	if json.Unmarshal(b, &in) != nil {
		return nil, capInvalid
	}
	body, err := base64.StdEncoding.DecodeString(in.BodyBase64)
	if err != nil {
		return nil, capInvalid
	}
	if len(body) > opts.MaxRequestBody {
		return nil, capTooLarge
	}
	if in.Method == "" {
		in.Method = http.MethodGet
	}
	if !slices.Contains(httpMethods, in.Method) {
		return nil, capInvalid
	}
	hr, err := http.NewRequest(in.Method, in.URL, bytes.NewReader(body))
	if err != nil || (hr.URL.Scheme != "http" && hr.URL.Scheme != "https") || hr.URL.Hostname() == "" {
		return nil, capInvalid
	}
	for k, v := range in.Headers {
		hr.Header.Set(k, v)
	}
	return hr, 0
}

// httpResponse is a response read within the limits: err is negative
// when the body went beyond MaxResponseBody or its time ran out.
type httpResponse struct {
	httpResponseJSON
	bytes int
	err   int32
}

// send checks hr against the grant entry and opts, dials an address it
// checked and returns the response, redirects included as they are.
func send(ctx context.Context, entry string, hr *http.Request, opts HTTPOptions) (httpResponse, int32) {
	allow, err := egress.ParseAllowlist([]string{entry})
	host := hr.URL.Hostname()
	if err != nil || !allow.AllowsHost(host) {
		return httpResponse{}, capDenied
	}
	port, err := urlPort(hr.URL)
	if err != nil || !slices.Contains(opts.Ports, port) {
		return httpResponse{}, capDenied
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	addrs, r := resolveChecked(ctx, host, opts)
	if r < 0 {
		return httpResponse{}, timedOut(ctx, r)
	}
	client := &http.Client{
		Transport: checkedTransport(addrs, port, opts.RootCAs),
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	resp, err := client.Do(hr.WithContext(ctx))
	if err != nil {
		return httpResponse{}, timedOut(ctx, capUnavailable)
	}
	defer resp.Body.Close()
	return readResponse(ctx, resp, opts.MaxResponseBody), 0
}

// readResponse reads resp's body, at most limit bytes.
func readResponse(ctx context.Context, resp *http.Response, limit int) httpResponse {
	out := httpResponse{httpResponseJSON: httpResponseJSON{Status: resp.StatusCode, Headers: resp.Header}}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	out.bytes = len(body)
	switch {
	case len(body) > limit:
		out.err = capTooLarge
	case err != nil:
		out.err = timedOut(ctx, capUnavailable)
	default:
		out.BodyBase64 = base64.StdEncoding.EncodeToString(body)
	}
	return out
}

// timedOut is capTimeout when ctx's time ran out, else r.
func timedOut(ctx context.Context, r int32) int32 {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return capTimeout
	}
	return r
}

func urlPort(u *url.URL) (int, error) {
	if p := u.Port(); p != "" {
		return strconv.Atoi(p)
	}
	if u.Scheme == "https" {
		return 443, nil
	}
	return 80, nil
}

// resolveChecked returns the addresses of host, a name or an IP literal,
// refusing them all when one is special (egress.IsSpecial) outside
// opts.PrivateRanges.
func resolveChecked(ctx context.Context, host string, opts HTTPOptions) ([]netip.Addr, int32) {
	var found []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		found = []netip.Addr{a}
	} else if found, err = opts.Resolver.LookupNetIP(ctx, "ip", host); err != nil || len(found) == 0 {
		return nil, capUnavailable
	}
	var addrs []netip.Addr
	for _, a := range found {
		a = a.Unmap().WithZone("")
		if !a.IsValid() {
			return nil, capUnavailable
		}
		if egress.IsSpecial(a) && !slices.ContainsFunc(opts.PrivateRanges, func(p netip.Prefix) bool { return p.Contains(a) }) {
			return nil, capPrivate
		}
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return addrs, 0
}

// checkedTransport dials only addrs, whatever address a request names,
// so that what is dialled is what was checked; it uses no proxy and
// keeps no connection.
func checkedTransport(addrs []netip.Addr, port int, roots *x509.CertPool) *http.Transport {
	var d net.Dialer
	return &http.Transport{
		Proxy:                  nil,
		TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: maxHTTPResponseHeader,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var errs []error
			for _, a := range addrs {
				c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
				if err == nil {
					return c, nil
				}
				errs = append(errs, err)
			}
			return nil, fmt.Errorf("dialling %s: %w", network, errors.Join(errs...))
		},
	}
}
