/*
 * actors/gofer/metrics.c — the gofer volumes' ursa_gofer_* metrics: ops by
 * type, errors, bytes through the gofer, a latency histogram, inodes and
 * open files, host fds held, reopens from file handles and ENFILE refusals,
 * each labelled volume="DEST".
 *
 * The request path only bumps the plain counters of struct urs_gofer_stats
 * (actors/gofer/gofer.c, gofer/ops.c); they are copied into the registered
 * metrics when somebody scrapes, like the netstack's. The volume label's
 * values are the volumes' destinations, declared once at registration (the
 * first scrape); every cell is found arithmetically (volume index × op
 * index), nothing is allocated per op or per scrape.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <string.h>

#include "actors/gofer/gofer.h"
#include "runtime/common.h"
#include "runtime/metrics.h"

#define MAX_VOLUMES 16

/* Op label values; FUSE opcodes map to them through op_index[] (0: other). */
static const char *const op_v[] = {
	"other",     "init",	"lookup",	   "forget",	 "getattr",  "setattr", "access",
	"readlink",  "symlink", "mknod",	   "mkdir",	 "unlink",   "rmdir",	"rename",
	"link",	     "open",	"create",	   "read",	 "write",    "release", "flush",
	"fsync",     "opendir", "readdir",	   "releasedir", "fsyncdir", "statfs",	"xattr",
	"fallocate", "lseek",	"copy_file_range", "interrupt",	 "destroy",
};
#define NOPS URS_ARRAY_SIZE(op_v)

static uint8_t op_index(uint32_t opcode)
{
	switch (opcode) {
	case FUSE_INIT:
		return 1;
	case FUSE_LOOKUP:
		return 2;
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
		return 3;
	case FUSE_GETATTR:
		return 4;
	case FUSE_SETATTR:
		return 5;
	case FUSE_ACCESS:
		return 6;
	case FUSE_READLINK:
		return 7;
	case FUSE_SYMLINK:
		return 8;
	case FUSE_MKNOD:
		return 9;
	case FUSE_MKDIR:
		return 10;
	case FUSE_UNLINK:
		return 11;
	case FUSE_RMDIR:
		return 12;
	case FUSE_RENAME:
	case FUSE_RENAME2:
		return 13;
	case FUSE_LINK:
		return 14;
	case FUSE_OPEN:
		return 15;
	case FUSE_CREATE:
		return 16;
	case FUSE_READ:
		return 17;
	case FUSE_WRITE:
		return 18;
	case FUSE_RELEASE:
		return 19;
	case FUSE_FLUSH:
		return 20;
	case FUSE_FSYNC:
		return 21;
	case FUSE_OPENDIR:
		return 22;
	case FUSE_READDIR:
	case FUSE_READDIRPLUS:
		return 23;
	case FUSE_RELEASEDIR:
		return 24;
	case FUSE_FSYNCDIR:
		return 25;
	case FUSE_STATFS:
		return 26;
	case FUSE_SETXATTR:
	case FUSE_GETXATTR:
	case FUSE_LISTXATTR:
	case FUSE_REMOVEXATTR:
		return 27;
	case FUSE_FALLOCATE:
		return 28;
	case FUSE_LSEEK:
		return 29;
	case FUSE_COPY_FILE_RANGE:
		return 30;
	case FUSE_INTERRUPT:
		return 31;
	case FUSE_DESTROY:
		return 32;
	default:
		return 0;
	}
}

static const char *vol_v[MAX_VOLUMES];
static const char *const dir_v[] = {"read", "write"};
static const char *const why_v[] = {"pinned", "open"};
static struct urs_metric_label vol_l[] = {{"volume", vol_v, 0}};
static struct urs_metric_label volop_l[] = {{"volume", vol_v, 0}, {"op", op_v, NOPS}};
static struct urs_metric_label voldir_l[] = {{"volume", vol_v, 0}, {"dir", dir_v, 2}};
static struct urs_metric_label volwhy_l[] = {{"volume", vol_v, 0}, {"reason", why_v, 2}};

static struct urs_metric m_ops = {.name = "ursa_gofer_ops_total",
				  .help = "FUSE requests a gofer volume answered, by type",
				  .type = URS_METRIC_COUNTER,
				  .labels = volop_l,
				  .nlabels = 2};
static struct urs_metric m_errors = {.name = "ursa_gofer_errors_total",
				     .help = "Requests answered with an error",
				     .type = URS_METRIC_COUNTER,
				     .labels = vol_l,
				     .nlabels = 1};
static struct urs_metric m_bytes = {
	.name = "ursa_gofer_bytes_total",
	.help = "Bytes the gofer read or wrote for the sandbox (passthrough I/O is not seen)",
	.type = URS_METRIC_COUNTER,
	.labels = voldir_l,
	.nlabels = 2};
static struct urs_metric m_lat = {
	.name = "ursa_gofer_request_duration_nanoseconds",
	.help = "Time to answer a request (asynchronous host I/O: to its submission)",
	.type = URS_METRIC_HISTOGRAM,
	.labels = vol_l,
	.nlabels = 1,
	.hist_first = URS_GOFER_LAT_FIRST_NS,
	.hist_buckets = URS_GOFER_LAT_BUCKETS};
