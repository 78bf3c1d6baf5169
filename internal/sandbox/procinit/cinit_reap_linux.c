//go:build cgo

// Reaping, and killing what is left below the init when the target ends.
//
// The init is a child subreaper, so every process that starts below it
// stays below it: an orphan is reparented to the init, not to the host's
// init. Its descendants are therefore found by walking down from the init
// through /proc/PID/task/TID/children (each thread's children), which costs
// in proportion to the sandbox's own processes, not the host's. On kernels
// without that file (CONFIG_PROC_CHILDREN unset) the walk falls back to
// reading every process's parent in /proc.

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cinit_linux.h"

long long ci_monotonic_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ci_reap(pid_t target, struct ci_reaped *r) {
	for (;;) {
		int status;
		struct rusage ru;
		pid_t pid = wait4(-1, &status, WNOHANG, &ru);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0 && errno == ECHILD) {
			r->no_children = 1;
			return;
		}
		if (pid <= 0)
			return;
		if (pid == target) {
			r->target = 1;
			r->status = status;
			r->cpu_ms = (long long)ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000 +
				    (long long)ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000;
		}
	}
}

// A set of pids: open addressing, grown at half full.
struct pidset {
	pid_t *slot; // 0 is empty
	size_t cap, n;
};

// pidset_add adds pid; 1 if it was new, 0 if present, -1 on ENOMEM.
static int pidset_add(struct pidset *s, pid_t pid) {
	if (2 * (s->n + 1) > s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : 64;
		pid_t *ns = calloc(ncap, sizeof(pid_t));
		if (ns == NULL)
			return -1;
		for (size_t i = 0; i < s->cap; i++) {
			if (s->slot[i] == 0)
				continue;
			size_t j = (size_t)s->slot[i] * 2654435761u % ncap;
			while (ns[j] != 0)
				j = (j + 1) % ncap;
			ns[j] = s->slot[i];
		}
		free(s->slot);
		s->slot = ns;
		s->cap = ncap;
	}
	size_t j = (size_t)pid * 2654435761u % s->cap;
	while (s->slot[j] != 0) {
		if (s->slot[j] == pid)
			return 0;
		j = (j + 1) % s->cap;
	}
	s->slot[j] = pid;
	s->n++;
	return 1;
}

// A growable list of pids.
struct pidlist {
	pid_t *v;
	size_t n, cap;
};

static int pidlist_push(struct pidlist *l, pid_t pid) {
	if (l->n == l->cap) {
		size_t ncap = l->cap ? 2 * l->cap : 64;
		pid_t *nv = realloc(l->v, ncap * sizeof(pid_t));
		if (nv == NULL)
			return -1;
		l->v = nv;
		l->cap = ncap;
	}
	l->v[l->n++] = pid;
	return 0;
}

// read_file reads a /proc file into buf (NUL-terminated), at most cap-1
// bytes; its length, or -1.
static ssize_t read_file(const char *path, char *buf, size_t cap) {
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n < cap - 1) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

// read_stat parses /proc/PID/stat, "pid (comm) state ppid ...", where comm
// may hold spaces and parentheses: fields are counted from the last ')'.
static int read_stat(pid_t pid, pid_t *ppid, int *zombie) {
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (read_file(path, buf, sizeof buf) <= 0)
		return -1;
	char *p = strrchr(buf, ')');
	char state;
	int pp;
	if (p == NULL || sscanf(p + 1, " %c %d", &state, &pp) != 2)
		return -1;
	*ppid = pp;
	*zombie = state == 'Z';
	return 0;
}

// children_of appends to out the pids in /proc/PID/task/*/children of pid;
// -1 when that file does not exist for its first task (the kernel lacks
// it), 0 otherwise (a process that vanished has no children).
static int children_of(pid_t pid, struct pidlist *out) {
	static char buf[64 << 10];
	char path[96];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (d == NULL)
		return 0;
	int rc = 0, first = 1;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%.16s/children", (int)pid, e->d_name);
		ssize_t n = read_file(path, buf, sizeof buf);
		if (n < 0) {
			if (first && errno == ENOENT && pid == getpid())
				rc = -1;
			first = 0;
			continue;
		}
		first = 0;
		// Space-separated pids. A list longer than the buffer (over
		// ~8,000 children of one thread) is cut: the next round of the
		// caller finds the rest.
		char *p = buf;
		while (*p) {
			char *end;
			long c = strtol(p, &end, 10);
			if (end == p)
				break;
			if (c > 0 && pidlist_push(out, (pid_t)c) != 0)
				break;
			p = end;
		}
	}
	closedir(d);
	return rc;
}

