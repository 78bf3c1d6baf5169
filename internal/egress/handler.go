package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"time"
)

// Lingering after a refusal lets the client read the answer before close
// instead of seeing a reset caused by its own unread request body.
const (
	lingerTimeout = 250 * time.Millisecond
	lingerBytes   = 256 << 10
)

// maxDetail caps Connection.Detail, which may quote what the client sent.
const maxDetail = 512

// refusal is a failed admission step.
type refusal struct {
	reason string
	err    error
}

func refusalf(reason, format string, args ...any) *refusal {
	return &refusal{reason: reason, err: fmt.Errorf(format, args...)}
}

// run reads the request, admits or refuses it, and relays the allowed one.
func (s *session) run(p *Proxy) {
	req, hostHeader, rest, err := readRequest(bufio.NewReader(s.client))
	if err != nil {
		s.refuse(&refusal{reason: ReasonBadRequest, err: err})
		return
	}
	s.rec.Method = req.Method
	t, err := parseTarget(req, hostHeader)
	if err != nil {
		s.refuse(&refusal{reason: ReasonBadRequest, err: err})
		return
	}
	s.rec.Host, s.rec.Port = t.host, t.port
	up, r := s.admit(p, t)
	if r != nil {
		s.refuse(r)
		return
	}
	mc := &meteredConn{Conn: up, s: s}
	if !s.attach(mc) {
		return
	}
	s.rec.Allowed, s.rec.Reason = true, ReasonAllowed
	s.touch()
	if t.connect {
		s.tunnel(rest, mc)
	} else {
		s.forward(req, t, mc)
	}
}

// admit applies the port, allowlist and address checks and dials t.
func (s *session) admit(p *Proxy, t target) (net.Conn, *refusal) {
	if !p.portAllowed(t.port) {
		return nil, refusalf(ReasonPortNotAllowed, "port %d is not allowed", t.port)
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.DialTimeout)
	defer cancel()
	addrs, r := s.resolve(ctx, t)
	if r != nil {
		return nil, r
	}
	var errs []error
	for _, a := range addrs {
		s.rec.Addr = netip.AddrPortFrom(a, uint16(t.port))
		c, err := s.cfg.Dial(ctx, "tcp", s.rec.Addr.String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, &refusal{reason: ReasonDialFailed, err: errors.Join(errs...)}
}

// resolve returns the checked addresses to dial for t: the literal itself,
// or every address the name resolves to, all public or IP/CIDR-allowlisted.
func (s *session) resolve(ctx context.Context, t target) ([]netip.Addr, *refusal) {
	allow := s.cfg.Allow
	if t.addr.IsValid() {
		switch {
		case allow.allowsAddr(t.addr):
			return []netip.Addr{t.addr}, nil
		case isSpecial(t.addr) && !s.privateAllowed(t.addr):
			s.rec.Addr = netip.AddrPortFrom(t.addr, uint16(t.port))
			return nil, refusalf(ReasonPrivateAddress, "%s is a private or special address", t.addr)
		}
		return nil, refusalf(ReasonHostNotAllowlisted, "%s is not allowlisted", t.addr)
	}
	if !allow.allowsName(t.host) {
		return nil, refusalf(ReasonHostNotAllowlisted, "%s is not allowlisted", t.host)
	}
	found, err := s.cfg.Resolver.LookupNetIP(ctx, "ip", t.host)
	if err != nil {
		return nil, &refusal{reason: ReasonResolveFailed, err: err}
	}
	var addrs []netip.Addr
	for _, a := range found {
		a = a.Unmap().WithZone("")
		if !a.IsValid() {
			return nil, refusalf(ReasonResolveFailed, "resolver returned an invalid address for %s", t.host)
		}
		if isSpecial(a) && !allow.allowsAddr(a) && !s.privateAllowed(a) {
			s.rec.Addr = netip.AddrPortFrom(a, uint16(t.port))
			return nil, refusalf(ReasonPrivateAddress, "%s resolves to private or special address %s", t.host, a)
		}
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, refusalf(ReasonResolveFailed, "no addresses for %s", t.host)
	}
	return addrs, nil
}

// privateAllowed reports whether a falls in one of Config.PrivateRanges.
func (s *session) privateAllowed(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range s.cfg.PrivateRanges {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// refuse records the refusal and answers the client with an error status.
func (s *session) refuse(r *refusal) {
	s.rec.Reason = r.reason
	if r.err != nil {
		s.rec.Detail = truncate(r.err.Error(), maxDetail)
	}
	s.setEnd(EndRefused)
	if writeStatus(s.client, refusalStatus(r.reason), r.reason) == nil {
		s.linger()
	}
}

func refusalStatus(reason string) int {
	switch reason {
	case ReasonBadRequest:
		return http.StatusBadRequest
	case ReasonResolveFailed, ReasonDialFailed:
		return http.StatusBadGateway
	}
	return http.StatusForbidden
}

// writeStatus writes a complete error response that closes the connection.
func writeStatus(w io.Writer, status int, reason string) error {
	body := "egress: " + reason + "\n"
	_, err := fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"Content-Length: %d\r\nConnection: close\r\n%s: %s\r\n\r\n%s",
		status, http.StatusText(status), len(body), HeaderReason, reason, body)
	return err
}

// linger half-closes the client and discards what it still sends, briefly.
func (s *session) linger() {
	if closeWrite(s.client) != nil {
		return
	}
	if s.client.SetReadDeadline(time.Now().Add(lingerTimeout)) != nil {
		return
	}
	io.CopyN(io.Discard, s.client, lingerBytes)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
