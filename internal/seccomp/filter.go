package seccomp

import (
	"fmt"
	"runtime"
	"slices"
)

// Options selects the optional parts of the policy.
type Options struct {
	// AllowInet allows AF_INET and AF_INET6 sockets besides AF_UNIX.
	AllowInet bool
	// DenyUnixSocket refuses socket(AF_UNIX): a process that shares the
	// host's filesystem and network namespace (tier B) could otherwise
	// connect to the host's Unix sockets — PostgreSQL's included — and to
	// abstract ones. socketpair(AF_UNIX) stays allowed: a connected pair
	// reaches nothing outside the process tree.
	DenyUnixSocket bool
}

// Filter is a compiled seccomp-BPF program for one architecture. It is
// immutable; its methods may be called concurrently.
type Filter struct {
	arch   archTable
	opts   Options
	insns  []Instruction
	rules  []Rule
	denied []string
}

// Build returns the filter for the running GOARCH, or an error wrapping
// ErrUnsupportedArch.
func Build(opts Options) (*Filter, error) {
	return BuildFor(runtime.GOARCH, opts)
}

// BuildFor returns the filter for goarch ("amd64" or "arm64").
func BuildFor(goarch string, opts Options) (*Filter, error) {
	t, err := lookupArch(goarch)
	if err != nil {
		return nil, err
	}
	insns, err := compile(t, opts)
	if err != nil {
		return nil, fmt.Errorf("build %s filter: %w", goarch, err)
	}
	f := &Filter{arch: t, opts: opts, insns: insns, rules: rules(t, opts)}
	for _, r := range f.rules {
		if r.When == "" && r.Action == ActionEPERM {
			f.denied = append(f.denied, r.Syscall)
		}
	}
	slices.Sort(f.denied)
	return f, nil
}

// Arch returns the GOARCH the filter is for.
func (f *Filter) Arch() string { return f.arch.goarch }

// Options returns the options the filter was built with.
func (f *Filter) Options() Options { return f.opts }

// Instructions returns a copy of the program.
func (f *Filter) Instructions() []Instruction { return slices.Clone(f.insns) }

// Bytes returns the program as an array of struct sock_filter in the
// architecture's byte order, which is what bubblewrap's --seccomp FD reads.
func (f *Filter) Bytes() []byte { return encode(f.insns) }

// Denied returns the sorted names of the syscalls that always fail with
// EPERM. Syscalls denied only for some arguments (clone, unshare, ioctl,
// personality, socket, socketpair) and clone3, which fails with ENOSYS,
// are in Rules.
func (f *Filter) Denied() []string { return slices.Clone(f.denied) }

// Rules returns the whole policy in the order the program applies it; a
// syscall no rule names is allowed.
func (f *Filter) Rules() []Rule { return slices.Clone(f.rules) }
