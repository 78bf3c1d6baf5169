package wasmrun

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// instantiateWASI links WASI: wazero's functions but the sockets'
// (wasiSocket), each behind the prologue of every host function
// (callCaps.enter), which checks the call's time and charges its fuel
// (wasiCosts) before wazero's function runs. wazero's host module is compiled, not instantiated, for its
// functions (api.FunctionDefinition.GoFunction), which a host module of
// the same name exports again, wrapped, with the same types and
// parameter names. Wrapping each function is wazero's documented way of
// overriding one (wasi_snapshot_preview1.NewFunctionExporter), keeps its
// behaviour byte for byte, and costs a Go call per WASI call; a function
// listener (experimental) could not end a call cleanly, and would make
// the compiler call out around every function of the module.
func instantiateWASI(ctx context.Context, rt wazero.Runtime) error {
	compiled, err := wasi_snapshot_preview1.NewBuilder(rt).Compile(ctx)
	if err != nil {
		return err
	}
	defer compiled.Close(ctx)
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	defs := compiled.ExportedFunctions()
	for _, name := range slices.Sorted(maps.Keys(defs)) {
		if wasiSocket(name) {
			continue
		}
		def := defs[name]
		fn, ok := def.GoFunction().(api.GoModuleFunction)
		if !ok {
			return fmt.Errorf("%s is not a Go function of the module", name)
		}
		size, err := wasiCosts[name].sizer(def)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		b.NewFunctionBuilder().
			WithGoModuleFunction(meteredWASI(fn, size), def.ParamTypes(), def.ResultTypes()).
			WithParameterNames(def.ParamNames()...).
			WithResultNames(def.ResultNames()...).
			Export(name)
	}
	for name := range wasiCosts {
		if _, ok := defs[name]; !ok {
			return fmt.Errorf("wazero provides no %s to charge", name)
		}
	}
	_, err = b.Instantiate(ctx)
	return err
}

// wasiSocket reports whether name is one of WASI preview1's socket
// functions: sock_accept, sock_recv, sock_send, sock_shutdown. Tier A does
// not provide them, so a module importing one is refused before it runs
// (checkImports names each, and why): no capability grants raw sockets —
// a call reaches the network only through http_request, to the hosts its
// capabilities grant — and wazero's would answer every call EBADF anyway,
// since no call is handed a socket.
func wasiSocket(name string) bool { return strings.HasPrefix(name, "sock_") }

// wasiSocketRefusal is why checkImports refuses a WASI socket import.
const wasiSocketRefusal = "WASI sockets: no capability grants raw sockets; a skill reaches the network only through http_request, to the hosts its capabilities grant"

// meteredWASI is fn behind the host call prologue. Outside a Tool's call
// (tests) it is fn.
func meteredWASI(fn api.GoModuleFunction, size wasiSizer) api.GoModuleFunction {
	return api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		if cc := callCapsFrom(ctx); cc != nil {
			cc.checkTime(ctx)
			var n uint64
			if size != nil {
				n = size(cc, mod.Memory(), stack)
			}
			cc.charge(mod, hostFuel(n))
		}
		fn.Call(ctx, mod, stack)
	})
}

// wasiSizes are the bytes args_get and environ_get write: each string
// with its NUL and a 4-byte pointer to it. The module's registration
// fixes them.
type wasiSizes struct{ args, environ uint64 }

// wasiSizesOf is the sizes of baseConfig(toolID, env): args [toolID].
func wasiSizesOf(toolID string, env map[string]string) wasiSizes {
	s := wasiSizes{args: uint64(len(toolID)) + 1 + 4}
	for k, v := range env {
		s.environ += uint64(len(k)) + 1 + uint64(len(v)) + 1 + 4
	}
	return s
}

// A wasiSizer is the bytes a WASI call is charged for beyond the call,
// from its arguments (stack) and the memory they point into.
type wasiSizer func(cc *callCaps, mem api.Memory, stack []uint64) uint64

// wasiCost is what a WASI function is charged per byte, its parameters
// named as wazero names them.
type wasiCost struct {
	lengths []string // byte counts: buffers and paths it reads or fills
	// iovecs is an iovec array's parameter, followed by its count: 8
	// bytes per iovec and the bytes they address.
	iovecs     string
	records    string // a count of records of recordSize bytes
	recordSize uint64
	fixed      func(wasiSizes) uint64 // set by the registration
}

