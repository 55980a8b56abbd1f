/*
 * tests/ckpt/test_ckpt_image.c — unit tests for ckpt/image.c: encode /
 * decode round trip, every single-byte corruption and every truncation of a
 * core image is refused, semantic validation (overlapping mappings, page runs
 * outside private mappings or beyond the pages file, bad fd duplicates, bad
 * parent indices, bad pending signals or seccomp flags, external stdio
 * without a path, on 0-2 as itself or above as a copy of one of them,
 * shared memory objects and the mappings that refer to them, threads), the
 * restore policy (capabilities, no_new_privs, pinned ids, rlimits, seccomp
 * filter against the config), and the pages file writer + loader with
 * checksum, truncation and id checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/image.h"
#include "ckpt/lazy.h"
#include "ckpt/restore.h"
#include "host/fdpass.h"
#include "store/serve.h"

static uint8_t xsave[1024];
static uint8_t auxv[32] = {6, 0, 0, 0, 0, 0, 0, 0, 0, 16};
static uint64_t bpf[2] = {0x0000000000000020ull, 0x7fff000000000006ull};
static struct ckpt_seccomp filter = {.flags = 0, .len = 2, .insns = bpf};
static struct ckpt_siginfo pending = {.shared = 1, .info = {12}};

/* A plausible one-task image; caller frees with free_sample(). */
static void sample(struct ckpt_image *img)
{
	memset(img, 0, sizeof(*img));
	memset(img->id, 0xab, 16);
	img->ntasks = 1;
	img->tasks = calloc(1, sizeof(*img->tasks));
	struct ckpt_task *t = &img->tasks[0];
	t->r.nspid = 1;
	t->r.parent = -1;
	t->r.umask = 022;
	t->r.regs.rip = 0x401000;
	t->xsave = xsave;
	t->xsave_len = sizeof(xsave);
	t->auxv = auxv;
	t->auxv_len = sizeof(auxv);
	t->cwd = "/tmp";
	t->exe = "/bin/true";
	t->root =
		(struct ckpt_root_rec){.dev = 0xfe00, .ino = 1234, .btime_sec = 5, .btime_nsec = 6};
	t->has_root = 1;
	t->nvmas = 3;
	t->vmas = calloc(3, sizeof(*t->vmas));
	t->vmas[0] = (struct ckpt_vma){{.start = 0x400000,
					.end = 0x402000,
					.prot = 5,
					.kind = CKPT_VMA_FILE,
					.ino = 7,
					.fsize = 8192},
				       "/bin/true"};
	t->vmas[1] = (struct ckpt_vma){{.start = 0x600000,
					.end = 0x604000,
					.prot = 3,
					.kind = CKPT_VMA_ANON,
					.flags = CKPT_VMA_HEAP},
				       NULL};
	t->vmas[2] = (struct ckpt_vma){
		{.start = 0x7ff000000000, .end = 0x7ff000002000, .prot = 5, .kind = CKPT_VMA_VDSO},
		NULL};
	t->nruns = 2;
	t->runs = calloc(2, sizeof(*t->runs));
	t->runs[0] = (struct ckpt_run){0x400000, 1, 0};
	t->runs[1] = (struct ckpt_run){0x601000, 2, 4096};
	img->pages_len = 3 * 4096;
	t->nfds = 2;
	t->fds = calloc(2, sizeof(*t->fds));
	t->fds[0] = (struct ckpt_fd){
		{.fd = 1, .dup_of = -1, .type = CKPT_FD_REG, .pos = 42}, "/tmp/out", NULL};
	t->fds[1] = (struct ckpt_fd){{.fd = 2, .dup_of = 1}, NULL, NULL};
	t->seccomp = &filter;
	t->nseccomp = 1;
	t->sigs = &pending;
	t->nsigs = 1;
}

static void free_sample(struct ckpt_image *img)
{
	free(img->tasks[0].vmas);
	free(img->tasks[0].runs);
	free(img->tasks[0].fds);
	free(img->tasks);
	free(img->page_macs); /* write_image's */
}

static void encode_ok(struct ckpt_image *img, uint8_t **buf, size_t *len)
{
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_image_encode(img, buf, len, &err), 0);
}

static void test_roundtrip(void **state)
{
	(void) state;
	struct ckpt_image img, out;
	sample(&img);
	uint8_t *buf;
	size_t len;
	encode_ok(&img, &buf, &len);
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_image_decode(buf, len, &out, &err), 0);
	assert_int_equal(out.ntasks, 1);
	assert_memory_equal(out.id, img.id, 16);
	struct ckpt_task *t = &out.tasks[0];
	assert_int_equal(t->r.regs.rip, 0x401000);
	assert_int_equal(t->nvmas, 3);
	assert_string_equal(t->vmas[0].path, "/bin/true");
	assert_null(t->vmas[1].path);
	assert_int_equal(t->nruns, 2);
	assert_int_equal(t->runs[1].npages, 2);
	assert_int_equal(t->nfds, 2);
	assert_int_equal(t->fds[0].r.pos, 42);
	assert_string_equal(t->fds[0].path, "/tmp/out");
	assert_int_equal(t->fds[1].r.dup_of, 1);
	assert_string_equal(t->cwd, "/tmp");
	assert_true(t->has_root && t->root.dev == 0xfe00 && t->root.ino == 1234 &&
		    t->root.btime_sec == 5 && t->root.btime_nsec == 6);
	assert_int_equal(t->xsave_len, sizeof(xsave));
	assert_memory_equal(t->auxv, auxv, sizeof(auxv));
	assert_int_equal(t->nseccomp, 1);
	assert_int_equal(t->seccomp[0].len, 2);
	assert_memory_equal(t->seccomp[0].insns, bpf, sizeof(bpf));
	assert_int_equal(t->nsigs, 1);
	assert_int_equal(t->sigs[0].shared, 1);
	assert_int_equal(t->sigs[0].info[0], 12);
	ckpt_image_free(&out);
	free(buf);
	free_sample(&img);
}

