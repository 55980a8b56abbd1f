/*
 * tests/state/fuzz_codec.c — fuzz target for the decoder: any input is
 * loaded as the `all` type of tests/state/tst.ursc (every field kind) with
 * tight limits; it must fail cleanly or decode, and whatever decodes must
 * save again or be refused cleanly. Replayed over tests/state/corpus by fuzz_main.c in the unit
 * suite; a real libFuzzer binary under clang.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "tst_types.h"

void tst_all_saving(struct all *obj)
{
	(void) obj;
}

void tst_node_loaded(struct node *obj)
{
	obj->loaded = 1;
}

uint64_t tst_fd_save(const int *v)
{
	return (uint64_t) (int64_t) *v;
}

void tst_fd_load(int *v, uint64_t x)
{
	*v = (int) x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct urs_st_dec d;
	static struct urs_st_enc e;
	static int init;
	if (!init) {
		urs_st_dec_init(&d, &(struct urs_st_limits){.max_objects = 1 << 16,
							    .max_count = 1 << 16,
							    .max_arena = 64 << 20});
		if (urs_st_enc_init(&e, 0, NULL, NULL))
			abort();
		init = 1;
	}
	struct all *o;
	if (tst_load_all(&d, data, size, NULL, &o) == 0) {
		/* a decoded graph saves again (or is refused cleanly: an object
		 * reached only by a reference is not owned by anything) */
		int r = tst_save_all(&e, o);
		if (r != 0 && r != -EINVAL)
			abort();
	}
	return 0;
}
