/*
 * host/netlink.c — rtnetlink requests with ACKs (see netlink.h). Messages
 * are built in one stack buffer: no allocation, no libmnl dependency for
 * four message types.
 */
#include "host/netlink.h"

#include <errno.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/common.h"

struct nlbuf {
	union {
		struct nlmsghdr h;
		char raw[512];
	};
};

static void *nl_tail(struct nlbuf *b)
{
	return b->raw + NLMSG_ALIGN(b->h.nlmsg_len);
}

static int nl_attr(struct nlbuf *b, uint16_t type, const void *data, size_t len)
{
	size_t need = NLMSG_ALIGN(b->h.nlmsg_len) + RTA_SPACE(len);
	if (need > sizeof(b->raw))
		return -EMSGSIZE;
	struct rtattr *a = nl_tail(b);
	a->rta_type = type;
	a->rta_len = (unsigned short) RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	b->h.nlmsg_len = (uint32_t) need;
	return 0;
}

int urs_nl_open(struct urs_nl *nl)
{
	nl->seq = 1;
	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nl->fd < 0)
		return -errno;
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	if (bind(nl->fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
		int r = -errno;
		urs_nl_close(nl);
		return r;
	}
	return 0;
}

void urs_nl_close(struct urs_nl *nl)
{
	if (nl->fd >= 0)
		close(nl->fd);
	nl->fd = -1;
}

/* Send @b and wait for its ACK (or error). */
static int nl_talk(struct urs_nl *nl, struct nlbuf *b)
{
	b->h.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	b->h.nlmsg_seq = ++nl->seq;
	struct sockaddr_nl to = {.nl_family = AF_NETLINK};
	if (sendto(nl->fd, b->raw, b->h.nlmsg_len, 0, (struct sockaddr *) &to, sizeof(to)) < 0)
		return -errno;
	for (;;) {
		union {
			struct nlmsghdr h;
			char raw[4096];
		} in;
		ssize_t n = recv(nl->fd, in.raw, sizeof(in.raw), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (struct nlmsghdr *h = &in.h; NLMSG_OK(h, (size_t) n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != nl->seq || h->nlmsg_type != NLMSG_ERROR)
				continue;
			const struct nlmsgerr *e = NLMSG_DATA(h);
			return e->error; /* 0 = ACK */
		}
	}
}

int urs_nl_link_set(struct urs_nl *nl, int ifindex, bool up, uint32_t mtu, uint32_t txqlen,
		    const uint8_t mac[6])
{
	struct nlbuf b = {0};
	b.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	b.h.nlmsg_type = RTM_NEWLINK;
	struct ifinfomsg *ifi = NLMSG_DATA(&b.h);
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	ifi->ifi_change = IFF_UP;
	ifi->ifi_flags = up ? IFF_UP : 0;
	int r = 0;
	if (mtu)
		r = nl_attr(&b, IFLA_MTU, &mtu, sizeof(mtu));
	if (!r && txqlen)
		r = nl_attr(&b, IFLA_TXQLEN, &txqlen, sizeof(txqlen));
	if (!r && mac)
		r = nl_attr(&b, IFLA_ADDRESS, mac, 6);
	return r < 0 ? r : nl_talk(nl, &b);
}

int urs_nl_addr_add(struct urs_nl *nl, int ifindex, int family, const void *addr, uint8_t prefix)
{
	struct nlbuf b = {0};
	b.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
	b.h.nlmsg_type = RTM_NEWADDR;
	b.h.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct ifaddrmsg *ifa = NLMSG_DATA(&b.h);
	ifa->ifa_family = (uint8_t) family;
	ifa->ifa_prefixlen = prefix;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = (uint32_t) ifindex;
	size_t len = family == AF_INET ? 4 : 16;
	int r = nl_attr(&b, IFA_LOCAL, addr, len);
	if (!r)
		r = nl_attr(&b, IFA_ADDRESS, addr, len);
	if (!r && family == AF_INET6) {
		/* a sandbox address is ours alone: no duplicate detection delay */
		ifa->ifa_flags = IFA_F_NODAD;
		uint32_t fl = IFA_F_NODAD;
		r = nl_attr(&b, IFA_FLAGS, &fl, sizeof(fl));
	}
	return r < 0 ? r : nl_talk(nl, &b);
}

int urs_nl_route_default(struct urs_nl *nl, int ifindex, int family, const void *gw)
{
	struct nlbuf b = {0};
	b.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	b.h.nlmsg_type = RTM_NEWROUTE;
	b.h.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct rtmsg *rt = NLMSG_DATA(&b.h);
	rt->rtm_family = (uint8_t) family;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_STATIC;
	rt->rtm_scope = RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	uint32_t oif = (uint32_t) ifindex;
	int r = nl_attr(&b, RTA_GATEWAY, gw, family == AF_INET ? 4 : 16);
	if (!r)
		r = nl_attr(&b, RTA_OIF, &oif, sizeof(oif));
	return r < 0 ? r : nl_talk(nl, &b);
}
