//go:build cgo

// The bridge: tier C's way to the egress proxy. The init listens on a
// loopback TCP address and relays each connection, byte for byte, to the
// proxy's Unix socket, as internal/egress.Bridge: when one side reaches its
// end the other's write side is shut down, an error on either closes both,
// and stopping closes the listener and every connection. It runs in the
// init's poll loop; every descriptor is non-blocking.

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cinit_linux.h"

#define BRIDGE_BUF (16 << 10)
#define BRIDGE_MAX_CONNS 1024

// A relayed connection. Direction d copies from fd[d] to fd[1-d] through
// buf[d]: fd[0] is the target's TCP connection, fd[1] the proxy's socket.
struct conn {
	int fd[2];
	unsigned char *buf[2];
	size_t len[2], off[2];
	int eof[2]; // fd[d] reached its end
	int shut[2]; // fd[1-d]'s write side was shut down after eof[d]
};

struct ci_bridge {
	int ln;
	int accept_paused; // after EMFILE and the like, until the next tick
	struct sockaddr_un proxy;
	struct conn *conns;
	size_t n;
};

int ci_bridge_start(const struct ci_spec *s, struct ci_bridge **out) {
	*out = NULL;
	if (!s->has_bridge)
		return 0;
	struct ci_bridge *b = calloc(1, sizeof *b);
	if (b == NULL || (b->conns = calloc(BRIDGE_MAX_CONNS, sizeof(struct conn))) == NULL) {
		free(b);
		ci_errorf("bridge: out of memory\n");
		return -1;
	}
	b->proxy.sun_family = AF_UNIX;
	memcpy(b->proxy.sun_path, s->bridge_socket, strlen(s->bridge_socket) + 1); // <= 107 bytes, checked
	struct sockaddr_storage ss;
	socklen_t sl;
	memset(&ss, 0, sizeof ss);
	if (s->bridge_family == 4) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_port = htons(s->bridge_port);
		memcpy(&a->sin_addr, s->bridge_addr, 4);
		sl = sizeof *a;
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(s->bridge_port);
		memcpy(&a->sin6_addr, s->bridge_addr, 16);
		sl = sizeof *a;
	}
	int one = 1;
	b->ln = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (b->ln < 0 || setsockopt(b->ln, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(b->ln, (struct sockaddr *)&ss, sl) != 0 || listen(b->ln, 4096) != 0) {
		ci_errorf("bridge: listen tcp: %s\n", strerror(errno));
		if (b->ln >= 0)
			close(b->ln);
		free(b->conns);
		free(b);
		return -1;
	}
	*out = b;
	return 0;
}

static void conn_close(struct ci_bridge *b, size_t i) {
	struct conn *c = &b->conns[i];
	close(c->fd[0]);
	close(c->fd[1]);
	free(c->buf[0]);
	free(c->buf[1]);
	b->conns[i] = b->conns[--b->n];
}

// accept_all accepts what waits on the listener and dials the proxy for
// each; a connection the proxy's socket refuses is closed at once.
static void accept_all(struct ci_bridge *b) {
	while (b->n < BRIDGE_MAX_CONNS) {
		int c = accept4(b->ln, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				b->accept_paused = 1;
			return;
		}
		int up = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (up < 0) {
			close(c);
			b->accept_paused = 1;
			return;
		}
		int r;
		do
			r = connect(up, (struct sockaddr *)&b->proxy, sizeof b->proxy);
		while (r != 0 && errno == EINTR);
		struct conn *k = &b->conns[b->n];
		memset(k, 0, sizeof *k);
		if (r != 0 || (k->buf[0] = malloc(BRIDGE_BUF)) == NULL || (k->buf[1] = malloc(BRIDGE_BUF)) == NULL) {
			free(k->buf[0]);
			close(c);
			close(up);
			continue;
		}
		k->fd[0] = c;
		k->fd[1] = up;
		b->n++;
	}
}

