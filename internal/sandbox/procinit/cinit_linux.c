//go:build cgo

// The sandbox init, run from a constructor before the Go runtime starts
// when argv[1] is procinit.Hidden; it never returns into Go. See the
// package documentation for what it does, and cinit_linux.go for why C.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cinit_linux.h"

// As procinit.Hidden.
#define CI_HIDDEN "__sandbox-init"

// Timings, as the Go init's: the poll loop's tick (the kernel may coalesce
// SIGCHLD) and the bound on the final sweep.
#define CI_REAP_INTERVAL_MS 200
#define CI_KILL_TIMEOUT_MS 5000

static void write_all(int fd, const char *p, size_t n) {
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

void ci_errorf(const char *fmt, ...) {
	char buf[4096];
	int n = snprintf(buf, sizeof buf, "sandbox init: ");
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	va_end(ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len >= sizeof buf) {
		len = sizeof buf - 1;
		buf[len - 1] = '\n';
	}
	write_all(2, buf, len);
}

// As procinit.Usage; written as its JSON.
struct usage {
	int exit_code, signal;
	long long cpu_user_ms, cpu_sys_ms, max_rss_kb, target_cpu_ms;
	int descendants_killed;
};

static void write_usage(const struct usage *u) {
	char buf[512];
	int n = snprintf(buf, sizeof buf,
			 "{\"exit_code\":%d,\"signal\":%d,\"cpu_user_ms\":%lld,\"cpu_sys_ms\":%lld,"
			 "\"max_rss_kb\":%lld,\"target_cpu_ms\":%lld,\"descendants_killed\":%d}\n",
			 u->exit_code, u->signal, u->cpu_user_ms, u->cpu_sys_ms, u->max_rss_kb, u->target_cpu_ms,
			 u->descendants_killed);
	if (n > 0 && (size_t)n < sizeof buf)
		write_all(CI_USAGE_FD, buf, (size_t)n);
	close(CI_USAGE_FD);
}

// launcher_gone reports, without waiting, whether the lifeline's write ends
// are all closed (poll reports POLLHUP on a pipe without writers).
static int launcher_gone(void) {
	struct pollfd p = {CI_LIFELINE_FD, POLLIN, 0};
	for (;;) {
		int r = poll(&p, 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		return r >= 0 && (p.revents & (POLLHUP | POLLERR)) != 0;
	}
}

static const char launcher_gone_msg[] = "the launcher is gone (its end of the lifeline closed)";

// child_fail reports errno to the init through the exec-error pipe and
// exits.
static void __attribute__((noreturn)) child_fail(int errpipe) {
	int e = errno;
	ssize_t w;
	do
		w = write(errpipe, &e, sizeof e);
	while (w < 0 && errno == EINTR);
	_exit(CI_EXIT_CANNOT_EXECUTE);
}

// start_target forks and executes the target in a process group of its own,
// with the Spec's credentials, SIGKILL when the init dies, and the signal
// mask the init was started with. It returns the pid, or -1 with errno set
// to why the target could not be executed (the child reaped).
static pid_t start_target(const struct ci_spec *s, const sigset_t *mask) {
	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) != 0)
		return -1;
	pid_t init = getpid();
	uid_t uid = s->uid;
	gid_t gid = s->gid ? s->gid : getgid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(errpipe[0]);
		close(errpipe[1]);
		errno = e;
		return -1;
	}
	if (pid == 0) {
		// The order of os/exec's child: group, credentials, directory,
		// parent-death signal (a credential change clears it), exec.
		sigprocmask(SIG_SETMASK, mask, NULL);
		if (setpgid(0, 0) != 0)
			child_fail(errpipe[1]);
		if (uid != 0) {
			// Raw syscalls: glibc's setxid machinery is for threads.
			if (syscall(SYS_setgroups, 0, NULL) != 0 || syscall(SYS_setgid, gid) != 0 ||
			    syscall(SYS_setuid, uid) != 0)
				child_fail(errpipe[1]);
		}
		if (s->dir != NULL && chdir(s->dir) != 0)
			child_fail(errpipe[1]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
			child_fail(errpipe[1]);
		if (getppid() != init)
			kill(getpid(), SIGKILL);
		execve(s->path, s->argv, s->envp);
		child_fail(errpipe[1]);
	}
	close(errpipe[1]);
	int e = 0;
	ssize_t r;
	do
		r = read(errpipe[0], &e, sizeof e);
	while (r < 0 && errno == EINTR);
	close(errpipe[0]);
	if (r == 0)
		return pid; // closed by a successful exec
	if (r != (ssize_t)sizeof e)
		e = EIO;
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	errno = e;
	return -1;
}

