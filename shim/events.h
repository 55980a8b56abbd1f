/*
 * shim/events.h — the shim's task events to containerd: each one wrapped
 * in an Envelope (timestamp, namespace, topic, the event as an Any) and
 * sent as a Forward call of containerd.services.events.ttrpc.v1.Events
 * over containerd's ttrpc socket (TTRPC_ADDRESS), on the loop, in the
 * order they were made. Replies are read and dropped. A broken connection
 * is made again for the next event; events queued while it broke are lost
 * and counted (containerd's own shims drop an event after their retries
 * too; CRI learns exits from Wait, not events).
 */
#ifndef URSA_SHIM_EVENTS_H
#define URSA_SHIM_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/loop.h"
#include "shim/ttrpc.h"

struct shim_events {
	struct urs_loop *loop;
	char addr[108]; /* containerd's ttrpc socket path */
	char ns[256];
	int fd;
	struct urs_op tx_op, rx_op;
	uint8_t *out[2];
	size_t len[2], cap[2], tx_off;
	int fill;
	uint8_t rx[4096];
	uint32_t sid;
	uint32_t gen, rx_gen; /* connections made; the one the recv in flight is for */
	uint64_t sent, lost;
};

/**
 * shim_events_init() - publish to containerd at @addr for namespace @ns
 * @ev: the publisher
 * @loop: the loop
 * @addr: the ttrpc socket (unix:// prefix allowed), or NULL/"" to drop events
 * @ns: the containerd namespace
 *
 * Return: 0 or a negative errno. The connection is made at the first event.
 */
int shim_events_init(struct shim_events *ev, struct urs_loop *loop, const char *addr,
		     const char *ns);

/**
 * shim_events_publish() - queue one event (a shim_publish_fn)
 * @arg: the publisher
 * @topic: e.g. "/tasks/exit"
 * @type_url: the event's type, e.g. "containerd.events.TaskExit"
 * @msg: the event
 */
void shim_events_publish(void *arg, const char *topic, const char *type_url,
			 const ProtobufCMessage *msg);

/**
 * shim_events_idle() - whether every queued event has been written
 * @ev: the publisher
 *
 * Return: true when nothing waits to be sent.
 */
bool shim_events_idle(const struct shim_events *ev);

/**
 * shim_events_fini() - close the connection (unsent events are dropped)
 * @ev: the publisher
 */
void shim_events_fini(struct shim_events *ev);

#endif
