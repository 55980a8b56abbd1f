/*
 * ckpt/maps.h — a process's mappings as the dumper needs them: the lines
 * of /proc/PID/maps and, for each, the VmFlags that maps does not show
 * and a dump must know (MAP_NORESERVE, a userfaultfd in missing mode).
 * Only /proc/PID/smaps has VmFlags, and the kernel walks every page of
 * every mapping to fill smaps' other fields (~7 ms per 256 MiB): inside
 * a checkpoint's freeze that is a quarter of the pause. So a checkpoint
 * that copies memory first reads smaps then, the tree running, and in the
 * freeze reads maps alone: while every line is what it was, the flags
 * read before stand. What that rests on, flag by flag:
 *   - "um" (a userfaultfd supplies the mapping's pages): a userfaultfd
 *     registered meanwhile needs one held open, and a process of the tree
 *     holding one is refused anyway (its fd cannot be saved); the dumper's
 *     own tracking holds each tracked mapping (another's registration
 *     fails with EBUSY). Seen before, gone since (a lazy restore that
 *     finished in between): a needless refusal, not a wrong image.
 *   - "nr" (MAP_NORESERVE) is fixed when a mapping is made. A mapping
 *     unmapped and made again at the same place with the same protection
 *     within the moments between the two reads keeps its line and could
 *     differ in this flag alone: the restored mapping would then be
 *     accounted for overcommit differently; its pages are new frames, so
 *     its contents are copied again (ckpt/precopy.h).
 * Any other difference reads smaps again.
 */
#ifndef URSA_CKPT_MAPS_H
#define URSA_CKPT_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/err.h"

#define CKPT_VMF_NORESERVE    0x1u /* VmFlags "nr" */
#define CKPT_VMF_UFFD_MISSING 0x2u /* VmFlags "um" */

/**
 * struct ckpt_maps - the mapping lines of a process and their flags
 * @text: the lines, as /proc/PID/maps has them, each ending in '\n'
 * @len: bytes of @text
 * @flags: per line, CKPT_VMF_*
 * @n: lines
 */
struct ckpt_maps {
	char *text;
	size_t len;
	uint8_t *flags;
	uint32_t n;
};

/**
 * ckpt_maps_read() - a process's mappings, with their flags
 * @pid: the process
 * @before: the same process's, read earlier (ckpt_maps_read with NULL),
 *          or NULL
 * @out: filled (ckpt_maps_free)
 * @err: what failed, naming the pid
 *
 * With @before, /proc/PID/maps is read and, when it is @before's text
 * byte for byte, the flags are @before's; otherwise (and without @before)
 * /proc/PID/smaps is read.
 *
 * Return: 0, or a negative errno.
 */
int ckpt_maps_read(pid_t pid, const struct ckpt_maps *before, struct ckpt_maps *out,
		   struct urs_err *err);

/**
 * ckpt_maps_free() - release what ckpt_maps_read filled
 * @m: the mappings (zeroed)
 */
void ckpt_maps_free(struct ckpt_maps *m);

#endif