static void test_every_byte_and_truncation(void **state)
{
	(void) state;
	struct ckpt_image img, out;
	sample(&img);
	uint8_t *buf;
	size_t len;
	encode_ok(&img, &buf, &len);
	for (size_t i = 0; i < len; i++) {
		struct urs_err err = {{0}};
		buf[i] ^= 0x01;
		assert_int_not_equal(ckpt_image_decode(buf, len, &out, &err), 0);
		assert_true(err.msg[0] != 0);
		buf[i] ^= 0x01;
	}
	for (size_t l = 0; l < len; l += 7) {
		struct urs_err err = {{0}};
		assert_int_not_equal(ckpt_image_decode(buf, l, &out, &err), 0);
	}
	free(buf);
	free_sample(&img);
}

/* Encode an image and expect decode to take it. */
static void expect_valid(struct ckpt_image *img)
{
	uint8_t *buf;
	size_t len;
	encode_ok(img, &buf, &len);
	struct ckpt_image out;
	struct urs_err err = {{0}};
	if (ckpt_image_decode(buf, len, &out, &err))
		fail_msg("refused: %s", err.msg);
	ckpt_image_free(&out);
	free(buf);
}

/* Encode a broken image (encode does not validate) and expect decode to refuse. */
static void expect_invalid(struct ckpt_image *img, const char *needle)
{
	uint8_t *buf;
	size_t len;
	encode_ok(img, &buf, &len);
	struct ckpt_image out;
	struct urs_err err = {{0}};
	assert_int_not_equal(ckpt_image_decode(buf, len, &out, &err), 0);
	if (!strstr(err.msg, needle))
		fail_msg("message '%s' lacks '%s'", err.msg, needle);
	free(buf);
}

static void test_validation(void **state)
{
	(void) state;
	struct ckpt_image img;
	sample(&img);
	struct ckpt_task *t = &img.tasks[0];

	t->vmas[1].r.start = 0x401000; /* overlaps the text */
	expect_invalid(&img, "invalid mapping");
	t->vmas[1].r.start = 0x600000;

	t->vmas[1].r.end = 0x600800; /* not page aligned */
	expect_invalid(&img, "invalid mapping");
	t->vmas[1].r.end = 0x604000;

	t->runs[1].vaddr = 0x603000; /* runs past the heap's end */
	expect_invalid(&img, "outside a private mapping");
	t->runs[1].vaddr = 0x601000;

	t->runs[1].off = 2 * 4096; /* past the pages file */
	expect_invalid(&img, "bad page run");
	t->runs[1].off = 4096;

	t->runs[0].vaddr = 0x7ff000000000; /* into the vdso */
	t->runs[1].vaddr = 0x7ff000001000;
	expect_invalid(&img, "outside a private mapping");
	t->runs[0].vaddr = 0x400000;
	t->runs[1].vaddr = 0x601000;

	t->fds[1].r.dup_of = 0; /* duplicates an fd that does not exist */
	expect_invalid(&img, "duplicates");
	t->fds[1].r.dup_of = 1;

	t->fds[0].path = "relative"; /* paths must be absolute */
	expect_invalid(&img, "bad fd path");
	t->fds[0].path = "/tmp/out";

	t->r.parent = 0; /* the root has no parent */
	expect_invalid(&img, "bad parent");
	t->r.parent = -1;

	pending.info[0] = 65; /* no such signal */
	expect_invalid(&img, "bad pending signal");
	pending.info[0] = 12;

	filter.flags = 1; /* TSYNC makes no sense for one thread */
	expect_invalid(&img, "bad seccomp flags");
	filter.flags = 0;

	t->r.thp_disable = 2; /* PR_GET_THP_DISABLE says 0, 1 or 3 */
	expect_invalid(&img, "bad transparent huge page setting 2");
	t->r.thp_disable = 3;
	expect_valid(&img);
	t->r.thp_disable = 0;

	t->xsave = NULL;
	t->xsave_len = 0;
	expect_invalid(&img, "missing FPU state");
	free_sample(&img);
}

static void test_external_stdio(void **state)
{
	(void) state;
	struct ckpt_image img, out;
	sample(&img);
	struct ckpt_task *t = &img.tasks[0];
	/* fd 1 external (stdout was a pipe), fd 2 its duplicate */
	t->fds[0] = (struct ckpt_fd){{.fd = 1, .dup_of = -1, .type = CKPT_FD_EXT}, NULL, NULL};
	uint8_t *buf;
	size_t len;
	encode_ok(&img, &buf, &len);
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_image_decode(buf, len, &out, &err), 0);
	assert_int_equal(out.tasks[0].fds[0].r.type, CKPT_FD_EXT);
	assert_null(out.tasks[0].fds[0].path);
	ckpt_image_free(&out);
	free(buf);

	t->fds[0].path = "/tmp/out"; /* an external fd has no path */
	expect_invalid(&img, "bad fd");
	t->fds[0].path = NULL;
	t->fds[0].r.sub = 2; /* stdio on fd 0-2 is its own */
	expect_invalid(&img, "bad fd");
	/* a higher fd: a copy of the stdio it names (a shell's saved stdout) */
	t->fds[0].r.fd = 10;
	t->fds[0].r.sub = 1;
	t->fds[1].r.fd = 11;
	t->fds[1].r.dup_of = 10;
	encode_ok(&img, &buf, &len);
	assert_int_equal(ckpt_image_decode(buf, len, &out, &err), 0);
	assert_int_equal(out.tasks[0].fds[0].r.type, CKPT_FD_EXT);
	assert_int_equal(out.tasks[0].fds[0].r.fd, 10);
	assert_int_equal(out.tasks[0].fds[0].r.sub, 1);
	ckpt_image_free(&out);
	free(buf);
	t->fds[0].r.sub = 3; /* ... and only of stdio */
	expect_invalid(&img, "bad fd");
	t->fds[0].r.sub = 0;
	t->fds[0].r.type = 99; /* unknown type */
	t->fds[0].r.fd = 1;
	t->fds[1].r.fd = 2;
	t->fds[1].r.dup_of = 1;
	expect_invalid(&img, "bad fd");
	free_sample(&img);
}

