// Package procinput parses and checks process.run requests before anything is spawned.
//
// A request is decoded strictly by Parse into an Input and checked by
// Check against the operator's Policy; what passes becomes a Plan (the
// program, its unmodified arguments, a canonical working directory inside
// the workspace, a fixed environment, the egress hosts and a timeout).
// Every refusal is an *Error with a Kind (invalid_input,
// workspace_scope_denied, egress_denied, capability_denied), a
// machine-readable Reason ("process.interpreter_denied", ...) and a
// Message telling the caller how to fix the request.
//
// # Palyra parity
//
// Every pre-spawn rule of Palyra's process runner holds here, in Palyra's
// order (see Check): the input shape (command non-empty, at most 256 bytes,
// no white space, no '/' or '\'; at most 128 arguments of at most 4096
// bytes; timeout_ms > 0); the case-insensitive executable allowlist with
// "*"; the interpreter denylist (bash sh zsh fish powershell pwsh cmd
// python python3 node ruby perl deno) unless AllowInterpreters; Palyra's
// eval flags for interpreters (-c /c --command -command --eval); no
// name-based kills (pkill, killall, taskkill /IM, Stop-Process -Name); no
// whole command line in args[0]; the workspace scoping of the working
// directory and of path arguments (root canonicalised; NUL and '..'
// refused; existing paths canonicalised, symlinks followed, and required
// to be under the root; missing paths checked through their nearest
// existing ancestor; file: URLs, --opt=VALUE and -oVALUE checked); the
// egress modes none, preflight and strict with Palyra's host extraction
// and its label-boundary allowlist.
//
// # Beyond Palyra
//
// Closing the gaps Palyra leaves open:
//
//   - Launch forms (gap #1). Allowlisted programs that start other
//     programs are refused unless AllowInterpreters: env COMMAND, xargs,
//     find -exec/-ok, git -c with a key that names a program (core.pager,
//     core.sshCommand, alias.*, ...) or --exec-path=, git difftool and the
//     like, make SHELL=/--eval, sed without --sandbox, awk without
//     --sandbox, tar --to-command/-I, rsync -e, ssh -o ProxyCommand, and
//     wrappers (nice, timeout, sudo, ...). With AllowInterpreters, Check
//     reads env, xargs, find and the wrappers nice, nohup, timeout,
//     stdbuf, setsid, ionice, chrt, taskset, flock and time as their GNU
//     and util-linux versions parse their arguments, and the program they
//     start meets the command's rules, recursively (at most 8 launchers
//     deep): env timeout 5 sh -c id is refused as sh -c id is. Arguments
//     a launcher is not known to take, and forms whose command cannot be
//     read (command lines in options, other wrappers), are refused
//     whatever the policy. Interpreter names include
//     versions (python3.11, perl5.36) and more shells (dash, ksh, ...).
//     Eval flags also match clusters (bash -lc) and PowerShell
//     abbreviations. Every git run gets configuration (through
//     GIT_CONFIG_COUNT, which outranks the repository's) that disables
//     hooks, fsmonitor, pager, editor and the ext:: transport, and ignores
//     system and global configuration.
//   - Group kills: kill -1, kill 0, kill -PGID and kill NAME are refused.
//   - Arguments are never rewritten (gap #6): Check only refuses.
//   - The environment (gap #3) is built from nothing: PATH (Policy.Path,
//     which may not point into the workspace), LANG=C, LC_ALL=C, and
//     HOME=<workspace root>, so that ~/.cache, ~/.local (Python's user
//     base, which Palyra set explicitly) and ~/.config land in the
//     workspace, not in the daemon user's home; git additionally gets the
//     GIT_* entries above.
//   - Dangling symlinks, ".." inside URL-looking arguments, NAME=/abs
//     arguments (dd if=/etc/shadow) and absolute paths embedded in
//     interpreter code are refused.
//   - Strict egress hands the declared hosts to the sandbox and refuses
//     arguments that reach undeclared hosts; IPv6 literals are supported;
//     URLs that cannot be parsed are refused instead of ignored.
//   - Hosts are read and allowlists matched by the egress proxy's rules
//     (egress.ParseHost, egress.ParseDomainAllowlist), so the preflight
//     and the proxy agree: 127.1, 10.0.0.1. and zoned addresses are not
//     hosts, a single-label allowlist name matches only itself, and CIDR
//     entries are accepted.
//   - Parsing is strict where encoding/json is lenient (see Parse).
//
// # What a pre-check cannot do
//
// These checks read the request's text and the file system at one
// instant. A path checked here can be replaced by a symlink before the
// process opens it (time of check to time of use), a program can build
// any path or URL at run time, and build tools (make, npm, cargo, go)
// run code defined in the workspace by design. The sandbox (mount
// namespace, network namespace, resource limits) is what enforces; these
// checks refuse what is visibly wrong and explain why, early.
//
// # Decisions where Palyra is silent
//
// Background accepts Palyra's boolean and an object naming a mode
// (run_owned or detached) and a lifetime; detached needs AllowDetached. A
// background lifetime is min(lifetime_ms or timeout_ms or
// DefaultBackgroundLifetime, MaxBackgroundLifetime). A foreground timeout
// is min(timeout_ms or 30 s, MaxTimeout). EgressMode defaults to strict.
// The workspace root may not be "/". Refused kinds map as: allowlist,
// interpreter, eval flag, launch form and kill refusals are
// capability_denied (Palyra used workspace-scope or invalid-input errors
// for these); malformed hosts and URLs are invalid_input.
package procinput
