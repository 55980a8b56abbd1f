/*
 * actors/netstack.c — the tap dispatcher (see netstack.h).
 *
 * Receive: one multishot read (IORING_OP_READ_MULTISHOT) on a provided
 * buffer ring of 64 KiB + header slots that starts with ONE active slot.
 * Backlog (the ring ran empty: -ENOBUFS ends the multishot; or a batch
 * left the kernel no slot) doubles the active slots up to max_slots and
 * re-arms; a period of idle_ms with no backlog retires them back to one and
 * returns their memory (MADV_DONTNEED in runtime/bufring). Without
 * multishot read: single-shot reads from the same ring; without buffer
 * rings: single-shot reads into one lazily touched slot.
 * A read that fills its slot exactly may have been cut: counted as suspect
 * (the slot is larger than any frame the tap can produce, so it should
 * stay 0).
 * Transmit: the engine calls tx() per frame. A frame larger than 2 KiB is
 * copied into a transmit slot and written by an io_uring op; the writes of
 * one loop turn are submitted together (actors/nettx.h); with every slot in
 * flight the engine gets -EAGAIN, and urs_net_tx_ready() when a completion
 * frees one. Small frames (ACKs) go out at once with writev() while no
 * batched write is pending (cheaper than copy + op, and never reordered).
 * URSA_NET_TX=writev writes every frame with writev() instead (a full tap
 * queue: -EAGAIN, POLLOUT, retry). bench/RESULTS.md has both side by side.
 * TCP forwards: each accepted client is first offered to the splice
 * shortcut (actors/netsplice.h), which bypasses the tap; beyond its cap the
 * engine carries the client through the tap.
 */
#include "actors/netstack.h"
#include "actors/netsplice.h"
#include "actors/nettx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <linux/virtio_net.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "runtime/bufring.h"
#include "runtime/common.h"
#include "runtime/compat.h"
#include "runtime/metrics.h"
#include "runtime/probe.h"
#include "runtime/timer.h"

/* an IP packet of 64 KiB, its Ethernet header and the virtio-net header,
 * rounded up to whole pages */
#define SLOT_BYTES (64u * 1024 + 4096)
#define NS_BGID	   0x75 /* first buffer group id tried for the tap ring */
#define NS_BGIDS   64	/* netstacks one loop may carry (a shim's pod) */

struct urs_netstack {
	struct urs_loop *loop;
	struct urs_net *net;
	int tapfd;
	bool multishot, ring; /* receive mode */
	bool stopping;
	bool trimming;		 /* read cancelled to return slot memory (idle_cb) */
	uint32_t big_since_trim; /* frames larger than a page since the last trim */
	uint32_t big_in_period;	 /* ... and during the current idle period */
	struct urs_bufring br;
	unsigned char *flat; /* no buffer ring: one slot */
	struct urs_op rx_op, txpoll_op;
	struct urs_timer idle_timer;
	uint64_t last_backlog_ns;
	uint32_t max_slots, idle_ms;
	uint64_t suspect, rx_errors, tx_dropped, enobufs_flat;
	pid_t sandbox_pid;
	struct urs_netsplice *splice; /* TCP forward shortcut (NULL: off) */
	bool tx_batch;		      /* URSA_NET_TX=batch: io_uring writes from slots */
	struct urs_nettx txb;
};

static void rx_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags);

/* the memory of a netstack that was never armed, or whose every operation
 * has ended */
static void ns_free(struct urs_netstack *ns)
{
	if (ns->ring)
		urs_bufring_fini(&ns->br);
	if (ns->flat)
		munmap(ns->flat, SLOT_BYTES);
	urs_nettx_fini(&ns->txb);
	urs_closep(&ns->tapfd);
	free(ns);
}

/* a stopped netstack goes once nothing of the loop's refers to it */
static bool ns_gone(struct urs_netstack *ns)
{
	if (!ns->stopping || urs_op_busy(&ns->rx_op) || urs_op_busy(&ns->txpoll_op) ||
	    urs_timer_busy(&ns->idle_timer) || ns->txb.busy)
		return false;
	ns_free(ns);
	return true;
}
static int net_metrics_register(void);