static void expect_policy(const struct ckpt_image *img, const struct ckpt_policy *p,
			  const char *needle)
{
	struct urs_err err = {{0}};
	int r = ckpt_image_check_policy(img, p, &err);
	if (!needle) {
		if (r)
			fail_msg("refused: %s", err.msg);
		return;
	}
	if (r != -EPERM)
		fail_msg("not refused (%d), expected '%s'", r, needle);
	if (!strstr(err.msg, needle))
		fail_msg("message '%s' lacks '%s'", err.msg, needle);
}

/* pipes, epoll sets, sockets: data round-trips, shapes are checked */
static void test_fd_kinds(void **state)
{
	(void) state;
	struct ckpt_image img, out;
	sample(&img);
	struct ckpt_task *t = &img.tasks[0];
	free(t->fds);
	t->fds = calloc(11, sizeof(*t->fds));
	t->nfds = 11;
	static uint8_t pipe_data[] = "abc", unix_data[] = "xy";
	struct ckpt_epoll_tgt tg = {.tfd = 3, .events = 1, .data = 0x1122334455667788ull};
	struct ckpt_inet_listen l = {.family = AF_INET, .port = 80, .backlog = 7, .reuseaddr = 1};
	struct ckpt_unix_listen ul = {
		.type = SOCK_STREAM, .backlog = 5, .name_len = 9, .name = "/run/u.s"};
	struct {
		struct ckpt_unix_listen h;
		uint8_t msgs[4 + 3 + 4 + 1];
	} ub = {{.type = SOCK_DGRAM, .name_len = 9, .name = "/dev/log"},
		{3, 0, 0, 0, 'a', 'b', 'c', 1, 0, 0, 0, 'd'}};
	struct ckpt_timerfd tf = {
		.clockid = CLOCK_MONOTONIC, .ticks = 2, .value_nsec = 5000, .interval_sec = 1};
	struct ckpt_inet_udp u = {
		.family = AF_INET6, .port = 5353, .rport = 53, .raddr = {[15] = 1}, .broadcast = 1};
	t->fds[0] =
		(struct ckpt_fd){{.fd = 1, .dup_of = -1, .type = CKPT_FD_REG}, "/tmp/out", NULL};
	t->fds[1] = (struct ckpt_fd){{.fd = 2, .dup_of = 1}, NULL, NULL};
	t->fds[2] = (struct ckpt_fd){{.fd = 3,
				      .dup_of = -1,
				      .type = CKPT_FD_PIPE,
				      .ino = 100,
				      .sub = 65536,
				      .data_len = 3},
				     NULL,
				     pipe_data};
	t->fds[3] = (struct ckpt_fd){
		{.fd = 4, .dup_of = -1, .type = CKPT_FD_EPOLL, .data_len = sizeof(tg)},
		NULL,
		(uint8_t *) &tg};
	t->fds[4] = (struct ckpt_fd){
		{.fd = 5, .dup_of = -1, .type = CKPT_FD_TCP_LISTEN, .data_len = sizeof(l)},
		NULL,
		(uint8_t *) &l};
	t->fds[5] = (struct ckpt_fd){{.fd = 6,
				      .dup_of = -1,
				      .type = CKPT_FD_UNIX,
				      .sub = SOCK_STREAM,
				      .ino = 200,
				      .peer = 201,
				      .data_len = 2},
				     NULL,
				     unix_data};
	t->fds[6] = (struct ckpt_fd){
		{.fd = 7, .dup_of = -1, .type = CKPT_FD_UDP, .data_len = sizeof(u)},
		NULL,
		(uint8_t *) &u};
	t->fds[7] = (struct ckpt_fd){
		{.fd = 8, .dup_of = -1, .type = CKPT_FD_TIMERFD, .data_len = sizeof(tf)},
		NULL,
		(uint8_t *) &tf};
	t->fds[8] = (struct ckpt_fd){
		{.fd = 9, .dup_of = -1, .type = CKPT_FD_SIGNALFD, .pos = 1u << 9}, NULL, NULL};
	t->fds[9] = (struct ckpt_fd){
		{.fd = 10, .dup_of = -1, .type = CKPT_FD_UNIX_LISTEN, .data_len = sizeof(ul)},
		NULL,
		(uint8_t *) &ul};
	t->fds[10] = (struct ckpt_fd){
		{.fd = 11, .dup_of = -1, .type = CKPT_FD_UNIX_BOUND, .data_len = sizeof(ub)},
		NULL,
		(uint8_t *) &ub};
	uint8_t *buf;
	size_t len;
	encode_ok(&img, &buf, &len);
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_image_decode(buf, len, &out, &err), 0);
	struct ckpt_task *o = &out.tasks[0];
	assert_int_equal(o->nfds, 11);
	assert_memory_equal(o->fds[10].data, &ub, sizeof(ub));
	assert_memory_equal(o->fds[9].data, &ul, sizeof(ul));
	assert_memory_equal(o->fds[6].data, &u, sizeof(u));
	assert_memory_equal(o->fds[7].data, &tf, sizeof(tf));
	assert_int_equal(o->fds[8].r.pos, 1u << 9);
	assert_int_equal(o->fds[2].r.data_len, 3);
	assert_memory_equal(o->fds[2].data, "abc", 3);
	assert_null(o->fds[2].path);
	assert_memory_equal(o->fds[3].data, &tg, sizeof(tg));
	assert_memory_equal(o->fds[4].data, &l, sizeof(l));
	assert_int_equal(o->fds[5].r.peer, 201);
	assert_memory_equal(o->fds[5].data, "xy", 2);
	ckpt_image_free(&out);
	free(buf);

	tg.tfd = 99; /* not an fd of the task */
	expect_invalid(&img, "watches unknown fd 99");
	tg.tfd = 3;
	t->fds[2].r.sub = 2; /* more bytes than the pipe holds */
	expect_invalid(&img, "bad fd 3");
	t->fds[2].r.sub = 65536;
	t->fds[2].r.oflags = O_RDWR; /* a pipe end is read or write */
	expect_invalid(&img, "bad fd 3");
	t->fds[2].r.oflags = 0;
	l.family = 99;
	expect_invalid(&img, "bad fd 5");
	l.family = AF_INET;
	u.family = AF_UNIX; /* a UDP socket is inet */
	expect_invalid(&img, "bad fd 7");
	u.family = AF_INET6;
	u.pad = 1;
	expect_invalid(&img, "bad fd 7");
	u.pad = 0;
	t->fds[6].r.data_len = sizeof(u) - 4; /* the wrong size */
	expect_invalid(&img, "bad fd 7");
	t->fds[6].r.data_len = sizeof(u);
	tf.clockid = 77; /* no such clock */
	expect_invalid(&img, "bad fd 8");
	tf.clockid = CLOCK_MONOTONIC;
	tf.interval_nsec = 1000000000; /* not below a second */
	expect_invalid(&img, "bad fd 8");
	tf.interval_nsec = 0;
	tf.value_sec = -1;
	expect_invalid(&img, "bad fd 8");
	tf.value_sec = 0;
	ul.name[0] = 'r'; /* a relative path */
	expect_invalid(&img, "bad fd 10");
	ul.name[0] = '/';
	ul.name_len = 12; /* NULs inside the path */
	expect_invalid(&img, "bad fd 10");
	ul.name_len = 9;
	ul.type = SOCK_DGRAM; /* datagram sockets do not listen */
	expect_invalid(&img, "bad fd 10");
	ul.type = SOCK_STREAM;
	ul.name[0] = '\0'; /* abstract: any bytes */
	uint8_t *abuf;
	size_t alen;
	encode_ok(&img, &abuf, &alen);
	struct ckpt_image aout;
	struct urs_err aerr = {{0}};
	assert_int_equal(ckpt_image_decode(abuf, alen, &aout, &aerr), 0);
	ckpt_image_free(&aout);
	free(abuf);
	ul.name[0] = '/';
	ub.msgs[0] = 4; /* a datagram longer than the data */
	expect_invalid(&img, "bad fd 11");
	ub.msgs[0] = 3;
	ub.h.type = SOCK_STREAM; /* only datagram sockets */
	expect_invalid(&img, "bad fd 11");
	ub.h.type = SOCK_DGRAM;
	t->fds[5].r.sub = SOCK_DGRAM; /* datagram pairs carry no queue */
	expect_invalid(&img, "bad fd 6");
	t->fds[5].r.sub = SOCK_STREAM;
	t->fds[5].r.xtask = 1; /* shares with itself (task 0): not an earlier task */
	t->fds[5].r.xfd = 3;
	t->fds[5].data = NULL;
	t->fds[5].r.data_len = 0;
	t->fds[5].r.type = CKPT_FD_PIPE;
	expect_invalid(&img, "shares unknown fd 3 of task 0");
	t->fds[5].r.xtask = 0;
	t->fds[5].r.type = CKPT_FD_FIFO; /* a FIFO needs its path */
	expect_invalid(&img, "bad fd 6");
	free_sample(&img);
}

