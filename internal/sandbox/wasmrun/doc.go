// Package wasmrun is sandbox tier A: skills' WebAssembly modules run in
// wazero.
//
// A Host (New) holds one Tool per registered module (Config.Modules: a
// tool id, a file and its pinned sha256) and, when Config.AllowInline is
// set, plugin.run, which runs a module sent in the call:
// {"module_base64": "...", "entrypoint"?: "...", "input"?: {...}}.
// Each tool has a wazero runtime of its own (the compiler engine where
// wazero supports it, else the interpreter; Config.Engine), closes
// instances whose context ends (WithCloseOnContextDone) and compiles each
// module once: a registered module in New, which refuses a file whose
// digest is not the pinned one; an inline one on first use, kept in a
// bounded cache keyed by its digest (Palyra compiles on every call).
// Before compiling, tables get a maximum of at most TableLimit elements
// (wazero bounds table.grow by nothing else) and the code is instrumented
// for fuel by internal/wasm/meter. Config.CacheDir keeps the machine code
// across restarts. Every call gets a fresh instance, closed after it. At
// most MaxInstances run at once over the host's tools; a call waits for a
// slot until its context ends, and then has Timeout to finish.
//
// ABI. A skill receives a JSON object and returns one. The entrypoint
// (default "_start" if exported, else "run") decides how:
//
//   - () -> (), a WASI command (Go's GOOS=wasip1 programs): the input on
//     stdin; the output is what it writes to stdout, which must be one
//     JSON object of at most OutputLimit bytes; exiting with a code other
//     than 0 is a runtime_failure. A reactor's _initialize is called
//     first.
//   - () -> i32 (or i64), Palyra's run: the output is {"result": N}.
//
// A failed call's output holds its stderr (redacted, at most
// StderrLimit bytes) and its exit code or trap. A successful output is
// redacted (redact.Redactor.JSON).
//
// WASI. No preopened directories, so no file system; no sockets, so no
// network; the environment the module was registered with (none by
// default); args [tool id]. The clock is deterministic: it starts at
// 2024-01-01T00:00:00Z (monotonic: 0) and moves 1 ms per reading and by
// the requested time per sleep, which returns at once. Random bytes come
// from ChaCha8 seeded with the digests of the module and the input. A
// call's behaviour thus depends only on its module and input, so it can
// be replayed, and Tool.SafeToRepeat is true.
//
// Limits and errors, as in Palyra and as error kinds of the contract:
//
//   - a module over MaxModuleBytes, malformed, importing anything tier A
//     does not provide (WASI's functions only; each such import named,
//     refused before anything runs), lacking its entrypoint or with an
//     entrypoint of another type: invalid_input;
//   - fuel (FuelLimit per call, shared by a start function and the
//     entrypoint; see newMeter) or memory (MemoryLimitPages, enforced by
//     memoryCap) running out, a module starting beyond the memory or
//     table limit, output beyond OutputLimit: quota_exceeded;
//   - the timeout (the call's or the executor's): timed_out; the context
//     cancelled: cancelled;
//   - any other trap: runtime_failure, with the trap's text.
//
// Results record Resources (fuel_used, fuel_limit, wall_ms,
// memory_pages_peak, module_bytes, output_bytes) and Enforcement (engine,
// memory_limit_pages, fuel_limit, table_limit, max_instances, timeout_ms,
// wasi, module_digest, entrypoint, abi, host_modules).
package wasmrun
