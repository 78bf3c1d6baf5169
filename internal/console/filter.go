package console

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// listFilter is what the requests and the audit trail pages both filter
// by: a principal, a tool and a time range, as typed (for the form and
// the links) and as parsed.
type listFilter struct {
	Principal, Tool string
	Since, Until    string // as typed
	since, until    time.Time
}

// parseListFilter reads the shared filters from a page's query string.
func parseListFilter(q url.Values) (listFilter, error) {
	f := listFilter{Principal: strings.TrimSpace(q.Get("principal")), Tool: strings.TrimSpace(q.Get("tool")),
		Since: q.Get("since"), Until: q.Get("until")}
	var err error
	if f.since, err = parseTime("since", f.Since); err != nil {
		return f, err
	}
	if f.until, err = parseTime("until", f.Until); err != nil {
		return f, err
	}
	if !f.since.IsZero() && !f.until.IsZero() && !f.since.Before(f.until) {
		return f, fmt.Errorf("since %s is not before until %s", f.Since, f.Until)
	}
	return f, nil
}

// values is f as a query string's values, for a page's links.
func (f listFilter) values(extra map[string]string) url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"principal": f.Principal, "tool": f.Tool, "since": f.Since, "until": f.Until} {
		if s != "" {
			v.Set(k, s)
		}
	}
	for k, s := range extra {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// parseTime reads an RFC 3339 time or a datetime-local input's value
// (taken as UTC); "" is no bound.
func parseTime(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s %q is not a time (2026-11-24T09:00 or RFC 3339, UTC)", field, v)
}
