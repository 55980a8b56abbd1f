/*
 * ckpt/workingset.c — an image's recorded working set as a file
 * (ckpt/workingset.h says what it holds and why).
 */
#include "ckpt/workingset.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/common.h"
#include "runtime/io.h"

#define MAGIC "URSAWS1\n"
#define LABEL "ursa workingset v1" /* with its NUL */

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

long ckpt_ws_encode(const struct ckpt_seal *s, const uint8_t id[16], uint64_t len,
		    const uint8_t *bits, uint8_t *out)
{
	size_t nb = ckpt_ws_nbytes(len);
	if (nb > CKPT_WS_MAX - CKPT_WS_HDR_LEN - CKPT_MAC_LEN)
		return -E2BIG;
	memcpy(out, MAGIC, 8);
	memcpy(out + 8, id, 16);
	le_put(out + 24, len, 8);
	le_put(out + 32, CKPT_WS_BLOCK, 4);
	le_put(out + 36, ckpt_ws_count(bits, len), 4);
	memcpy(out + CKPT_WS_HDR_LEN, bits, nb);
	ckpt_seal_labelled(s, LABEL, out, CKPT_WS_HDR_LEN + nb, out + CKPT_WS_HDR_LEN + nb);
	return (long) (CKPT_WS_HDR_LEN + nb + CKPT_MAC_LEN);
}

long ckpt_ws_decode(const struct ckpt_seal *s, const uint8_t id[16], uint64_t len, const uint8_t *p,
		    size_t n, uint8_t *bits, struct urs_err *err)
{
	size_t nb = ckpt_ws_nbytes(len);
	if (n < CKPT_WS_HDR_LEN + CKPT_MAC_LEN || memcmp(p, MAGIC, 8))
		return urs_err_set(err, -EBADMSG, "%s: not a working set", CKPT_WS_FILE);
	if (memcmp(p + 8, id, 16))
		return urs_err_set(err, -ESTALE, "%s: of another image", CKPT_WS_FILE);
	uint8_t mac[CKPT_MAC_LEN];
	ckpt_seal_labelled(s, LABEL, p, n - CKPT_MAC_LEN, mac);
	if (!urs_mac_equal(mac, p + n - CKPT_MAC_LEN, CKPT_MAC_LEN))
		return urs_err_set(err, -EBADMSG,
				   "%s fails authentication: altered, or sealed under another key",
				   CKPT_WS_FILE);
	if (le_get(p + 24, 8) != len || le_get(p + 32, 4) != CKPT_WS_BLOCK ||
	    n != CKPT_WS_HDR_LEN + nb + CKPT_MAC_LEN)
		return urs_err_set(err, -EBADMSG,
				   "%s does not fit its image (%llu bytes of page data in blocks "
				   "of %u)",
				   CKPT_WS_FILE, (unsigned long long) len, CKPT_WS_BLOCK);
	uint64_t blocks = (len + CKPT_WS_BLOCK - 1) / CKPT_WS_BLOCK;
	uint32_t set = ckpt_ws_count(p + CKPT_WS_HDR_LEN, len);
	if ((blocks % 8 && p[CKPT_WS_HDR_LEN + nb - 1] >> (blocks % 8)) || le_get(p + 36, 4) != set)
		return urs_err_set(err, -EBADMSG,
				   "%s: malformed (blocks past the end, or not %u set)",
				   CKPT_WS_FILE, set);
	memcpy(bits, p + CKPT_WS_HDR_LEN, nb);
	return (long) set;
}

long ckpt_ws_load(const char *dir, const struct ckpt_seal *s, const uint8_t id[16], uint64_t len,
		  uint8_t *bits, struct urs_err *err)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", dir, CKPT_WS_FILE) >= (int) sizeof(path))
		return urs_err_set(err, -ENAMETOOLONG, "%s/%s: path too long", dir, CKPT_WS_FILE);
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
	long r = ckpt_ws_decode(s, id, len, buf, n, bits, err);
	if (r == -ESTALE)
		return -ENOENT;
	return r < 0 ? urs_err_wrap(err, (int) r, "%s", dir) : r;
}

int ckpt_ws_store(const char *dir, const uint8_t *p, size_t n)
{
	char tmp[64];
	uint64_t rnd;
	_cleanup_close_ int dfd = open(dir, O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return -errno;
	if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
		return -EIO;
	/* a name of its own (O_EXCL): two pagers never share a temporary file */
	snprintf(tmp, sizeof(tmp), ".%s.%016llx", CKPT_WS_FILE, (unsigned long long) rnd);
	_cleanup_close_ int fd =
		openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	/* on disk before its name: a crash leaves the old file or the new, whole */
	int e = urs_write_all(fd, p, n);
	if (!e && fsync(fd) < 0)
		e = -errno;
	if (!e && renameat(dfd, tmp, dfd, CKPT_WS_FILE) < 0)
		e = -errno;
	if (e)
		unlinkat(dfd, tmp, 0);
	else if (fsync(dfd) < 0)
		e = -errno;
	return e;
}
