package wasmrun

import (
	"context"
	"sync"
)

// Storage is where skills' storage_get reads, through granted storage
// prefixes (Config.Storage): a call granted prefix P reads the keys P+K.
// It has no Put: a call's storage_put is held by the call (callCaps.put),
// read back by its own storage_get, and returned as
// executor.Result.StorageWrites when it succeeds; the executor writes
// them in the transaction that records the outcome, so that a call that
// fails leaves nothing. PGStorage reads ledger.skill_storage;
// MemoryStorage serves tests.
type Storage interface {
	// Get returns key's value, or ok false when it has none.
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)
}

// Limits of storage keys (prefix included) and values, in bytes.
const (
	MaxStorageKey   = 512
	MaxStorageValue = 64 << 10
)

// MemoryStorage is a Storage in memory. The zero value is empty and
// ready; it is safe for concurrent use.
type MemoryStorage struct {
	mu sync.Mutex
	m  map[string][]byte
}

var _ Storage = (*MemoryStorage)(nil)

// Get returns a copy of key's value.
func (s *MemoryStorage) Get(_ context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return append([]byte(nil), v...), ok, nil
}

// Put stores a copy of value: how a test seeds the store, or applies a
// call's StorageWrites as the executor would.
func (s *MemoryStorage) Put(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[key] = append([]byte{}, value...)
	return nil
}
