package procinput

import "time"

// Plan is a checked request: what the spawner runs. Args are the request's
// arguments exactly as sent (after Parse's normalisation); Check never
// rewrites an argument, it only refuses.
type Plan struct {
	// Command is the bare program name, resolved by the spawner against
	// the PATH in Env.
	Command string
	Args    []string
	// Root is the canonical workspace root and Dir the canonical working
	// directory, inside Root.
	Root string
	Dir  string
	// Env is the child's whole environment (see the package doc).
	Env []string
	// EgressMode is the policy's mode; EgressHosts are the hosts the
	// process may reach: for strict, the requested hosts; for preflight,
	// every host found in the request; for none, nil.
	EgressMode  string
	EgressHosts []string
	// Timeout is when the process is killed: the foreground timeout, or a
	// background process's lifetime.
	Timeout time.Duration
	// Background is "" for a foreground run, else BackgroundRunOwned or
	// BackgroundDetached.
	Background string
}
