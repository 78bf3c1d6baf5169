//go:build linux && cgo

package procinit

// The init is written in C (cinit_*.c) and starts from a constructor, which
// the dynamic loader runs before the Go runtime: in a process whose argv[1]
// is Hidden it does the init's whole job and exits, so that a sandboxed
// call pays for the loader and a small C program rather than for starting
// this 30 MB Go binary (its runtime and some 170 package initializers) and
// for a Go runtime forking at all. docs/benchmarks.md has the figures. Any
// binary that links this package, test binaries included, is such an init;
// in every other process the constructor returns at once.
//
// The launcher's side (Command, SpecFile) does the hard parts in Go: it
// assembles the seccomp program, lists the rlimits, parses the bridge's
// address and removes duplicate environment entries, and hands the result
// over in a length-prefixed binary format (wire_linux.go) that the C code
// checks and applies.

// #cgo CFLAGS: -O2 -Wall -Wextra -Wno-unused-parameter -fno-strict-aliasing
import "C"