size_t ci_bridge_npollfds(const struct ci_bridge *b) { return b ? 1 + 2 * b->n : 0; }

// Each connection takes two entries, fd[0] then fd[1]; the listener's is
// last, with fd -1 (ignored by poll) while accepting is paused or full.
size_t ci_bridge_pollfds(struct ci_bridge *b, struct pollfd *fds, size_t max) {
	if (b == NULL || max < ci_bridge_npollfds(b))
		return 0;
	size_t n = 0;
	for (size_t i = 0; i < b->n; i++) {
		struct conn *c = &b->conns[i];
		for (int s = 0; s < 2; s++) {
			short ev = 0;
			if (!c->eof[s] && c->len[s] == 0)
				ev |= POLLIN; // direction s reads from fd[s]
			if (c->len[1 - s] > 0)
				ev |= POLLOUT; // direction 1-s writes to fd[s]
			fds[n].fd = c->fd[s];
			fds[n].events = ev;
			fds[n].revents = 0;
			n++;
		}
	}
	fds[n].fd = (b->accept_paused || b->n >= BRIDGE_MAX_CONNS) ? -1 : b->ln;
	fds[n].events = POLLIN;
	fds[n].revents = 0;
	return n + 1;
}

// pump moves what it can in direction d of c; -1 when the connection is to
// be closed (an error, or both directions done).
static int pump(struct conn *c, int d) {
	int src = c->fd[d], dst = c->fd[1 - d];
	for (;;) {
		if (c->len[d] == 0 && !c->eof[d]) {
			ssize_t r = read(src, c->buf[d], BRIDGE_BUF);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (r < 0)
				return -1;
			if (r == 0)
				c->eof[d] = 1;
			c->len[d] = (size_t)r;
			c->off[d] = 0;
		}
		if (c->len[d] > 0) {
			ssize_t w = send(dst, c->buf[d] + c->off[d], c->len[d], MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (w < 0)
				return -1;
			c->off[d] += (size_t)w;
			c->len[d] -= (size_t)w;
			continue;
		}
		break;
	}
	if (c->eof[d] && c->len[d] == 0 && !c->shut[d]) {
		shutdown(dst, SHUT_WR);
		c->shut[d] = 1;
	}
	return (c->shut[0] && c->shut[1]) ? -1 : 0;
}

void ci_bridge_handle(struct ci_bridge *b, const struct pollfd *fds, size_t n) {
	if (b == NULL || n == 0)
		return;
	size_t nconn = (n - 1) / 2;
	// Backwards, so that closing one (moving the last into its slot) does
	// not skip any of those still to handle.
	for (size_t i = nconn; i-- > 0;) {
		if (i >= b->n)
			continue;
		short r0 = fds[2 * i].revents, r1 = fds[2 * i + 1].revents;
		if ((r0 | r1) == 0)
			continue;
		if ((r0 | r1) & POLLNVAL) {
			conn_close(b, i);
			continue;
		}
		struct conn *c = &b->conns[i];
		if (pump(c, 0) != 0 || pump(c, 1) != 0) {
			conn_close(b, i);
			continue;
		}
		// A hang-up or error on a side already read to its end would be
		// reported by every poll from now on: that peer is gone, and
		// nothing more can be written to it either.
		if (((r0 & (POLLHUP | POLLERR)) && c->eof[0]) || ((r1 & (POLLHUP | POLLERR)) && c->eof[1]))
			conn_close(b, i);
	}
	if (fds[n - 1].revents & POLLIN)
		accept_all(b);
}

void ci_bridge_tick(struct ci_bridge *b) {
	if (b != NULL)
		b->accept_paused = 0;
}

void ci_bridge_stop(struct ci_bridge *b) {
	if (b == NULL)
		return;
	close(b->ln);
	while (b->n > 0)
		conn_close(b, b->n - 1);
	free(b->conns);
	free(b);
}
