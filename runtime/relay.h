/*
 * runtime/relay.h — relay two connected stream sockets into each other with
 * splice(2) through a pipe per direction, on the loop, never blocking it.
 *
 * Data goes socket -> pipe -> socket without being copied into user memory
 * (SPLICE_F_MOVE | SPLICE_F_NONBLOCK; pipes enlarged with F_SETPIPE_SZ).
 * Readiness comes from one io_uring poll per socket (multishot where the
 * kernel has it, single-shot with a computed mask otherwise); a direction is
 * pumped until it would block or a per-turn budget runs out, in which case
 * a NOP re-queues it behind the loop's other work.
 *
 * Ends: EOF on one side is forwarded, once its pipe is drained, as
 * shutdown(SHUT_WR) on the other (half-close); when both directions are shut
 * the relay closes both sockets. A reset or error on either side closes the
 * other with SO_LINGER 0 (RST). The owner is told once, through @done, after
 * every fd is closed and no op of the relay is in flight: the record may be
 * freed then, and only then.
 *
 * The process must ignore SIGPIPE: splice(2) into a socket whose peer reset
 * it after a half-close fails with EPIPE and raises SIGPIPE (there is no
 * MSG_NOSIGNAL for splice).
 */
#ifndef URSA_RUNTIME_RELAY_H
#define URSA_RUNTIME_RELAY_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/loop.h"

struct urs_relay;
/* @res: 0 after a clean end (both directions closed by EOF), -ECONNRESET
 * (or another -errno) when a side failed, -ECANCELED after urs_relay_close(). */
typedef void (*urs_relay_done_fn)(struct urs_relay *r, int res);

struct urs_relay_dir {
	int pr, pw;	 /* pipe: read end, write end */
	uint32_t inpipe; /* bytes in the pipe */
	bool in_ready;	 /* the source may have data (no EAGAIN since its last event) */
	bool out_ready;	 /* the destination may take data */
	bool eof;	 /* the source said EOF */
	bool shut;	 /* the destination was shut down for writing */
};

struct urs_relay {
	struct urs_loop *loop;
	int fd[2];
	/* dir[0]: fd[0] -> fd[1]; dir[1]: fd[1] -> fd[0] */
	struct urs_relay_dir dir[2];
	uint64_t bytes[2]; /* delivered, per direction */
	uint32_t pipe_size;
	struct urs_op poll[2], kick;
	uint8_t ops; /* ops not yet finally completed */
	bool multishot;
	bool closing;
	int result;
	urs_relay_done_fn done;
};

struct urs_relay_opts {
	uint32_t pipe_size; /* bytes per pipe; default 1 MiB (kept at the kernel's if refused) */
	bool no_multishot;  /* single-shot polls even where multishot works (tests) */
};

/**
 * urs_relay_start() - start relaying between two connected sockets
 * @r: the relay record (cleared here); must stay at its address until @done
 * @loop: the loop it runs on (the calling thread's)
 * @a: a connected, non-blocking stream socket
 * @b: the other one
 * @o: pipe size and poll mode, or NULL for the defaults
 * @done: told once, from the loop, when every fd is closed and no op is
 *        in flight
 *
 * On success the relay owns both sockets (closes them before @done runs).
 * Makes its two pipes here; the first pump runs from the loop, never inside
 * this call.
 *
 * Return: 0, or a negative errno from pipe2(2) (no pipes): then nothing was
 * armed and the sockets are still the caller's.
 */
int urs_relay_start(struct urs_relay *r, struct urs_loop *loop, int a, int b,
		    const struct urs_relay_opts *o, urs_relay_done_fn done);

/**
 * urs_relay_close() - stop now
 * @r: a started relay
 * @reset: close with SO_LINGER 0 (RST) rather than a FIN
 *
 * Both sockets and the pipes are closed here and the polls cancelled; @done
 * follows on the loop with -ECANCELED. No-op once the relay is closing.
 */
void urs_relay_close(struct urs_relay *r, bool reset);

/**
 * urs_relay_pipe_size() - what the pipes can hold (for tests)
 * @r: a started relay
 *
 * Return: bytes per pipe after F_SETPIPE_SZ (the smaller of the two).
 */
static inline uint32_t urs_relay_pipe_size(const struct urs_relay *r)
{
	return r->pipe_size;
}

#endif
