/*
 * ckpt/maps.c — a process's mapping lines and the VmFlags a dump needs,
 * from smaps, or from maps when nothing changed since smaps was read
 * (ckpt/maps.h says why).
 */
#include "ckpt/maps.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/common.h"

/* the whole of a /proc file (grown as it needs), NUL-terminated */
static int read_all(const char *path, char **out, size_t *len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t cap = 16384, n = 0;
	_cleanup_free_ char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (cap - n < 4096 + 1) {
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap *= 2;
		}
		ssize_t k = read(fd, buf + n, cap - n - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += (size_t) k;
	}
	buf[n] = 0;
	*len = n;
	*out = steal_ptr(&buf);
	return 0;
}

/* the flags of a "VmFlags:" line */
static uint8_t vmflags(const char *p)
{
	uint8_t f = 0;
	for (p += strlen("VmFlags:"); *p && *p != '\n'; p++) {
		if (*p == ' ')
			continue;
		bool two = p[1] && (p[2] == ' ' || p[2] == '\n' || !p[2]);
		if (two && p[0] == 'n' && p[1] == 'r')
			f |= CKPT_VMF_NORESERVE;
		if (two && p[0] == 'u' && p[1] == 'm')
			f |= CKPT_VMF_UFFD_MISSING;
		while (p[1] && p[1] != ' ' && p[1] != '\n')
			p++;
	}
	return f;
}

/* smaps' mapping lines (those whose first word does not end in ':') kept
 * in place, its field lines dropped, each mapping's VmFlags noted */
static int from_smaps(pid_t pid, struct ckpt_maps *m)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/smaps", pid);
	int r = read_all(path, &m->text, &m->len);
	if (r < 0)
		return r;
	uint32_t cap = 0;
	size_t w = 0;
	for (char *line = m->text; *line;) {
		char *nl = strchrnul(line, '\n'), *next = *nl ? nl + 1 : nl;
		size_t tok = strcspn(line, " \n");
		if (tok && line[tok - 1] == ':') {
			if (m->n && !strncmp(line, "VmFlags:", 8))
				m->flags[m->n - 1] |= vmflags(line);
		} else if (nl > line) {
			if (urs_grow((void **) &m->flags, &cap, m->n, 1, 64) < 0)
				return -ENOMEM;
			m->flags[m->n++] = 0;
			size_t n = (size_t) (next - line);
			memmove(m->text + w, line, n);
			w += n;
			if (!*nl) /* (a last line without its newline) */
				m->text[w++] = '\n';
		}
		line = next;
	}
	m->text[w] = 0;
	m->len = w;
	return 0;
}

int ckpt_maps_read(pid_t pid, const struct ckpt_maps *before, struct ckpt_maps *out,
		   struct urs_err *err)
{
	*out = (struct ckpt_maps){0};
	int r = 0;
	if (before && before->text) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/maps", pid);
		if ((r = read_all(path, &out->text, &out->len)) == 0 && out->len == before->len &&
		    !memcmp(out->text, before->text, out->len) &&
		    (out->flags = malloc(before->n ? before->n : 1))) {
			memcpy(out->flags, before->flags, before->n);
			out->n = before->n;
			return 0;
		}
		ckpt_maps_free(out); /* something changed: smaps again */
	}
	if (r == 0)
		r = from_smaps(pid, out);
	if (r < 0) {
		ckpt_maps_free(out);
		return urs_err_set(err, r, "pid %d: reading its mappings: %s", pid, strerror(-r));
	}
	return 0;
}

void ckpt_maps_free(struct ckpt_maps *m)
{
	free(m->text);
	free(m->flags);
	*m = (struct ckpt_maps){0};
}