/* shared memory objects: round trip, and every bad reference or range refused */
static void test_shm(void **state)
{
	(void) state;
	struct ckpt_image img, out;
	sample(&img);
	struct ckpt_task *t = &img.tasks[0];
	struct ckpt_vma *saved = t->vmas;
	struct ckpt_vma vmas[4] = {saved[0],
				   saved[1],
				   {{.start = 0x700000000000,
				     .end = 0x700000002000,
				     .prot = 3,
				     .kind = CKPT_VMA_SHMEM,
				     .flags = CKPT_VMA_SHARED,
				     .pgoff = 4096},
				    NULL},
				   saved[2]};
	t->vmas = vmas;
	t->nvmas = 4;
	struct ckpt_run sruns[1] = {{4096, 1, 2 * 4096}}; /* object page 1, last data page */
	struct ckpt_shm shm = {.r = {.id = 0,
				     .size = 3 * 4096 - 100,
				     .flags = CKPT_SHM_MEMFD,
				     .seals = 3,
				     .name = "buf"},
			       .runs = sruns,
			       .nruns = 1};
	img.shms = &shm;
	img.nshms = 1;
	uint8_t *buf;
	size_t len;
	encode_ok(&img, &buf, &len);
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_image_decode(buf, len, &out, &err), 0);
	assert_int_equal(out.nshms, 1);
	assert_int_equal(out.shms[0].r.size, 3 * 4096 - 100);
	assert_int_equal(out.shms[0].r.seals, 3);
	assert_string_equal(out.shms[0].r.name, "buf");
	assert_int_equal(out.shms[0].nruns, 1);
	assert_int_equal(out.shms[0].runs[0].off, 2 * 4096);
	assert_int_equal(out.tasks[0].vmas[2].r.kind, CKPT_VMA_SHMEM);
	assert_int_equal(out.tasks[0].vmas[2].r.pgoff, 4096);
	ckpt_image_free(&out);
	free(buf);

	vmas[2].r.shm = 1; /* no such object */
	expect_invalid(&img, "unknown object 1");
	vmas[2].r.shm = 0;
	vmas[2].r.pgoff = 2 * 4096; /* 2 pages from page 2 of a 3-page object */
	expect_invalid(&img, "out of range");
	vmas[2].r.pgoff = ~0ull - 4095; /* wraps around */
	expect_invalid(&img, "out of range");
	vmas[2].r.pgoff = 4096;
	vmas[2].r.flags = 0; /* a private mapping of an object */
	expect_invalid(&img, "shared memory mapping");
	vmas[2].r.flags = CKPT_VMA_SHARED;
	vmas[1].r.shm = 1; /* an object index on an anonymous mapping */
	expect_invalid(&img, "invalid mapping");
	vmas[1].r.shm = 0;
	sruns[0].vaddr = 3 * 4096; /* past the object's end */
	expect_invalid(&img, "object 0: bad page run 0");
	sruns[0].vaddr = 4096;
	sruns[0].off = 3 * 4096; /* past the page data */
	expect_invalid(&img, "object 0: bad page run 0");
	sruns[0].off = 2 * 4096;
	sruns[0].npages = 0;
	expect_invalid(&img, "object 0: bad page run 0");
	sruns[0].npages = 1;
	shm.r.id = 1; /* ids are the indices */
	expect_invalid(&img, "bad shared memory object 0");
	shm.r.id = 0;
	shm.r.size = 1ull << 57; /* beyond any address space */
	expect_invalid(&img, "bad shared memory object 0");
	shm.r.size = 0; /* an empty memfd is fine, but nothing fits in it */
	shm.nruns = 0;
	expect_invalid(&img, "out of range");
	shm.nruns = 1;
	shm.r.size = 3 * 4096 - 100;
	shm.r.flags = 0; /* anonymous memory has no name */
	expect_invalid(&img, "bad shared memory object 0");
	shm.r.flags = CKPT_SHM_MEMFD;
	/* an fd of the memfd: fine; of an unknown object, or with a path: not */
	struct ckpt_fd fd0 = t->fds[0];
	t->fds[0] = (struct ckpt_fd){
		{.fd = 1, .dup_of = -1, .type = CKPT_FD_SHM, .oflags = O_RDWR, .pos = 6},
		NULL,
		NULL};
	encode_ok(&img, &buf, &len);
	assert_int_equal(ckpt_image_decode(buf, len, &out, &err), 0);
	assert_int_equal(out.tasks[0].fds[0].r.type, CKPT_FD_SHM);
	ckpt_image_free(&out);
	free(buf);
	t->fds[0].r.sub = 5;
	expect_invalid(&img, "fd 1: unknown shared memory object 5");
	t->fds[0].r.sub = 0;
	t->fds[0].path = "/memfd:x";
	expect_invalid(&img, "bad fd 1");
	t->fds[0] = fd0;
	memset(shm.r.name, 'a', sizeof(shm.r.name)); /* not terminated */
	expect_invalid(&img, "bad shared memory object 0");

	t->vmas = saved;
	t->nvmas = 3;
	img.shms = NULL;
	img.nshms = 0;
	free_sample(&img);
}

