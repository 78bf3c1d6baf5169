package procinput

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Background modes.
const (
	// BackgroundRunOwned processes belong to the run: they are killed when
	// their lifetime ends or the run ends, whichever is first.
	BackgroundRunOwned = "run_owned"
	// BackgroundDetached processes may outlive the run (until their
	// lifetime ends). They need Policy.AllowDetached.
	BackgroundDetached = "detached"
)

// Background asks for the process to keep running after process.run
// returns. In JSON it is either a boolean (Palyra's form: true means
// {"mode":"run_owned"}, false means foreground) or an object
// {"mode":"run_owned"|"detached","lifetime_ms":N}; a missing mode means
// run_owned. When lifetime_ms is absent, timeout_ms is the lifetime, as in
// Palyra; giving both is refused as ambiguous.
type Background struct {
	Mode       string `json:"mode"`
	LifetimeMS *int64 `json:"lifetime_ms,omitempty"`
}

// decodeBackground sets *dst from true, false, null or an object.
func decodeBackground(v json.RawMessage, dst **Background) error {
	switch string(v) {
	case "null", "false":
		*dst = nil
		return nil
	case "true":
		*dst = &Background{Mode: BackgroundRunOwned}
		return nil
	}
	if len(v) == 0 || v[0] != '{' {
		return invalid(ReasonBackgroundInvalid, `background must be true, false or {"mode":"run_owned"|"detached","lifetime_ms":N}`)
	}
	b := &Background{}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	err := decodeFields(dec, map[string]func(json.RawMessage) error{
		"mode":        func(m json.RawMessage) error { return decodeString(m, "background.mode", &b.Mode) },
		"lifetime_ms": func(m json.RawMessage) error { return decodeInt(m, "background.lifetime_ms", &b.LifetimeMS) },
	})
	if err != nil {
		return err
	}
	switch b.Mode {
	case "":
		b.Mode = BackgroundRunOwned
	case BackgroundRunOwned, BackgroundDetached:
	default:
		return invalid(ReasonBackgroundInvalid, fmt.Sprintf("background.mode %q is not run_owned or detached", b.Mode))
	}
	*dst = b
	return nil
}
