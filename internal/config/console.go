package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"
)

// Console configures the web console (`execledger console`, `serve
// --console`, on by default in `dev`). A person signs in with their own
// PostgreSQL login and password; the console connects as that login
// through LoginURL (database.url when empty) with the user and password
// replaced, so the server authenticates every person and row security,
// the principal mapping and the roles decide what each sees and does.
type Console struct {
	// Enabled runs the console inside `execledger serve` (serve
	// --console sets it; dev runs it unless --console=false).
	Enabled     bool   `toml:"enabled"`
	Listen      string `toml:"listen"`        // host:port of the console
	TLSCertFile string `toml:"tls_cert_file"` // with tls_key_file: HTTPS; required unless listen is a loopback address
	TLSKeyFile  string `toml:"tls_key_file"`
	// LoginURL is the server people sign in to: a postgres:// URL without
	// user or password (both come from the sign-in form). "": database.url
	// with its user and password removed.
	LoginURL string `toml:"login_url"`
	// IdleTimeout signs a person out after this long without a request;
	// their connections are closed.
	IdleTimeout Duration `toml:"idle_timeout"`
	// SessionConns is the size of each signed-in person's own pool.
	SessionConns int `toml:"session_conns"`
	// MaxSessions bounds the sessions (and so the pools) open at once.
	MaxSessions int `toml:"max_sessions"`
	// SignInAttempts is how many sign-in attempts one client address, and
	// separately one login name, may make per minute.
	SignInAttempts int `toml:"sign_in_attempts"`
	// Keys the request page checks attestations and inclusion proofs
	// with: the log's note verifier key (file or key text), attestation
	// public keys (PEM files) and witness keys. Empty: serve and dev use
	// the public halves of their own keys where they have them.
	LogKey      string   `toml:"log_key"`
	AttestKeys  []string `toml:"attest_keys"`
	WitnessKeys []string `toml:"witness_keys"`
	// AllowUncheckedPasswords lets people sign in to a server that does
	// not check passwords (trust authentication), where any password is
	// accepted. Off: such a sign-in is refused. dev turns it on for its
	// embedded, loopback-only server.
	AllowUncheckedPasswords bool `toml:"allow_unchecked_passwords"`
}

func defaultConsole() Console {
	return Console{Listen: "127.0.0.1:9470", IdleTimeout: Duration{15 * time.Minute}, SessionConns: 2, MaxSessions: 200,
		SignInAttempts: 10, AttestKeys: []string{}, WitnessKeys: []string{}}
}

func (c Console) validate() []error {
	var errs []error
	if c.IdleTimeout.Duration < time.Minute || c.IdleTimeout.Duration > 24*time.Hour {
		errs = append(errs, fmt.Errorf("console.idle_timeout: %s is not between 1m and 24h", c.IdleTimeout))
	}
	if c.SessionConns < 1 || c.SessionConns > 16 {
		errs = append(errs, fmt.Errorf("console.session_conns: %d is not between 1 and 16", c.SessionConns))
	}
	if c.MaxSessions < 1 || c.MaxSessions > 10000 {
		errs = append(errs, fmt.Errorf("console.max_sessions: %d is not between 1 and 10000", c.MaxSessions))
	}
	if c.SignInAttempts < 1 || c.SignInAttempts > 1000 {
		errs = append(errs, fmt.Errorf("console.sign_in_attempts: %d is not between 1 and 1000", c.SignInAttempts))
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, errors.New("console.tls_cert_file and console.tls_key_file: set both or neither"))
	}
	if c.LoginURL != "" {
		u, err := url.Parse(c.LoginURL)
		switch {
		case err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql"):
			errs = append(errs, errors.New("console.login_url: want a postgres:// URL"))
		case u.User != nil:
			errs = append(errs, errors.New("console.login_url: must name no user or password (the sign-in supplies both)"))
		}
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return append(errs, fmt.Errorf("console.listen: %v", err))
	}
	if c.TLSCertFile == "" && !loopback(host) {
		errs = append(errs, fmt.Errorf("console.listen: %s is not a loopback address: passwords and session cookies need TLS there (console.tls_cert_file, console.tls_key_file)", c.Listen))
	}
	return errs
}

// ConsoleLoginURL is the URL the console connects to as a person, without
// user or password: console.login_url, or database.url without its own.
func (c Config) ConsoleLoginURL() (string, error) {
	raw := c.Console.LoginURL
	if raw == "" {
		raw = c.Database.URL
	}
	if raw == "" {
		return "", errors.New("console: set database.url (DATABASE_URL) or console.login_url")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("console: login URL: %w", err)
	}
	u.User = nil
	return u.String(), nil
}

// ConsoleReplicaURL is the URL the console's pages read from, without a
// user or password: database.replica_url (EXECLEDGER_DATABASE_REPLICA_URL)
// when set, else "" (the pages read from the login URL's server).
func (c Config) ConsoleReplicaURL() (string, error) {
	if c.Database.ReplicaURL == "" {
		return "", nil
	}
	u, err := url.Parse(c.Database.ReplicaURL)
	if err != nil {
		return "", fmt.Errorf("console: database.replica_url: %w", err)
	}
	u.User = nil
	return u.String(), nil
}