/* threads of a task: round trip, and bad ids, names, signals, sizes refused */
static void test_threads(void **state)
{
	(void) state;
	struct ckpt_image img, out;
	sample(&img);
	struct ckpt_task *t = &img.tasks[0];
	static uint8_t txsave[600];
	struct ckpt_siginfo tsig = {.shared = 0, .info = {10}};
	struct ckpt_thread th = {.r = {.tid = 7,
				       .xsave_len = sizeof(txsave),
				       .nsigs = 1,
				       .sigmask = 0x200,
				       .clear_child_tid = 0x7000,
				       .comm = "w1"},
				 .xsave = txsave,
				 .sigs = &tsig};
	th.r.regs.fs_base = 0x12345000;
	txsave[599] = 0x5a;
	t->threads = &th;
	t->nthreads = 1;
	uint8_t *buf;
	size_t len;
	encode_ok(&img, &buf, &len);
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_image_decode(buf, len, &out, &err), 0);
	const struct ckpt_thread *o = &out.tasks[0].threads[0];
	assert_int_equal(out.tasks[0].nthreads, 1);
	assert_int_equal(o->r.tid, 7);
	assert_int_equal(o->r.regs.fs_base, 0x12345000);
	assert_int_equal(o->r.clear_child_tid, 0x7000);
	assert_int_equal(o->r.xsave_len, sizeof(txsave));
	assert_int_equal(o->xsave[599], 0x5a);
	assert_int_equal(o->r.nsigs, 1);
	assert_int_equal(o->sigs[0].info[0], 10);
	assert_string_equal(o->r.comm, "w1");
	ckpt_image_free(&out);
	free(buf);

	th.r.tid = 1; /* the main thread's id */
	expect_invalid(&img, "bad thread 1");
	th.r.tid = 0;
	expect_invalid(&img, "bad thread 0");
	th.r.tid = 7;
	tsig.shared = 1; /* the shared queue belongs to the main thread */
	expect_invalid(&img, "bad thread 7");
	tsig.shared = 0;
	tsig.info[0] = 99;
	expect_invalid(&img, "bad thread 7");
	tsig.info[0] = 10;
	memset(th.r.comm, 'x', sizeof(th.r.comm)); /* not terminated */
	expect_invalid(&img, "bad thread 7");
	strcpy(th.r.comm, "w1");
	th.r.xsave_len = 100; /* no room for an FPU state */
	expect_invalid(&img, "bad thread record");
	th.r.xsave_len = sizeof(txsave);
	th.r.nsigs = 0; /* no pending signal of its own: fine */
	th.sigs = NULL;
	encode_ok(&img, &buf, &len);
	assert_int_equal(ckpt_image_decode(buf, len, &out, &err), 0);
	ckpt_image_free(&out);
	free(buf);
	t->nthreads = 0;
	t->threads = NULL;
	free_sample(&img);
}

/* Every byte of the body changed with the checksums made right again, so
 * that decoding gets past them into the records: whatever it decides, it
 * must not crash, read out of bounds or leak (run under ASan), and a
 * refusal says why. The sample carries a shared memory object, a shmem
 * mapping and a thread. */
static void put_crcs(uint8_t *buf, size_t len)
{
	uint32_t c = ckpt_crc32c(0, buf + 64, len - 64); /* body_crc at 48, hdr_crc at 60 */
	memcpy(buf + 48, &c, 4);
	memset(buf + 60, 0, 4);
	c = ckpt_crc32c(0, buf, 64);
	memcpy(buf + 60, &c, 4);
}

