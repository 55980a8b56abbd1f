/*
 * tests/actors/test_netopts.c — network options (`-p` forwards, the
 * run.ursa.* annotations, modes), binding the forwards' host sockets, and
 * the receive-slot decision of the netstack actor.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "actors/netstack.h"

static void test_forward_forms(void **state)
{
	(void) state;
	struct urs_netopts o;
	struct urs_err err;
	urs_netopts_default(&o);
	assert_int_equal(o.mode, URS_NET_SANDBOX);
	assert_int_equal(urs_netopts_forward(&o, "8080:80", &err), 0);
	assert_int_equal(urs_netopts_forward(&o, "0.0.0.0:5353:53/udp", &err), 0);
	assert_int_equal(urs_netopts_forward(&o, "[::1]:9000:90/tcp", &err), 0);
	assert_int_equal(o.n_fwd, 3);

	struct sockaddr_in *a = (struct sockaddr_in *) &o.fwd[0].host;
	assert_int_equal(a->sin_family, AF_INET);
	assert_int_equal(ntohs(a->sin_port), 8080);
	assert_int_equal(a->sin_addr.s_addr, htonl(INADDR_LOOPBACK)); /* default host IP */
	assert_int_equal(o.fwd[0].sandbox_port, 80);
	assert_int_equal(o.fwd[0].proto, IPPROTO_TCP);

	a = (struct sockaddr_in *) &o.fwd[1].host;
	assert_int_equal(a->sin_addr.s_addr, htonl(INADDR_ANY));
	assert_int_equal(o.fwd[1].proto, IPPROTO_UDP);
	assert_int_equal(o.fwd[1].sandbox_port, 53);

	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *) &o.fwd[2].host;
	assert_int_equal(a6->sin6_family, AF_INET6);
	assert_true(IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr));
	assert_int_equal(ntohs(a6->sin6_port), 9000);
}

static void test_forward_errors(void **state)
{
	(void) state;
	static const char *const bad[] = {
		"",
		"80",
		"0:80",
		"80:0",
		"80:65536",
		"x:80",
		"80:80/sctp",
		"1.2.3:80:80",
		"a.b.c.d:1:2",
		"80:80/",
		":80",
		"80:",
		"99999999999999999999:1",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct urs_netopts o;
		struct urs_err err = {{0}};
		urs_netopts_default(&o);
		assert_true(urs_netopts_forward(&o, bad[i], &err) < 0);
		assert_int_equal(o.n_fwd, 0);
		/* the message names the offending text */
		assert_non_null(strstr(err.msg, "port forward"));
	}
	struct urs_netopts o;
	struct urs_err err;
	urs_netopts_default(&o);
	for (int i = 0; i < URS_NET_MAX_FWD; i++)
		assert_int_equal(urs_netopts_forward(&o, "1:1", &err), 0);
	assert_int_equal(urs_netopts_forward(&o, "1:1", &err), -E2BIG);
}

static void test_forward_list_and_mode(void **state)
{
	(void) state;
	struct urs_netopts o;
	struct urs_err err;
	urs_netopts_default(&o);
	assert_int_equal(urs_netopts_forwards(&o, "8080:80, 127.0.0.1:53:53/udp,9:9", &err), 0);
	assert_int_equal(o.n_fwd, 3);
	assert_true(urs_netopts_forwards(&o, "1:1,nope", &err) < 0);
	assert_int_equal(urs_netopts_mode(&o, "none", &err), 0);
	assert_int_equal(o.mode, URS_NET_NONE);
	assert_int_equal(urs_netopts_mode(&o, "host", &err), 0);
	assert_int_equal(o.mode, URS_NET_HOST);
	assert_int_equal(urs_netopts_mode(&o, "bridge", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "bridge"));
}

static void test_bind_in_use(void **state)
{
	(void) state;
	struct urs_netopts o;
	struct urs_err err = {{0}};
	urs_netopts_default(&o);
	/* port 0 is refused by the parser: find a free port by binding one */
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(s, (struct sockaddr *) &a, sizeof(a)), 0);
	assert_int_equal(listen(s, 1), 0);
	socklen_t al = sizeof(a);
	getsockname(s, (struct sockaddr *) &a, &al);
	char spec[64];
	snprintf(spec, sizeof(spec), "%u:80", ntohs(a.sin_port));
	assert_int_equal(urs_netopts_forward(&o, "127.0.0.1:1:1/udp", &err), 0);
	assert_int_equal(urs_netopts_forward(&o, spec, &err), 0);
	/* the first forward binds (UDP port 1 as root), the second is in use:
	 * error names it, and the first socket is closed again */
	assert_int_equal(urs_netfwd_bind(&o, &err), -EADDRINUSE);
	char where[32];
	snprintf(where, sizeof(where), "127.0.0.1:%u/tcp", ntohs(a.sin_port));
	assert_non_null(strstr(err.msg, where));
	assert_non_null(strstr(err.msg, "in use"));
	assert_int_equal(o.fwd[0].fd, -1);
	assert_int_equal(o.fwd[1].fd, -1);
	close(s);
	/* now it binds, and both are open */
	assert_int_equal(urs_netfwd_bind(&o, &err), 0);
	assert_true(o.fwd[0].fd >= 0 && o.fwd[1].fd >= 0);
	urs_netfwd_close(&o);
	assert_int_equal(o.fwd[0].fd, -1);
}

