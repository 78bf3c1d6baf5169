package egress

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
)

// maxInterim caps the 1xx responses relayed before the final one.
const maxInterim = 8

// hopHeaders are removed in both directions, with every header named in
// Connection and every Proxy-* header (RFC 9110 section 7.6.1).
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// forward sends one absolute-form request to the destination in origin
// form and relays the response; the client connection then closes.
func (s *session) forward(req *http.Request, t target, up net.Conn) {
	prepareOutbound(req, t)
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// Answer for the destination, which no longer sees the Expect, so
		// the client sends its body without waiting for a timeout.
		req.Header.Del("Expect")
		if _, err := io.WriteString(s.client, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			s.fail(err)
			return
		}
	}
	wrote := make(chan error, 1)
	go func() { wrote <- req.Write(up) }()
	if err := s.relayResponse(req, up); err != nil {
		s.fail(err)
	} else {
		s.abort(EndClosed) // also unblocks the request writer if the body is unfinished
	}
	<-wrote // its error matters only through the response
}

// prepareOutbound rewrites an absolute-form request for the destination.
func prepareOutbound(req *http.Request, t target) {
	removeHopByHop(req.Header)
	req.Host = t.authority()
	req.RequestURI = ""
	req.Close = true
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = nil // keep net/http from adding its own
	}
}

// relayResponse reads the destination's response and writes it to the
// client, after any interim 1xx responses. If nothing valid arrives the
// client gets a 502.
func (s *session) relayResponse(req *http.Request, up net.Conn) error {
	br := bufio.NewReader(up)
	for range maxInterim + 1 {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			writeStatus(s.client, http.StatusBadGateway, "bad_response")
			return err
		}
		removeHopByHop(resp.Header)
		final := resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols
		resp.Close = final
		err = resp.Write(s.client)
		resp.Body.Close()
		if err != nil || final {
			return err
		}
	}
	return errors.New("too many interim responses")
}

func removeHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	for k := range h {
		if len(k) >= 6 && strings.EqualFold(k[:6], "proxy-") {
			delete(h, k)
		}
	}
}