static void test_every_body_byte(void **state)
{
	(void) state;
	struct ckpt_image img, out;
	sample(&img);
	struct ckpt_task *t = &img.tasks[0];
	struct ckpt_vma *saved = t->vmas;
	struct ckpt_vma vmas[4] = {saved[0],
				   saved[1],
				   {{.start = 0x700000000000,
				     .end = 0x700000001000,
				     .prot = 3,
				     .kind = CKPT_VMA_SHMEM,
				     .flags = CKPT_VMA_SHARED},
				    NULL},
				   saved[2]};
	t->vmas = vmas;
	t->nvmas = 4;
	struct ckpt_run sruns[1] = {{0, 1, 0}};
	struct ckpt_shm shm = {.r = {.size = 4096}, .runs = sruns, .nruns = 1};
	img.shms = &shm;
	img.nshms = 1;
	static uint8_t txsave[576];
	struct ckpt_siginfo tsig = {.info = {10}};
	struct ckpt_thread th = {.r = {.tid = 2, .xsave_len = sizeof(txsave), .nsigs = 1},
				 .xsave = txsave,
				 .sigs = &tsig};
	t->threads = &th;
	t->nthreads = 1;
	uint8_t *buf;
	size_t len;
	encode_ok(&img, &buf, &len);
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_image_decode(buf, len, &out, &err), 0);
	ckpt_image_free(&out);
	static const uint8_t pats[] = {0xff, 0x01, 0x80};
	for (size_t k = 0; k < sizeof(pats); k++)
		for (size_t i = 64; i < len; i++) {
			buf[i] ^= pats[k];
			put_crcs(buf, len);
			memset(&err, 0, sizeof(err));
			if (ckpt_image_decode(buf, len, &out, &err) == 0)
				ckpt_image_free(&out);
			else
				assert_true(err.msg[0] != 0);
			buf[i] ^= pats[k];
		}
	free(buf);
	t->vmas = saved;
	t->nvmas = 3;
	t->threads = NULL;
	t->nthreads = 0;
	img.shms = NULL;
	img.nshms = 0;
	free_sample(&img);
}

static void test_policy(void **state)
{
	(void) state;
	struct ckpt_image img;
	sample(&img);
	struct ckpt_task *t = &img.tasks[0];
	t->r.cap_bnd = t->r.cap_prm = t->r.cap_eff = 1ull << 5; /* CAP_KILL */
	t->r.no_new_privs = 1;
	for (int k = 0; k < 4; k++)
		t->r.uid[k] = t->r.gid[k] = 1000;
	t->r.rlim[7].cur = t->r.rlim[7].max = 1024; /* RLIMIT_NOFILE */
	uint64_t cfg_bpf[2] = {bpf[0], bpf[1]};	    /* the configuration's filter */
	struct ckpt_policy p = {.cap_bnd = 1ull << 5,
				.need_nnp = true,
				.pin_uid = true,
				.pin_gid = true,
				.uid = 1000,
				.gid = 1000,
				.bpf = cfg_bpf,
				.bpf_len = 2,
				.n_rlim = 16};
	for (int k = 0; k < 16; k++)
		p.rlim_max[k] = 1024;
	expect_policy(&img, &p, NULL);

	/* a listener on a privileged port needs CAP_NET_BIND_SERVICE */
	struct ckpt_inet_listen l = {.family = AF_INET, .port = 80};
	struct ckpt_fd *saved_fds = t->fds;
	uint32_t saved_n = t->nfds;
	struct ckpt_fd lfd = {
		{.fd = 3, .dup_of = -1, .type = CKPT_FD_TCP_LISTEN, .data_len = sizeof(l)},
		NULL,
		(uint8_t *) &l};
	t->fds = &lfd;
	t->nfds = 1;
	expect_policy(&img, &p, "CAP_NET_BIND_SERVICE");
	l.port = 8080;
	expect_policy(&img, &p, NULL);
	l.port = 80;
	p.cap_bnd |= 1ull << 10;
	expect_policy(&img, &p, NULL);
	p.cap_bnd &= ~(1ull << 10);
	t->fds = saved_fds;
	t->nfds = saved_n;

	t->r.cap_amb = 1ull << 21; /* CAP_SYS_ADMIN, ambient */
	expect_policy(&img, &p, "capabilities");
	t->r.cap_amb = 0;
	t->r.cap_bnd = ~0ull; /* a full bounding set is as bad */
	expect_policy(&img, &p, "capabilities");
	t->r.cap_bnd = 1ull << 5;

	t->r.no_new_privs = 0;
	expect_policy(&img, &p, "no_new_privs");
	t->r.no_new_privs = 1;

	t->r.uid[2] = 0; /* a saved uid of root */
	expect_policy(&img, &p, "uid 0");
	p.pin_uid = false; /* allowed when the process may change ids */
	expect_policy(&img, &p, NULL);
	t->r.uid[2] = 1000;
	t->r.gid[3] = 0;
	expect_policy(&img, &p, "gid 0");
	t->r.gid[3] = 1000;

	t->r.rlim[7].max = 1 << 20;
	expect_policy(&img, &p, "resource limit 7");
	t->r.rlim[7].max = 1024;

	cfg_bpf[1] = 0x7fff000000000007ull; /* another filter */
	expect_policy(&img, &p, "seccomp");
	cfg_bpf[1] = bpf[1];
	t->nseccomp = 0; /* none at all */
	expect_policy(&img, &p, "seccomp");
	t->nseccomp = 1;
	expect_policy(&img, &p, NULL);
	free_sample(&img);
}

static const struct ckpt_seal test_seal = {.key = "0123456789abcdef0123456789abcdef"};

/* pages.img with npages pages of 'a'+i (i the page's number mod 26), then
 * core.img: the chunk MACs moved from the writer into img, as the dumper
 * does */
static void write_image(int dfd, struct ckpt_image *img, const struct ckpt_seal *seal,
			uint32_t npages)
{
	struct ckpt_pages_writer w;
	struct urs_err err = {{0}};
	assert_int_equal(ckpt_pages_open(&w, dfd, seal, img->id, &err), 0);
	uint8_t page[4096];
	for (uint32_t i = 0; i < npages; i++) {
		uint64_t off;
		memset(page, 'a' + (int) (i % 26), sizeof(page));
		assert_int_equal(ckpt_pages_append(&w, page, sizeof(page), &off, &err), 0);
		assert_int_equal(off, (uint64_t) i * 4096);
	}
	img->pages_len = w.off;
	img->pages_crc = w.crc;
	assert_int_equal(ckpt_pages_finish(&w, img->id, &err), 0);
	free(img->page_macs);
	img->page_macs = w.macs.mac;
	img->npage_macs = w.macs.n;
	w.macs.mac = NULL;
	ckpt_pagemacs_free(&w.macs);
	assert_int_equal(img->npage_macs, ckpt_seal_nchunks(img->pages_len));
	assert_int_equal(ckpt_image_write_core(img, dfd, seal, &err), 0);
}

/* a new directory in @dir (a mkdtemp template) holding @img (sample) with
 * @npages pages of page data: its fd */