static void rx_arm(struct urs_netstack *ns)
{
	struct io_uring_sqe *sqe = urs_op_sqe(&ns->rx_op);
	if (ns->ring && ns->multishot) {
		urs_prep_read_multishot(sqe, ns->tapfd, 0, 0, ns->br.bgid);
	} else if (ns->ring) {
		io_uring_prep_read(sqe, ns->tapfd, NULL, SLOT_BYTES, 0);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = ns->br.bgid;
	} else {
		io_uring_prep_read(sqe, ns->tapfd, ns->flat, SLOT_BYTES, 0);
	}
	/* a tap read is not a reason to keep the loop alive */
	ns->rx_op.flags |= URS_OPF_WEAK;
	urs_submit(ns->loop, &ns->rx_op, rx_cb);
}

static void frame_in(struct urs_netstack *ns, const unsigned char *p, int32_t len)
{
	/* stopped (the engine gone) with frames still coming in: a read's
	 * completion may follow the stop in the same turn, or before its
	 * cancel lands; dropped */
	if (ns->stopping)
		return;
	if ((uint32_t) len >= SLOT_BYTES)
		ns->suspect++;
	if (len > 4096) {
		ns->big_since_trim++;
		ns->big_in_period++;
	}
	urs_net_input(ns->net, p, (size_t) len);
}

static void rx_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	struct urs_netstack *ns = container_of(op, struct urs_netstack, rx_op);
	if (ns->ring) {
		uint16_t bid;
		unsigned char *p = urs_bufring_take(&ns->br, res, flags, &bid);
		if (p) {
			frame_in(ns, p, res);
			urs_bufring_recycle(&ns->br, bid);
		}
		if (urs_bufring_take_backlog(&ns->br) && !ns->stopping) {
			ns->last_backlog_ns = urs_now_ns();
			uint32_t next =
				urs_netstack_slots_next(ns->br.active, ns->max_slots, true, false);
			if (next > ns->br.active)
				urs_bufring_grow(&ns->br, next);
		}
	} else if (res > 0) {
		frame_in(ns, ns->flat, res);
	}
	if (res < 0 && res != -ENOBUFS && res != -ECANCELED && res != -EAGAIN && res != -EINTR)
		ns->rx_errors++;
	if (flags & IORING_CQE_F_MORE)
		return;
	if (ns_gone(ns))
		return;
	if (ns->trimming && !ns->stopping) {
		/* the read is over (cancelled, or ended by itself meanwhile): no
		 * request holds a slot, so their memory can go back */
		ns->trimming = false;
		ns->big_since_trim = 0;
		urs_bufring_shrink(&ns->br, 1);
		urs_bufring_trim(&ns->br);
		rx_arm(ns);
		return;
	}
	if (ns->stopping || res == -ECANCELED)
		return;
	if (res == 0 || res == -EBADF || res == -EBADFD || res == -EIO)
		return; /* the tap is gone (namespace torn down): nothing more to read */
	rx_arm(ns);
}

static void idle_cb(struct urs_loop *loop, struct urs_timer *t, int res)
{
	struct urs_netstack *ns = container_of(t, struct urs_netstack, idle_timer);
	if (res < 0 || ns->stopping) {
		ns_gone(ns);
		return;
	}
	urs_netsplice_tick(ns->splice, ns->idle_ms);
	if (ns->tx_batch)
		urs_nettx_idle(&ns->txb);
	uint64_t now = urs_now_ns();
	bool expired = now - ns->last_backlog_ns >= (uint64_t) ns->idle_ms * 1000000ull;
	/* No backlog for a period: back to one slot in service (cheap). */
	if (ns->ring && ns->br.active > 1 &&
	    urs_netstack_slots_next(ns->br.active, ns->max_slots, false, expired) == 1)
		urs_bufring_shrink(&ns->br, 1);
	/* Quiet for a whole period after large frames wrote into slots: stop
	 * the read for a moment, and give their memory back once its final
	 * completion says no request holds a slot (rx_cb). */
	bool quiet = ns->big_in_period == 0;
	ns->big_in_period = 0;
	if (ns->ring && !ns->trimming && quiet && ns->big_since_trim && urs_op_busy(&ns->rx_op)) {
		ns->trimming = true;
		urs_cancel(loop, &ns->rx_op);
	}
}

