package wasmrun

import (
	"context"
	"sync"
)

// Storage is the key-value store skills reach through granted storage
// prefixes (Config.Storage): a call granted prefix P reads and writes the
// keys P+K. PGStorage keeps them in ledger.skill_storage; MemoryStorage serves tests.
type Storage interface {
	// Get returns key's value, or ok false when it has none.
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)
	// Put sets key's value.
	Put(ctx context.Context, key string, value []byte) error
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

// Put stores a copy of value.
func (s *MemoryStorage) Put(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[key] = append([]byte{}, value...)
	return nil
}