static int image_dir(char *dir, struct ckpt_image *img, uint32_t npages)
{
	assert_non_null(mkdtemp(dir));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	sample(img);
	write_image(dfd, img, &test_seal, npages);
	return dfd;
}

static void test_pages_files(void **state)
{
	(void) state;
	char dir[] = "/tmp/ckpt-image-XXXXXX";
	struct ckpt_image img;
	int dfd = image_dir(dir, &img, 3);
	struct urs_err err = {{0}};

	struct ckpt_image in;
	assert_int_equal(ckpt_image_load(dir, &test_seal, &in, &err), 0);
	assert_int_equal(in.pages_map[4096 + 2 * 4096 + 17], 'c');
	ckpt_image_free(&in);

	/* flip one byte of page data */
	int pf = openat(dfd, "pages.img", O_RDWR);
	assert_int_equal(pwrite(pf, "z", 1, 4096 + 100), 1);
	assert_int_not_equal(ckpt_image_load(dir, &test_seal, &in, &err), 0);
	assert_non_null(strstr(err.msg, "checksum"));
	assert_int_equal(pwrite(pf, "a", 1, 4096 + 100), 1);
	assert_int_equal(ckpt_image_load(dir, &test_seal, &in, &err), 0);
	ckpt_image_free(&in);
	/* truncate */
	assert_int_equal(ftruncate(pf, 4096 * 3), 0);
	assert_int_not_equal(ckpt_image_load(dir, &test_seal, &in, &err), 0);
	assert_non_null(strstr(err.msg, "truncated"));
	close(pf);

	/* a pages file from another image: same size, other id */
	uint8_t id[16];
	memcpy(id, img.id, 16);
	memset(img.id, 0xcd, 16);
	struct ckpt_pages_writer w;
	assert_int_equal(ckpt_pages_open(&w, dfd, &test_seal, img.id, &err),
			 0); /* removes core.img */
	assert_int_not_equal(ckpt_image_load(dir, &test_seal, &in, &err), 0);
	for (int i = 0; i < 3; i++) {
		uint64_t off;
		uint8_t page[4096];
		memset(page, 'a' + i, sizeof(page));
		assert_int_equal(ckpt_pages_append(&w, page, sizeof(page), &off, &err), 0);
	}
	assert_int_equal(ckpt_pages_finish(&w, img.id, &err), 0);
	ckpt_pagemacs_free(&w.macs);
	memcpy(img.id, id, 16);
	assert_int_equal(ckpt_image_write_core(&img, dfd, &test_seal, &err), 0);
	assert_int_not_equal(ckpt_image_load(dir, &test_seal, &in, &err), 0);
	assert_non_null(strstr(err.msg, "another image"));

	unlinkat(dfd, "pages.img", 0);
	unlinkat(dfd, "core.img", 0);
	close(dfd);
	rmdir(dir);
	free_sample(&img);
}

/* a memfd holding what @fd holds, sealed with @seals */
static int memfd_of(int fd, int seals)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	int m = memfd_create("pages.img", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(m >= 0);
	char *b = malloc((size_t) st.st_size);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, (size_t) st.st_size, 0), st.st_size);
	assert_int_equal(write(m, b, (size_t) st.st_size), st.st_size);
	free(b);
	assert_int_equal(fcntl(m, F_ADD_SEALS, seals), 0);
	return m;
}

/* ursa-store's first message (store/serve.h URS_REMOTE_SERVE_PAGES), as
 * ckpt_lazy_pages_fd takes it: what it returns, the fd in *@fd */
static int pages_msg(uint32_t chunk, int send, int *fd, struct urs_err *err)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct urs_remote_chunk_reply rp = {.chunk = chunk};
	if (chunk)
		assert_int_equal(urs_send_fd(sv[1], &rp, sizeof(rp), send), 0);
	close(sv[1]); /* (chunk 0: nothing sent, the end of the stream) */
	memset(err, 0, sizeof(*err));
	int r = ckpt_lazy_pages_fd(sv[0], fd, err);
	close(sv[0]);
	return r;
}

/* A lazy remote restore's pages.img is ursa-store's memfd, not the image
 * directory's file (which holds its header page alone): loaded from the
 * fd; taken from the socket only as a memfd sealed at its size. */
static void test_pages_fd(void **state)
{
	(void) state;
	char dir[] = "/tmp/ckpt-image-XXXXXX";
	struct ckpt_image img, in;
	int dfd = image_dir(dir, &img, 3);
	struct urs_err err = {{0}};
	int pf = openat(dfd, "pages.img", O_RDWR);
	assert_true(pf >= 0);
	int sealed = memfd_of(pf, URS_REMOTE_PAGES_SEALS), loose = memfd_of(pf, 0), fd;
	assert_int_equal(ftruncate(pf, 4096), 0); /* the header page alone */
	assert_int_not_equal(ckpt_image_load_ex(dir, -1, &test_seal, CKPT_LOAD_LAZY, &in, &err), 0);
	assert_non_null(strstr(err.msg, "truncated"));
	assert_int_equal(ckpt_image_load_ex(dir, sealed, &test_seal, CKPT_LOAD_LAZY, &in, &err), 0);
	assert_int_equal(in.pages_map[4096 + 2 * 4096 + 17], 'c');
	ckpt_image_free(&in);

	assert_int_equal(pages_msg(URS_REMOTE_SERVE_PAGES, sealed, &fd, &err), 0);
	assert_true(fd >= 0 && fcntl(fd, F_GETFD) == FD_CLOEXEC);
	assert_int_equal(fcntl(fd, F_GET_SEALS), URS_REMOTE_PAGES_SEALS);
	close(fd);
	assert_int_equal(pages_msg(URS_REMOTE_SERVE_PAGES, loose, &fd, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "not sealed"));
	int pp[2]; /* (not /tmp's file: a tmpfs one is shmem, refused as not sealed) */
	assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
	assert_int_equal(pages_msg(URS_REMOTE_SERVE_PAGES, pp[0], &fd, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "not a memfd"));
	close(pp[0]);
	close(pp[1]);
	assert_int_equal(pages_msg(URS_REMOTE_SERVE_PAGES, -1, &fd, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "no fd"));
	assert_int_equal(pages_msg(3, sealed, &fd, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "chunk 3"));
	assert_int_equal(pages_msg(0, -1, &fd, &err), -EPIPE);
	assert_non_null(strstr(err.msg, "is gone"));
	assert_int_equal(fd, -1);

	close(sealed);
	close(loose);
	close(pf);
	unlinkat(dfd, "pages.img", 0);
	unlinkat(dfd, "core.img", 0);
	close(dfd);
	rmdir(dir);
	free_sample(&img);
}

