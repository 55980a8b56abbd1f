/*
 * tests/net/fuzz_frame.c — fuzz target for the frame path: the first byte
 * holds flags, the rest is one frame for urs_net_input; every frame the
 * engine sends back must parse (checksums included) and the loop is turned
 * so socket completions run too.
 *
 * Flags (byte 0): bit 0 — an engine with the virtio-net header; bit 1 —
 * fix up the IPv4 header and L4 checksums first, so inputs get past
 * verification into the protocol code; bit 2 — set a TCP segment's
 * acknowledgment number to the next sequence number the engine sent that
 * engine last (so handshakes complete and data flows: the engine's ISN is
 * random, a fuzzer could never guess it).
 *
 * The engine opens real sockets for whatever the input asks, so the target
 * first moves into a fresh network namespace whose loopback is the only
 * network: 127.0.0.0/8 is allowed, a TCP listener on 127.0.0.1:80 accepts
 * (and later closes, or resets) what connects, and a UDP socket on
 * 127.0.0.1:53 is the DNS resolver; everything else fails at once, nothing
 * leaves the machine. Each engine is replaced every 4096 inputs so flows do
 * not pile up. Without the privilege for a namespace it fuzzes the parser.
 */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/csum.h"
#include "net/frame.h"
#include "net/net.h"
#include "runtime/timer.h"

static struct urs_loop loop;
static struct urs_net *eng[2];
static unsigned uses[2];
static uint32_t next_seq[2]; /* the engine's last sequence number + data + SYN/FIN */
static bool isolated;
static int lsn = -1, dns = -1;
static int conns[16];
static unsigned nconn;