static void txpoll_cb(struct urs_loop *loop, struct urs_op *op, int32_t res, uint32_t flags)
{
	(void) loop;
	(void) flags;
	struct urs_netstack *ns = container_of(op, struct urs_netstack, txpoll_op);
	if (ns_gone(ns) || res < 0 || ns->stopping)
		return;
	urs_net_tx_ready(ns->net);
}

static void tx_ready(void *ctx)
{
	struct urs_netstack *ns = ctx;
	if (ns_gone(ns))
		return;
	if (!ns->stopping && ns->net)
		urs_net_tx_ready(ns->net);
}

/* frames up to this size (ACKs, small segments) are written at once when
 * no batched write is pending: a copy and an io_uring op cost more than the
 * writev, and nothing queued means no reordering */
#define TX_DIRECT_MAX 2048

static int tx(void *ctx, const struct iovec *iov, int iovcnt)
{
	struct urs_netstack *ns = ctx;
	if (ns->tx_batch) {
		size_t len = 0;
		for (int i = 0; i < iovcnt; i++)
			len += iov[i].iov_len;
		if (len > TX_DIRECT_MAX || ns->txb.busy ||
		    writev(ns->tapfd, iov, iovcnt) < 0) { /* -EAGAIN: queue it */
			int r = urs_nettx_send(&ns->txb, iov, iovcnt);
			if (r < 0 && r != -EAGAIN)
				ns->tx_dropped++;
			return r;
		}
		return 0;
	}
	ssize_t n = writev(ns->tapfd, iov, iovcnt);
	if (n >= 0)
		return 0;
	int r = -errno;
	if (r == -EAGAIN) {
		if (!urs_op_busy(&ns->txpoll_op)) {
			io_uring_prep_poll_add(urs_op_sqe(&ns->txpoll_op), ns->tapfd, POLLOUT);
			ns->txpoll_op.flags |= URS_OPF_WEAK;
			urs_submit(ns->loop, &ns->txpoll_op, txpoll_cb);
		}
		return r;
	}
	ns->tx_dropped++;
	return r;
}

/* The splice shortcut for TCP forwards: URSA_NET_SPLICE_MAX (environment)
 * or o->splice_max connections at once (0 in the environment: off);
 * URSA_NET_SPLICE_PIPE: bytes per pipe (default 1 MiB). Without
 * it (no TCP forward, or the namespace cannot be opened) the engine carries
 * every client. */
static void splice_start(struct urs_netstack *ns, const struct urs_net_cfg *nc,
			 const struct urs_netopts *o)
{
	bool tcp = false;
	for (unsigned i = 0; i < o->n_fwd; i++)
		tcp |= o->fwd[i].proto == IPPROTO_TCP;
	uint32_t max = o->splice_max ? o->splice_max : URS_NETSPLICE_MAX_DEFAULT;
	const char *e = getenv("URSA_NET_SPLICE_MAX");
	if (e && *e)
		max = (uint32_t) strtoul(e, NULL, 10);
	if (!tcp || !max || o->sandbox_pid <= 0)
		return;
	const char *ps = getenv("URSA_NET_SPLICE_PIPE");
	struct urs_netsplice_cfg sc = {
		.max_conns = max,
		.pipe_size = ps && *ps ? (uint32_t) strtoul(ps, NULL, 10) : 0,
		.idle_ms = nc->tcp_idle_ms,
		.addr4 = nc->addr4,
		.addr6 = nc->addr6,
		.ipv6 = nc->ipv6,
	};
	if (urs_netsplice_init(&ns->splice, ns->loop, o->sandbox_pid, &sc) == 0)
		urs_net_set_accept_hook(ns->net, urs_netsplice_offer, ns->splice);
}

