// Package egress is the allowlisting proxy sandboxed processes reach the network through.
//
// In tier C's strict egress mode the sandbox has no route out: its network
// namespace holds only loopback. The one way out is a Unix socket created by
// [Proxy.ListenUnix] on the host and bind-mounted into the sandbox. The
// [Proxy] behind it speaks just enough HTTP/1.1 to be an outbound proxy:
//
//   - CONNECT host:port: the target is checked, dialled, answered with
//     "200 Connection established" and then relayed as a raw byte pipe in
//     both directions (HTTPS, or any other TCP protocol the client tunnels).
//     The proxy does not look inside the tunnel, so TLS domain fronting to an
//     allowlisted host is possible; the allowlist names what may be dialled,
//     not what is said once connected.
//   - Absolute-form plain HTTP (GET http://host/path HTTP/1.1): the target is
//     checked and dialled, and the request is forwarded in origin form with
//     hop-by-hop headers (Connection and the fields it names, Keep-Alive, TE,
//     Trailer, Transfer-Encoding, Upgrade) and every Proxy-* header removed
//     and "Connection: close" added. One request per client connection: the
//     response is relayed with its hop-by-hop headers removed and the
//     connection is then closed. Upgrades (WebSocket) are not forwarded; use
//     CONNECT. Absolute-form https:// requests are refused: clients must use
//     CONNECT so TLS stays end to end.
//
// Origin-form requests, HTTP/2, a Host header that disagrees with the
// request target, credentials in the URL and heads over 32 KiB are
// refused with 400.
//
// # Admission
//
// Each connection is admitted or refused exactly once, in this order:
//
//  1. The request must parse (bad_request, 400).
//  2. The destination port must be in [Config.Ports] (port_not_allowed, 403).
//  3. A host name must match the [Allowlist] by name (host_not_allowlisted,
//     403). Names that do not match are never resolved, so the sandbox cannot
//     use the host's resolver as a DNS exfiltration channel. An IP literal
//     must fall in an IP or CIDR entry; one that does not is refused as
//     private_address when it is special (see below) and outside
//     [Config.PrivateRanges], else as host_not_allowlisted.
//  4. A name is resolved once, through [Config.Resolver] (resolve_failed,
//     502). Every address returned must be public, or fall in an IP/CIDR
//     entry of the allowlist or in [Config.PrivateRanges]; if any is not,
//     the whole attempt is refused (private_address, 403).
//  5. The checked addresses are dialled as IP literals, in the order the
//     resolver returned them, until one connects (dial_failed, 502). There
//     is no second lookup, so a name cannot be rebound to an internal address
//     between the check and the dial.
//
// Hosts are read by [ParseHost] (and [ParseHostPort]) and matched by an
// [Allowlist], from [ParseAllowlist] or, in the grammar of process.run's
// policy, [ParseDomainAllowlist]. These are the only host rules: process.run's
// preflight (internal/procinput) and skills' http grants use them too, so a
// host those checks admit is one this proxy admits, in the same spelling.
//
// "Special" addresses ([IsSpecial]) are loopback, RFC 1918, CGNAT (100.64/10), link-local
// (including the 169.254.169.254 metadata address), ULA, multicast,
// unspecified, 0/8, reserved 240/4 and broadcast, the documentation and
// benchmarking ranges, the IETF protocol-assignment blocks, and IPv6 forms
// that embed or translate IPv4 (IPv4-mapped and -compatible, SIIT, 6to4 and
// NAT64 with a special embedded address, Teredo); address.go has the list.
//
// Refusals are answered with an HTTP status, a text body and the reason in
// the X-Egress-Reason header, so a sandboxed program's error output says why.
// A destination that answers a forwarded request with something that is not
// HTTP gets the client a 502 with X-Egress-Reason: bad_response; its record
// stays allowed, with End "error".
//
// # Limits
//
// Every connection is bounded by [Config.MaxDuration] from accept, closed
// after [Config.IdleTimeout] without a byte moving in either direction (the
// request head must arrive within it too), and cut once [Config.MaxBytes]
// bytes in total have been exchanged with the destination. Resolution and
// dialling share [Config.DialTimeout]. At most [Config.MaxConns] connections
// are served at once; further clients wait in the listen backlog.
//
// # Reporting
//
// [Config.OnConnection] is called exactly once per accepted connection,
// allowed or not, after it has closed, with a [Connection] record the
// executor stores as an event. BytesUp and BytesDown count bytes exchanged
// with the destination (request head and body, response), not the proxy's
// own replies. All calls have returned by the time [Proxy.Serve] returns.
//
// # Reaching the proxy from inside the sandbox
//
// Standard clients only know TCP proxies (http_proxy=http://host:port);
// almost none can use a Unix socket as a proxy. The proxy itself works over
// any [net.Listener], so there are two ways to wire it:
//
//   - Unix socket plus in-sandbox bridge (the supported tier C setup, as in
//     Anthropic's sandbox-runtime): the runner bind-mounts the socket and
//     starts a small relay inside the sandbox's loopback-only network
//     namespace that listens on 127.0.0.1:<port> and relays each connection
//     to the socket ([Bridge]); the sandboxed program gets
//     http_proxy/https_proxy=http://127.0.0.1:<port>. The sandbox keeps no
//     route out; its loopback TCP reaches only the relay. The cost is one
//     extra process and copy per connection, and the seccomp filter must
//     allow AF_INET sockets (they are harmless without a route).
//   - TCP listener on the host: simpler, but a sandbox without a network
//     namespace route cannot reach it, and anything else on the host can.
//
// Either way the proxy trusts nothing it receives: everything arriving on the
// listener is treated as written by the sandboxed program.
package egress
