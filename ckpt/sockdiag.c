/*
 * ckpt/sockdiag.c — socket facts for the dumper (see ckpt_sockdiag.h).
 * unix_diag and inet_diag answer for the namespace of the netlink socket
 * that asks, so the socket is made inside the task's namespace: this thread
 * enters it (setns), creates the socket and returns at once; the socket
 * keeps its namespace.
 */
#include "ckpt/sockdiag.h"

#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/common.h"

static int diag_socket_in(pid_t pid, uint64_t *netns)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	_cleanup_close_ int target = open(path, O_RDONLY | O_CLOEXEC);
	if (target < 0)
		return -errno;
	struct stat st;
	if (fstat(target, &st) < 0)
		return -errno;
	*netns = st.st_ino;
	_cleanup_close_ int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	struct stat me;
	if (fstat(self, &me) < 0)
		return -errno;
	if (me.st_ino == st.st_ino) {
		int s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
		return s < 0 ? -errno : s;
	}
	if (setns(target, CLONE_NEWNET) < 0)
		return -errno;
	int s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	int e = errno;
	if (setns(self, CLONE_NEWNET) < 0)
		abort(); /* we cannot stay in the sandbox's namespace */
	return s < 0 ? -e : s;
}

static int push(struct ckpt_sockdiag *d, const struct ckpt_sk_info *i)
{
	if (urs_grow((void **) &d->v, &d->cap, d->n, sizeof(*d->v), 16))
		return -ENOMEM;
	d->v[d->n++] = *i;
	return 0;
}

static int parse_unix(struct ckpt_sockdiag *d, const struct nlmsghdr *h)
{
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	struct ckpt_sk_info i = {.ino = m->udiag_ino,
				 .family = AF_UNIX,
				 .type = m->udiag_type,
				 .state = m->udiag_state};
	int len = (int) h->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
	for (const struct nlattr *a = (const void *) (m + 1); len >= (int) sizeof(*a);) {
		int al = NLA_ALIGN(a->nla_len);
		if (a->nla_len < sizeof(*a) || a->nla_len > len)
			break;
		const void *p = (const char *) a + NLA_HDRLEN;
		if (a->nla_type == UNIX_DIAG_PEER && a->nla_len >= NLA_HDRLEN + 4) {
			uint32_t v;
			memcpy(&v, p, 4);
			i.peer = v;
		} else if (a->nla_type == UNIX_DIAG_RQLEN && a->nla_len >= NLA_HDRLEN + 8) {
			struct unix_diag_rqlen q;
			memcpy(&q, p, sizeof(q));
			i.rqlen = q.udiag_rqueue;
			if (m->udiag_state == 10) /* listening: queued connections, backlog */
				i.backlog = q.udiag_wqueue;
		} else if (a->nla_type == UNIX_DIAG_NAME) {
			size_t n = a->nla_len - NLA_HDRLEN;
			if (n > sizeof(i.name))
				n = sizeof(i.name);
			memcpy(i.name, p, n);
			i.named = n ? (uint32_t) n : 1;
		}
		len -= al;
		a = (const void *) ((const char *) a + al);
	}
	return push(d, &i);
}

static int parse_inet(struct ckpt_sockdiag *d, const struct nlmsghdr *h, int proto)
{
	const struct inet_diag_msg *m = NLMSG_DATA(h);
	struct ckpt_sk_info i = {.ino = m->idiag_inode,
				 .family = m->idiag_family,
				 .type = proto == IPPROTO_UDP ? SOCK_DGRAM : SOCK_STREAM,
				 .state = m->idiag_state,
				 .port = ntohs(m->id.idiag_sport),
				 .rport = ntohs(m->id.idiag_dport)};
	if (proto == IPPROTO_TCP && m->idiag_state == 10 /* TCP_LISTEN */)
		i.backlog = m->idiag_wqueue;
	memcpy(i.addr, m->id.idiag_src, 16);
	memcpy(i.raddr, m->id.idiag_dst, 16);
	return push(d, &i);
}

/* @proto: 0 for unix_diag, else the inet_diag protocol */
static int query(int s, struct ckpt_sockdiag *d, const void *req, size_t len, int proto)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	if (sendto(s, req, len, 0, (struct sockaddr *) &sa, sizeof(sa)) < 0)
		return -errno;
	_cleanup_free_ char *buf = malloc(32768);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = recv(s, buf, 32768, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (struct nlmsghdr *h = (void *) buf; NLMSG_OK(h, (size_t) n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				return e->error ? e->error : -EIO;
			}
			int r = proto ? parse_inet(d, h, proto) : parse_unix(d, h);
			if (r)
				return r;
		}
	}
}

int ckpt_sockdiag_load(pid_t pid, struct ckpt_sockdiag *d, struct urs_err *err)
{
	memset(d, 0, sizeof(*d));
	_cleanup_close_ int s = diag_socket_in(pid, &d->netns);
	if (s < 0)
		return urs_err_set(err, s,
				   "pid %d: socket diagnostics in its network namespace: %s", pid,
				   strerror(-s));
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} ureq = {
		.h = {.nlmsg_len = sizeof(ureq),
		      .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		      .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
		.r = {.sdiag_family = AF_UNIX,
		      .udiag_states = ~0u,
		      .udiag_show = UDIAG_SHOW_PEER | UDIAG_SHOW_RQLEN | UDIAG_SHOW_NAME},
	};
	int r = query(s, d, &ureq, sizeof(ureq), 0);
	for (int q = 0; !r && q < 4; q++) {
		int fam = q & 1, proto = q < 2 ? IPPROTO_TCP : IPPROTO_UDP;
		struct {
			struct nlmsghdr h;
			struct inet_diag_req_v2 r;
		} ireq = {
			.h = {.nlmsg_len = sizeof(ireq),
			      .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			      .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
			.r = {.sdiag_family = fam ? AF_INET6 : AF_INET,
			      .sdiag_protocol = (uint8_t) proto,
			      .idiag_states = ~0u},
		};
		r = query(s, d, &ireq, sizeof(ireq), proto);
	}
	if (r) {
		ckpt_sockdiag_free(d);
		return urs_err_set(err, r, "pid %d: socket diagnostics: %s", pid, strerror(-r));
	}
	return 0;
}

const struct ckpt_sk_info *ckpt_sockdiag_find(const struct ckpt_sockdiag *d, uint64_t ino)
{
	for (uint32_t k = 0; k < d->n; k++)
		if (d->v[k].ino == ino)
			return &d->v[k];
	return NULL;
}

void ckpt_sockdiag_free(struct ckpt_sockdiag *d)
{
	free(d->v);
	memset(d, 0, sizeof(*d));
}