int urs_netstack_start(struct urs_netstack **out, struct urs_loop *loop, int tapfd,
		       const struct urs_net_cfg *nc, struct urs_netopts *o, struct urs_err *err)
{
	struct urs_netstack *ns = calloc(1, sizeof(*ns));
	if (!ns) {
		close(tapfd);
		urs_netfwd_close(o);
		return urs_err_set(err, -ENOMEM, "network: out of memory");
	}
	ns->loop = loop;
	ns->tapfd = tapfd;
	ns->max_slots = o->max_slots ? o->max_slots : 8;
	ns->sandbox_pid = o->sandbox_pid;
	ns->idle_ms = o->idle_ms ? o->idle_ms : 2000;
	const char *txm = getenv("URSA_NET_TX");
	ns->tx_batch =
		!(txm && !strcmp(txm, "writev")); /* URSA_NET_TX=writev: one writev a frame */
	urs_nettx_init(&ns->txb, loop, tapfd, SLOT_BYTES, ns->max_slots, tx_ready, ns);
	int r = urs_net_init(&ns->net, loop, nc, tx, ns);
	if (r < 0) {
		urs_err_set(err, r, "network: starting the engine: %s", strerror(-r));
		goto fail;
	}
	for (unsigned i = 0; i < o->n_fwd; i++) {
		struct urs_netfwd *f = &o->fwd[i];
		r = urs_net_forward_adopt(ns->net, f->proto, f->fd, f->sandbox_port);
		f->fd = -1; /* the engine's now, also on error */
		if (r < 0) {
			urs_err_set(err, r, "network: port forward to %u: %s", f->sandbox_port,
				    strerror(-r));
			goto fail;
		}
	}
	splice_start(ns, nc, o);
	/* a group id of its own: other netstacks may share the loop */
	r = -EEXIST;
	for (uint16_t g = NS_BGID; r == -EEXIST && g < NS_BGID + NS_BGIDS; g++)
		r = urs_bufring_init(&ns->br, loop, g, SLOT_BYTES, ns->max_slots);
	if (r == 0) {
		ns->ring = true;
		ns->multishot = urs_has(URS_FEAT_READ_MSHOT);
	} else if (r == -EOPNOTSUPP) {
		/* no buffer rings: one slot of our own, touched only as frames come */
		ns->flat = mmap(NULL, SLOT_BYTES, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ns->flat == MAP_FAILED) {
			ns->flat = NULL;
			r = -errno;
			urs_err_set(err, r, "network: receive buffer: %s", strerror(-r));
			goto fail;
		}
	} else {
		urs_err_set(err, r, "network: receive ring: %s", strerror(-r));
		goto fail;
	}
	if ((r = net_metrics_register()) < 0) {
		urs_err_set(err, r, "network: metrics: %s", strerror(-r));
		goto fail;
	}
	ns->last_backlog_ns = urs_now_ns();
	rx_arm(ns);
	uint64_t period = (uint64_t) ns->idle_ms * 1000000ull;
	urs_timer_start(loop, &ns->idle_timer, period, period, idle_cb);
	*out = ns;
	return 0;
fail:
	/* nothing of ours is armed yet (the read and the timer come last):
	 * the engine cleans up after itself, the rest is freed here */
	urs_netfwd_close(o);
	urs_netstack_stop(ns); /* nothing armed: freed at once */
	return r;
}

void urs_netstack_stop(struct urs_netstack *ns)
{
	if (!ns)
		return;
	ns->stopping = true;
	urs_nettx_stop(&ns->txb);
	if (urs_op_busy(&ns->rx_op))
		urs_cancel(ns->loop, &ns->rx_op);
	if (urs_op_busy(&ns->txpoll_op))
		urs_cancel(ns->loop, &ns->txpoll_op);
	if (urs_timer_busy(&ns->idle_timer))
		urs_timer_cancel(ns->loop, &ns->idle_timer);
	if (ns->net) {
		urs_net_set_accept_hook(ns->net, NULL, NULL);
		urs_net_fini(ns->net);
	}
	ns->net = NULL;
	urs_netsplice_stop(ns->splice);
	ns->splice = NULL;
	/* the cancels complete on the loop: the last of them frees ns (at once
	 * when nothing was armed); in-flight writes end by themselves */
	ns_gone(ns);
}

