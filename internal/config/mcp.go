package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// MCP configures `execledger mcp`, the Model Context Protocol server whose
// every tool call is a ledger request.
//
// Over stdio (Listen "") the client acts as the login of database.url.
// Over streamable HTTP (Listen set) each request carries a bearer token
// that ledger.mcp_tokens maps to a login role; the server then connects
// as that login through LoginURL, a postgres:// URL whose user is the
// placeholder {login}. Its password, if the login needs one, comes from
// a passfile (PGPASSFILE, ~/.pgpass) or the URL's sslcert/sslkey: the URL
// holds no per-login secret.
type MCP struct {
	Listen      string `toml:"listen"`        // "" serves stdio; host:port serves streamable HTTP
	TLSCertFile string `toml:"tls_cert_file"` // with tls_key_file: HTTPS; required unless listen is a loopback address
	TLSKeyFile  string `toml:"tls_key_file"`
	// LoginURL is where the HTTP server connects as a token's login:
	// postgres://{login}@host/db. Required with listen.
	LoginURL string `toml:"login_url"`
	// ReaderURL is a ledger_auditor login that reads the skill catalog
	// (tools/list), the bindings of ledger.principals, attestations and
	// bundles (resources). "": database.url (stdio; that login must then
	// be an auditor too).
	ReaderURL string `toml:"reader_url"`
	// CallTimeout bounds how long tools/call waits for a final state,
	// approval included; the request goes on after it.
	CallTimeout Duration `toml:"call_timeout"`
	// MaxLogins bounds the per-login pools the HTTP server keeps.
	MaxLogins int `toml:"max_logins"`
}

// LoginPlaceholder is what login_url has where the login's name goes.
const LoginPlaceholder = "{login}"

func defaultMCP() MCP {
	return MCP{CallTimeout: Duration{15 * time.Minute}, MaxLogins: 64}
}

func (m MCP) validate() []error {
	var errs []error
	if m.CallTimeout.Duration <= 0 {
		errs = append(errs, errors.New("mcp.call_timeout: must be positive"))
	}
	if m.MaxLogins < 1 || m.MaxLogins > 10000 {
		errs = append(errs, fmt.Errorf("mcp.max_logins: %d is not between 1 and 10000", m.MaxLogins))
	}
	if (m.TLSCertFile == "") != (m.TLSKeyFile == "") {
		errs = append(errs, errors.New("mcp.tls_cert_file and mcp.tls_key_file: set both or neither"))
	}
	if m.ReaderURL != "" {
		if u, err := url.Parse(m.ReaderURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			errs = append(errs, errors.New("mcp.reader_url: want a postgres:// URL"))
		}
	}
	if m.Listen == "" {
		return errs
	}
	host, _, err := net.SplitHostPort(m.Listen)
	if err != nil {
		return append(errs, fmt.Errorf("mcp.listen: %v", err))
	}
	if m.TLSCertFile == "" && !loopback(host) {
		errs = append(errs, fmt.Errorf("mcp.listen: %s is not a loopback address: bearer tokens need TLS there (mcp.tls_cert_file, mcp.tls_key_file)", m.Listen))
	}
	if m.LoginURL == "" {
		errs = append(errs, errors.New("mcp.login_url: required with mcp.listen (postgres://{login}@host/db)"))
	} else if err := checkLoginURL(m.LoginURL); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// checkLoginURL checks that {login} is the URL's user name and nothing
// else: a login's name must never reach the host, the database or an
// option.
func checkLoginURL(s string) error {
	u, err := url.Parse(strings.Replace(s, LoginPlaceholder, "x", 1))
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return errors.New("mcp.login_url: want a postgres:// URL")
	}
	if strings.Count(s, LoginPlaceholder) != 1 || u.User == nil || u.User.Username() != "x" {
		return errors.New("mcp.login_url: the user name must be {login}, and {login} appear nowhere else")
	}
	if _, ok := u.User.Password(); ok {
		return errors.New("mcp.login_url: holds a password; use a passfile (PGPASSFILE) or client certificates")
	}
	return nil
}

// LoginURLFor is login_url for login (a role name, URL-escaped).
func (m MCP) LoginURLFor(login string) string {
	return strings.Replace(m.LoginURL, LoginPlaceholder, url.User(login).String(), 1)
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}
