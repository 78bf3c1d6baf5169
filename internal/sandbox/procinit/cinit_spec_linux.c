//go:build cgo

// Reading the spec: descriptor 3 in the wire format of wire_linux.go.
// Every length is checked against what is left before it is used.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cinit_linux.h"

static const char wire_magic[8] = {'E', 'L', 'S', 'P', 'E', 'C', '0', '1'};

// read_all reads fd to its end (a memfd from offset 0, a pipe from where it
// is), at most CI_MAX_WIRE_BYTES; NULL after reporting why.
static unsigned char *read_all(int fd, size_t *len) {
	size_t cap = 4096, n = 0;
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		if ((uint64_t)st.st_size > CI_MAX_WIRE_BYTES) {
			ci_errorf("read spec: malformed spec: longer than %u bytes\n", CI_MAX_WIRE_BYTES);
			return NULL;
		}
		cap = (size_t)st.st_size + 1; // +1: sees the end in one more read
	}
	unsigned char *buf = malloc(cap);
	if (buf == NULL) {
		ci_errorf("read spec: out of memory\n");
		return NULL;
	}
	int seekable = lseek(fd, 0, SEEK_SET) == 0;
	for (;;) {
		if (n == cap) {
			if (cap > CI_MAX_WIRE_BYTES) {
				ci_errorf("read spec: malformed spec: longer than %u bytes\n", CI_MAX_WIRE_BYTES);
				free(buf);
				return NULL;
			}
			size_t ncap = cap * 2;
			if (ncap > (size_t)CI_MAX_WIRE_BYTES + 1)
				ncap = (size_t)CI_MAX_WIRE_BYTES + 1;
			unsigned char *nb = realloc(buf, ncap);
			if (nb == NULL) {
				ci_errorf("read spec: out of memory\n");
				free(buf);
				return NULL;
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t r = seekable ? pread(fd, buf + n, cap - n, (off_t)n) : read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ci_errorf("read spec: %s\n", strerror(errno));
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > CI_MAX_WIRE_BYTES) {
		ci_errorf("read spec: malformed spec: longer than %u bytes\n", CI_MAX_WIRE_BYTES);
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static uint32_t le32(const unsigned char *p) {
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

// A record: tag, payload and its length.
struct rec {
	uint32_t tag, len;
	const unsigned char *p;
};

// next_record takes the record at *off of buf[0:n]; 0 when one was there
// whole, -1 otherwise.
static int next_record(const unsigned char *buf, size_t n, size_t *off, struct rec *r) {
	if (n - *off < 8)
		return -1;
	r->tag = le32(buf + *off);
	r->len = le32(buf + *off + 4);
	*off += 8;
	if ((size_t)r->len > n - *off)
		return -1;
	r->p = buf + *off;
	*off += r->len;
	return 0;
}

// dup_str copies a string record; NULL when it holds a NUL (or on ENOMEM).
static char *dup_str(const struct rec *r) {
	if (memchr(r->p, 0, r->len) != NULL)
		return NULL;
	char *s = malloc((size_t)r->len + 1);
	if (s == NULL)
		return NULL;
	memcpy(s, r->p, r->len);
	s[r->len] = 0;
	return s;
}

static int is_singular(uint32_t tag) {
	switch (tag) {
	case CI_WIRE_PATH:
	case CI_WIRE_DIR:
	case CI_WIRE_FLAGS:
	case CI_WIRE_CRED:
	case CI_WIRE_PRIVATE_TMP_SIZE:
	case CI_WIRE_SECCOMP:
	case CI_WIRE_BRIDGE_ADDR:
	case CI_WIRE_BRIDGE_SOCKET:
		return 1;
	}
	return 0;
}

// decode fills s from buf; it returns NULL or what is wrong. The first pass
// checks the framing and counts the repeated records, the second copies.
static const char *decode(const unsigned char *buf, size_t n, struct ci_spec *s) {
	if (n < sizeof wire_magic || memcmp(buf, wire_magic, sizeof wire_magic) != 0)
		return "no magic";
	size_t nargs = 0, nenv = 0, nrl = 0, ndirs = 0, nkeep = 0, off = sizeof wire_magic;
	uint32_t seen = 0;
	struct rec r;
	for (;;) {
		if (next_record(buf, n, &off, &r) != 0)
			return "truncated record";
		if (r.tag > CI_WIRE_BRIDGE_SOCKET)
			return "unknown record";
		if (is_singular(r.tag) && (seen & (1u << r.tag)))
			return "a record twice";
		seen |= 1u << r.tag;
		switch (r.tag) {
		case CI_WIRE_ARG:
			nargs++;
			break;
		case CI_WIRE_ENV:
			nenv++;
			break;
		case CI_WIRE_RLIMIT:
			nrl++;
			break;
		case CI_WIRE_PRIVATE_DIR:
			ndirs++;
			break;
		case CI_WIRE_KEEP:
			nkeep++;
			break;
		}
		if (r.tag == CI_WIRE_END)
			break;
	}
	if (r.len != 0)
		return "end record not empty";
	if (off != n)
		return "bytes after the end";
	if (!(seen & (1u << CI_WIRE_PATH)))
		return "no path";
	if (!!(seen & (1u << CI_WIRE_BRIDGE_ADDR)) != !!(seen & (1u << CI_WIRE_BRIDGE_SOCKET)))
		return "half a bridge";

	// Counts are bounded by n / 8, so none of these overflow.
	s->argv = calloc(nargs + 2, sizeof(char *));
	s->envp = calloc(nenv + 1, sizeof(char *));
	s->rlimits = calloc(nrl + 1, sizeof(struct ci_rlimit));
	s->private_dirs = calloc(ndirs + 1, sizeof(char *));
	s->keep = calloc(nkeep + 1, sizeof(char *));
	if (!s->argv || !s->envp || !s->rlimits || !s->private_dirs || !s->keep)
		return "out of memory";
	size_t ia = 1, ie = 0;
	off = sizeof wire_magic;
	while (next_record(buf, n, &off, &r) == 0 && r.tag != CI_WIRE_END) {
		char *str = NULL;
		switch (r.tag) {
		case CI_WIRE_PATH:
		case CI_WIRE_ARG:
		case CI_WIRE_ENV:
		case CI_WIRE_DIR:
		case CI_WIRE_PRIVATE_DIR:
		case CI_WIRE_KEEP:
		case CI_WIRE_BRIDGE_SOCKET:
			if ((str = dup_str(&r)) == NULL)
				return "NUL in a string (or out of memory)";
			break;
		}
		switch (r.tag) {
		case CI_WIRE_PATH:
			s->path = str;
			break;
		case CI_WIRE_ARG:
			s->argv[ia++] = str;
			break;
		case CI_WIRE_ENV:
			s->envp[ie++] = str;
			break;
		case CI_WIRE_DIR:
			s->dir = str;
			break;
		case CI_WIRE_PRIVATE_DIR:
			s->private_dirs[s->nprivate_dirs++] = str;
			break;
		case CI_WIRE_KEEP:
			s->keep[s->nkeep++] = str;
			break;
		case CI_WIRE_BRIDGE_SOCKET:
			if (r.len > CI_MAX_SOCKET_PATH || str[0] != '/')
				return "bridge socket path";
			s->bridge_socket = str;
			break;
		case CI_WIRE_RLIMIT:
			if (r.len != 16)
				return "rlimit record";
			s->rlimits[s->nrlimits].resource = le32(r.p);
			s->rlimits[s->nrlimits].value = le64(r.p + 8);
			s->nrlimits++;
			break;
		case CI_WIRE_FLAGS:
			if (r.len != 4)
				return "flags record";
			s->flags = le32(r.p);
			break;
		case CI_WIRE_CRED:
			if (r.len != 8)
				return "credentials record";
			s->uid = le32(r.p);
			s->gid = le32(r.p + 4);
			break;
		case CI_WIRE_PRIVATE_TMP_SIZE:
			if (r.len != 8)
				return "private tmp size record";
			s->tmp_bytes = le64(r.p);
			break;
		case CI_WIRE_SECCOMP:
			if (r.len == 0 || r.len % sizeof(struct sock_filter) != 0 ||
			    r.len / sizeof(struct sock_filter) > CI_MAX_SECCOMP_INSNS)
				return "seccomp program";
			// Copied: the record need not be aligned for struct sock_filter.
			if ((s->filter = malloc(r.len)) == NULL)
				return "out of memory";
			memcpy(s->filter, r.p, r.len);
			s->nfilter = r.len / sizeof(struct sock_filter);
			break;
		case CI_WIRE_BRIDGE_ADDR:
			if (r.len != 24)
				return "bridge address record";
			s->bridge_family = le32(r.p);
			if ((s->bridge_family != 4 && s->bridge_family != 6) || le32(r.p + 4) > 0xffff)
				return "bridge address";
			s->bridge_port = (uint16_t)le32(r.p + 4);
			memcpy(s->bridge_addr, r.p + 8, 16);
			s->has_bridge = 1;
			break;
		}
	}
	s->argv[0] = s->path;
	if (s->path[0] != '/')
		return "path is not absolute";
	if (s->dir != NULL && s->dir[0] != '/')
		return "dir is not absolute";
	for (size_t i = 0; i < s->nkeep; i++)
		if (s->keep[i][0] != '/')
			return "keep is not absolute";
	for (size_t i = 0; i < s->nprivate_dirs; i++)
		if (s->private_dirs[i][0] != '/')
			return "private dir is not absolute";
	if ((s->flags & CI_FLAG_SECCOMP) && s->filter == NULL)
		return "seccomp flag without a program";
	if (!(s->flags & CI_FLAG_SECCOMP) && s->filter != NULL)
		return "seccomp program without the flag";
	if ((s->flags & CI_FLAG_SECCOMP) && s->has_bridge)
		return "a bridge needs inet sockets, which the seccomp filter refuses";
	return NULL;
}

int ci_read_spec(struct ci_spec *s) {
	memset(s, 0, sizeof *s);
	if (fcntl(CI_SPEC_FD, F_GETFD) < 0) {
		ci_errorf("read spec: descriptor %d is not open\n", CI_SPEC_FD);
		return -1;
	}
	size_t n = 0;
	unsigned char *buf = read_all(CI_SPEC_FD, &n);
	close(CI_SPEC_FD);
	if (buf == NULL)
		return -1;
	const char *why = decode(buf, n, s);
	free(buf);
	if (why != NULL) {
		ci_errorf("read spec: malformed spec: %s\n", why);
		return -1;
	}
	return 0;
}
