package projector

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/execledger/execledger/internal/config"

	"github.com/prometheus/client_golang/prometheus"
)

// Config tunes an Engine. Zero values take the defaults of WithDefaults.
type Config struct {
	// BatchSize is the most events read and applied in one transaction.
	BatchSize int
	// PollInterval is how long a runner waits after finding nothing to do
	// (caught up, or failed) before it looks again. After a batch it looks
	// again at once.
	PollInterval time.Duration
	// LockRetryInterval is how often a standby tries to take a projection's
	// lock: the longest a dead runner's projection waits for a standby.
	LockRetryInterval time.Duration
	// MaxBackoff caps the wait between reconnections after a database error.
	MaxBackoff time.Duration
	// NoGroup runs each of the ledger's read models on a runner of its own,
	// each reading and parsing every batch itself, instead of together in
	// one pass (the default; see group). For measurement and tests.
	NoGroup bool
	// Registerer, when set, receives the engine's metrics.
	Registerer prometheus.Registerer
	// Logger receives the engine's logs; nil discards them.
	Logger *slog.Logger
}

// WithDefaults fills unset fields.
// BatchSize and PollInterval default to the configuration's
// (config.Default); the others are not configuration keys.
func (c Config) WithDefaults() Config {
	d := config.Default().Projector
	if c.BatchSize == 0 {
		c.BatchSize = d.BatchSize
	}
	if c.PollInterval == 0 {
		c.PollInterval = d.PollInterval.Duration
	}
	if c.LockRetryInterval == 0 {
		c.LockRetryInterval = time.Second
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.BatchSize < 1:
		return fmt.Errorf("projector: batch size %d must be at least 1", c.BatchSize)
	case c.PollInterval <= 0, c.LockRetryInterval <= 0, c.MaxBackoff <= 0:
		return errors.New("projector: poll interval, lock retry interval and max backoff must be positive")
	}
	return nil
}