/* eth0's tx "drop" column in the sandbox's /proc/net/dev (seen through its
 * init: /proc/PID/net is that process's namespace). Read when scraped. */
static uint64_t queue_dropped(pid_t pid)
{
	if (pid <= 0)
		return 0;
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/net/dev", (int) pid);
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = line;
		while (*p == ' ')
			p++;
		if (strncmp(p, "eth0:", 5))
			continue;
		unsigned long long v[12];
		if (sscanf(p + 5, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
			   &v[10], &v[11]) == 12)
			return v[11];
	}
	return 0;
}

void urs_netstack_get_stats(const struct urs_netstack *ns, struct urs_netstack_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!ns)
		return;
	st->slot_bytes = SLOT_BYTES;
	st->slots_max = ns->max_slots;
	st->slots_active = ns->ring ? ns->br.active : 1;
	if (ns->ring) {
		st->grows = ns->br.grows;
		st->shrinks = ns->br.shrinks;
		st->enobufs = ns->br.enobufs;
	}
	st->suspect = ns->suspect;
	st->rx_errors = ns->rx_errors;
	st->tx_dropped = ns->tx_dropped + ns->txb.errors;
	st->queue_dropped = queue_dropped(ns->sandbox_pid);
}

const struct urs_net_stats *urs_netstack_engine_stats(const struct urs_netstack *ns)
{
	return ns && ns->net ? urs_net_stats(ns->net) : NULL;
}

struct urs_net *urs_netstack_engine(struct urs_netstack *ns)
{
	return ns ? ns->net : NULL;
}

int urs_netstack_prepare(struct urs_netopts *o, pid_t init_pid, struct urs_net_cfg *nc, int *tapfd,
			 struct urs_err *err)
{
	*tapfd = -1;
	o->sandbox_pid = init_pid;
	urs_net_cfg_default(nc);
	urs_netopts_apply(o, nc);
	struct urs_tap_cfg tc;
	urs_netstack_tap_cfg(nc, &tc);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int) init_pid);
	_cleanup_close_ int nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		return urs_err_set(err, -errno, "network: opening %s: %m", path);
	struct urs_tap_info ti;
	int fd = urs_tap_create(nsfd, &tc, &ti, err);
	if (fd < 0)
		return fd;
	/* the engine must know what the tap really accepted, and whom it
	 * talks to */
	nc->vnet_hdr = tc.vnet_hdr;
	memcpy(nc->sandbox_mac, tc.mac, 6);
	nc->sandbox_mac_set = true;
	int r = urs_netfwd_bind(o, err);
	if (r < 0) {
		close(fd);
		return r;
	}
	*tapfd = fd;
	return 0;
}

void urs_netstack_tap_cfg(const struct urs_net_cfg *nc, struct urs_tap_cfg *tc)
{
	memset(tc, 0, sizeof(*tc));
	tc->name = "eth0";
	/* the sandbox's MAC: the gateway's with the last byte flipped */
	memcpy(tc->mac, nc->gw_mac, 6);
	tc->mac[5] ^= 0x01;
	tc->mtu = nc->mtu;
	tc->txqueuelen = 10000;
	tc->vnet_hdr = nc->vnet_hdr;
	tc->addr4 = nc->addr4;
	tc->gw4 = nc->gw4;
	tc->prefix4 = nc->prefix4;
	tc->ipv6 = nc->ipv6;
	tc->addr6 = nc->addr6;
	tc->gw6 = nc->gw6;
	tc->prefix6 = nc->prefix6;
}

/* ---- metrics ---------------------------------------------------------------
 * Registered once when the netstack starts (before the loop runs); values
 * are copied from the engine's and the dispatcher's plain counters when
 * somebody scrapes, so the frame path only bumps integers. */