static struct urs_metric m_inodes = {.name = "ursa_gofer_inodes",
				     .help = "Inodes the kernel holds on the volume",
				     .type = URS_METRIC_GAUGE,
				     .labels = vol_l,
				     .nlabels = 1};
static struct urs_metric m_open = {.name = "ursa_gofer_open_files",
				   .help = "Files and directories open on the volume",
				   .type = URS_METRIC_GAUGE,
				   .labels = vol_l,
				   .nlabels = 1};
static struct urs_metric m_pt = {.name = "ursa_gofer_passthrough",
				 .help = "1 when file data bypasses the gofer (FUSE passthrough)",
				 .type = URS_METRIC_GAUGE,
				 .labels = vol_l,
				 .nlabels = 1};
static struct urs_metric m_fds = {
	.name = "ursa_gofer_fds",
	.help = "Host fds the volume's inode table holds (cached, pinned, mount fds)",
	.type = URS_METRIC_GAUGE,
	.labels = vol_l,
	.nlabels = 1};
static struct urs_metric m_reopens = {
	.name = "ursa_gofer_fd_reopens_total",
	.help = "Inode fds reopened from their file handle after leaving the fd cache",
	.type = URS_METRIC_COUNTER,
	.labels = vol_l,
	.nlabels = 1};
static struct urs_metric m_refused = {
	.name = "ursa_gofer_refused_total",
	.help = "Requests answered ENFILE: inodes without file handles (pinned fds) or open "
		"files at their cap",
	.type = URS_METRIC_COUNTER,
	.labels = volwhy_l,
	.nlabels = 2};
static struct urs_metrics set;
static uint32_t nvol;

static int register_all(const char *const *volumes, uint32_t n)
{
	if (n > MAX_VOLUMES)
		n = MAX_VOLUMES;
	for (uint32_t i = 0; i < n; i++)
		vol_v[i] = volumes[i] ? volumes[i] : "?";
	vol_l[0].n = volop_l[0].n = voldir_l[0].n = volwhy_l[0].n = n;
	struct urs_metric *all[] = {&m_ops,  &m_errors, &m_bytes, &m_lat,     &m_inodes,
				    &m_open, &m_pt,	&m_fds,	  &m_reopens, &m_refused};
	for (size_t i = 0; i < URS_ARRAY_SIZE(all); i++) {
		int r = urs_metric_register(&set, all[i]);
		if (r < 0) {
			urs_metrics_free(&set);
			return r;
		}
	}
	nvol = n;
	return 0;
}

static void put(struct urs_metric *m, uint32_t cell, uint32_t slot, uint64_t v)
{
	atomic_store_explicit(&m->cells[(size_t) cell * m->stride + slot], v, memory_order_relaxed);
}

int urs_gofer_metrics_render(struct urs_gofer *const *g, const char *const *volumes, uint32_t n,
			     const char *const_labels, char *buf, size_t len)
{
	if (!n)
		return urs_metrics_expose(&(struct urs_metrics){0}, const_labels, buf, len);
	if (!set.count) {
		int r = register_all(volumes, n);
		if (r < 0)
			return r;
	}
	for (uint32_t v = 0; v < nvol && v < n; v++) {
		struct urs_gofer_stats st = {0};
		if (g[v])
			urs_gofer_get_stats(g[v], &st);
		uint64_t ops[NOPS] = {0};
		for (uint32_t k = 0; k < URS_ARRAY_SIZE(st.by_op); k++)
			ops[op_index(k)] += st.by_op[k];
		for (uint32_t k = 0; k < NOPS; k++)
			put(&m_ops, urs_metric_cell(&m_ops, (uint32_t[]){v, k}), 0, ops[k]);
		put(&m_errors, v, 0, st.errors);
		put(&m_bytes, urs_metric_cell(&m_bytes, (uint32_t[]){v, 0}), 0, st.bytes_read);
		put(&m_bytes, urs_metric_cell(&m_bytes, (uint32_t[]){v, 1}), 0, st.bytes_written);
		for (uint32_t b = 0; b <= URS_GOFER_LAT_BUCKETS; b++)
			put(&m_lat, v, b, st.lat_hist[b]);
		put(&m_lat, v, URS_GOFER_LAT_BUCKETS + 1, st.lat_count);
		put(&m_lat, v, URS_GOFER_LAT_BUCKETS + 2, st.lat_sum_ns);
		put(&m_inodes, v, 0, st.inodes);
		put(&m_open, v, 0, st.open_files);
		put(&m_pt, v, 0, st.passthrough ? 1 : 0);
		put(&m_fds, v, 0, st.fds);
		put(&m_reopens, v, 0, st.fd_reopens);
		put(&m_refused, urs_metric_cell(&m_refused, (uint32_t[]){v, 0}), 0,
		    st.enfile_pinned);
		put(&m_refused, urs_metric_cell(&m_refused, (uint32_t[]){v, 1}), 0,
		    st.open_refused);
	}
	return urs_metrics_expose(&set, const_labels, buf, len);
}
