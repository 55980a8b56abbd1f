/*
 * tests/gofer/raw.c — the gofer spoken to directly, without the kernel's
 * FUSE: a SOCK_SEQPACKET pair stands in for /dev/fuse (one request per
 * packet, one reply per packet), so a test can send what the kernel never
 * would — names with '/', "..", unknown node ids, malformed lengths, lookups
 * without FORGET — and check that the gofer's own rules hold: it never
 * follows a symlink, never resolves outside its root, bounds its inode
 * table, grows its buffer pool under a burst and shrinks it when idle.
 */
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "actors/gofer/gofer.h"
#include "runtime/loop.h"
#include "runtime/timer.h"
#include "tests/gofer/harness.h"

static int fails, nraw;
static uint64_t uniq = 1;

#define RCHECK(cond, ...)                                         \
	do {                                                      \
		nraw++;                                           \
		if (!(cond)) {                                    \
			fails++;                                  \
			printf("not ok raw - ");                  \
			printf(__VA_ARGS__);                      \
			printf(" (%s:%d)\n", __FILE__, __LINE__); \
		} else {                                          \
			printf("ok raw - ");                      \
			printf(__VA_ARGS__);                      \
			printf("\n");                             \
		}                                                 \
	} while (0)

struct raw {
	struct urs_loop loop;
	struct urs_gofer *g;
	int kfd; /* the "kernel" end */
	unsigned char reply[1 << 18];
	ssize_t rlen;
};

static void send_req(struct raw *r, uint32_t op, uint64_t nodeid, const void *a, size_t alen,
		     const void *b, size_t blen)
{
	unsigned char buf[8192];
	struct fuse_in_header h = {.len = (uint32_t) (sizeof(h) + alen + blen),
				   .opcode = op,
				   .unique = uniq++,
				   .nodeid = nodeid};
	memcpy(buf, &h, sizeof(h));
	if (alen)
		memcpy(buf + sizeof(h), a, alen);
	if (blen)
		memcpy(buf + sizeof(h) + alen, b, blen);
	if (send(r->kfd, buf, h.len, 0) != (ssize_t) h.len)
		abort();
}

/* Run the loop until @n more requests were handled; then collect one reply. */
static int pump(struct raw *r, uint64_t n)
{
	struct urs_gofer_stats st;
	urs_gofer_get_stats(r->g, &st);
	uint64_t want = st.requests + n;
	for (int k = 0; k < 1000; k++) {
		urs_gofer_get_stats(r->g, &st);
		if (st.requests >= want)
			break;
		urs_loop_run_once(&r->loop, true);
	}
	r->rlen = recv(r->kfd, r->reply, sizeof(r->reply), MSG_DONTWAIT);
	if (r->rlen < (ssize_t) sizeof(struct fuse_out_header))
		return 1; /* no reply */
	struct fuse_out_header oh;
	memcpy(&oh, r->reply, sizeof(oh));
	return oh.error;
}

static int call(struct raw *r, uint32_t op, uint64_t nodeid, const void *a, size_t alen,
		const void *b, size_t blen)
{
	send_req(r, op, nodeid, a, alen, b, blen);
	return pump(r, 1);
}

static int lookup(struct raw *r, uint64_t parent, const char *name, uint64_t *nodeid,
		  uint32_t *mode)
{
	int e = call(r, FUSE_LOOKUP, parent, name, strlen(name) + 1, NULL, 0);
	if (e == 0) {
		struct fuse_entry_out eo;
		memcpy(&eo, r->reply + sizeof(struct fuse_out_header), sizeof(eo));
		*nodeid = eo.nodeid;
		if (mode)
			*mode = eo.attr.mode;
	}
	return e;
}

static void drain(struct raw *r)
{
	while (recv(r->kfd, r->reply, sizeof(r->reply), MSG_DONTWAIT) > 0)
		;
}

static void touch(const char *dir, const char *name)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0)
		close(fd);
}

