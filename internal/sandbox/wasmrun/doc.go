// Package wasmrun is sandbox tier A: skills' WebAssembly modules run in
// wazero.
//
// A Host (New) holds one Tool per registered module (Config.Modules: a
// tool id, a file and its pinned sha256) and, when Config.AllowInline is
// set, plugin.run, which runs a module sent in the call:
// {"module_base64": "...", "entrypoint"?: "...", "input"?: {...}}.
// Each tool has a wazero runtime of its own (the compiler engine where
// wazero supports it, else the interpreter; Config.Engine) and compiles
// each module once: a registered module in New, which refuses a file whose
// digest is not the pinned one; an inline one on first use, kept in a
// bounded cache keyed by its digest (Palyra compiles on every call).
// Before compiling, tables get a maximum of at most TableLimit elements
// (wazero bounds table.grow by nothing else) and the code is instrumented
// for fuel by internal/wasm/meter, with yields and the start function
// deferred (see newMeter). Config.CacheDir keeps the machine code across
// restarts. Every call gets a fresh instance, closed after it. At
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
// WASI. No preopened directories, so no file system; no socket functions
// (sock_accept, sock_recv, sock_send, sock_shutdown are not provided: no
// capability grants raw sockets, so a module importing one is refused at
// registration, naming it; the network is http_request's); the environment the module was registered with (none by
// default); args [tool id]. The clock is deterministic: it starts at
// 2024-01-01T00:00:00Z (monotonic: 0) and moves 1 ms per reading and by
// the requested time per sleep, which returns at once. Random bytes come
// from ChaCha8 seeded with the digests of the module and the input. A
// call's behaviour thus depends only on its module, its input and the
// secrets and storage it is granted (see Capabilities).
//
// Capabilities. A call may use what both Config.Policy and its module's
// registration (Module.Capabilities) list: the grant, per class (http
// hosts, secrets, storage prefixes, channels) sorted and without
// duplicates; plugin.run's modules are granted nothing. Every runtime
// links two host modules, which a module sees only if it imports them:
//
//   - "palyra:plugins/host-capabilities@0.1.0", Palyra's: http-count,
//     secret-count, storage-count, channel-count () -> i32, the number
//     granted; http-handle, secret-handle, storage-handle,
//     channel-handle (index i32) -> i32, the handle of the index-th
//     granted name: 10000, 20000, 30000 or 40000 plus the index, or -1.
//   - "execledger:capabilities@0.1.0", what handles do. Pointers and
//     lengths are i32 in the module's exported memory; a negative result
//     is an error: -1 the handle is not one granted of the function's
//     class, -2 no such secret or value, -3 memory out of range, -4 too
//     large (a message over 64 KiB, over 1 MiB of messages in the call, a
//     storage key or value over its limit, an http body over its cap),
//     -5 unavailable (no provider, the provider failed, a value too
//     short to redact, an http host that does not resolve or answer),
//     -6 the call's 256 uses are spent, -7 invalid (see storage_get; a
//     malformed http request), -8 an http host that is or resolves to a
//     private or special address, -9 an http request's time ran out.
//     secret_get(handle, buf, cap) -> len writes the secret's value at buf
//     when it fits in cap bytes and returns its length either way (call
//     again with a larger buffer). channel_publish(handle, msg, len) -> 0
//     publishes len bytes at msg. storage_get(handle, key, key_len, buf,
//     cap) -> len reads, as secret_get does, the value of the key made of
//     the granted prefix and the key_len bytes at key (UTF-8 without NUL,
//     at most 512 bytes with the prefix; -7 otherwise; -2 when it has no
//     value); storage_put(handle, key, key_len, val, val_len) -> 0 sets
//     it (at most 64 KiB; a secret the call has read is stored
//     redacted) for the call, whose later storage_get sees it, and for
//     everyone once the call has succeeded: the call's writes are its
//     result's StorageWrites, which the executor commits with the
//     outcome, and a call that fails, traps or times out leaves none (-4
//     beyond MaxStorageWrites keys or MaxStorageWriteBytes in a call).
//     Config.Storage is the store reads go to: PGStorage
//     (ledger.skill_storage) in serve, MemoryStorage in tests.
//     http_request(handle, req, req_len, buf, cap) -> len sends the
//     request in the JSON at req, {"method", "url", "headers"?: {name:
//     value}, "body_base64"?}, and writes the response, {"status",
//     "headers": {name: [values]}, "body_base64"}, as secret_get writes
//     (a call with a larger buffer sends the request again). Handle i
//     grants the i-th granted host entry, as egress.ParseAllowlist reads
//     one: "api.example.com" exactly, ".example.com" or "*.example.com"
//     its subdomains at a label boundary, an IP or CIDR its addresses.
//     Only http and https, GET, HEAD, POST, PUT, PATCH, DELETE and
//     OPTIONS (GET when none is given), to the ports of HTTPOptions (80
//     and 443 by default); the host is resolved and every address checked, and
//     only those are dialled (no proxy, no kept connection), so DNS
//     rebinding does not get past the check. A private or special
//     address (egress.IsSpecial) is refused unless HTTPOptions.
//     PrivateRanges covers it, even when the grant names it. Redirects
//     are returned, not followed. A request has HTTPOptions.Timeout
//     (10 s) within the call's time, a body of at most MaxRequestBody,
//     a response body of at most MaxResponseBody (1 MiB each); https
//     servers are verified for the URL's host against RootCAs or the
//     system's roots. Config has no HTTPOptions yet: calls use the
//     defaults, which reach public addresses only.
//
// Importing either module is always allowed; using what is not granted
// fails, and is recorded. Every use of a handle (secret_get,
// channel_publish, storage_get, storage_put, http_request, refused or
// not) is an event in Result.Events,
// capability.used {class, handle, name, outcome}; a publication adds
// channel.published {channel, bytes, sha256, redacted} and
// channel.message {channel, message (the JSON) or message_base64}, which
// the executor is to append to stream channel:<name>. Secret values come
// from Config.Secrets (EnvSecrets, DirSecrets) and are registered with a
// redactor of the call's own before the module sees them: the call's
// output, stderr and messages show them as redact.Marker, and no event
// holds one; stderr cut short by StderrLimit loses what may be the start
// of one. A storage use's event also has the key (redacted); an http
// use's has the URL's host as its name, the response's status and the
// bytes of its body read, never the body. A tool granted http is not
// SafeToRepeat: a request reaches the world at once, while storage writes
// commit only with the call's outcome.
//
// Limits and errors, as in Palyra and as error kinds of the contract:
//
//   - a module over MaxModuleBytes, malformed, importing anything tier A
//     does not provide (functions of WASI but its sockets, and of the
//     capability modules, only; each such import named, refused before
//     anything runs), lacking its entrypoint or with an
//     entrypoint of another type: invalid_input;
//   - fuel (FuelLimit per call, shared by a start function and the
//     entrypoint; see newMeter) or memory (MemoryLimitPages, enforced by
//     memoryCap) running out, a module starting beyond the memory or
//     table limit, output beyond OutputLimit: quota_exceeded. Fuel
//     counts the module's instructions (internal/wasm/meter) and the
//     work of its host calls: every call of a WASI or capability
//     function costs HostCallFuel (100) and HostByteFuel (1) per byte
//     of the lengths it is passed (buffers and paths, iovecs at 8 bytes
//     each and the bytes they address, poll_oneoff's subscriptions and
//     events at 48 + 32 bytes, args_get's and environ_get's strings),
//     charged before the host does anything; secret_get, storage_get
//     and http_request are also charged the length of what they return.
//     A charge that does not fit ends the call as running out in code
//     does. The charges depend only on the arguments and what the host
//     returned, so fuel is the same on both engines; results record
//     them as Enforcement's host_call_fuel. The meter's yield costs
//     nothing: modules cannot import it, and how often it runs depends
//     on the engine;
//   - the timeout (the call's or the executor's): timed_out; the context
//     cancelled: cancelled. Running code notices either at its next yield:
//     the module calls the host back every 2^20 units of fuel on the
//     compiler, 2^16 on the interpreter (about a millisecond or a few of
//     its work), which is also where the Go runtime may preempt it;
//     wazero's close on context done, a goroutine per call and a call out
//     of the compiled code at every loop turn, is not used. Every host
//     function notices either when it is called and ends the call as a
//     yield does, so a module looping on host calls ends as one looping
//     in code; one that waits (http, storage, secrets) stops waiting
//     when either comes and returns its error (-5, -9), and the call ends
//     at the module's next host call or yield. No host call sleeps (the
//     clock is the call's own), and one does at most what the memory it
//     is given holds, as a memory.fill does: that bounds how long past
//     its time a call runs;
//   - any other trap: runtime_failure, with the trap's text.
//
// Results record Resources (fuel_used, fuel_limit, wall_ms,
// memory_pages_peak, module_bytes, output_bytes) and Enforcement (engine,
// memory_limit_pages, fuel_limit, host_call_fuel, table_limit,
// max_instances, timeout_ms, wasi, module_digest, entrypoint, abi,
// host_modules, capabilities: the grant).
package wasmrun
