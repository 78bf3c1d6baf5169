package egress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"strconv"
)

// maxHeadBytes caps the request line and header fields together.
const maxHeadBytes = 32 << 10

// target is a checked-for-syntax request destination.
type target struct {
	connect bool
	host    string     // normalised name, or the canonical form of addr
	addr    netip.Addr // valid when the client gave an IP literal
	port    int
}

// authority is the host[:port] to put in a forwarded Host header.
func (t target) authority() string {
	h := t.host
	if t.addr.Is6() {
		h = "[" + h + "]"
	}
	if t.port == 80 {
		return h
	}
	return net.JoinHostPort(t.host, strconv.Itoa(t.port))
}

// readRequest reads one request head from br. It returns the request, the
// raw Host header values (net/http drops them) and the reader positioned
// after the head, from which a body or tunnelled bytes are read.
func readRequest(br *bufio.Reader) (*http.Request, []string, *bufio.Reader, error) {
	head, err := readHead(br)
	if err != nil {
		return nil, nil, nil, err
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(head)))
	if _, err := tp.ReadLine(); err != nil {
		return nil, nil, nil, err
	}
	fields, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("malformed header: %w", err)
	}
	rest := bufio.NewReader(io.MultiReader(bytes.NewReader(head), br))
	req, err := http.ReadRequest(rest)
	if err != nil {
		return nil, nil, nil, err
	}
	return req, fields.Values("Host"), rest, nil
}

// readHead reads up to and including the blank line ending the head.
func readHead(br *bufio.Reader) ([]byte, error) {
	var head []byte
	lineStart := 0
	for {
		chunk, err := br.ReadSlice('\n')
		head = append(head, chunk...)
		if len(head) > maxHeadBytes {
			return nil, fmt.Errorf("request head exceeds %d bytes", maxHeadBytes)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if len(head) == 0 && errors.Is(err, io.EOF) {
				return nil, errors.New("connection closed before a request")
			}
			return nil, fmt.Errorf("reading request head: %w", err)
		}
		if line := string(head[lineStart:]); line == "\r\n" || line == "\n" {
			if lineStart == 0 {
				return nil, errors.New("empty request line")
			}
			return head, nil
		}
		lineStart = len(head)
	}
}

// parseTarget extracts and checks the destination of a CONNECT or
// absolute-form request, and that any Host header agrees with it.
func parseTarget(req *http.Request, hostHeader []string) (target, error) {
	var t target
	var hostPart, portPart string
	switch {
	case req.ProtoMajor != 1:
		return t, fmt.Errorf("unsupported protocol %s", req.Proto)
	case req.Method == http.MethodConnect:
		if req.URL == nil || req.URL.Host == "" || req.RequestURI != req.URL.Host {
			return t, errors.New("CONNECT target must be host:port")
		}
		h, p, err := net.SplitHostPort(req.RequestURI)
		if err != nil {
			return t, errors.New("CONNECT target must be host:port")
		}
		t.connect, hostPart, portPart = true, h, p
	case req.URL.IsAbs():
		u := req.URL
		switch {
		case u.Scheme != "http":
			return t, fmt.Errorf("scheme %q not proxied; use CONNECT for TLS", u.Scheme)
		case u.User != nil:
			return t, errors.New("credentials in the request URL")
		case u.Host == "":
			return t, errors.New("request URL has no host")
		}
		hostPart, portPart = u.Hostname(), u.Port()
		if portPart == "" {
			portPart = "80"
		}
	default:
		return t, errors.New("not a proxy request: use CONNECT or an absolute http:// URL")
	}
	var err error
	if t.host, t.addr, err = parseHost(hostPart); err != nil {
		return t, err
	}
	if t.port, err = parsePort(portPart); err != nil {
		return t, err
	}
	return t, checkHostHeader(hostHeader, t)
}

func parsePort(s string) (int, error) {
	if len(s) == 0 || len(s) > 5 {
		return 0, fmt.Errorf("invalid port %q", s)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("invalid port %q", s)
		}
		n = n*10 + int(s[i]-'0')
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("invalid port %q", s)
	}
	return n, nil
}

// checkHostHeader requires a Host header, when present, to name the same
// host and port as the request target. A Host without a port means 80 for
// absolute-form requests and any port for CONNECT.
func checkHostHeader(values []string, t target) error {
	switch len(values) {
	case 0:
		return nil
	case 1:
	default:
		return errors.New("more than one Host header")
	}
	hp := values[0]
	hostPart, portPart := hp, ""
	if h, p, err := net.SplitHostPort(hp); err == nil {
		hostPart, portPart = h, p
	}
	mismatch := fmt.Errorf("host header %q disagrees with request target", hp)
	host, _, err := parseHost(hostPart)
	if err != nil || host != t.host {
		return mismatch
	}
	switch {
	case portPart != "":
		if port, err := parsePort(portPart); err != nil || port != t.port {
			return mismatch
		}
	case !t.connect && t.port != 80:
		return mismatch
	}
	return nil
}