static const char *const dir_v[] = {"rx", "tx"};
static const struct urs_metric_label dir_l[] = {{"dir", dir_v, 2}};
/* tap_full: our writes the tap refused (EAGAIN); tap_error: other write
 * errors; sandbox_queue: the sandbox's frames its eth0 queue dropped before
 * we read them (eth0 tx_dropped) */
static const char *const drop_v[] = {"bad",   "fragment", "checksum",  "policy",       "flow_limit",
				     "other", "tap_full", "tap_error", "sandbox_queue"};
static const struct urs_metric_label drop_l[] = {{"reason", drop_v, 9}};
static const char *const slotev_v[] = {"grow", "shrink", "enobufs", "suspect"};
static const struct urs_metric_label slotev_l[] = {{"event", slotev_v, 4}};
static const char *const proto_v[] = {"tcp", "udp", "icmp"};
static const struct urs_metric_label proto_l[] = {{"proto", proto_v, 3}};
static const char *const ans_v[] = {"arp", "ndp", "icmp_echo", "dns"};
static const struct urs_metric_label ans_l[] = {{"what", ans_v, 4}};
static const char *const conn_v[] = {"tcp_open", "tcp_refused", "tcp_reset", "udp_open"};
static const struct urs_metric_label conn_l[] = {{"event", conn_v, 4}};

static struct urs_metric m_frames = {.name = "ursa_net_frames_total",
				     .help = "Frames through the tap",
				     .type = URS_METRIC_COUNTER,
				     .labels = dir_l,
				     .nlabels = 1};
static struct urs_metric m_bytes = {.name = "ursa_net_bytes_total",
				    .help = "Bytes through the tap",
				    .type = URS_METRIC_COUNTER,
				    .labels = dir_l,
				    .nlabels = 1};
static struct urs_metric m_drops = {.name = "ursa_net_drops_total",
				    .help = "Frames dropped, by reason",
				    .type = URS_METRIC_COUNTER,
				    .labels = drop_l,
				    .nlabels = 1};
static struct urs_metric m_slots = {
	.name = "ursa_net_rx_slots", .help = "Receive slots in service", .type = URS_METRIC_GAUGE};
static struct urs_metric m_slots_max = {
	.name = "ursa_net_rx_slots_max", .help = "Receive slots at most", .type = URS_METRIC_GAUGE};
static struct urs_metric m_slotev = {
	.name = "ursa_net_rx_slot_events_total",
	.help = "Receive ring growth, shrink, ENOBUFS and suspect reads",
	.type = URS_METRIC_COUNTER,
	.labels = slotev_l,
	.nlabels = 1};
static struct urs_metric m_flows = {.name = "ursa_net_flows",
				    .help = "Flows alive",
				    .type = URS_METRIC_GAUGE,
				    .labels = proto_l,
				    .nlabels = 1};
static struct urs_metric m_conn = {.name = "ursa_net_connections_total",
				   .help = "Connections and UDP flows",
				   .type = URS_METRIC_COUNTER,
				   .labels = conn_l,
				   .nlabels = 1};
static struct urs_metric m_ans = {.name = "ursa_net_answered_total",
				  .help = "Requests answered or forwarded by the gateway",
				  .type = URS_METRIC_COUNTER,
				  .labels = ans_l,
				  .nlabels = 1};
static struct urs_metric m_neigh = {
	.name = "ursa_net_neighbors", .help = "Neighbor cache entries", .type = URS_METRIC_GAUGE};
static const char *const spev_v[] = {"open", "declined", "refused", "reset", "idle"};
static const struct urs_metric_label spev_l[] = {{"event", spev_v, 5}};
static struct urs_metric m_sp_live = {
	.name = "ursa_net_splice_active",
	.help = "Forwarded TCP connections spliced now (bypassing the tap)",
	.type = URS_METRIC_GAUGE};
static struct urs_metric m_sp_ev = {
	.name = "ursa_net_splice_connections_total",
	.help = "Forwarded TCP clients: spliced, declined to the tap path (cap), refused by the "
		"sandbox, ended by a reset, closed idle",
	.type = URS_METRIC_COUNTER,
	.labels = spev_l,
	.nlabels = 1};
