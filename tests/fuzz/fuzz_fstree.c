/*
 * tests/fuzz/fuzz_fstree.c — libFuzzer target for the tree stream of a
 * checkpoint's writable layer and tmpfs mounts (ckpt/fstree.h): any bytes
 * in, urs_fstree_check() must return cleanly with a terminated message.
 * Replayed over its seed corpus by fuzz_main.c as a unit test.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ckpt/fstree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-tree", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t) size) {
		close(fd);
		return 0;
	}
	lseek(fd, 0, SEEK_SET);
	struct urs_err err = {{0}};
	int r = urs_fstree_check(fd, NULL, &err);
	if (r > 0 || (r < 0 && !memchr(err.msg, '\0', sizeof(err.msg))))
		__builtin_trap();
	close(fd);
	return 0;
}
