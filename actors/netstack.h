/*
 * actors/netstack.h — the supervisor's network actor: it owns the sandbox's
 * tap, receives frames through a provided-buffer ring that starts with ONE
 * 64 KiB slot, grows under backlog and shrinks when idle, hands each frame
 * to the engine (net/net.h), and transmits what the engine builds.
 *
 * Also here: the network options shared by `ursa do` and bundles (mode,
 * port forwards), their parsing, and the pre-bound forward sockets (bound
 * before the sandbox is reported ready, so "address in use" is an error of
 * create, not a silent failure later).
 */
#ifndef URSA_ACTORS_NETSTACK_H
#define URSA_ACTORS_NETSTACK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "runtime/err.h"
#include "host/tap.h"
#include "net/net.h"
#include "runtime/loop.h"

enum urs_netmode { URS_NET_NONE = 0, URS_NET_SANDBOX, URS_NET_HOST };

struct urs_netfwd {
	int proto; /* IPPROTO_TCP / IPPROTO_UDP */
	struct sockaddr_storage host;
	socklen_t hostlen;
	uint16_t sandbox_port;
	int fd; /* bound (and listening) socket, -1 until urs_netfwd_bind() */
};

struct urs_netopts {
	enum urs_netmode mode;
	struct urs_netfwd fwd[URS_NET_MAX_FWD];
	unsigned n_fwd;
	uint32_t max_slots;  /* receive slots at most (default 8) */
	uint32_t idle_ms;    /* shrink back to one slot after this long without backlog */
	uint32_t splice_max; /* TCP forward clients spliced at once (0: 32; see netsplice.h) */
	bool ipv6;
	/* set by urs_netopts_set() (0 / unset: the engine's defaults) */
	bool has_net4, has_net6;
	struct in_addr net4; /* the sandbox's IPv4 network: gateway .1, sandbox .2 */
	uint8_t prefix4;
	struct in6_addr net6; /* the same for IPv6: ::1 and ::2 */
	uint8_t prefix6;
	struct urs_net_prefix allow[URS_NET_MAX_ALLOW]; /* opened despite the policy */
	unsigned n_allow;
	uint32_t max_flows; /* TCP + UDP + ICMP flows at once (0: the engine's 1024) */
	pid_t sandbox_pid;  /* set by urs_netstack_prepare: whose /proc/PID/net is the sandbox's */
};

/* Bundle annotations (documented in docs/network.md). */
#define URS_ANN_NETWORK "run.ursa.network"
#define URS_ANN_PORTS	"run.ursa.ports"
/* run.ursa.network.KEY: the keys of urs_netopts_set() */
#define URS_ANN_NET_PREFIX "run.ursa.network."

void urs_netopts_default(struct urs_netopts *o);
/* "sandbox" | "none" | "host" */
int urs_netopts_mode(struct urs_netopts *o, const char *mode, struct urs_err *err);
/* One forward "[HOSTIP:]HOSTPORT:SANDBOXPORT[/tcp|udp]" (IPv6 HOSTIP in
 * brackets); host IP defaults to 127.0.0.1. */
int urs_netopts_forward(struct urs_netopts *o, const char *spec, struct urs_err *err);
/* A comma-separated list of forwards (the annotation's format). */
int urs_netopts_forwards(struct urs_netopts *o, const char *list, struct urs_err *err);
/* One setting KEY=VALUE (`ursa do --net`, annotation run.ursa.network.KEY):
 *   ipv4=A.B.C.D/N   the sandbox's IPv4 network (N 8..30; gateway .1, sandbox .2)
 *   ipv6=X::/N       its IPv6 network (N 48..120; gateway ::1, sandbox ::2)
 *   allow=CIDR[,CIDR...]  destinations the policy would refuse, opened
 *   max-flows=N      TCP + UDP + ICMP flows alive at once (1..1048576) */
int urs_netopts_set(struct urs_netopts *o, const char *key, const char *value, struct urs_err *err);
/* The engine's configuration with @o's settings over the defaults. */
void urs_netopts_apply(const struct urs_netopts *o, struct urs_net_cfg *nc);
/* Bind (and listen on) every forward's host socket. */
int urs_netfwd_bind(struct urs_netopts *o, struct urs_err *err);
void urs_netfwd_close(struct urs_netopts *o);

/* The tap's configuration from the engine's (addresses, MTU, MACs). */
void urs_netstack_tap_cfg(const struct urs_net_cfg *nc, struct urs_tap_cfg *tc);

/* Before the sandbox is reported ready: the engine's configuration, the
 * tap inside @init_pid's net namespace (fd in *tapfd) and every forward's
 * bound socket. On error nothing is left open. */
int urs_netstack_prepare(struct urs_netopts *o, pid_t init_pid, struct urs_net_cfg *nc, int *tapfd,
			 struct urs_err *err);

struct urs_netstack_stats {
	uint32_t slots_active, slots_max;
	uint64_t grows, shrinks, enobufs, suspect, rx_errors, tx_dropped;
	uint64_t
		queue_dropped; /* the sandbox's eth0 tx_dropped: its frames the tap queue refused */
	size_t slot_bytes;
};

struct urs_netstack;

/* Start on @loop with the tap @tapfd (owned from now on) and the forwards
 * in @o (their fds are handed to the engine). */
int urs_netstack_start(struct urs_netstack **out, struct urs_loop *loop, int tapfd,
		       const struct urs_net_cfg *nc, struct urs_netopts *o, struct urs_err *err);
/* Stop (NULL: nothing): the forwards closed at once, the tap's read and
 * the timers cancelled; @ns frees itself, its tap closed, once the last of
 * its operations has ended on the loop, so it must not be used after this
 * call. Several netstacks may share a loop (each its own buffer group). */
void urs_netstack_stop(struct urs_netstack *ns);
void urs_netstack_get_stats(const struct urs_netstack *ns, struct urs_netstack_stats *st);
const struct urs_net_stats *urs_netstack_engine_stats(const struct urs_netstack *ns);
/* The engine itself (checkpoint: actors/checkpointer.c), or NULL. */
struct urs_net *urs_netstack_engine(struct urs_netstack *ns);

/* Prometheus text of the netstack's counters (labels: e.g. sandbox="ID"). */
int urs_netstack_render(const struct urs_netstack *ns, const char *labels, char *buf, size_t len);

/* Decide a slot count from what the last period saw: exposed for tests. */
uint32_t urs_netstack_slots_next(uint32_t active, uint32_t max, bool backlog, bool idle_expired);

/* Temporary while the engine (net/engine.c) is being written: without it
 * the supervisor builds without networking. */
#ifndef URSA_HAVE_NETSTACK
#define URSA_HAVE_NETSTACK			   0
#define urs_netstack_prepare(o, p, nc, fd, err)	   (-ENOSYS)
#define urs_netstack_start(out, l, fd, nc, o, err) (-ENOSYS)
#define urs_netstack_stop(ns)			   ((void) (ns))
#define urs_netstack_render(ns, l, b, n)	   (0)
#define urs_netstack_engine(ns)			   ((struct urs_net *) NULL)
#endif

#endif
