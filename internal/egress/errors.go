package egress

import "errors"

// Errors returned (wrapped) by this package; match them with errors.Is.
var (
	// ErrInvalidEntry reports an allowlist entry that is empty, matches
	// everything, is too broad or is not a valid host name, IP or CIDR.
	ErrInvalidEntry = errors.New("invalid allowlist entry")
	// ErrInvalidHost reports a host that is neither a DNS name nor an IP
	// literal in the forms ParseHost accepts.
	ErrInvalidHost = errors.New("invalid host")
	// ErrInvalidConfig reports a Config that New cannot use.
	ErrInvalidConfig = errors.New("invalid egress config")
	// ErrSocketInUse reports a socket path that another live listener
	// serves, or a path that exists and is not a socket.
	ErrSocketInUse = errors.New("socket path in use")
	// errMaxBytes is returned by the destination connection once the
	// per-connection byte budget is spent.
	errMaxBytes = errors.New("per-connection byte limit reached")
)