// wasiCosts are the WASI functions charged per byte. The others move a
// few bytes of fixed size (clocks, sizes, file descriptor and stat
// records) and are charged the call alone. No call can sleep (see clock)
// or block: stdin is the input in memory, there are no files, and the
// socket functions are not provided (wasiSocket).
var wasiCosts = map[string]wasiCost{
	"args_get":                {fixed: func(s wasiSizes) uint64 { return s.args }},
	"environ_get":             {fixed: func(s wasiSizes) uint64 { return s.environ }},
	"fd_pread":                {iovecs: "iovs"},
	"fd_prestat_dir_name":     {lengths: []string{"result.path_len"}},
	"fd_pwrite":               {iovecs: "iovs"},
	"fd_read":                 {iovecs: "iovs"},
	"fd_readdir":              {lengths: []string{"buf_len"}},
	"fd_write":                {iovecs: "iovs"},
	"path_create_directory":   {lengths: []string{"path_len"}},
	"path_filestat_get":       {lengths: []string{"path_len"}},
	"path_filestat_set_times": {lengths: []string{"path_len"}},
	"path_link":               {lengths: []string{"old_path_len", "new_path_len"}},
	"path_open":               {lengths: []string{"path_len"}},
	"path_readlink":           {lengths: []string{"path_len", "buf_len"}},
	"path_remove_directory":   {lengths: []string{"path_len"}},
	"path_rename":             {lengths: []string{"old_path_len", "new_path_len"}},
	"path_symlink":            {lengths: []string{"old_path_len", "new_path_len"}},
	"path_unlink_file":        {lengths: []string{"path_len"}},
	"poll_oneoff":             {records: "nsubscriptions", recordSize: 48 + 32}, // a subscription read, an event written
	"random_get":              {lengths: []string{"buf_len"}},
}

// sizer resolves c's parameter names against def: nil when c charges
// nothing per byte, an error when def lacks a parameter c names.
func (c wasiCost) sizer(def api.FunctionDefinition) (wasiSizer, error) {
	if c.lengths == nil && c.iovecs == "" && c.records == "" && c.fixed == nil {
		return nil, nil
	}
	names := def.ParamNames()
	index := func(name string) (int, error) {
		i := slices.Index(names, name)
		if i < 0 || def.ParamTypes()[i] != api.ValueTypeI32 {
			return 0, fmt.Errorf("no i32 parameter %q among %v", name, names)
		}
		return i, nil
	}
	var lengths []int
	for _, n := range c.lengths {
		i, err := index(n)
		if err != nil {
			return nil, err
		}
		lengths = append(lengths, i)
	}
	iov, rec := -1, -1
	var err error
	if c.iovecs != "" {
		if iov, err = index(c.iovecs); err == nil && (iov+1 >= len(names) || def.ParamTypes()[iov+1] != api.ValueTypeI32) {
			err = fmt.Errorf("no i32 count after %q", c.iovecs)
		}
	}
	if err == nil && c.records != "" {
		rec, err = index(c.records)
	}
	if err != nil {
		return nil, err
	}
	return func(cc *callCaps, mem api.Memory, stack []uint64) uint64 {
		var n uint64
		for _, i := range lengths {
			n += uint64(uint32(stack[i]))
		}
		if iov >= 0 {
			n += iovecBytes(mem, uint32(stack[iov]), uint32(stack[iov+1]))
		}
		if rec >= 0 {
			n += uint64(uint32(stack[rec])) * c.recordSize
		}
		if c.fixed != nil {
			n += c.fixed(cc.wasi)
		}
		return n
	}, nil
}

// iovecBytes is the size of count iovecs at iovs, 8 bytes each, and of
// the bytes they address: the iovecs alone when they are not all in
// memory (WASI's call then fails).
func iovecBytes(mem api.Memory, iovs, count uint32) uint64 {
	n := 8 * uint64(count)
	if mem == nil || n > uint64(mem.Size()) {
		return n
	}
	b, ok := mem.Read(iovs, uint32(n))
	if !ok {
		return n
	}
	for i := 0; i < len(b); i += 8 {
		n += uint64(binary.LittleEndian.Uint32(b[i+4:]))
	}
	return n
}
