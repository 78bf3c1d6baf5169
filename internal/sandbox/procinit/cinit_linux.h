// The sandbox init in C (see cinit_linux.go). Shared declarations of its
// files; nothing here is visible to Go.

#ifndef EXECLEDGER_CINIT_H
#define EXECLEDGER_CINIT_H

#include <linux/filter.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

// Exit statuses, as procinit's ExitInitFailed, ExitCannotExecute and
// ExitNotFound.
#define CI_EXIT_INIT_FAILED 125
#define CI_EXIT_CANNOT_EXECUTE 126
#define CI_EXIT_NOT_FOUND 127

// Descriptors, as procinit's specFD, usageFD and lifelineFD.
#define CI_SPEC_FD 3
#define CI_USAGE_FD 4
#define CI_LIFELINE_FD 5

// Record tags and flags of the wire format (wire_linux.go).
enum {
	CI_WIRE_END = 0,
	CI_WIRE_PATH = 1,
	CI_WIRE_ARG = 2,
	CI_WIRE_ENV = 3,
	CI_WIRE_DIR = 4,
	CI_WIRE_RLIMIT = 5,
	CI_WIRE_FLAGS = 6,
	CI_WIRE_CRED = 7,
	CI_WIRE_PRIVATE_TMP_SIZE = 8,
	CI_WIRE_PRIVATE_DIR = 9,
	CI_WIRE_KEEP = 10,
	CI_WIRE_SECCOMP = 11,
	CI_WIRE_BRIDGE_ADDR = 12,
	CI_WIRE_BRIDGE_SOCKET = 13,
};
#define CI_FLAG_SECCOMP (1u << 0)
#define CI_FLAG_DENY_UNIX (1u << 1)
#define CI_FLAG_PRIVATE_TMP (1u << 2)
#define CI_FLAG_LIFELINE (1u << 3)
#define CI_FLAG_SWEEP_HOST (1u << 4)

#define CI_MAX_WIRE_BYTES (16u << 20)
#define CI_MAX_SECCOMP_INSNS 4096u
#define CI_MAX_SOCKET_PATH 107u

struct ci_rlimit {
	uint32_t resource;
	uint64_t value;
};

// ci_spec is the decoded spec. Strings are NUL-terminated copies; argv
// and envp are NULL-terminated, argv[0] is path.
struct ci_spec {
	char *path;
	char **argv;
	char **envp;
	char *dir;
	struct ci_rlimit *rlimits;
	size_t nrlimits;
	uint32_t flags;
	uint32_t uid, gid;
	uint64_t tmp_bytes;
	char **private_dirs;
	size_t nprivate_dirs;
	char **keep;
	size_t nkeep;
	struct sock_filter *filter;
	size_t nfilter;
	int has_bridge;
	uint32_t bridge_family; // 4 or 6
	uint16_t bridge_port;
	unsigned char bridge_addr[16];
	char *bridge_socket;
};

// ci_errorf writes "sandbox init: " and the message to stderr.
void ci_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// ci_read_spec reads and decodes descriptor 3 and closes it; -1 after
// reporting why.
int ci_read_spec(struct ci_spec *s);

// ci_setup prepares the init's own process state, which the target
// inherits; -1 after reporting why.
int ci_setup(const struct ci_spec *s);

// The bridge (cinit_bridge_linux.c): a TCP listener relayed to a Unix
// socket while the target runs, driven by the init's poll loop.
struct ci_bridge;
int ci_bridge_start(const struct ci_spec *s, struct ci_bridge **out);
// ci_bridge_pollfds appends the bridge's descriptors to fds (room for
// max entries) and returns how many it added.
size_t ci_bridge_pollfds(struct ci_bridge *b, struct pollfd *fds, size_t max);
// ci_bridge_npollfds is how many entries ci_bridge_pollfds may need.
size_t ci_bridge_npollfds(const struct ci_bridge *b);
// ci_bridge_handle acts on the revents of the entries it added.
void ci_bridge_handle(struct ci_bridge *b, const struct pollfd *fds, size_t n);
// ci_bridge_tick is called once per reap interval: it resumes accepting.
void ci_bridge_tick(struct ci_bridge *b);
void ci_bridge_stop(struct ci_bridge *b);

// The reaper (cinit_reap_linux.c).
struct ci_reaped {
	int target; // the target was reaped
	int status;
	long long cpu_ms; // the target's user and system time
	int no_children;  // waitpid reported ECHILD
};
void ci_reap(pid_t target, struct ci_reaped *r);
// ci_kill_descendants SIGKILLs every live descendant and the process group
// pgid, and reaps them, until no child is left or timeout_ms passed; it
// returns how many distinct processes it found alive and killed.
int ci_kill_descendants(pid_t pgid, int timeout_ms, int sweep_host);

// ci_monotonic_ms is CLOCK_MONOTONIC in milliseconds.
long long ci_monotonic_ms(void);

#endif
