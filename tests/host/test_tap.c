/*
 * tests/host/test_tap.c — host/tap.c and host/netlink.c against the real
 * kernel: a tap created from outside a fresh network namespace ends up
 * inside it, up, with its MTU, queue length, MAC, addresses and default
 * routes; the caller is back in its own namespace; errors are specific and
 * leave no fd behind.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/tap.h"

static int new_netns(int *orig)
{
	*orig = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	assert_true(*orig >= 0);
	assert_int_equal(unshare(CLONE_NEWNET), 0);
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(setns(*orig, CLONE_NEWNET), 0);
	return fd;
}

static ino_t ns_ino(int fd)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	return st.st_ino;
}

static ino_t self_ns_ino(void)
{
	struct stat st;
	assert_int_equal(stat("/proc/self/ns/net", &st), 0);
	return st.st_ino;
}

static void cfg_default(struct urs_tap_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->name = "eth0";
	memcpy(c->mac, (uint8_t[]){0x02, 0x75, 0x72, 0x73, 0x61, 0x02}, 6);
	c->mtu = 65520;
	c->txqueuelen = 10000;
	c->vnet_hdr = true;
	inet_pton(AF_INET, "10.0.2.2", &c->addr4);
	inet_pton(AF_INET, "10.0.2.1", &c->gw4);
	c->prefix4 = 24;
	c->ipv6 = true;
	inet_pton(AF_INET6, "fd00:7572:7361::2", &c->addr6);
	inet_pton(AF_INET6, "fd00:7572:7361::1", &c->gw6);
	c->prefix6 = 64;
}

static void test_tap_configured(void **state)
{
	(void) state;
	int orig;
	int ns = new_netns(&orig);
	ino_t home = self_ns_ino();
	struct urs_tap_cfg c;
	cfg_default(&c);
	struct urs_tap_info ti;
	struct urs_err err = {{0}};
	int fd = urs_tap_create(ns, &c, &ti, &err);
	assert_true(fd >= 0);
	assert_int_equal(self_ns_ino(), home); /* back home */
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(ti.ifindex > 0);
	assert_true(ti.offloads != 0); /* this kernel takes at least CSUM + TSO */

	/* look from inside */
	assert_int_equal(setns(ns, CLONE_NEWNET), 0);
	assert_int_equal(self_ns_ino(), ns_ino(ns));
	struct ifaddrs *ifa, *i;
	assert_int_equal(getifaddrs(&ifa), 0);
	bool v4 = false, v6 = false, lo_up = false, eth_up = false;
	for (i = ifa; i; i = i->ifa_next) {
		if (!strcmp(i->ifa_name, "lo") && (i->ifa_flags & IFF_UP))
			lo_up = true;
		if (strcmp(i->ifa_name, "eth0"))
			continue;
		eth_up |= (i->ifa_flags & IFF_UP) != 0;
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET)
			v4 = !memcmp(&((struct sockaddr_in *) i->ifa_addr)->sin_addr, &c.addr4, 4);
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET6 &&
		    !memcmp(&((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr, &c.addr6, 16))
			v6 = true;
	}
	freeifaddrs(ifa);
	assert_true(lo_up && eth_up && v4 && v6);
	/* this namespace's sysfs view is not mounted: ask the device directly */
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct ifreq ifr = {0};
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "eth0");
	assert_int_equal(ioctl(s, SIOCGIFMTU, &ifr), 0);
	assert_int_equal(ifr.ifr_mtu, 65520);
	assert_int_equal(ioctl(s, SIOCGIFTXQLEN, &ifr), 0);
	assert_int_equal(ifr.ifr_qlen, 10000);
	assert_int_equal(ioctl(s, SIOCGIFHWADDR, &ifr), 0);
	assert_memory_equal(ifr.ifr_hwaddr.sa_data, c.mac, 6);
	close(s);
	/* the default route through the gateway (/proc/self/net is this netns) */
	FILE *f = fopen("/proc/self/net/route", "r");
	assert_non_null(f);
	char line[256];
	bool def = false;
	while (fgets(line, sizeof(line), f)) {
		char dev[32];
		unsigned dst, gw;
		if (sscanf(line, "%31s %x %x", dev, &dst, &gw) == 3 && !strcmp(dev, "eth0") &&
		    dst == 0 && gw == c.gw4.s_addr)
			def = true;
	}
	fclose(f);
	assert_true(def);
	assert_int_equal(setns(orig, CLONE_NEWNET), 0);
	close(fd);
	close(ns);
	close(orig);
}

static int count_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void test_tap_errors(void **state)
{
	(void) state;
	int orig;
	int ns = new_netns(&orig);
	ino_t home = self_ns_ino();
	int before = count_fds();
	struct urs_tap_cfg c;
	cfg_default(&c);
	/* a name the kernel refuses */
	c.name = "this-name-is-far-too-long-for-ifnamsiz";
	struct urs_tap_info ti;
	struct urs_err err = {{0}};
	int fd = urs_tap_create(ns, &c, &ti, &err);
	assert_true(fd < 0);
	assert_non_null(strstr(err.msg, "network:"));
	assert_int_equal(self_ns_ino(), home);
	assert_int_equal(count_fds(), before);
	/* an address the kernel refuses (prefix > 32) */
	cfg_default(&c);
	c.prefix4 = 40;
	fd = urs_tap_create(ns, &c, &ti, &err);
	assert_true(fd < 0);
	assert_non_null(strstr(err.msg, "IPv4 address"));
	assert_int_equal(self_ns_ino(), home);
	assert_int_equal(count_fds(), before);
	/* not a namespace fd */
	cfg_default(&c);
	int notns = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fd = urs_tap_create(notns, &c, &ti, &err);
	assert_int_equal(fd, -EINVAL);
	assert_non_null(strstr(err.msg, "entering"));
	close(notns);
	close(ns);
	close(orig);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tap_configured),
		cmocka_unit_test(test_tap_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
