package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The time flags (--since, --until of requests list, audit and export)
// all take the same values, read by parseTimeFlag:
//
//   - an RFC 3339 time: 2026-11-24T09:00:00Z, 2026-11-24T10:00:00+01:00
//   - a date, midnight UTC: 2026-11-24
//   - a duration back from now: 90m, 24h, 7d ("ago": --until 24h is
//     before yesterday at this time, --since 24h the last day)
//
// --since is inclusive, --until exclusive.
const timeFlagHelp = "RFC 3339 (2026-11-24T09:00:00Z), a date (2026-11-24, midnight UTC) or a duration ago (90m, 24h, 7d)"

var errBadTime = errors.New("want an RFC 3339 time (2026-11-24T09:00:00Z), a date (2026-11-24) or a duration ago (90m, 24h, 7d)")

// parseTimeFlag reads a time flag's value, durations relative to now; ""
// is the zero time (no bound).
func parseTimeFlag(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n > 365*100 {
			return time.Time{}, fmt.Errorf("%q: %w", s, errBadTime)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return time.Time{}, fmt.Errorf("%q: %w", s, errBadTime)
		}
	}
	if d <= 0 {
		return time.Time{}, fmt.Errorf("%q: the duration must be positive (it counts back from now)", s)
	}
	return now.Add(-d), nil
}

// timeRange reads a --since and an --until; since must come before until.
func timeRange(since, until string, now time.Time) (from, to time.Time, err error) {
	if from, err = parseTimeFlag(since, now); err != nil {
		return from, to, fmt.Errorf("--since: %w", err)
	}
	if to, err = parseTimeFlag(until, now); err != nil {
		return from, to, fmt.Errorf("--until: %w", err)
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		return from, to, fmt.Errorf("--since %s is not before --until %s (a duration counts back from now: --since 48h --until 24h is the day before the last)",
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	return from, to, nil
}

// limitFlagHelp is what every --limit says: 0 is no limit, everywhere.
func limitFlagHelp(what string, def int) string {
	return fmt.Sprintf("at most `N` %s (default %d; 0: no limit)", what, def)
}