static size_t read_core(const char *dir, uint8_t *buf, size_t cap)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/core.img", dir);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t n = read(fd, buf, cap);
	close(fd);
	assert_true(n > 0 && (size_t) n < cap);
	return (size_t) n;
}

static void put_core(const char *dir, const uint8_t *buf, size_t n)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/core.img", dir);
	int fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, n), (ssize_t) n);
	close(fd);
}

/* core.img's header: body_len at 32, body_crc at 48, hdr_crc at 60 */
static void fix_crcs(uint8_t *buf)
{
	uint64_t body_len;
	memcpy(&body_len, buf + 32, 8);
	uint32_t c = ckpt_crc32c(0, buf + 64, body_len), z = 0;
	memcpy(buf + 48, &c, 4);
	memcpy(buf + 60, &z, 4);
	c = ckpt_crc32c(0, buf, 64);
	memcpy(buf + 60, &c, 4);
}

/* Issue #19's test: an image whose body was altered and whose checksums
 * were made right again is refused, as is one under another key, a page
 * MAC altered, an older (unauthenticated) version; chunk MACs catch an
 * altered, swapped or foreign chunk. */
static void test_tampered(void **state)
{
	(void) state;
	char dir[] = "/tmp/ckpt-image-XXXXXX";
	struct ckpt_image img, in;
	int dfd = image_dir(dir, &img, 600); /* 2.3 MiB: three chunks */
	struct urs_err err = {{0}};
	assert_int_equal(img.npage_macs, 3);
	static uint8_t good[1 << 20], buf[1 << 20];
	size_t n = read_core(dir, good, sizeof(good));

	/* a register byte (the first TASK record's regs: past the SHM records,
	 * somewhere in the body's first KiB), checksums fixed */
	memcpy(buf, good, n);
	buf[64 + 512] ^= 0x01;
	fix_crcs(buf);
	put_core(dir, buf, n);
	assert_int_not_equal(ckpt_image_check_core(dir, &test_seal, &err), 0);
	assert_non_null(strstr(err.msg, "authentication"));
	assert_int_not_equal(ckpt_image_load(dir, &test_seal, &in, &err), 0);
	assert_non_null(strstr(err.msg, "authentication"));
	/* without fixing them: corruption, said so */
	memcpy(buf, good, n);
	buf[64 + 512] ^= 0x01;
	put_core(dir, buf, n);
	assert_int_not_equal(ckpt_image_check_core(dir, &test_seal, &err), 0);
	assert_non_null(strstr(err.msg, "checksum"));
	/* a page MAC altered */
	memcpy(buf, good, n);
	buf[n - 32 - 1] ^= 0x40;
	put_core(dir, buf, n);
	assert_int_not_equal(ckpt_image_load(dir, &test_seal, &in, &err), 0);
	assert_non_null(strstr(err.msg, "authentication"));
	/* another host's key */
	put_core(dir, good, n);
	struct ckpt_seal other = test_seal;
	other.key[5] ^= 1;
	assert_int_not_equal(ckpt_image_load(dir, &other, &in, &err), 0);
	assert_non_null(strstr(err.msg, "authentication"));
	/* the good one loads */
	assert_int_equal(ckpt_image_load(dir, &test_seal, &in, &err), 0);
	ckpt_image_free(&in);
	/* an older version (checksums right): refused saying so */
	memcpy(buf, good, n);
	uint32_t v4 = 4;
	memcpy(buf + 8, &v4, 4);
	fix_crcs(buf);
	put_core(dir, buf, n);
	assert_int_not_equal(ckpt_image_check_core(dir, &test_seal, &err), 0);
	assert_non_null(strstr(err.msg, "version 4"));
	put_core(dir, good, n);

	/* chunk MACs: page data altered, chunks swapped, another image's id */
	static uint8_t data[600 * 4096];
	for (uint32_t i = 0; i < 600; i++)
		memset(data + (size_t) i * 4096, 'a' + (int) (i % 26), 4096);
	const uint8_t(*macs)[CKPT_MAC_LEN] = (const uint8_t(*)[CKPT_MAC_LEN]) img.page_macs;
	assert_int_equal(ckpt_seal_check_pages(&test_seal, img.id, data, sizeof(data), macs, &err),
			 0);
	data[(1 << 20) + 5] ^= 1;
	assert_int_equal(ckpt_seal_check_pages(&test_seal, img.id, data, sizeof(data), macs, &err),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "chunk 1 "));
	data[(1 << 20) + 5] ^= 1;
	uint8_t swapped[3][CKPT_MAC_LEN];
	memcpy(swapped, img.page_macs, sizeof(swapped));
	memcpy(swapped[0], img.page_macs[1], CKPT_MAC_LEN);
	memcpy(swapped[1], img.page_macs[0], CKPT_MAC_LEN);
	assert_int_equal(ckpt_seal_check_pages(&test_seal, img.id, data, sizeof(data),
					       (const uint8_t(*)[CKPT_MAC_LEN]) swapped, &err),
			 -EBADMSG);
	uint8_t id2[16];
	memcpy(id2, img.id, 16);
	id2[0] ^= 1;
	assert_int_equal(ckpt_seal_check_pages(&test_seal, id2, data, sizeof(data), macs, &err),
			 -EBADMSG);

	unlinkat(dfd, "pages.img", 0);
	unlinkat(dfd, "core.img", 0);
	close(dfd);
	rmdir(dir);
	free_sample(&img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_every_byte_and_truncation),
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_external_stdio),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_fd_kinds),
		cmocka_unit_test(test_shm),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_every_body_byte),
		cmocka_unit_test(test_pages_files),
		cmocka_unit_test(test_pages_fd),
		cmocka_unit_test(test_tampered),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
