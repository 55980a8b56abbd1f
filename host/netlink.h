/*
 * host/netlink.h — the few rtnetlink requests ursa needs to configure a
 * sandbox's network namespace: link up/MTU/MAC/txqueuelen, an address,
 * a default route. A socket opened inside a network namespace keeps
 * talking to that namespace, so the caller opens it there (host/tap.c
 * does) and may return to its own namespace before using it.
 *
 * Every request asks for an ACK and waits for it: an error comes back as
 * a negative errno, never silently.
 */
#ifndef URSA_HOST_NETLINK_H
#define URSA_HOST_NETLINK_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

struct urs_nl {
	int fd;
	uint32_t seq;
};

int urs_nl_open(struct urs_nl *nl);
void urs_nl_close(struct urs_nl *nl);

/* Change a link: @mtu/@txqlen 0 = unchanged, @mac NULL = unchanged. */
int urs_nl_link_set(struct urs_nl *nl, int ifindex, bool up, uint32_t mtu, uint32_t txqlen,
		    const uint8_t mac[6]);
/* Add an address (@family AF_INET or AF_INET6; IPv6 without DAD). */
int urs_nl_addr_add(struct urs_nl *nl, int ifindex, int family, const void *addr, uint8_t prefix);
/* Add a default route through @gw on @ifindex. */
int urs_nl_route_default(struct urs_nl *nl, int ifindex, int family, const void *gw);

#endif