// tree_walk appends to alive the live descendants of the init, walking down
// the children files; -1 if the kernel has none.
static int tree_walk(struct pidlist *alive) {
	struct pidlist queue = {0}, kids = {0};
	struct pidset seen = {0};
	int rc = 0;
	pid_t self = getpid();
	if (pidlist_push(&queue, self) != 0 || pidset_add(&seen, self) < 0)
		goto out;
	for (size_t i = 0; i < queue.n; i++) {
		pid_t parent = queue.v[i];
		kids.n = 0;
		if (children_of(parent, &kids) != 0) {
			rc = -1;
			goto out;
		}
		for (size_t k = 0; k < kids.n; k++) {
			pid_t c = kids.v[k], ppid;
			int zombie;
			// A pid read from the file may have ended, and been
			// reused, since: it counts only while its parent is still
			// the process whose file named it.
			if (read_stat(c, &ppid, &zombie) != 0 || ppid != parent)
				continue;
			if (pidset_add(&seen, c) != 1)
				continue;
			if (pidlist_push(&queue, c) != 0)
				goto out;
			if (!zombie && pidlist_push(alive, c) != 0)
				goto out;
		}
	}
out:
	free(queue.v);
	free(kids.v);
	free(seen.slot);
	return rc;
}

// host_sweep appends to alive the live descendants of the init, found by
// reading the parent of every process in /proc.
static void host_sweep(struct pidlist *alive) {
	struct pidlist pids = {0}, ppids = {0}, zombies = {0};
	DIR *d = opendir("/proc");
	if (d == NULL)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		pid_t ppid;
		int zombie;
		if (*end != 0 || end == e->d_name || pid <= 0 || read_stat((pid_t)pid, &ppid, &zombie) != 0)
			continue;
		if (pidlist_push(&pids, (pid_t)pid) || pidlist_push(&ppids, ppid) || pidlist_push(&zombies, zombie))
			break;
	}
	closedir(d);
	pid_t self = getpid();
	for (size_t i = 0; i < pids.n; i++) {
		if (zombies.v[i] || pids.v[i] == self)
			continue;
		// Walk the parent links up, at most once around the table.
		pid_t p = ppids.v[i];
		for (size_t steps = 0; steps < pids.n && p > 1 && p != self; steps++) {
			size_t j = 0;
			while (j < pids.n && pids.v[j] != p)
				j++;
			p = j < pids.n ? ppids.v[j] : 0;
		}
		if (p == self)
			pidlist_push(alive, pids.v[i]);
	}
	free(pids.v);
	free(ppids.v);
	free(zombies.v);
}

int ci_kill_descendants(pid_t pgid, int timeout_ms, int sweep_host) {
	struct ci_reaped r = {0};
	// With no child left there is no descendant left either: an orphan
	// would have been reparented to the init.
	ci_reap(0, &r);
	if (r.no_children)
		return 0;
	long long deadline = ci_monotonic_ms() + timeout_ms;
	struct pidset killed = {0};
	struct pidlist alive = {0};
	for (;;) {
		alive.n = 0;
		if (sweep_host || tree_walk(&alive) != 0) {
			alive.n = 0;
			host_sweep(&alive);
		}
		for (size_t i = 0; i < alive.n; i++)
			if (kill(alive.v[i], SIGKILL) == 0)
				pidset_add(&killed, alive.v[i]);
		// Also catches a process the group's members forked meanwhile.
		kill(-pgid, SIGKILL);
		memset(&r, 0, sizeof r);
		ci_reap(0, &r);
		if (r.no_children || ci_monotonic_ms() > deadline)
			break;
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	int n = (int)killed.n;
	free(killed.slot);
	free(alive.v);
	return n;
}
