package wasmrun

import (
	"container/list"
	"context"
	"sync"
)

// moduleCache holds plugin.run's compiled modules by the digest of the
// module as sent: each is compiled once, by the first call that needs
// it, while later calls wait for it. Failures are kept too, so a module
// that does not compile is not compiled again on every call. The least
// recently used entries beyond size are dropped; a program still in use
// is closed when its last call ends.
type moduleCache struct {
	size int

	mu      sync.Mutex
	entries map[string]*cacheEntry
	lru     *list.List // of *cacheEntry, most recent first
}

type cacheEntry struct {
	key   string
	ready chan struct{} // closed once prog or err is set
	prog  *program
	err   error
	refs  int
	elem  *list.Element
	gone  bool // dropped from the cache: close when refs reaches 0
}

func newModuleCache(size int) *moduleCache {
	return &moduleCache{size: size, entries: map[string]*cacheEntry{}, lru: list.New()}
}

// get returns the program for key, compiling it if no one has, and a
// function to call when done with it. It stops waiting for another call's
// compilation when ctx ends.
func (c *moduleCache) get(ctx context.Context, key string, compile func() (*program, error)) (*program, func(), error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok {
		c.lru.MoveToFront(e.elem)
	} else {
		e = &cacheEntry{key: key, ready: make(chan struct{})}
		e.elem = c.lru.PushFront(e)
		c.entries[key] = e
		c.evict()
	}
	e.refs++
	c.mu.Unlock()
	done := func() { c.release(e) }

	if !ok {
		e.prog, e.err = compile()
		close(e.ready)
	} else {
		select {
		case <-e.ready:
		case <-ctx.Done():
			done()
			return nil, nil, interrupted(ctx)
		}
	}
	if e.err != nil {
		done()
		return nil, nil, e.err
	}
	return e.prog, done, nil
}

// evict drops the least recently used entries beyond size. c.mu is held.
func (c *moduleCache) evict() {
	for c.lru.Len() > c.size {
		e := c.lru.Remove(c.lru.Back()).(*cacheEntry)
		delete(c.entries, e.key)
		e.gone = true
		if e.refs == 0 {
			e.close()
		}
	}
}

func (c *moduleCache) release(e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.refs--
	if e.refs == 0 && e.gone {
		e.close()
	}
}

// close closes the entry's program; refs is 0, so it is compiled.
func (e *cacheEntry) close() {
	if e.prog != nil {
		e.prog.compiled.Close(context.Background())
	}
}
