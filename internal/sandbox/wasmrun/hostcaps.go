package wasmrun

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Host modules of capabilities, linked in every runtime: a module that
// imports neither never sees them.
const (
	// PalyraCapabilitiesModule is Palyra's: <class>-count () -> i32 and
	// <class>-handle (index i32) -> i32 for the classes http, secret,
	// storage and channel.
	PalyraCapabilitiesModule = "palyra:plugins/host-capabilities@0.1.0"
	// CapabilitiesModule holds the functions that use handles:
	// secret_get, channel_publish, storage_get, storage_put and
	// http_request.
	CapabilitiesModule = "execledger:capabilities@0.1.0"
)

// Results of CapabilitiesModule's functions, negative; 0 or more is
// success.
const (
	capDenied      = -1 // the handle is not one the call was granted, of this function's class
	capNotFound    = -2 // the provider holds no such secret
	capMemory      = -3 // a pointer and length outside the module's memory
	capTooLarge    = -4 // a message over 64 KiB, the call's messages over 1 MiB, a storage key or value over its limit
	capUnavailable = -5 // no provider, the provider failed, or the value cannot be redacted
	capQuota       = -6 // the call has used capabilities 256 times
	capInvalid     = -7 // a storage key that is not UTF-8 or holds NUL, a malformed http request
	capPrivate     = -8 // an http host that is or resolves to a private or special address
	capTimeout     = -9 // an http request's time ran out
)

// Outcomes of capability.used events.
var capOutcomes = map[int32]string{
	capDenied: "denied", capNotFound: "not_found", capMemory: "bad_memory",
	capTooLarge: "too_large", capUnavailable: "unavailable", capInvalid: "invalid",
	capPrivate: "private_address", capTimeout: "timed_out",
}

// instantiateCapabilities links both capability host modules in rt and
// returns their names.
func instantiateCapabilities(ctx context.Context, rt wazero.Runtime) ([]string, error) {
	b := rt.NewHostModuleBuilder(PalyraCapabilitiesModule)
	for _, class := range classes {
		exportI32(b, class+"-count", 0, func(ctx context.Context, m api.Module, _ []uint64) int32 {
			if cc := enterHost(ctx, m, 0); cc != nil {
				return int32(len(cc.granted.list(class)))
			}
			return 0
		})
		exportI32(b, class+"-handle", 1, func(ctx context.Context, m api.Module, p []uint64) int32 {
			if cc := enterHost(ctx, m, 0); cc != nil {
				return cc.granted.handle(class, api.DecodeI32(p[0]))
			}
			return -1
		})
	}
	if _, err := b.Instantiate(ctx); err != nil {
		return nil, err
	}
	b = rt.NewHostModuleBuilder(CapabilitiesModule)
	exportI32(b, "secret_get", 3, func(ctx context.Context, m api.Module, p []uint64) int32 {
		return secretGet(ctx, m, api.DecodeU32(p[0]), api.DecodeU32(p[1]), api.DecodeU32(p[2]))
	})
	exportI32(b, "channel_publish", 3, func(ctx context.Context, m api.Module, p []uint64) int32 {
		return channelPublish(ctx, m, api.DecodeU32(p[0]), api.DecodeU32(p[1]), api.DecodeU32(p[2]))
	})
	exportI32(b, "storage_get", 5, func(ctx context.Context, m api.Module, p []uint64) int32 {
		return storageGet(ctx, m, api.DecodeU32(p[0]), api.DecodeU32(p[1]), api.DecodeU32(p[2]), api.DecodeU32(p[3]), api.DecodeU32(p[4]))
	})
	exportI32(b, "storage_put", 5, func(ctx context.Context, m api.Module, p []uint64) int32 {
		return storagePut(ctx, m, api.DecodeU32(p[0]), api.DecodeU32(p[1]), api.DecodeU32(p[2]), api.DecodeU32(p[3]), api.DecodeU32(p[4]))
	})
	exportI32(b, "http_request", 5, func(ctx context.Context, m api.Module, p []uint64) int32 {
		return httpRequest(ctx, m, api.DecodeU32(p[0]), api.DecodeU32(p[1]), api.DecodeU32(p[2]), api.DecodeU32(p[3]), api.DecodeU32(p[4]))
	})
	if _, err := b.Instantiate(ctx); err != nil {
		return nil, err
	}
	return []string{PalyraCapabilitiesModule, CapabilitiesModule}, nil
}

// exportI32 exports fn as a function of params i32 parameters, which it
// reads from p, and an i32 result. It is a Go module function rather
// than WithFunc's, which wazero calls by reflection: several times what
// the call itself costs, which HostCallFuel would not cover.
func exportI32(b wazero.HostModuleBuilder, name string, params int,
	fn func(ctx context.Context, m api.Module, p []uint64) int32) {
	i32 := func(n int) []api.ValueType { return slices.Repeat([]api.ValueType{api.ValueTypeI32}, n) }
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, m api.Module, stack []uint64) {
		stack[0] = api.EncodeI32(fn(ctx, m, stack))
	}), i32(params), i32(1)).Export(name)
}

