package wasmrun

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/execledger/execledger/executor"
	"github.com/execledger/execledger/internal/redact"
)

// Limits of a call's capability uses.
const (
	maxCapabilityUses   = 256      // uses recorded per call; more are refused (errQuota)
	maxChannelMessage   = 64 << 10 // bytes per message
	maxChannelBytesCall = 1 << 20  // bytes of messages per call
)

// callCaps is one call's capabilities: what it was granted, the uses it
// made, in order, and the secrets it read, which its output must not
// show; and what every host function checks and charges (hostcall.go):
// the call's deadline and its fuel. Host functions find it in their
// context (withCallCaps).
type callCaps struct {
	granted  Capabilities
	secrets  SecretProvider
	storage  Storage
	http     HTTPOptions
	deadline time.Time // when the call's time runs out; zero: never (tests)
	stopped  bool      // a yield or a host function ended the call: its context ended or its time ran out
	meter    fuelMeter // charges host calls (callCaps.charge); nil: nothing is charged (tests)
	wasi     wasiSizes // what args_get and environ_get write

	mu        sync.Mutex
	uses      []capabilityUse
	published int               // bytes of channel messages
	red       *redact.Redactor  // the secrets read; nil until one is
	values    []string          // the secrets read, for callRedactor.cut
	writes    map[string][]byte // storage_put's, committed with the call's outcome
	written   int               // bytes of writes' values
}

// Bounds of a call's pending storage writes, held in memory until the
// call ends and then by the executor until its outcome is recorded: some
// 1.1 MiB a call at most (keys of up to MaxStorageKey bytes included), and
// one completion batch's statement of a bounded size. A put beyond them
// is refused as one over a value's limit is (-4, capability.used
// outcome too_large). A key written again counts once, at its latest
// value's size (after redaction). maxCapabilityUses bounds the puts of a call
// to the same 256, so today the byte bound is the one a call meets; the
// key bound stands on its own should that limit grow.
const (
	MaxStorageWrites     = 256     // distinct keys
	MaxStorageWriteBytes = 1 << 20 // their values, in all
)

// put records a write for the outcome's transaction, or refuses it
// (capTooLarge) beyond the call's bounds.
func (cc *callCaps) put(key string, value []byte) int32 {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.writes == nil {
		cc.writes = map[string][]byte{}
	}
	old, exists := cc.writes[key]
	if !exists && len(cc.writes) >= MaxStorageWrites || cc.written-len(old)+len(value) > MaxStorageWriteBytes {
		return capTooLarge
	}
	cc.written += len(value) - len(old)
	cc.writes[key] = value
	return 0
}

// pending returns the call's own write of key, if it made one.
func (cc *callCaps) pending(key string) ([]byte, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	v, ok := cc.writes[key]
	return v, ok
}

// storageWrites are the call's writes, the last of each key, in key
// order (so that the executor's upserts lock rows in one order).
func (cc *callCaps) storageWrites() []executor.StorageWrite {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	out := make([]executor.StorageWrite, 0, len(cc.writes))
	for k, v := range cc.writes {
		out = append(out, executor.StorageWrite{Key: k, Value: v})
	}
	slices.SortFunc(out, func(a, b executor.StorageWrite) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// capabilityUse is one use of a capability: a capability.used event and,
// for a publication, its message.
type capabilityUse struct {
	class, name, outcome string
	key                  string // storage: the key, prefix included
	handle               int32
	status, bytes        int    // http: the response's status and body bytes
	message              []byte // channel: what was published
	published            bool
}

type callCapsKey struct{}

func withCallCaps(ctx context.Context, cc *callCaps) context.Context {
	return context.WithValue(ctx, callCapsKey{}, cc)
}

func callCapsFrom(ctx context.Context) *callCaps {
	cc, _ := ctx.Value(callCapsKey{}).(*callCaps)
	return cc
}

// expired reports whether the call's time ran out.
func (cc *callCaps) expired() bool { return !cc.deadline.IsZero() && !time.Now().Before(cc.deadline) }

// bound is ctx ending when the call's time runs out too, for a host
// function that waits (the call's own context has no deadline: see
// Tool.execute).
func (cc *callCaps) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if cc.deadline.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadlineCause(ctx, cc.deadline, errTimeout)
}

// callerCaps is the capability functions' prologue: enterHost, charging
// bytes (the lengths the module passed); then the capabilities of the
// call the function serves, or the result that refuses the use:
// capDenied outside a call (a module run by something other than Tool),
// capQuota once the call has used up its uses.
func callerCaps(ctx context.Context, m api.Module, bytes uint64) (*callCaps, int32) {
	cc := enterHost(ctx, m, bytes)
	switch {
	case cc == nil:
		return nil, capDenied
	case cc.full():
		return nil, capQuota
	}
	return cc, 0
}

// record appends a use, or reports false when the call has used up its
// uses.
func (cc *callCaps) record(u capabilityUse) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if len(cc.uses) >= maxCapabilityUses {
		return false
	}
	cc.uses = append(cc.uses, u)
	return true
}

