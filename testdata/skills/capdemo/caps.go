//go:build wasip1

package main

import "unsafe"

// Bindings of Palyra's handle functions: the number of names granted of a
// class, and the handle of the index-th one (-1 when there is none).

//go:wasmimport palyra:plugins/host-capabilities@0.1.0 secret-count
func secretCount() int32

//go:wasmimport palyra:plugins/host-capabilities@0.1.0 secret-handle
func secretHandle(index int32) int32

//go:wasmimport palyra:plugins/host-capabilities@0.1.0 storage-count
func storageCount() int32

//go:wasmimport palyra:plugins/host-capabilities@0.1.0 storage-handle
func storageHandle(index int32) int32

//go:wasmimport palyra:plugins/host-capabilities@0.1.0 channel-count
func channelCount() int32

//go:wasmimport palyra:plugins/host-capabilities@0.1.0 channel-handle
func channelHandle(index int32) int32

//go:wasmimport palyra:plugins/host-capabilities@0.1.0 http-count
func httpCount() int32

//go:wasmimport palyra:plugins/host-capabilities@0.1.0 http-handle
func httpHandle(index int32) int32

// Bindings of execledger's capability functions. Pointers are i32
// offsets in the module's memory: unsafe.Pointer parameters, which keep
// what they point to alive during the call. A negative result is an
// error code (see errorName).

//go:wasmimport execledger:capabilities@0.1.0 secret_get
func secretGet(handle int32, buf unsafe.Pointer, capacity uint32) int32

//go:wasmimport execledger:capabilities@0.1.0 storage_get
func storageGet(handle int32, key unsafe.Pointer, keyLen uint32, buf unsafe.Pointer, capacity uint32) int32

//go:wasmimport execledger:capabilities@0.1.0 storage_put
func storagePut(handle int32, key unsafe.Pointer, keyLen uint32, val unsafe.Pointer, valLen uint32) int32

//go:wasmimport execledger:capabilities@0.1.0 channel_publish
func channelPublish(handle int32, msg unsafe.Pointer, length uint32) int32

//go:wasmimport execledger:capabilities@0.1.0 http_request
func httpRequest(handle int32, req unsafe.Pointer, reqLen uint32, buf unsafe.Pointer, capacity uint32) int32

// capError is a negative result of a capability function.
type capError int32

func (e capError) Error() string {
	names := map[capError]string{-1: "denied", -2: "not_found", -3: "bad_memory", -4: "too_large",
		-5: "unavailable", -6: "quota", -7: "invalid", -8: "private_address", -9: "timed_out"}
	if n, ok := names[e]; ok {
		return n
	}
	return "unknown"
}

// ptr is the address of b's first byte, or nil when b is empty.
func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// read calls get with a buffer, again with a larger one when the value
// did not fit, and returns the value.
func read(get func(buf []byte) int32) ([]byte, error) {
	buf := make([]byte, 256)
	for {
		n := get(buf)
		switch {
		case n < 0:
			return nil, capError(n)
		case int(n) <= len(buf):
			return buf[:n], nil
		}
		buf = make([]byte, n)
	}
}

func getSecret(handle int32) ([]byte, error) {
	return read(func(buf []byte) int32 { return secretGet(handle, ptr(buf), uint32(len(buf))) })
}

func getStorage(handle int32, key string) ([]byte, error) {
	k := []byte(key)
	return read(func(buf []byte) int32 {
		return storageGet(handle, ptr(k), uint32(len(k)), ptr(buf), uint32(len(buf)))
	})
}

func putStorage(handle int32, key string, value []byte) error {
	k := []byte(key)
	if r := storagePut(handle, ptr(k), uint32(len(k)), ptr(value), uint32(len(value))); r < 0 {
		return capError(r)
	}
	return nil
}

func publish(handle int32, msg []byte) error {
	if r := channelPublish(handle, ptr(msg), uint32(len(msg))); r < 0 {
		return capError(r)
	}
	return nil
}

func sendHTTP(handle int32, req []byte) ([]byte, error) {
	return read(func(buf []byte) int32 {
		return httpRequest(handle, ptr(req), uint32(len(req)), ptr(buf), uint32(len(buf)))
	})
}
