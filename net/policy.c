/*
 * net/policy.c — which destinations the sandbox may reach. Refused unless
 * inside a cfg.allow prefix: host loopback (127/8, ::1), the host's own
 * addresses (enumerated with getifaddrs at init), link-local and metadata
 * ranges (169.254/16, fe80::/10), unspecified/broadcast/multicast, and
 * IPv6 forms that alias IPv4 (v4-mapped, v4-compatible) so that
 * ::ffff:127.0.0.1 cannot sneak past the IPv4 rules.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdlib.h>
#include <string.h>

#include "net/internal.h"

bool urs_net_prefix_match(const struct urs_net_prefix *p, int family, const struct in6_addr *a)
{
	if (p->family != family)
		return false;
	const uint8_t *x = (const uint8_t *) a;
	const uint8_t *y = family == AF_INET ? (const uint8_t *) &p->v4 : (const uint8_t *) &p->v6;
	unsigned bits = p->len, max = family == AF_INET ? 32 : 128;
	if (bits > max)
		bits = max;
	unsigned i = 0;
	for (; bits >= 8; bits -= 8, i++)
		if (x[i] != y[i])
			return false;
	if (bits) {
		uint8_t m = (uint8_t) (0xff << (8 - bits));
		if ((x[i] & m) != (y[i] & m))
			return false;
	}
	return true;
}

int urs_net_policy_init(struct urs_net *n)
{
	struct ifaddrs *ifa;
	if (getifaddrs(&ifa) < 0)
		return -errno;
	unsigned cnt = 0;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr &&
		    (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6))
			cnt++;
	struct urs_net_prefix *a = cnt ? calloc(cnt, sizeof(*a)) : NULL;
	if (cnt && !a) {
		freeifaddrs(ifa);
		return -ENOMEM;
	}
	unsigned k = 0;
	for (struct ifaddrs *i = ifa; i && k < cnt; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			a[k].family = AF_INET;
			a[k].v4 = ((struct sockaddr_in *) i->ifa_addr)->sin_addr;
			a[k++].len = 32;
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			a[k].family = AF_INET6;
			a[k].v6 = ((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr;
			a[k++].len = 128;
		}
	}
	freeifaddrs(ifa);
	n->host_addrs = a;
	n->n_host_addrs = k;
	return 0;
}

static bool refused4(const struct urs_net *n, const uint8_t *a)
{
	if (a[0] == 127 || a[0] == 0 || a[0] >= 224) /* loopback, "this", multicast, reserved */
		return true;
	if (a[0] == 169 && a[1] == 254)
		return true;
	(void) n;
	return false;
}

static bool refused6(const uint8_t *a)
{
	static const uint8_t zero[16];
	if (a[0] == 0xff) /* multicast */
		return true;
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) /* fe80::/10 */
		return true;
	if (!memcmp(a, zero, 10) && ((a[10] == 0xff && a[11] == 0xff) || (!a[10] && !a[11])))
		return true; /* ::ffff:0:0/96, ::/96 (incl. :: and ::1) */
	return false;
}

bool urs_net_policy_ok(const struct urs_net *n, int family, const struct in6_addr *dst)
{
	for (unsigned i = 0; i < n->cfg.n_allow; i++)
		if (urs_net_prefix_match(&n->cfg.allow[i], family, dst))
			return true;
	const uint8_t *a = (const uint8_t *) dst;
	if (family == AF_INET ? refused4(n, a) : refused6(a))
		return false;
	for (unsigned i = 0; i < n->n_host_addrs; i++)
		if (urs_net_prefix_match(&n->host_addrs[i], family, dst))
			return false;
	return true;
}
