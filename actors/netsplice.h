/*
 * actors/netsplice.h — the port-forward shortcut: TCP clients accepted on a
 * forward's host socket are connected to the sandbox's own address from a
 * socket made inside the sandbox's network namespace, and the two sockets
 * are relayed with splice(2) (runtime/relay.h) — no frames, no tap.
 *
 * The shortcut is an offer the engine makes for each accepted client
 * (urs_net_set_accept_hook); it declines beyond max_conns live connections
 * (each costs six fds: two sockets, two pipes) or when a socket cannot be
 * made, and the engine then carries the client through the tap as before.
 * The sandbox's server sees these connections coming from the sandbox's own
 * address (they are local connections inside its namespace).
 */
#ifndef URSA_ACTORS_NETSPLICE_H
#define URSA_ACTORS_NETSPLICE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/loop.h"

#define URS_NETSPLICE_MAX_DEFAULT 32

struct urs_netsplice_cfg {
	uint32_t max_conns;   /* spliced connections at once (default 32) */
	uint32_t pipe_size;   /* bytes per pipe (default: the relay's, 1 MiB) */
	uint32_t idle_ms;     /* close connections idle this long (default 2 h) */
	struct in_addr addr4; /* the sandbox's addresses: where clients go */
	struct in6_addr addr6;
	bool ipv6;
};

struct urs_netsplice_stats {
	uint32_t live;	      /* connections now (connecting or relaying) */
	uint64_t opened;      /* relays started */
	uint64_t declined;    /* clients left to the engine (cap reached, no socket) */
	uint64_t refused;     /* the sandbox refused the connection: client reset */
	uint64_t reset;	      /* relays ended by a reset or an error */
	uint64_t idle_closed; /* closed after idle_ms without traffic */
	uint64_t bytes_in;    /* host client -> sandbox */
	uint64_t bytes_out;   /* sandbox -> host client */
};

struct urs_netsplice;

/* Ready to splice into @pid's network namespace (its fd is opened now).
 * -errno if the namespace cannot be opened. */
int urs_netsplice_init(struct urs_netsplice **out, struct urs_loop *loop, pid_t pid,
		       const struct urs_netsplice_cfg *cfg);
/* The engine's accept hook (urs_net_accept_fn): @ctx is the netsplice. */
bool urs_netsplice_offer(void *ctx, int cfd, int family, uint16_t sandbox_port);
/* Periodic (the netstack's idle timer): close idle connections. */
void urs_netsplice_tick(struct urs_netsplice *s, uint32_t elapsed_ms);
/* Close every connection (reset) and the namespace fds; the record is
 * freed once the last relay's completion has come back (or at once if
 * nothing is in flight). */
void urs_netsplice_stop(struct urs_netsplice *s);
void urs_netsplice_get_stats(const struct urs_netsplice *s, struct urs_netsplice_stats *st);

#endif
