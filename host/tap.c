/*
 * host/tap.c — create and configure the sandbox's tap device from inside
 * its network namespace (see tap.h).
 */
#include "host/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "host/netlink.h"
#include "runtime/common.h"

#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#define TUN_F_USO6 0x40
#endif

/* Offload sets to try, richest first: a kernel refusing USO still takes TSO. */
static const unsigned offload_sets[] = {
	TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_USO4 | TUN_F_USO6,
	TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6,
	TUN_F_CSUM,
	0,
};

static int tap_open(const struct urs_tap_cfg *c, struct urs_tap_info *info, struct urs_err *err)
{
	_cleanup_close_ int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return urs_err_set(err, -errno, "network: opening /dev/net/tun: %m");
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", c->name);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | (c->vnet_hdr ? IFF_VNET_HDR : 0);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0)
		return urs_err_set(err, -errno, "network: creating tap %s (TUNSETIFF): %m",
				   c->name);
	/* Persistent: closing our fd does not unregister the device (which
	 * waits for RCU grace periods in the closing process, ~20 ms at every
	 * sandbox exit); it goes with its namespace, torn down asynchronously
	 * by the kernel once the last process in it is gone. */
	if (ioctl(fd, TUNSETPERSIST, 1) < 0)
		return urs_err_set(err, -errno, "network: tap %s: TUNSETPERSIST: %m", c->name);
	info->offloads = 0;
	if (c->vnet_hdr) {
		int sz = sizeof(struct virtio_net_hdr);
		if (ioctl(fd, TUNSETVNETHDRSZ, &sz) < 0)
			return urs_err_set(err, -errno, "network: tap %s: TUNSETVNETHDRSZ: %m",
					   c->name);
		for (size_t i = 0; i < URS_ARRAY_SIZE(offload_sets); i++) {
			if (ioctl(fd, TUNSETOFFLOAD, offload_sets[i]) == 0) {
				info->offloads = offload_sets[i];
				break;
			}
		}
	}
	info->ifindex = (int) if_nametoindex(c->name);
	if (!info->ifindex)
		return urs_err_set(err, -errno, "network: tap %s has no index: %m", c->name);
	return steal_fd(&fd);
}

static int tap_configure(const struct urs_tap_cfg *c, int ifindex, struct urs_err *err)
{
	struct urs_nl nl;
	int r = urs_nl_open(&nl);
	if (r < 0)
		return urs_err_set(err, r, "network: netlink socket: %s", strerror(-r));
	const char *what = "bringing lo up";
	int lo = (int) if_nametoindex("lo");
	if (lo && (r = urs_nl_link_set(&nl, lo, true, 0, 0, NULL)) < 0)
		goto out;
	what = "setting MTU, queue length, MAC and up";
	if ((r = urs_nl_link_set(&nl, ifindex, true, c->mtu, c->txqueuelen, c->mac)) < 0)
		goto out;
	what = "adding the IPv4 address";
	if ((r = urs_nl_addr_add(&nl, ifindex, AF_INET, &c->addr4, c->prefix4)) < 0)
		goto out;
	what = "adding the IPv4 default route";
	if ((r = urs_nl_route_default(&nl, ifindex, AF_INET, &c->gw4)) < 0)
		goto out;
	if (c->ipv6) {
		what = "adding the IPv6 address";
		if ((r = urs_nl_addr_add(&nl, ifindex, AF_INET6, &c->addr6, c->prefix6)) < 0)
			goto out;
		what = "adding the IPv6 default route";
		if ((r = urs_nl_route_default(&nl, ifindex, AF_INET6, &c->gw6)) < 0)
			goto out;
	}
out:
	urs_nl_close(&nl);
	if (r < 0)
		urs_err_set(err, r, "network: %s %s: %s", c->name, what, strerror(-r));
	return r;
}

int urs_tap_create(int netns_fd, const struct urs_tap_cfg *cfg, struct urs_tap_info *info,
		   struct urs_err *err)
{
	_cleanup_close_ int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return urs_err_set(err, -errno, "network: opening our own net namespace: %m");
	if (setns(netns_fd, CLONE_NEWNET) < 0)
		return urs_err_set(err, -errno,
				   "network: entering the sandbox's net namespace: %m");
	int fd = tap_open(cfg, info, err);
	int r = fd < 0 ? fd : tap_configure(cfg, info->ifindex, err);
	/* back home whatever happened: the supervisor's sockets live here */
	if (setns(self, CLONE_NEWNET) < 0) {
		int e = -errno;
		if (fd >= 0)
			close(fd);
		return urs_err_set(err, e, "network: returning to our own net namespace: %m");
	}
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}
