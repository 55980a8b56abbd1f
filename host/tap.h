/*
 * host/tap.h — the sandbox's only NIC: a tap device created inside the
 * sandbox's network namespace, configured there (lo and the tap up,
 * addresses, default routes), whose fd stays with the supervisor.
 *
 * The caller enters nothing: urs_tap_create() switches the calling thread
 * into the target namespace, opens and configures the device, and switches
 * back before returning (the supervisor is single-threaded at that point).
 * The device dies with the namespace; the fd is the supervisor's alone
 * (O_CLOEXEC, never passed to the sandbox).
 */
#ifndef URSA_HOST_TAP_H
#define URSA_HOST_TAP_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/err.h"

struct urs_tap_cfg {
	const char *name;    /* "eth0" */
	uint8_t mac[6];	     /* the sandbox side's MAC */
	uint32_t mtu;	     /* 65520 */
	uint32_t txqueuelen; /* raised from tap's 1000: the tx queue drops from the tail */
	bool vnet_hdr;	     /* IFF_VNET_HDR + offloads (CSUM, TSO4/6, USO4/6) */
	struct in_addr addr4, gw4;
	uint8_t prefix4;
	bool ipv6;
	struct in6_addr addr6, gw6;
	uint8_t prefix6;
};

/* What the kernel granted (offloads may be refused on older kernels). */
struct urs_tap_info {
	int ifindex;
	unsigned offloads; /* TUN_F_* accepted */
};

/* Create and configure the tap inside the network namespace @netns_fd;
 * returns the tap fd (O_NONBLOCK | O_CLOEXEC) or -errno with @err set. */
int urs_tap_create(int netns_fd, const struct urs_tap_cfg *cfg, struct urs_tap_info *info,
		   struct urs_err *err);

#endif
