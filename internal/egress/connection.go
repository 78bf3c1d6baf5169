package egress

import (
	"net/netip"
	"time"
)

// Reasons recorded in Connection.Reason.
const (
	ReasonAllowed            = "allowed"
	ReasonHostNotAllowlisted = "host_not_allowlisted"
	ReasonPrivateAddress     = "private_address"
	ReasonResolveFailed      = "resolve_failed"
	ReasonDialFailed         = "dial_failed"
	ReasonBadRequest         = "bad_request"
	ReasonPortNotAllowed     = "port_not_allowed"
)

// Ends recorded in Connection.End: why the client connection closed.
const (
	EndRefused     = "refused"      // answered with an error status
	EndClosed      = "closed"       // the exchange finished normally
	EndError       = "error"        // an I/O error on either side
	EndIdleTimeout = "idle_timeout" // no byte moved for Config.IdleTimeout
	EndMaxDuration = "max_duration" // Config.MaxDuration elapsed
	EndMaxBytes    = "max_bytes"    // Config.MaxBytes exchanged
	EndShutdown    = "shutdown"     // Serve's context ended
)

// HeaderReason is the response header carrying the refusal reason.
const HeaderReason = "X-Egress-Reason"

// Connection records one connection attempt through the proxy, allowed or
// refused. It is passed to Config.OnConnection when the attempt ends.
type Connection struct {
	Method string // CONNECT, or the forwarded request's method; "" if unparsable
	Host   string // requested host, normalised (lowercase, no trailing dot; IP literals in canonical form)
	Port   int
	// Addr is the address dialled; for ReasonPrivateAddress, the address
	// refused; for ReasonDialFailed, the last address tried.
	Addr    netip.AddrPort
	Allowed bool   // admitted and connected to the destination
	Reason  string // one of the Reason constants
	End     string // one of the End constants
	Detail  string // human-readable cause of a refusal or error; "" otherwise
	// BytesUp and BytesDown count bytes sent to and received from the
	// destination; the proxy's own replies are not counted.
	BytesUp, BytesDown int64
	Started, Ended     time.Time
}