// wait_target runs the poll loop until the target has been reaped:
// reaping every child, forwarding termination signals to the target's
// group, watching the lifeline, serving the bridge.
static void wait_target(pid_t target, int sigfd, int lifeline, struct ci_bridge *b, struct ci_reaped *res) {
	struct pollfd *fds = NULL;
	size_t cap = 0;
	long long tick = ci_monotonic_ms();
	for (;;) {
		ci_reap(target, res);
		if (res->target)
			break;
		size_t need = 2 + ci_bridge_npollfds(b);
		if (need > cap) {
			struct pollfd *nf = realloc(fds, need * sizeof *fds);
			if (nf != NULL) {
				fds = nf;
				cap = need;
			}
		}
		size_t n = 0;
		if (cap >= 2) {
			fds[n++] = (struct pollfd){sigfd, POLLIN, 0};
			fds[n++] = (struct pollfd){lifeline ? CI_LIFELINE_FD : -1, POLLIN, 0};
			n += ci_bridge_pollfds(b, fds + n, cap - n);
		}
		int r = poll(fds, n, CI_REAP_INTERVAL_MS);
		if (ci_monotonic_ms() - tick >= CI_REAP_INTERVAL_MS) {
			tick = ci_monotonic_ms();
			ci_bridge_tick(b);
		}
		if (r <= 0)
			continue; // timeout, EINTR; or ENOMEM: the next round retries
		if (fds[0].revents & POLLIN) {
			struct signalfd_siginfo si[16];
			ssize_t got;
			while ((got = read(sigfd, si, sizeof si)) > 0)
				for (size_t i = 0; i < (size_t)got / sizeof si[0]; i++)
					if (si[i].ssi_signo != SIGCHLD)
						kill(-target, (int)si[i].ssi_signo);
		}
		if (lifeline && fds[1].revents) {
			char buf[64];
			ssize_t got;
			// The launcher never writes: the end of the pipe is the
			// only news, and bytes written by mistake are ignored.
			int reads = 0;
			do
				got = read(CI_LIFELINE_FD, buf, sizeof buf);
			while ((got > 0 || (got < 0 && errno == EINTR)) && ++reads < 64);
			if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
				ci_errorf("%s: killing the target\n", launcher_gone_msg);
				kill(-target, SIGKILL);
				kill(target, SIGKILL); // should it have left its group
				lifeline = 0;
			}
		}
		ci_bridge_handle(b, fds + 2, n - 2);
	}
	free(fds);
}

static void exit_status(int status, struct usage *u) {
	if (WIFSIGNALED(status)) {
		u->signal = WTERMSIG(status);
		u->exit_code = 128 + u->signal;
	} else {
		u->exit_code = WEXITSTATUS(status);
	}
}

static void add_rusage(struct usage *u) {
	struct rusage ru;
	if (getrusage(RUSAGE_CHILDREN, &ru) != 0)
		return;
	u->cpu_user_ms = (long long)ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000;
	u->cpu_sys_ms = (long long)ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000;
	u->max_rss_kb = ru.ru_maxrss;
}

// run sets up the init, runs the target and clears up after it; the usage
// it fills is the init's report and exit status.
static void run(struct usage *u) {
	u->exit_code = CI_EXIT_INIT_FAILED;
	// Termination signals wait in a signalfd from here on, to be
	// forwarded to the target; SIGPIPE is blocked so that a write to a
	// closed pipe fails with EPIPE instead. The target gets the mask the
	// init was started with.
	sigset_t block, orig;
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	sigaddset(&block, SIGPIPE);
	sigprocmask(SIG_BLOCK, &block, &orig);
	// An ignored SIGCHLD, inherited, would make the kernel reap the
	// children itself, status and usage included.
	signal(SIGCHLD, SIG_DFL);

	struct ci_spec s;
	if (ci_read_spec(&s) != 0)
		return;
	int lifeline = (s.flags & CI_FLAG_LIFELINE) != 0;
	if (lifeline) {
		int fl = fcntl(CI_LIFELINE_FD, F_GETFL);
		if (fl < 0) {
			ci_errorf("lifeline: descriptor %d is not open\n", CI_LIFELINE_FD);
			return;
		}
		if (fcntl(CI_LIFELINE_FD, F_SETFL, fl | O_NONBLOCK) != 0) {
			ci_errorf("lifeline: %s\n", strerror(errno));
			return;
		}
	}
	if (ci_setup(&s) != 0)
		return;
	struct ci_bridge *b;
	if (ci_bridge_start(&s, &b) != 0)
		return;
	sigset_t watch = block;
	sigdelset(&watch, SIGPIPE);
	int sigfd = signalfd(-1, &watch, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sigfd < 0) {
		ci_errorf("signalfd: %s\n", strerror(errno));
		goto out;
	}
	if (lifeline && launcher_gone()) {
		ci_errorf("%s\n", launcher_gone_msg);
		goto out;
	}
	pid_t target = start_target(&s, &orig);
	if (target < 0) {
		int e = errno;
		u->exit_code = e == ENOENT ? CI_EXIT_NOT_FOUND : CI_EXIT_CANNOT_EXECUTE;
		ci_errorf("start target: fork/exec %s: %s\n", s.path, strerror(e));
		goto out;
	}
	struct ci_reaped ended = {0};
	wait_target(target, sigfd, lifeline, b, &ended);
	// The target led its process group: kill what is left of it and every
	// other process below the init.
	u->descendants_killed = ci_kill_descendants(target, CI_KILL_TIMEOUT_MS, (s.flags & CI_FLAG_SWEEP_HOST) != 0);
	exit_status(ended.status, u);
	u->target_cpu_ms = ended.cpu_ms;
	add_rusage(u);
out:
	// After the sweep: no process that could use the bridge is left.
	ci_bridge_stop(b);
}

// cinit runs as a constructor: glibc passes it main's arguments. In any
// other process than the init it returns at once.
__attribute__((constructor)) static void cinit(int argc, char **argv, char **envp) {
	(void)envp;
	if (argc < 2 || argv == NULL || argv[1] == NULL || strcmp(argv[1], CI_HIDDEN) != 0)
		return;
	int usage_open = fcntl(CI_USAGE_FD, F_GETFD) >= 0;
	struct usage u = {0};
	run(&u);
	if (usage_open)
		write_usage(&u);
	_exit(u.exit_code);
}