// full reports whether the call has used up its uses. A call runs on one
// goroutine, so none is recorded between full and record.
func (cc *callCaps) full() bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.uses) >= maxCapabilityUses
}

// addSecret registers a value read so that the call's output, stderr and
// messages never show it. A value the redactor refuses (too short, or one
// the marker would spell) is not given to the module.
func (cc *callCaps) addSecret(v string) error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.red == nil {
		cc.red = redact.New(redact.Options{})
	}
	if err := cc.red.AddSecret(v); err != nil {
		return err
	}
	cc.values = append(cc.values, v)
	return nil
}

// scrub is value with the secrets the call read so far redacted.
func (cc *callCaps) scrub(value []byte) []byte {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.red == nil {
		return value
	}
	return cc.red.Bytes(value)
}

// redactor is what redacts the call's output: base, after the secrets it
// read.
func (cc *callCaps) redactor(base *redact.Redactor) callRedactor {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return callRedactor{base: base, secrets: cc.red, values: slices.Clone(cc.values)}
}

// events are the call's capability events, in order: capability.used for
// every use, and for every publication channel.published and
// channel.message, its message redacted by red.
func (cc *callCaps) events(red callRedactor) []executor.Event {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	var evs []executor.Event
	for _, u := range cc.uses {
		p := map[string]any{"class": u.class, "handle": u.handle, "name": u.name, "outcome": u.outcome}
		if u.class == classStorage && u.outcome != outcomeOf(capDenied) {
			p["key"] = red.String(u.key)
		}
		if u.class == classHTTP {
			p["name"], p["status"], p["bytes"] = red.String(u.name), u.status, u.bytes
		}
		evs = append(evs, executor.Event{Type: "capability.used", Payload: p})
		if u.published {
			evs = append(evs, publication(u.name, u.message, red)...)
		}
	}
	return evs
}

// publication is channel.published, for the request's stream, and
// channel.message, which the executor appends to stream channel:<name>. The message is recorded as JSON when it is JSON, else
// as base64, redacted either way; bytes and sha256 are of the message as
// recorded.
func publication(channel string, msg []byte, red callRedactor) []executor.Event {
	m := map[string]any{"channel": channel}
	var recorded []byte
	if json.Valid(msg) {
		recorded = red.JSON(msg)
		m["message"] = json.RawMessage(recorded)
	} else {
		recorded = red.Bytes(msg)
		m["message_base64"] = base64.StdEncoding.EncodeToString(recorded)
	}
	sum := sha256.Sum256(recorded)
	pub := map[string]any{"channel": channel, "bytes": len(recorded), "sha256": hex.EncodeToString(sum[:]),
		"redacted": string(recorded) != string(msg)}
	return []executor.Event{
		{Type: "channel.published", Payload: pub},
		{Type: "channel.message", Payload: m, Stream: "channel:" + channel},
	}
}

// callRedactor redacts a call's output: the secrets it read, then base's
// heuristics and secrets.
type callRedactor struct {
	base, secrets *redact.Redactor
	values        []string
}

// cut removes from the end of s, text cut short by a limit, what may be
// the start of a secret the call read or of one of the encodings the
// redactor knows (which it could not recognize there).
func (r callRedactor) cut(s string) string {
	for _, v := range r.values {
		for _, form := range []string{v, jsonEscaped(v, true), jsonEscaped(v, false), url.QueryEscape(v), url.PathEscape(v),
			base64.RawStdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v))} {
			for k := min(len(form)-1, len(s)); k > 0; k-- {
				if strings.HasSuffix(s, form[:k]) {
					s = s[:len(s)-k]
					break
				}
			}
		}
	}
	return s
}

func (r callRedactor) String(s string) string {
	if r.secrets != nil {
		s = r.secrets.String(s)
	}
	return r.base.String(s)
}

func (r callRedactor) Bytes(b []byte) []byte {
	if r.secrets != nil {
		b = r.secrets.Bytes(b)
	}
	return r.base.Bytes(b)
}

func (r callRedactor) JSON(b json.RawMessage) json.RawMessage {
	if r.secrets != nil {
		b = r.secrets.JSON(b)
	}
	return r.base.JSON(b)
}

// jsonEscaped is v as a JSON string's contents, with or without HTML's
// characters escaped.
func jsonEscaped(v string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	enc.Encode(v)
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}
