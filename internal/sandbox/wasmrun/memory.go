package wasmrun

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

const pageSize = 65536

// memoryCap backs an instance's linear memories and enforces the memory
// limit. It is the limit rather than wazero's WithMemoryLimitPages
// because it sees what that cannot: a memory.grow refused at the limit
// returns -1 to the module either way, but only here is the refusal
// recorded, so that a call that then fails is quota_exceeded rather than
// a plain trap. The runtime's own limit stays at WebAssembly's 4 GiB so
// that a module declaring a larger maximum than ours still compiles
// (Palyra's wasmtime limiter behaves the same); a minimum above ours is
// refused before instantiation (checkModule).
type memoryCap struct {
	limit uint64 // bytes

	mu      sync.Mutex
	peak    uint64 // bytes, over all the instance's memories
	refused bool
}

var _ experimental.MemoryAllocator = (*memoryCap)(nil)

// Allocate implements experimental.MemoryAllocator.
func (m *memoryCap) Allocate(_, _ uint64) experimental.LinearMemory {
	return &linearMemory{owner: m}
}

// Refused reports whether a grow was refused at the limit.
func (m *memoryCap) Refused() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused
}

// PeakPages is the largest memory size reached, in pages.
func (m *memoryCap) PeakPages() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(m.peak / pageSize)
}

// linearMemory is one memory; its buffer grows as append would, never
// past the limit.
type linearMemory struct {
	owner *memoryCap
	buf   []byte
}

// Reallocate implements experimental.LinearMemory. wazero asks for the
// minimum first, then for each grow within the module's declared maximum.
func (l *linearMemory) Reallocate(size uint64) []byte {
	m := l.owner
	if size > m.limit {
		m.mu.Lock()
		m.refused = true
		m.mu.Unlock()
		return nil
	}
	if size <= uint64(cap(l.buf)) {
		l.buf = l.buf[:size]
	} else {
		c := min(max(size, 2*uint64(cap(l.buf))), m.limit)
		nb := make([]byte, size, c)
		copy(nb, l.buf)
		l.buf = nb
	}
	m.mu.Lock()
	m.peak = max(m.peak, size)
	m.mu.Unlock()
	return l.buf
}

// Free implements experimental.LinearMemory; the garbage collector frees.
func (l *linearMemory) Free() { l.buf = nil }
