/*
 * ckpt/workingset.c — an image's recorded working set as a file
 * (ckpt/workingset.h says what it holds and why).
 */
#include "ckpt/workingset.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/common.h"
#include "runtime/io.h"

static const char magic[2][9] = {"URSAWS1\n", "URSAHS1\n"};
static const char *const label[2] = {"ursa workingset v1", "ursa hotset v1"}; /* with NUL */

static void le_put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static uint64_t le_get(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

uint32_t ckpt_ws_count(const uint8_t *bits, uint64_t len)
{
	uint32_t k = 0;
	for (size_t i = 0; i < ckpt_ws_nbytes(len); i++)
		k += (uint32_t) __builtin_popcount(bits[i]);
	return k;
}

/* the blocks of page data [@off, +@n) */
static void mark(uint8_t *bits, uint64_t off, uint64_t n)
{
	for (uint64_t b = off / CKPT_WS_BLOCK; n && b <= (off + n - 1) / CKPT_WS_BLOCK; b++)
		bits[b / 8] |= (uint8_t) (1u << (b % 8));
}

uint32_t ckpt_hot_bits(const struct ckpt_image *img, uint64_t from, uint8_t *bits)
{
	for (uint32_t i = 0; i < img->ntasks; i++) {
		const struct ckpt_task *t = &img->tasks[i];
		for (uint32_t k = 0; k < t->nruns; k++) {
			const struct ckpt_run *r = &t->runs[k];
			uint64_t len = r->npages * CKPT_PAGE_SIZE;
			if (r->off + len <= from || r->off + len > img->pages_len)
				continue;
			uint64_t at = r->off > from ? r->off : from;
			mark(bits, at, r->off + len - at);
			const struct ckpt_run *nx = k + 1 < t->nruns ? &t->runs[k + 1] : NULL;
			if (!nx || nx->vaddr != r->vaddr + len ||
			    nx->off + nx->npages * CKPT_PAGE_SIZE > img->pages_len)
				continue;
			uint64_t n = nx->npages * CKPT_PAGE_SIZE;
			mark(bits, nx->off,
			     n < CKPT_HOT_NEXT * CKPT_WS_BLOCK ? n : CKPT_HOT_NEXT * CKPT_WS_BLOCK);
		}
	}
	return ckpt_ws_count(bits, img->pages_len);
}

long ckpt_ws_encode(enum ckpt_ws_kind kind, const struct ckpt_seal *s, const uint8_t id[16],
		    uint64_t len, const uint8_t *bits, uint8_t *out)
{
	size_t nb = ckpt_ws_nbytes(len);
	if (nb > CKPT_WS_MAX - CKPT_WS_HDR_LEN - CKPT_MAC_LEN)
		return -E2BIG;
	memcpy(out, magic[kind == CKPT_WS_HOT], 8);
	memcpy(out + 8, id, 16);
	le_put(out + 24, len, 8);
	le_put(out + 32, CKPT_WS_BLOCK, 4);
	le_put(out + 36, ckpt_ws_count(bits, len), 4);
	memcpy(out + CKPT_WS_HDR_LEN, bits, nb);
	ckpt_seal_labelled(s, label[kind == CKPT_WS_HOT], out, CKPT_WS_HDR_LEN + nb,
			   out + CKPT_WS_HDR_LEN + nb);
	return (long) (CKPT_WS_HDR_LEN + nb + CKPT_MAC_LEN);
}

long ckpt_ws_decode(enum ckpt_ws_kind kind, const struct ckpt_seal *s, const uint8_t id[16],
		    uint64_t len, const uint8_t *p, size_t n, uint8_t *bits, struct urs_err *err)
{
	size_t nb = ckpt_ws_nbytes(len);
	bool hot = kind == CKPT_WS_HOT;
	const char *file = ckpt_ws_name(kind);
	if (n < CKPT_WS_HDR_LEN + CKPT_MAC_LEN || memcmp(p, magic[hot], 8))
		return urs_err_set(err, -EBADMSG, "%s: not a %s", file,
				   hot ? "hot set" : "working set");
	if (memcmp(p + 8, id, 16))
		return urs_err_set(err, -ESTALE, "%s: of another image", file);
	uint8_t mac[CKPT_MAC_LEN];
	ckpt_seal_labelled(s, label[hot], p, n - CKPT_MAC_LEN, mac);
	if (!urs_mac_equal(mac, p + n - CKPT_MAC_LEN, CKPT_MAC_LEN))
		return urs_err_set(err, -EBADMSG,
				   "%s fails authentication: altered, or sealed under another key",
				   file);
	if (le_get(p + 24, 8) != len || le_get(p + 32, 4) != CKPT_WS_BLOCK ||
	    n != CKPT_WS_HDR_LEN + nb + CKPT_MAC_LEN)
		return urs_err_set(err, -EBADMSG,
				   "%s does not fit its image (%llu bytes of page data in blocks "
				   "of %u)",
				   file, (unsigned long long) len, CKPT_WS_BLOCK);
	uint64_t blocks = (len + CKPT_WS_BLOCK - 1) / CKPT_WS_BLOCK;
	uint32_t set = ckpt_ws_count(p + CKPT_WS_HDR_LEN, len);
	if ((blocks % 8 && p[CKPT_WS_HDR_LEN + nb - 1] >> (blocks % 8)) || le_get(p + 36, 4) != set)
		return urs_err_set(err, -EBADMSG,
				   "%s: malformed (blocks past the end, or not %u set)", file, set);
	memcpy(bits, p + CKPT_WS_HDR_LEN, nb);
	return (long) set;
}

long ckpt_ws_load(enum ckpt_ws_kind kind, const char *dir, const struct ckpt_seal *s,
		  const uint8_t id[16], uint64_t len, uint8_t *bits, struct urs_err *err)
{
	char path[PATH_MAX];
	const char *file = ckpt_ws_name(kind);
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int) sizeof(path))
		return urs_err_set(err, -ENAMETOOLONG, "%s/%s: path too long", dir, file);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	if (fd < 0)
		return urs_err_set(err, -errno, "%s: %m", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return urs_err_set(err, -errno, "%s: %m", path);
	if (!S_ISREG(st.st_mode))
		return urs_err_set(err, -EBADMSG, "%s: not a regular file", path);
	if (st.st_size > (off_t) CKPT_WS_MAX || st.st_size < 0)
		return urs_err_set(err, -EBADMSG, "%s: too large for a working set", path);
	size_t n = (size_t) st.st_size;
	_cleanup_free_ uint8_t *buf = malloc(n ? n : 1);
	if (!buf)
		return urs_err_set(err, -ENOMEM, "%s: out of memory", path);
	int e = urs_pread_all(fd, buf, n, 0);
	if (e)
		return urs_err_set(err, e, "%s: %s", path, strerror(-e));
	long r = ckpt_ws_decode(kind, s, id, len, buf, n, bits, err);
	if (r == -ESTALE)
		return -ENOENT;
	return r < 0 ? urs_err_wrap(err, (int) r, "%s", dir) : r;
}

int ckpt_ws_store(enum ckpt_ws_kind kind, int dfd, const uint8_t *p, size_t n)
{
	char tmp[64];
	uint64_t rnd;
	const char *file = ckpt_ws_name(kind);
	if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
		return -EIO;
	/* a name of its own (O_EXCL): two pagers never share a temporary file */
	snprintf(tmp, sizeof(tmp), ".%s.%016llx", file, (unsigned long long) rnd);
	_cleanup_close_ int fd =
		openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	/* on disk before its name: a crash leaves the old file or the new, whole */
	int e = urs_write_all(fd, p, n);
	if (!e && fsync(fd) < 0)
		e = -errno;
	if (!e && renameat(dfd, tmp, dfd, file) < 0)
		e = -errno;
	if (e)
		unlinkat(dfd, tmp, 0);
	else if (fsync(dfd) < 0)
		e = -errno;
	return e;
}