int gofer_raw_tests(void)
{
	char tmp[] = "/tmp/ursa-gofer-raw-XXXXXX";
	if (!mkdtemp(tmp))
		return 1;
	char vol[256], out[256], p[512];
	snprintf(vol, sizeof(vol), "%s/vol", tmp);
	snprintf(out, sizeof(out), "%s/outside", tmp);
	mkdir(vol, 0755);
	mkdir(out, 0755);
	touch(out, "secret");
	touch(vol, "f");
	snprintf(p, sizeof(p), "%s/d", vol);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/ln", vol);
	if (symlink(out, p) < 0)
		return 1;
	snprintf(p, sizeof(p), "%s/up", vol);
	if (symlink("..", p) < 0)
		return 1;
	snprintf(p, sizeof(p), "%s/many", vol);
	mkdir(p, 0755);
	for (int k = 0; k < 100; k++) {
		char n[32];
		snprintf(n, sizeof(n), "m%03d", k);
		touch(p, n);
	}

	snprintf(p, sizeof(p), "%s/huge", vol);
	mkdir(p, 0755);
	for (int k = 0; k < 3000; k++) {
		char n[32];
		snprintf(n, sizeof(n), "entry-%05d", k);
		touch(p, n);
	}

	static struct raw R;
	struct raw *r = &R;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return 1;
	r->kfd = sv[1];
	if (urs_loop_init(&r->loop, NULL) < 0)
		return 1;
	int rfd = open(vol, O_PATH | O_DIRECTORY);
	struct urs_gofer_opts o = {.max_inodes = 50, .idle_ns = 50000000ull, .max_bufs = 8};
	int rc = urs_gofer_start(&r->loop, sv[0], rfd, &o, &r->g);
	close(rfd);
	RCHECK(rc == 0, "gofer starts on a socketpair");
	if (rc)
		return fails;

	RCHECK(call(r, FUSE_GETATTR, 1, &(struct fuse_getattr_in){0},
		    sizeof(struct fuse_getattr_in), NULL, 0) == -EIO,
	       "requests before INIT: EIO");
	struct fuse_init_in ii = {.major = 7,
				  .minor = 38,
				  .max_readahead = 1 << 20,
				  .flags = 0xffffffffu & ~FUSE_INIT_EXT};
	RCHECK(call(r, FUSE_INIT, 0, &ii, sizeof(ii), NULL, 0) == 0, "INIT");
	struct fuse_init_out io;
	memcpy(&io, r->reply + sizeof(struct fuse_out_header), sizeof(io));
	RCHECK(io.major == 7 && io.max_write == 128u << 10 && !(io.flags & FUSE_POSIX_LOCKS) &&
		       !(io.flags & FUSE_WRITEBACK_CACHE) && (io.flags & FUSE_DO_READDIRPLUS),
	       "INIT reply: 7.x, max_write 128 KiB, no lock delegation, no writeback cache");

	uint64_t id = 0, lnid = 0, upid = 0;
	uint32_t mode = 0;
	RCHECK(lookup(r, 1, "f", &id, &mode) == 0 && S_ISREG(mode), "LOOKUP of a file");
	RCHECK(lookup(r, 1, "..", &id, NULL) == -EINVAL, "LOOKUP \"..\": EINVAL");
	RCHECK(lookup(r, 1, ".", &id, NULL) == -EINVAL, "LOOKUP \".\": EINVAL");
	RCHECK(lookup(r, 1, "d/../../outside", &id, NULL) == -EINVAL, "LOOKUP with '/': EINVAL");
	RCHECK(lookup(r, 1, "", &id, NULL) == -EINVAL, "LOOKUP of an empty name: EINVAL");
	RCHECK(call(r, FUSE_LOOKUP, 1, "fff", 3, NULL, 0) == -EINVAL,
	       "LOOKUP without a NUL: EINVAL");
	RCHECK(lookup(r, 1, "ln", &lnid, &mode) == 0 && S_ISLNK(mode),
	       "LOOKUP of an absolute symlink out: a symlink");
	RCHECK(lookup(r, lnid, "secret", &id, NULL) == -ENOTDIR,
	       "LOOKUP beneath that symlink: ENOTDIR (never followed)");
	RCHECK(lookup(r, 1, "up", &upid, &mode) == 0 && S_ISLNK(mode), "LOOKUP of \"up\" -> ..");
	RCHECK(lookup(r, upid, "outside", &id, NULL) == -ENOTDIR, "LOOKUP beneath \"up\": ENOTDIR");
	RCHECK(call(r, FUSE_READLINK, lnid, NULL, 0, NULL, 0) == 0 &&
		       r->rlen - (ssize_t) sizeof(struct fuse_out_header) ==
			       (ssize_t) strlen(out) &&
		       !memcmp(r->reply + sizeof(struct fuse_out_header), out, strlen(out)),
	       "READLINK returns the target verbatim");
	RCHECK(call(r, FUSE_GETATTR, 999999, &(struct fuse_getattr_in){0},
		    sizeof(struct fuse_getattr_in), NULL, 0) == -ESTALE,
	       "unknown nodeid: ESTALE");
	struct fuse_link_in li = {.oldnodeid = 424242};
	RCHECK(call(r, FUSE_LINK, 1, &li, sizeof(li), "hl", 3) == -ESTALE,
	       "LINK of an unknown (outside) inode: ESTALE");
	RCHECK(call(r, 4242, 1, NULL, 0, NULL, 0) == -ENOSYS, "unknown opcode: ENOSYS");
	RCHECK(call(r, FUSE_GETLK, 1, NULL, 0, NULL, 0) == -ENOSYS,
	       "GETLK (not negotiated): ENOSYS");
	RCHECK(call(r, FUSE_READ, 1, "x", 1, NULL, 0) == -EINVAL, "short READ input: EINVAL");
	struct fuse_write_in wi = {.fh = 0, .size = 1000};
	RCHECK(call(r, FUSE_WRITE, 1, &wi, sizeof(wi), "abc", 3) == -EINVAL,
	       "WRITE longer than its payload: EINVAL");
	struct fuse_mknod_in mi = {.mode = S_IFCHR | 0666, .rdev = 0x103};
	RCHECK(call(r, FUSE_MKNOD, 1, &mi, sizeof(mi), "null", 5) == -EPERM, "MKNOD chr: EPERM");
	mi.mode = S_IFBLK | 0666;
	RCHECK(call(r, FUSE_MKNOD, 1, &mi, sizeof(mi), "blk", 4) == -EPERM, "MKNOD blk: EPERM");
	struct fuse_rename2_in ri = {.newdir = 1, .flags = RENAME_WHITEOUT};
	RCHECK(call(r, FUSE_RENAME2, 1, &ri, sizeof(ri), "f\0g", 4) == -EPERM,
	       "RENAME2 with WHITEOUT: EPERM");
	char xa[64];
	uint32_t xin[2] = {1, 0};
	memcpy(xa, xin, 8);
	memcpy(xa + 8, "trusted.x\0v", 11);
	uint64_t fid = 0;
	lookup(r, 1, "f", &fid, NULL);
	RCHECK(call(r, FUSE_SETXATTR, fid, xa, 19, NULL, 0) == -EOPNOTSUPP,
	       "SETXATTR trusted.*: EOPNOTSUPP");
	snprintf(p, sizeof(p), "%s/x", out);
	RCHECK(call(r, FUSE_SYMLINK, 1, "evil", 5, p, strlen(p) + 1) == 0,
	       "SYMLINK pointing out is created (it is just data)");
	RCHECK(lookup(r, 1, "evil", &id, &mode) == 0 && S_ISLNK(mode),
	       "and stays a symlink to the gofer");

	/* a huge READDIR is capped by the buffer */
	uint64_t dirid = 0;
	lookup(r, 1, "many", &dirid, NULL);
	struct fuse_open_in oi = {.flags = O_RDONLY};
	int e = call(r, FUSE_OPENDIR, dirid, &oi, sizeof(oi), NULL, 0);
	struct fuse_open_out oo = {0};
	memcpy(&oo, r->reply + sizeof(struct fuse_out_header), sizeof(oo));
	struct fuse_read_in rdi = {.fh = oo.fh, .offset = 0, .size = 1u << 30};
	e |= call(r, FUSE_READDIR, dirid, &rdi, sizeof(rdi), NULL, 0);
	RCHECK(e == 0 && r->rlen > 100 * 24 && r->rlen <= (132 << 10),
	       "READDIR of size 1 GiB: answered within the buffer (%zd bytes)", r->rlen);
	struct fuse_release_in rli = {.fh = oo.fh};
	call(r, FUSE_RELEASEDIR, dirid, &rli, sizeof(rli), NULL, 0);

	/* a directory bigger than one reply: capped, then continued from the
	 * last entry's offset until the end, every entry exactly once */
	uint64_t hid = 0;
	lookup(r, 1, "huge", &hid, NULL);
	e = call(r, FUSE_OPENDIR, hid, &oi, sizeof(oi), NULL, 0);
	memcpy(&oo, r->reply + sizeof(struct fuse_out_header), sizeof(oo));
	uint64_t off = 0;
	int entries = 0, replies = 0, maxlen = 0, bad = 0;
	for (;;) {
		struct fuse_read_in hr = {.fh = oo.fh, .offset = off, .size = 1u << 30};
		if (call(r, FUSE_READDIR, hid, &hr, sizeof(hr), NULL, 0) != 0) {
			bad++;
			break;
		}
		ssize_t len = r->rlen - (ssize_t) sizeof(struct fuse_out_header);
		if (len == 0)
			break;
		replies++;
		maxlen = len > maxlen ? (int) len : maxlen;
		for (ssize_t o = 0; o < len;) {
			struct fuse_dirent d;
			memcpy(&d, r->reply + sizeof(struct fuse_out_header) + o, sizeof(d));
			entries++;
			off = d.off;
			o += (ssize_t) ((FUSE_NAME_OFFSET + d.namelen + 7) & ~7u);
		}
		if (replies > 100)
			break;
	}
	call(r, FUSE_RELEASEDIR, hid, &(struct fuse_release_in){.fh = oo.fh},
	     sizeof(struct fuse_release_in), NULL, 0);
	RCHECK(e == 0 && !bad && entries == 3002 && replies > 1 && maxlen <= (68 << 10),
	       "a 3000-entry READDIR of size 1 GiB: %d replies of at most %d bytes, %d entries",
	       replies, maxlen, entries);

	/* lookups without FORGET: the table stops at its limit */
	struct urs_gofer_stats st;
	int enfile = 0, okc = 0;
	uint64_t ids[100];
	for (int k = 0; k < 100; k++) {
		char n[32];
		snprintf(n, sizeof(n), "m%03d", k);
		ids[k] = 0;
		int le = lookup(r, dirid, n, &ids[k], NULL);
		enfile += le == -ENFILE;
		okc += le == 0;
	}
	urs_gofer_get_stats(r->g, &st);
	RCHECK(enfile > 0 && st.inodes <= 50,
	       "lookups without FORGET: table bounded at 50 (%u live, %d ENFILE)", st.inodes,
	       enfile);
	/* the kernel's forgets free them */
	unsigned char bf[16 + 100 * 16];
	struct fuse_batch_forget_in bfi = {.count = 0};
	for (int k = 0; k < 100; k++) {
		if (!ids[k])
			continue;
		struct fuse_forget_one one = {.nodeid = ids[k], .nlookup = 1};
		memcpy(bf + 8 + bfi.count * 16, &one, 16);
		bfi.count++;
	}
	memcpy(bf, &bfi, 8);
	send_req(r, FUSE_BATCH_FORGET, 0, bf, 8 + bfi.count * 16, NULL, 0);
	RCHECK(pump(r, 1) == 1, "BATCH_FORGET: no reply");
	urs_gofer_get_stats(r->g, &st);
	uint32_t after_forget = st.inodes;
	RCHECK(after_forget < 50 - (uint32_t) okc + 10,
	       "BATCH_FORGET frees entries (%u live after forgetting %d)", after_forget, okc);
	RCHECK(lookup(r, dirid, "m099", &id, NULL) == 0, "lookups work again after FORGET");

	/* a burst grows the buffer pool; idleness shrinks it */
	drain(r);
	for (int k = 0; k < 32; k++)
		send_req(r, FUSE_GETATTR, 1, &(struct fuse_getattr_in){0},
			 sizeof(struct fuse_getattr_in), NULL, 0);
	pump(r, 32);
	drain(r);
	urs_gofer_get_stats(r->g, &st);
	RCHECK(st.grows > 0 && st.bufs_active > 1,
	       "a burst of 32 requests grows the pool (%u active, %llu grows)", st.bufs_active,
	       (unsigned long long) st.grows);
	uint64_t t0 = urs_now_ns(); /* idle_ns is 50 ms; up to 5 s on a loaded machine */
	do {
		urs_loop_run_once(&r->loop, true);
		urs_gofer_get_stats(r->g, &st);
	} while ((st.bufs_active != 1 || !st.shrinks || urs_gofer_mem(r->g) > 64 * 1024) &&
		 urs_now_ns() - t0 < 5000000000ull);
	size_t mem = urs_gofer_mem(r->g);
	RCHECK(st.bufs_active == 1 && st.shrinks > 0,
	       "idle: back to one buffer (%u active, %llu shrinks)", st.bufs_active,
	       (unsigned long long) st.shrinks);
	RCHECK(mem <= 64 * 1024, "idle memory %zu bytes <= 64 KiB", mem);
	printf("# raw gofer idle memory: %zu bytes (state + inode table + touched buffer pages)\n",
	       mem);

	/* the connection goes away: the gofer stops */
	close(r->kfd);
	for (int k = 0; k < 100 && !urs_gofer_done(r->g); k++)
		urs_loop_run_once(&r->loop, true);
	RCHECK(urs_gofer_done(r->g), "connection closed: the gofer is done");
	urs_gofer_free(r->g);
	urs_loop_fini(&r->loop);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", tmp);
	(void) nraw;
	return fails;
}
