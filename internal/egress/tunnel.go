package egress

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// tunnel answers a CONNECT and relays bytes both ways until both sides
// have finished, a limit is hit or either side fails. from holds any bytes
// the client sent after the CONNECT head.
func (s *session) tunnel(from io.Reader, up net.Conn) {
	if _, err := io.WriteString(s.client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		s.fail(err)
		return
	}
	errc := make(chan error, 2)
	go func() { errc <- relay(up, from) }()
	go func() { errc <- relay(s.client, up) }()
	for range 2 {
		if err := <-errc; err != nil {
			s.fail(err)
		}
	}
}

// relay copies src to dst and half-closes dst once src is exhausted. A
// failed half-close is not an error: dst's peer is already gone, and the
// other direction ends on its own.
func relay(dst net.Conn, src io.Reader) error {
	if _, err := io.Copy(dst, src); err != nil {
		return err
	}
	closeWrite(dst)
	return nil
}

// fail ends the session after an I/O error; it runs on the handler
// goroutine. When a limit, shutdown or the other direction already ended the
// session (and so caused err), that earlier cause is kept. A peer that hung
// up (reset, broken pipe) is an ordinary close, not an error.
func (s *session) fail(err error) {
	cause := EndError
	switch {
	case errors.Is(err, errMaxBytes):
		cause = EndMaxBytes
	case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ENOTCONN), errors.Is(err, io.ErrClosedPipe):
		cause = EndClosed
	}
	if s.abort(cause) && cause == EndError {
		s.rec.Detail = truncate(err.Error(), maxDetail)
	}
}
