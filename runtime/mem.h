/*
 * runtime/mem.h — handing back the memory a burst of work left touched.
 *
 * A long-lived process that builds sandboxes now and then (the shim, the
 * supervisor) keeps every page it ever touched: glibc keeps freed heap
 * below its trim threshold, and the stack keeps the pages its deepest call
 * reached (building a rootfs mount takes ~20 KiB of frames once). On a host
 * of thousands of idle pods those pages are most of the process. Settling
 * gives them back once the burst is over: the heap's free pages
 * (malloc_trim) and the main thread's stack below the caller's frame
 * (MADV_DONTNEED: zero pages again on the next touch). A coalescing timer
 * settles once, a delay after the last activity of a burst, so an idle
 * process settles once and then costs no CPU.
 */
#ifndef URSA_RUNTIME_MEM_H
#define URSA_RUNTIME_MEM_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/timer.h"

/**
 * urs_mem_settle() - give back the heap's free pages and the stack's
 * unused ones
 *
 * Call it from a shallow frame (a loop callback): the main thread's stack
 * pages more than two pages below the caller's frame, down to the bottom
 * of its [stack] mapping, are dropped. On a thread other than the main one
 * only the heap is trimmed (its stack is not that mapping).
 *
 * Return: the bytes of stack dropped (a hint), or a negative errno from
 * madvise.
 */
long urs_mem_settle(void);

struct urs_mem_settler {
	struct urs_timer t;
	uint64_t delay_ns;
	uint64_t last_ns; /* the latest call */
	unsigned settled; /* times it settled (tests) */
	bool off;
};

/**
 * urs_mem_settle_soon() - settle once, @s->delay_ns after the last of a
 * burst of calls
 * @loop: the loop the timer runs on
 * @s: the settler (zeroed, then its delay set); its timer holds the loop
 *     until it fires or urs_mem_settle_off() cancels it
 *
 * A call while the timer is armed only moves the settle later (the timer,
 * when it fires early, waits out the rest): one settle per burst, no
 * syscall per call.
 */
void urs_mem_settle_soon(struct urs_loop *loop, struct urs_mem_settler *s);

/**
 * urs_mem_settle_off() - no more settling; cancel a pending one
 * @loop: the loop
 * @s: the settler
 */
void urs_mem_settle_off(struct urs_loop *loop, struct urs_mem_settler *s);

#endif