static void test_settings(void **state)
{
	(void) state;
	struct urs_netopts o;
	struct urs_err err = {{0}};
	urs_netopts_default(&o);
	assert_int_equal(urs_netopts_set(&o, "ipv4", "10.77.0.0/16", &err), 0);
	assert_int_equal(urs_netopts_set(&o, "ipv6", "fd00:77::/64", &err), 0);
	assert_int_equal(urs_netopts_set(&o, "allow", "192.0.2.1/32, 169.254.0.0/16", &err), 0);
	assert_int_equal(urs_netopts_set(&o, "allow", "fe80::/10", &err), 0);
	assert_int_equal(urs_netopts_set(&o, "max-flows", "7", &err), 0);
	struct urs_net_cfg nc;
	urs_net_cfg_default(&nc);
	unsigned base_allow = nc.n_allow;
	urs_netopts_apply(&o, &nc);
	char a[INET6_ADDRSTRLEN];
	assert_string_equal(inet_ntop(AF_INET, &nc.addr4, a, sizeof(a)), "10.77.0.2");
	assert_string_equal(inet_ntop(AF_INET, &nc.gw4, a, sizeof(a)), "10.77.0.1");
	assert_int_equal(nc.prefix4, 16);
	assert_string_equal(inet_ntop(AF_INET6, &nc.addr6, a, sizeof(a)), "fd00:77::2");
	assert_string_equal(inet_ntop(AF_INET6, &nc.gw6, a, sizeof(a)), "fd00:77::1");
	assert_int_equal(nc.prefix6, 64);
	assert_int_equal(nc.n_allow, base_allow + 3);
	assert_int_equal(nc.allow[base_allow].family, AF_INET);
	assert_int_equal(nc.allow[base_allow].len, 32);
	assert_int_equal(nc.allow[base_allow + 2].family, AF_INET6);
	assert_int_equal(nc.allow[base_allow + 2].len, 10);
	assert_int_equal(nc.max_flows, 7);

	/* refusals name the problem */
	static const char *const bad[][2] = {
		{"ipv4", "10.77.0.1/16"}, /* host bits */
		{"ipv4", "10.0.0.0/31"},  /* no room for gateway + sandbox */
		{"ipv4", "fd00::/64"},	  /* wrong family */
		{"ipv6", "fd00::/127"},	  {"ipv6", "fd00::1/64"},   {"ipv4", "10.0.0.0"},
		{"allow", "1.2.3.0/33"},  {"allow", "nonsense"},    {"max-flows", "0"},
		{"max-flows", "12x"},	  {"max-flows", "2000000"}, {"colour", "blue"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		urs_netopts_default(&o);
		err.msg[0] = 0;
		assert_int_equal(urs_netopts_set(&o, bad[i][0], bad[i][1], &err), -EINVAL);
		assert_non_null(strstr(err.msg, bad[i][0]));
	}
	/* defaults untouched without settings */
	urs_netopts_default(&o);
	struct urs_net_cfg d1, d2;
	urs_net_cfg_default(&d1);
	urs_net_cfg_default(&d2);
	urs_netopts_apply(&o, &d2);
	assert_memory_equal(&d1.addr4, &d2.addr4, sizeof(d1.addr4));
	assert_int_equal(d1.n_allow, d2.n_allow);
	assert_int_equal(d1.max_flows, d2.max_flows);
}

static void test_slots_next(void **state)
{
	(void) state;
	/* backlog doubles up to the cap; idle expiry goes back to one; else stay */
	assert_int_equal(urs_netstack_slots_next(1, 8, true, false), 2);
	assert_int_equal(urs_netstack_slots_next(2, 8, true, false), 4);
	assert_int_equal(urs_netstack_slots_next(4, 8, true, false), 8);
	assert_int_equal(urs_netstack_slots_next(8, 8, true, false), 8);
	assert_int_equal(urs_netstack_slots_next(8, 8, false, true), 1);
	assert_int_equal(urs_netstack_slots_next(4, 8, false, false), 4);
	assert_int_equal(urs_netstack_slots_next(1, 8, false, true), 1);
	assert_int_equal(urs_netstack_slots_next(3, 5, true, false), 5);
	/* backlog wins over an expired idle period */
	assert_int_equal(urs_netstack_slots_next(2, 8, true, true), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forward_forms),
		cmocka_unit_test(test_forward_errors),
		cmocka_unit_test(test_forward_list_and_mode),
		cmocka_unit_test(test_bind_in_use),
		cmocka_unit_test(test_slots_next),
		cmocka_unit_test(test_settings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
