package egress

import "net"

// reserve takes up to n bytes from the MaxBytes budget and returns how many
// it took; 0 means the budget is spent.
func (s *session) reserve(n int) int {
	for {
		used := s.used.Load()
		k := min(int64(n), s.cfg.MaxBytes-used)
		if k <= 0 {
			return 0
		}
		if s.used.CompareAndSwap(used, used+k) {
			return int(k)
		}
	}
}

// meteredConn is the destination connection: it counts bytes, spends the
// MaxBytes budget and marks activity for the idle timeout.
type meteredConn struct {
	net.Conn
	s *session
}

// Read takes no reservation while it blocks, which would starve the other
// direction; it reads at most the budget left and then charges what
// arrived. Bytes the other direction spent meanwhile are dropped, so
// delivered bytes never exceed MaxBytes.
func (m *meteredConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return m.Conn.Read(p)
	}
	room := m.s.cfg.MaxBytes - m.s.used.Load()
	if room <= 0 {
		m.s.abort(EndMaxBytes)
		return 0, errMaxBytes
	}
	n, err := m.Conn.Read(p[:min(int64(len(p)), room)])
	if n > 0 {
		n = m.s.reserve(n)
		m.s.down.Add(int64(n))
		m.s.touch()
	}
	return n, err
}

// Write reserves before sending so the destination never receives more
// than the budget, and returns what it could not send.
func (m *meteredConn) Write(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		k := m.s.reserve(len(p))
		if k == 0 {
			m.s.abort(EndMaxBytes)
			return total, errMaxBytes
		}
		n, err := m.Conn.Write(p[:k])
		m.s.used.Add(int64(n - k))
		if n > 0 {
			m.s.up.Add(int64(n))
			m.s.touch()
		}
		total += n
		if err != nil {
			return total, err
		}
		p = p[n:]
	}
	return total, nil
}

// CloseWrite half-closes the destination when its connection supports it.
func (m *meteredConn) CloseWrite() error {
	return closeWrite(m.Conn)
}

// closeWrite half-closes c if it can; otherwise it leaves c open, and the
// other direction or a timeout ends the session.
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
