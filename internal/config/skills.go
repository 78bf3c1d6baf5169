package config

import (
	"errors"
	"time"
)

// Skills configures installed skills: `execledger skill install` (trust on
// first use, the capability maximum is [wasm]'s policy_* lists) and
// serve's scheduled re-audit. Skills run in tier A: [wasm] enabled must be
// true for serve to run them.
type Skills struct {
	Enabled bool `toml:"enabled"` // false: serve runs no installed skill (their calls are unsupported)
	// TrustOnFirstUse pins a publisher's key at the first install of one
	// of its skills when the trust store holds no key of that publisher
	// (recorded as trust.key_added). Off: only keys an operator added are
	// trusted.
	TrustOnFirstUse bool `toml:"trust_on_first_use"`
	// ReauditInterval is how often serve audits every installed skill
	// again (also at once when an operator changes the trust store).
	ReauditInterval Duration `toml:"reaudit_interval"`
	// AllowWildcards lets a skill request wildcard capabilities (with its
	// manifest's wildcard_opt_in); off, such a skill is quarantined.
	AllowWildcards bool `toml:"allow_wildcards"`
}

func defaultSkills() Skills {
	return Skills{Enabled: true, ReauditInterval: Duration{6 * time.Hour}}
}

func (s Skills) validate() []error {
	if s.ReauditInterval.Duration < time.Minute {
		return []error{errors.New("skills: reaudit_interval must be at least 1m")}
	}
	return nil
}
