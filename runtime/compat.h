/*
 * runtime/compat.h — io_uring features newer than Debian 12's liburing 2.3.
 *
 * Constants and raw SQE preparation for what the kernel offers but the
 * library does not know yet. Nothing here is used without a runtime probe
 * (runtime/probe.c) saying the running kernel supports it; every user has a
 * fallback path.
 */
#ifndef URSA_RUNTIME_COMPAT_H
#define URSA_RUNTIME_COMPAT_H

#include <liburing.h>
#include <string.h>

/* 6.7: multishot read into provided buffers (liburing 2.6). */
#define URS_IORING_OP_READ_MULTISHOT 49

/* 6.12: incremental consumption of provided buffers (liburing 2.8). */
#ifndef IOU_PBUF_RING_INC
#define IOU_PBUF_RING_INC 2
#endif

/* struct io_uring_buf_reg: the kernel renamed liburing 2.3's `pad` to `flags`
 * (6.7+, where IOU_PBUF_RING_MMAP / _INC live). */
#define URS_BUF_REG_FLAGS pad

/* 6.1 setup flag, present in 2.3 but guard anyway. */
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif
#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif

/**
 * urs_prep_read_multishot() - io_uring_prep_read_multishot() as in liburing 2.6
 * @sqe: the SQE to prepare
 * @fd: the file to read
 * @nbytes: the SQE's length field (the callers pass 0)
 * @offset: the file offset (ignored by the kernel for streams)
 * @bgid: the buffer group each chunk's buffer is picked from
 *
 * One armed read that posts a completion (with IORING_CQE_F_MORE) per
 * readable chunk, each into a buffer picked from group @bgid. Sets
 * IOSQE_BUFFER_SELECT (replacing the SQE's other flags). Only where
 * URS_FEAT_READ_MSHOT was probed.
 */
static inline void urs_prep_read_multishot(struct io_uring_sqe *sqe, int fd, unsigned nbytes,
					   __u64 offset, int bgid)
{
	io_uring_prep_rw(URS_IORING_OP_READ_MULTISHOT, sqe, fd, NULL, nbytes, offset);
	sqe->buf_group = (__u16) bgid;
	sqe->flags = IOSQE_BUFFER_SELECT;
}

#define URS_URING_CMD_AREA 80

/**
 * urs_prep_uring_cmd() - prepare an IORING_OP_URING_CMD (5.19)
 * @sqe: a 128-byte SQE of a ring set up with IORING_SETUP_SQE128
 * @fd: the file whose driver takes the command
 * @cmd_op: the driver's command number
 * @cmd: the command's payload
 * @cmdlen: its length; bytes past URS_URING_CMD_AREA (80) are cut off
 *
 * A command for the file's driver (liburing 2.3 has the opcode and
 * IORING_SETUP_SQE128 but no prep helper). The command's own payload lives
 * in the SQE's last 80 bytes (sqe->cmd), so the ring must be set up with
 * IORING_SETUP_SQE128 (128-byte SQEs). Zeroes the whole 128-byte SQE first:
 * liburing does not clear SQEs it hands out.
 */
static inline void urs_prep_uring_cmd(struct io_uring_sqe *sqe, int fd, __u32 cmd_op,
				      const void *cmd, size_t cmdlen)
{
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = cmd_op;
	memcpy(sqe->cmd, cmd, cmdlen < URS_URING_CMD_AREA ? cmdlen : URS_URING_CMD_AREA);
}

#endif
