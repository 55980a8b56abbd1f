/* tests/store/err_host_first.c — half of test_err_same: host/err.h first. */
#include <stddef.h>

#include "host/err.h"
#include "store/err.h"

size_t err_size_host_first(void);
size_t err_size_host_first(void)
{
	return sizeof(struct urs_err);
}