static int tx(void *ctx, const struct iovec *iov, int cnt)
{
	static uint8_t buf[70000];
	int vnet = ctx != NULL;
	size_t len = 0;
	for (int i = 0; i < cnt; i++) {
		if (len + iov[i].iov_len > sizeof(buf))
			abort(); /* the engine never builds frames that large */
		memcpy(buf + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	struct urs_pkt p;
	if (urs_pkt_parse(&p, buf, len, vnet) < 0)
		abort(); /* everything we send must parse back (checksums too) */
	if (p.proto == IPPROTO_TCP)
		next_seq[vnet] = p.seq + p.data_len + !!(p.tflags & URS_TCP_SYN) +
				 !!(p.tflags & URS_TCP_FIN);
	return 0;
}

static void fix_l4(uint8_t *l4, size_t len, uint8_t proto, uint32_t sum)
{
	size_t off = proto == 6 ? 16 : proto == 17 ? 6 : (proto == 1 || proto == 58) ? 2 : 0;
	if (!off || len < off + 2)
		return;
	l4[off] = l4[off + 1] = 0;
	uint16_t c = urs_csum_fold(urs_csum_partial(l4, len, sum));
	memcpy(l4 + off, &c, 2);
}

/* The TCP header of an Ethernet frame, if it has one within @len. */
static uint8_t *tcp_of(uint8_t *f, size_t len)
{
	if (len < 14 + 40)
		return NULL;
	uint16_t type = (uint16_t) (f[12] << 8 | f[13]);
	uint8_t *ip = f + 14;
	if (type == 0x0800 && ip[9] == 6) {
		size_t ihl = (size_t) (ip[0] & 0xf) * 4;
		return ihl >= 20 && 14 + ihl + 20 <= len ? ip + ihl : NULL;
	}
	if (type == 0x86dd && ip[6] == 6 && len >= 14 + 40 + 20)
		return ip + 40;
	return NULL;
}

/* Recompute the checksums the parser verifies, where the frame has them. */
static void fixup(uint8_t *f, size_t len)
{
	if (len < 14)
		return;
	uint16_t type = (uint16_t) (f[12] << 8 | f[13]);
	uint8_t *ip = f + 14;
	size_t avail = len - 14;
	if (type == 0x0800 && avail >= 20) {
		size_t ihl = (size_t) (ip[0] & 0xf) * 4;
		size_t tot = (size_t) (ip[2] << 8 | ip[3]);
		if (ihl < 20 || ihl > avail)
			return;
		ip[10] = ip[11] = 0;
		uint16_t c = urs_csum_fold(urs_csum_partial(ip, ihl, 0));
		memcpy(ip + 10, &c, 2);
		if (tot > avail || tot < ihl)
			return;
		uint32_t sum = ip[9] == 1 ? 0
					  : urs_csum_pseudo4((struct in_addr *) (ip + 12),
							     (struct in_addr *) (ip + 16), ip[9],
							     (uint32_t) (tot - ihl));
		fix_l4(ip + ihl, tot - ihl, ip[9], sum);
	} else if (type == 0x86dd && avail >= 40) {
		size_t plen = (size_t) (ip[4] << 8 | ip[5]);
		if (plen > avail - 40)
			return;
		uint32_t sum =
			urs_csum_pseudo6((struct in6_addr *) (ip + 8),
					 (struct in6_addr *) (ip + 24), ip[6], (uint32_t) plen);
		fix_l4(ip + 40, plen, ip[6], sum);
	}
}

static void engine_new(int vnet)
{
	struct urs_net_cfg cfg;
	urs_net_cfg_default(&cfg);
	cfg.vnet_hdr = vnet;
	cfg.max_flows = 64;
	cfg.allow[0].family = AF_INET;
	cfg.allow[0].v4.s_addr = htonl(0x7f000000);
	cfg.allow[0].len = 8;
	cfg.allow[1].family = AF_INET6;
	cfg.allow[1].v6 = in6addr_loopback;
	cfg.allow[1].len = 128;
	cfg.n_allow = 2;
	struct sockaddr_in *d = (struct sockaddr_in *) &cfg.dns[0];
	memset(&cfg.dns[0], 0, sizeof(cfg.dns[0]));
	d->sin_family = AF_INET;
	d->sin_port = htons(53);
	d->sin_addr.s_addr = htonl(0x7f000001);
	cfg.n_dns = 1;
	if (urs_net_init(&eng[vnet], &loop, &cfg, tx, vnet ? (void *) 1 : NULL) != 0)
		abort();
	if (urs_net_forward_add(eng[vnet], IPPROTO_TCP,
				(struct sockaddr *) &(struct sockaddr_in){
					.sin_family = AF_INET,
					.sin_port = htons((uint16_t) (8080 + vnet)),
					.sin_addr.s_addr = htonl(0x7f000001)},
				sizeof(struct sockaddr_in), 80) != 0)
		abort();
	uses[vnet] = 0;
}

static void init(void)
{
	if (unshare(CLONE_NEWNET) != 0) {
		fprintf(stderr, "fuzz_frame: no network namespace, fuzzing the parser only\n");
		return;
	}
	/* bring up the namespace's loopback */
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {0};
	strcpy(ifr.ifr_name, "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		abort();
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		abort();
	close(s);
	struct sockaddr_in a = {
		.sin_family = AF_INET, .sin_port = htons(80), .sin_addr.s_addr = htonl(0x7f000001)};
	lsn = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lsn < 0 || bind(lsn, (struct sockaddr *) &a, sizeof(a)) < 0 || listen(lsn, 64) < 0)
		abort();
	a.sin_port = htons(53);
	dns = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (dns < 0 || bind(dns, (struct sockaddr *) &a, sizeof(a)) < 0)
		abort();
	if (urs_loop_init(&loop, NULL) != 0)
		abort();
	engine_new(0);
	engine_new(1);
	isolated = true;
}

static struct urs_timer wake;
static void wake_cb(struct urs_loop *l, struct urs_timer *t, int res)
{
	(void) l;
	(void) t;
	(void) res;
}

/* Let completions arrive (a bounded wait: DEFER_TASKRUN delivers them only
 * when the loop enters the kernel to wait). */
static void pump(void)
{
	if (!urs_timer_busy(&wake))
		urs_timer_start(&loop, &wake, 20000, 0, wake_cb);
	urs_loop_run_once(&loop, true);
}

/* The far side: accept, answer, and now and then close or reset. */
static void far_side(uint8_t how)
{
	int c = accept4(lsn, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (c >= 0) {
		if (nconn == 16) {
			close(conns[0]);
			memmove(conns, conns + 1, sizeof(int) * 15);
			nconn--;
		}
		conns[nconn++] = c;
	}
	for (unsigned i = 0; i < nconn; i++) {
		char b[4096];
		while (recv(conns[i], b, sizeof(b), MSG_DONTWAIT) > 0)
			;
		send(conns[i], "HTTP/1.0 200 OK\r\n\r\nhello", 24, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	if (nconn && (how & 0xc0) == 0xc0) {
		if (how & 0x20) {
			struct linger l = {1, 0};
			setsockopt(conns[0], SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		}
		close(conns[0]);
		memmove(conns, conns + 1, sizeof(int) * (nconn - 1));
		nconn--;
	}
	struct sockaddr_storage from;
	socklen_t fl = sizeof(from);
	char q[512];
	ssize_t r = recvfrom(dns, q, sizeof(q), MSG_DONTWAIT, (struct sockaddr *) &from, &fl);
	if (r > 0)
		sendto(dns, q, (size_t) r, MSG_DONTWAIT, (struct sockaddr *) &from, fl);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int done;
	if (!done) {
		init();
		done = 1;
	}
	if (size < 1)
		return 0;
	int vnet = data[0] & 1;
	static uint8_t frame[1 << 17];
	size_t len = size - 1 < sizeof(frame) ? size - 1 : sizeof(frame);
	memcpy(frame, data + 1, len);
	size_t o = vnet ? URS_VNET_HLEN : 0;
	if (len >= o) {
		if (data[0] & 4) {
			uint8_t *t = tcp_of(frame + o, len - o);
			if (t) {
				uint32_t ack = htonl(next_seq[vnet]);
				memcpy(t + 8, &ack, 4);
			}
		}
		if (data[0] & 2)
			fixup(frame + o, len - o);
	}
	if (!isolated) {
		struct urs_pkt p;
		urs_pkt_parse(&p, frame, len, vnet);
		return 0;
	}
	urs_net_input(eng[vnet], frame, len);
	for (int i = 0; i < 3; i++) {
		pump();
		far_side(data[0]);
	}
	if (++uses[vnet] >= 4096) {
		urs_net_fini(eng[vnet]);
		for (int i = 0; i < 8; i++)
			pump();
		engine_new(vnet);
	}
	return 0;
}