static struct urs_metric m_sp_bytes = {
	.name = "ursa_net_splice_bytes_total",
	.help = "Bytes through spliced forwards (rx: from the sandbox)",
	.type = URS_METRIC_COUNTER,
	.labels = dir_l,
	.nlabels = 1};
static struct urs_metrics net_metrics;

static int net_metrics_register(void)
{
	if (net_metrics.count)
		return 0;
	struct urs_metric *all[] = {&m_frames,	&m_bytes, &m_drops,   &m_slots, &m_slots_max,
				    &m_slotev,	&m_flows, &m_conn,    &m_ans,	&m_neigh,
				    &m_sp_live, &m_sp_ev, &m_sp_bytes};
	for (size_t i = 0; i < URS_ARRAY_SIZE(all); i++) {
		int r = urs_metric_register(&net_metrics, all[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

int urs_netstack_render(const struct urs_netstack *ns, const char *labels, char *buf, size_t len)
{
	if (!ns || !net_metrics.count)
		return urs_metrics_expose(&(struct urs_metrics){0}, labels, buf, len);
	struct urs_netstack_stats st;
	urs_netstack_get_stats(ns, &st);
	static const struct urs_net_stats zero;
	const struct urs_net_stats *e = urs_netstack_engine_stats(ns);
	if (!e)
		e = &zero;
	urs_metric_set(&m_frames, 0, e->rx_frames);
	urs_metric_set(&m_frames, 1, e->tx_frames);
	urs_metric_set(&m_bytes, 0, e->rx_bytes);
	urs_metric_set(&m_bytes, 1, e->tx_bytes);
	const uint64_t drops[] = {e->drop_bad,	  e->drop_frag,	 e->drop_csum,
				  e->drop_policy, e->drop_limit, e->drop_other,
				  e->tx_again,	  st.tx_dropped, st.queue_dropped};
	for (uint32_t i = 0; i < URS_ARRAY_SIZE(drops); i++)
		urs_metric_set(&m_drops, i, drops[i]);
	urs_metric_set(&m_slots, 0, st.slots_active);
	urs_metric_set(&m_slots_max, 0, st.slots_max);
	const uint64_t ev[] = {st.grows, st.shrinks, st.enobufs, st.suspect};
	for (uint32_t i = 0; i < URS_ARRAY_SIZE(ev); i++)
		urs_metric_set(&m_slotev, i, ev[i]);
	urs_metric_set(&m_flows, 0, e->flows_tcp);
	urs_metric_set(&m_flows, 1, e->flows_udp);
	urs_metric_set(&m_flows, 2, e->flows_icmp);
	const uint64_t cn[] = {e->tcp_open, e->tcp_refused, e->tcp_reset, e->udp_open};
	for (uint32_t i = 0; i < URS_ARRAY_SIZE(cn); i++)
		urs_metric_set(&m_conn, i, cn[i]);
	const uint64_t an[] = {e->arp, e->ndp, e->icmp_echo, e->dns_queries};
	for (uint32_t i = 0; i < URS_ARRAY_SIZE(an); i++)
		urs_metric_set(&m_ans, i, an[i]);
	urs_metric_set(&m_neigh, 0, e->neigh_entries);
	struct urs_netsplice_stats sp;
	urs_netsplice_get_stats(ns->splice, &sp);
	urs_metric_set(&m_sp_live, 0, sp.live);
	const uint64_t spe[] = {sp.opened, sp.declined, sp.refused, sp.reset, sp.idle_closed};
	for (uint32_t i = 0; i < URS_ARRAY_SIZE(spe); i++)
		urs_metric_set(&m_sp_ev, i, spe[i]);
	urs_metric_set(&m_sp_bytes, 0, sp.bytes_out);
	urs_metric_set(&m_sp_bytes, 1, sp.bytes_in);
	return urs_metrics_expose(&net_metrics, labels, buf, len);
}
