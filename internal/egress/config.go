package egress

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"time"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultDialTimeout = 10 * time.Second
	DefaultIdleTimeout = 60 * time.Second
	DefaultMaxDuration = 5 * time.Minute
	DefaultMaxBytes    = 64 << 20
	DefaultMaxConns    = 128
)

// DefaultPorts are the destination ports allowed when Config.Ports is empty.
var DefaultPorts = []int{80, 443}

// Resolver resolves host names; net.DefaultResolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = net.DefaultResolver

// Config configures a Proxy. Zero fields take the defaults noted; negative
// durations and sizes are invalid. Limits cannot be switched off.
type Config struct {
	Allow       *Allowlist    // nil allows nothing
	Ports       []int         // allowed destination ports, default DefaultPorts
	Resolver    Resolver      // default net.DefaultResolver
	DialTimeout time.Duration // resolution plus dialling, default 10s
	IdleTimeout time.Duration // no byte in either direction, default 60s
	MaxDuration time.Duration // per connection from accept, default 5m
	MaxBytes    int64         // per connection, both directions together, default 64 MiB
	MaxConns    int           // connections served at once, default 128
	// PrivateRanges are special ranges (see IsSpecial) that an allowlisted
	// host may resolve into, or be as an IP literal, besides Allow's own
	// IP/CIDR entries. They allowlist nothing by themselves: an IP literal
	// in one that Allow does not list is refused (host_not_allowlisted).
	PrivateRanges []netip.Prefix
	// OnConnection is called once per accepted connection when it ends
	// (allowed or refused), from the connection's goroutine; it must not
	// block long.
	OnConnection func(Connection)
	// Dial connects to an IP:port the proxy has checked; default a
	// net.Dialer. Tests inject it.
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	Logger *slog.Logger // accept errors; default discards
}

func (c Config) withDefaults() Config {
	if len(c.Ports) == 0 {
		c.Ports = DefaultPorts
	}
	c.Ports = slices.Clone(c.Ports)
	c.PrivateRanges = slices.Clone(c.PrivateRanges)
	for i, p := range c.PrivateRanges {
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		c.PrivateRanges[i] = p.Masked()
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	c.DialTimeout = orDefault(c.DialTimeout, DefaultDialTimeout)
	c.IdleTimeout = orDefault(c.IdleTimeout, DefaultIdleTimeout)
	c.MaxDuration = orDefault(c.MaxDuration, DefaultMaxDuration)
	c.MaxBytes = orDefault(c.MaxBytes, DefaultMaxBytes)
	c.MaxConns = orDefault(c.MaxConns, DefaultMaxConns)
	if c.Dial == nil {
		c.Dial = (&net.Dialer{}).DialContext
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func (c Config) validate() error {
	for _, p := range c.Ports {
		if p < 1 || p > 65535 {
			return fmt.Errorf("egress: %w: port %d out of range", ErrInvalidConfig, p)
		}
	}
	for _, p := range c.PrivateRanges {
		if !p.IsValid() || p.Bits() == 0 {
			return fmt.Errorf("egress: %w: private range %s is invalid or matches every address", ErrInvalidConfig, p)
		}
	}
	switch {
	case c.DialTimeout < 0, c.IdleTimeout < 0, c.MaxDuration < 0:
		return fmt.Errorf("egress: %w: negative timeout", ErrInvalidConfig)
	case c.MaxBytes < 0:
		return fmt.Errorf("egress: %w: negative MaxBytes", ErrInvalidConfig)
	case c.MaxConns < 0:
		return fmt.Errorf("egress: %w: negative MaxConns", ErrInvalidConfig)
	}
	return nil
}
