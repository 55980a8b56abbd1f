/*
 * tests/store/test_err_same.c — store/err.h defines struct urs_err under
 * host/err.h's include guard (store/ may not include host/): whichever is
 * included first wins. This fails if the two definitions drift apart: the
 * struct seen with store/err.h first (here) must be the one seen with
 * host/err.h first (err_host_first.c), and urs_err_set must behave alike.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/err.h"
#include "host/err.h"

size_t err_size_host_first(void);

int main(void)
{
	struct urs_err e;
	int fails = 0;
	if (sizeof(struct urs_err) != err_size_host_first()) {
		printf("FAIL  struct urs_err: %zu bytes per store/err.h, %zu per host/err.h\n",
		       sizeof(struct urs_err), err_size_host_first());
		fails++;
	}
	if (urs_err_set(&e, -EINVAL, "x%d", 1) != -EINVAL || strcmp(e.msg, "x1")) {
		printf("FAIL  urs_err_set\n");
		fails++;
	}
	printf("%d passed, %d failed\n", 2 - fails, fails);
	return fails != 0;
}
