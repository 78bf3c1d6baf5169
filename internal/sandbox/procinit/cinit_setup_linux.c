//go:build cgo

// The init's own process state, which the target inherits: descriptors
// close-on-exec, not dumpable, child subreaper, rlimits, a private /tmp,
// and the seccomp filter last.

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cinit_linux.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

// cloexec_above_stdio marks every descriptor above 2 close-on-exec with
// close_range(2), or one by one through /proc/self/fd on kernels before
// 5.11 (as internal/sandbox/fdmark).
static int cloexec_above_stdio(void) {
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return 0;
#endif
	int cr_errno = errno;
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL) {
		ci_errorf("mark descriptors close-on-exec: close_range: %s; /proc/self/fd: %s\n", strerror(cr_errno),
			  strerror(errno));
		return -1;
	}
	int self = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		if (*end != 0 || end == e->d_name || fd <= 2 || fd == self)
			continue;
		if (fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0 && errno != EBADF) {
			ci_errorf("mark descriptor %ld close-on-exec: %s\n", fd, strerror(errno));
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	return 0;
}

static const char *rlimit_name(uint32_t r) {
	switch (r) {
	case RLIMIT_CORE:
		return "RLIMIT_CORE";
	case RLIMIT_CPU:
		return "RLIMIT_CPU";
	case RLIMIT_AS:
		return "RLIMIT_AS";
	case RLIMIT_FSIZE:
		return "RLIMIT_FSIZE";
	case RLIMIT_NOFILE:
		return "RLIMIT_NOFILE";
	case RLIMIT_NPROC:
		return "RLIMIT_NPROC";
	}
	return "an rlimit";
}

static int set_rlimits(const struct ci_spec *s) {
	for (size_t i = 0; i < s->nrlimits; i++) {
		struct rlimit l = {(rlim_t)s->rlimits[i].value, (rlim_t)s->rlimits[i].value};
		if (setrlimit((int)s->rlimits[i].resource, &l) != 0) {
			ci_errorf("set %s to %llu: %s\n", rlimit_name(s->rlimits[i].resource),
				  (unsigned long long)s->rlimits[i].value, strerror(errno));
			return -1;
		}
	}
	return 0;
}

// mkdirs_0711 creates the directories of rel (clean, relative) below base,
// mode 0711 (traverse only), root-owned as the init is.
static int mkdirs_0711(const char *base, const char *rel, char *p, size_t cap) {
	int n = snprintf(p, cap, "%s", base);
	if (n < 0 || (size_t)n >= cap)
		return errno = ENAMETOOLONG, -1;
	size_t len = (size_t)n;
	const char *c = rel;
	while (*c) {
		const char *slash = strchr(c, '/');
		size_t clen = slash ? (size_t)(slash - c) : strlen(c);
		if (len + 1 + clen >= cap)
			return errno = ENAMETOOLONG, -1;
		p[len++] = '/';
		memcpy(p + len, c, clen);
		len += clen;
		p[len] = 0;
		if (mkdir(p, 0711) != 0 && errno != EEXIST)
			return -1;
		if (chmod(p, 0711) != 0)
			return -1;
		c += clen;
		if (*c == '/')
			c++;
	}
	return 0;
}

// private_tmp gives the init (and so the target) a mount namespace of its
// own, stops mount events flowing back to the host, and mounts an empty
// tmpfs on each private directory that exists; the kept directories, opened
// before they are covered, are bound back at their paths.
static int private_tmp(const struct ci_spec *s) {
	uint64_t size = s->tmp_bytes ? s->tmp_bytes : 64u << 20;
	if (unshare(CLONE_NEWNS) != 0) {
		ci_errorf("private tmp: unshare(CLONE_NEWNS): %s\n", strerror(errno));
		return -1;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0) {
		ci_errorf("private tmp: make / a slave mount: %s\n", strerror(errno));
		return -1;
	}
	int *kept = calloc(s->nkeep + 1, sizeof(int));
	if (kept == NULL) {
		ci_errorf("private tmp: out of memory\n");
		return -1;
	}
	int rc = -1;
	size_t nkept = 0;
	for (; nkept < s->nkeep; nkept++) {
		kept[nkept] = open(s->keep[nkept], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (kept[nkept] < 0) {
			ci_errorf("private tmp: open %s: %s\n", s->keep[nkept], strerror(errno));
			goto out;
		}
	}
	char opts[96], path[4096], src[64];
	snprintf(opts, sizeof opts, "mode=1777,size=%llu,nr_inodes=65536", (unsigned long long)size);
	for (size_t i = 0; i < s->nprivate_dirs; i++) {
		const char *dir = s->private_dirs[i];
		struct stat st;
		if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
			continue; // absent, or a symlink: nothing to hide there
		if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0) {
			ci_errorf("private tmp: mount tmpfs on %s: %s\n", dir, strerror(errno));
			goto out;
		}
		size_t dlen = strlen(dir);
		for (size_t k = 0; k < s->nkeep; k++) {
			// Keep paths are clean (filepath.Clean): below dir means
			// dir, a slash, and at least one more byte.
			const char *kp = s->keep[k];
			if (strncmp(kp, dir, dlen) != 0 || kp[dlen] != '/' || kp[dlen + 1] == 0)
				continue;
			if (mkdirs_0711(dir, kp + dlen + 1, path, sizeof path) != 0) {
				ci_errorf("private tmp: keep %s: %s\n", kp, strerror(errno));
				goto out;
			}
			snprintf(src, sizeof src, "/proc/self/fd/%d", kept[k]);
			if (mount(src, path, NULL, MS_BIND | MS_REC, NULL) != 0) {
				ci_errorf("private tmp: bind %s back: %s\n", kp, strerror(errno));
				goto out;
			}
		}
	}
	rc = 0;
out:
	for (size_t k = 0; k < nkept; k++)
		close(kept[k]);
	free(kept);
	return rc;
}

// install_seccomp sets no_new_privs and loads the launcher's program with
// TSYNC, as internal/seccomp's Filter.Install (the init has one thread).
static int install_seccomp(const struct ci_spec *s) {
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		ci_errorf("install seccomp filter: prctl(PR_SET_NO_NEW_PRIVS): %s\n", strerror(errno));
		return -1;
	}
	struct sock_fprog prog = {(unsigned short)s->nfilter, s->filter};
	long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
	if (r != 0) {
		ci_errorf("install seccomp filter: seccomp(SECCOMP_SET_MODE_FILTER): %s\n",
			  r < 0 ? strerror(errno) : "a thread cannot take the filter (TSYNC)");
		return -1;
	}
	return 0;
}

int ci_setup(const struct ci_spec *s) {
	if (cloexec_above_stdio() != 0)
		return -1;
	// Not dumpable: a process of the same uid (the target, in tier C) can
	// then neither open the init's descriptors through /proc/<pid>/fd —
	// the usage report's pipe among them — nor trace it.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
		ci_errorf("prctl(PR_SET_DUMPABLE): %s\n", strerror(errno));
		return -1;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
		ci_errorf("prctl(PR_SET_CHILD_SUBREAPER): %s\n", strerror(errno));
		return -1;
	}
	if (set_rlimits(s) != 0)
		return -1;
	// Before seccomp, which refuses mount and unshare.
	if ((s->flags & CI_FLAG_PRIVATE_TMP) && private_tmp(s) != 0)
		return -1;
	if ((s->flags & CI_FLAG_SECCOMP) && install_seccomp(s) != 0)
		return -1;
	return 0;
}