// secretGet is secret_get(handle, buf, cap i32) -> i32: it returns the
// length of the secret's value, writing the value at buf when it fits in
// cap bytes (nothing otherwise: call again with a buffer that large), or
// a negative error. The value is registered with the call's redactor
// first. It is charged the value's length.
func secretGet(ctx context.Context, m api.Module, handle, buf, capacity uint32) int32 {
	cc, refused := callerCaps(ctx, m, 0)
	if refused != 0 {
		return refused
	}
	name, ok := cc.granted.lookup(classSecret, int32(handle))
	r := func() int32 {
		switch {
		case !ok:
			return capDenied
		case cc.secrets == nil:
			return capUnavailable
		}
		ctx, cancel := cc.bound(ctx)
		defer cancel()
		v, err := cc.secrets.Secret(ctx, name)
		switch {
		case errors.Is(err, ErrSecretNotFound):
			return capNotFound
		case err != nil:
			return capUnavailable
		case cc.addSecret(v) != nil:
			return capUnavailable
		case uint32(len(v)) <= capacity && !m.Memory().Write(buf, []byte(v)):
			return capMemory
		}
		return int32(len(v))
	}()
	recorded := cc.record(capabilityUse{class: classSecret, handle: int32(handle), name: name, outcome: outcomeOf(r)})
	cc.produced(m, r)
	if !recorded {
		return capQuota
	}
	return r
}

// channelPublish is channel_publish(handle, msg, len i32) -> i32: it
// publishes len bytes at msg on the channel, returning 0, or a negative
// error. It is charged len.
func channelPublish(ctx context.Context, m api.Module, handle, msg, length uint32) int32 {
	cc, refused := callerCaps(ctx, m, uint64(length))
	if refused != 0 {
		return refused
	}
	name, ok := cc.granted.lookup(classChannel, int32(handle))
	u := capabilityUse{class: classChannel, handle: int32(handle), name: name}
	r := func() int32 {
		if !ok {
			return capDenied
		}
		if length > maxChannelMessage {
			return capTooLarge
		}
		b, ok := m.Memory().Read(msg, length)
		if !ok {
			return capMemory
		}
		cc.mu.Lock()
		defer cc.mu.Unlock()
		if cc.published+int(length) > maxChannelBytesCall {
			return capTooLarge
		}
		cc.published += int(length)
		u.message, u.published = append([]byte(nil), b...), true
		return 0
	}()
	u.outcome = outcomeOf(r)
	if !cc.record(u) {
		return capQuota
	}
	return r
}

func outcomeOf(r int32) string {
	if r >= 0 {
		return "ok"
	}
	return capOutcomes[r]
}

// storageKey resolves a storage handle and the key at key: the granted
// prefix and the full key, or an error result.
func storageKey(cc *callCaps, m api.Module, handle, key, length uint32) (prefix, full string, r int32) {
	prefix, ok := cc.granted.lookup(classStorage, int32(handle))
	switch {
	case !ok:
		return "", "", capDenied
	case cc.storage == nil:
		return prefix, "", capUnavailable
	case length > MaxStorageKey:
		return prefix, "", capTooLarge
	}
	b, ok := m.Memory().Read(key, length)
	switch {
	case !ok:
		return prefix, "", capMemory
	case len(prefix)+len(b) > MaxStorageKey:
		return prefix, "", capTooLarge
	case !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0:
		return prefix, "", capInvalid
	}
	return prefix, prefix + string(b), 0
}

// storageGet is storage_get(handle, key, key_len, buf, cap) -> i32: the
// length of the value of the granted prefix followed by the key_len bytes
// at key, written at buf when it fits in cap bytes, or a negative error
// (-2: no value). It is charged key_len and the value's length.
func storageGet(ctx context.Context, m api.Module, handle, key, keyLen, buf, capacity uint32) int32 {
	cc, refused := callerCaps(ctx, m, uint64(keyLen))
	if refused != 0 {
		return refused
	}
	prefix, full, r := storageKey(cc, m, handle, key, keyLen)
	if r == 0 {
		ctx, cancel := cc.bound(ctx)
		defer cancel()
		v, ok := cc.pending(full) // the call reads its own writes first
		var err error
		if !ok {
			v, ok, err = cc.storage.Get(ctx, full)
		}
		switch {
		case err != nil:
			r = capUnavailable
		case !ok:
			r = capNotFound
		case uint32(len(v)) <= capacity && !m.Memory().Write(buf, v):
			r = capMemory
		default:
			r = int32(len(v))
		}
	}
	cc.record(capabilityUse{class: classStorage, handle: int32(handle), name: prefix, key: full, outcome: outcomeOf(r)})
	cc.produced(m, r)
	return r
}

// storagePut is storage_put(handle, key, key_len, val, val_len) -> i32:
// 0 once the val_len bytes at val are to be the value of the granted
// prefix followed by the key, or a negative error (-4 beyond the call's
// MaxStorageWrites keys or MaxStorageWriteBytes). The write is the call's
// until it ends: it commits with the call's outcome, only if the call
// succeeds (executor.Result.StorageWrites). Secrets the call read are
// stored redacted. It is charged key_len and val_len.
func storagePut(ctx context.Context, m api.Module, handle, key, keyLen, val, valLen uint32) int32 {
	cc, refused := callerCaps(ctx, m, uint64(keyLen)+uint64(valLen))
	if refused != 0 {
		return refused
	}
	prefix, full, r := storageKey(cc, m, handle, key, keyLen)
	if r == 0 {
		v, ok := m.Memory().Read(val, valLen)
		switch {
		case valLen > MaxStorageValue:
			r = capTooLarge
		case !ok:
			r = capMemory
		default:
			r = cc.put(full, cc.scrub(bytes.Clone(v)))
		}
	}
	cc.record(capabilityUse{class: classStorage, handle: int32(handle), name: prefix, key: full, outcome: outcomeOf(r)})
	return r
}
