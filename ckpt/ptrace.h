/*
 * ckpt/ptrace.h — ptrace helpers shared by the checkpoint dumper and the
 * restorer: seize and stop a task, read/write its registers and extended FPU
 * state, and run a system call inside it ("injection") by pointing its
 * registers at a `syscall` instruction and stepping over the syscall's entry
 * and exit stops (PTRACE_SYSCALL), with no code written into the task.
 * Where the caller put `syscall; int3` into the task itself (the restorer's
 * blob, ckpt_tracee.trap_after), an injection runs to the int3 instead:
 * one ptrace stop per injected syscall rather than two. Without code of
 * its own, one stop by single-stepping over the `syscall` (ckpt_tracee.step:
 * the kernel reports the step at the syscall's exit); and code the caller
 * wrote runs to its int3 in one stop (ckpt_run_code: the dumper's queries).
 */
#ifndef URSA_CKPT_PTRACE_H
#define URSA_CKPT_PTRACE_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "runtime/err.h"

struct ckpt_tracee {
	pid_t pid;
	uint64_t syscall_ip;	      /* address of a `syscall` instruction in the task */
	struct user_regs_struct base; /* registers when stopped; restored by put_regs */
	int stopped_sig;	      /* a signal that arrived while seizing, to re-deliver */
	uint8_t stopped_info[128];    /* its siginfo */
	int in_syscall_stop;	      /* last stop was a syscall stop */
	int trap_after;		      /* an int3 follows syscall_ip: one stop per injection */
	int group_stopped;	      /* was in a group stop (SIGSTOP) when seized */
	/* step: PTRACE_SINGLESTEP over syscall_ip, one stop per injection. Its
	 * stop is a forced SIGTRAP, which resets a blocked or ignored SIGTRAP
	 * handler to SIG_DFL and unblocks SIGTRAP: only for a task whose
	 * handler is SIG_DFL, with every signal blocked (ckpt_inject blocks
	 * SIGTRAP again after each stop; the caller restores the mask). */
	int step;
	int sig_stop;		/* last stop was an injection's SIGTRAP delivery stop */
	int trap_foreign;	/* a SIGTRAP of someone else's was merged into one: */
	uint8_t trap_info[128]; /* its siginfo, for the caller to queue again */
};

/* PTRACE_SEIZE (options: TRACESYSGOOD | extra) + PTRACE_INTERRUPT, then wait
 * for the task to stop and save its registers in t->base. */
int ckpt_seize(struct ckpt_tracee *t, pid_t pid, unsigned long extra_opts, struct urs_err *err);
/* The two halves of ckpt_seize, for tasks in a frozen cgroup: they only trap
 * once thawed, so seize them all, thaw, then wait for each. */
int ckpt_seize_start(struct ckpt_tracee *t, pid_t pid, unsigned long extra_opts,
		     struct urs_err *err);
int ckpt_seize_wait(struct ckpt_tracee *t, struct urs_err *err);
/* Wait for the first stop of an auto-attached (clone-traced) child. */
int ckpt_wait_new_child(struct ckpt_tracee *t, pid_t pid, struct urs_err *err);
/* Put t->base back and detach (re-delivering a signal seen while seizing,
 * with its siginfo when the last stop was a signal-delivery stop; a task
 * that was group-stopped when seized is left stopped). */
int ckpt_detach(struct ckpt_tracee *t);

int ckpt_get_regs(pid_t pid, struct user_regs_struct *regs);
int ckpt_set_regs(pid_t pid, const struct user_regs_struct *regs);
/* Extended FPU state (NT_X86_XSTATE); *len is the buffer size in, used size out. */
int ckpt_get_xsave(pid_t pid, void *buf, uint32_t *len);
int ckpt_set_xsave(pid_t pid, const void *buf, uint32_t len);

/* Run syscall nr with up to six arguments in the task; *ret gets the raw
 * return value (negative errno on failure). Returns 0 or a negative errno
 * for a ptrace failure (the task died, ...). With t->trap_after the task
 * is left in the int3's signal-delivery stop (the SIGTRAP is discarded by
 * the next resume), with t->step in the single-step's SIGTRAP delivery
 * stop (likewise), else in the syscall's exit stop; an injection that
 * removes the int3's page (munmap of the blob) needs trap_after = 0. */
int ckpt_inject(struct ckpt_tracee *t, long nr, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		uint64_t a5, uint64_t a6, long *ret);

/* Run code the caller wrote into the task, from @entry with t->base's
 * other registers, every signal blocked, until its int3 at @stop_ip - 1
 * (one stop); *regs gets the registers there. The int3's SIGTRAP is
 * forced, so only for a task whose SIGTRAP handler is SIG_DFL (as t->step;
 * a SIGTRAP someone else queued is reported the same way). Other stops
 * are resumed with their signal suppressed; -EFAULT if the code does not
 * get there. */
int ckpt_run_code(struct ckpt_tracee *t, uint64_t entry, uint64_t stop_ip,
		  struct user_regs_struct *regs);

/* Find a `syscall` instruction (0f 05) in [start, end) of the task's memory. */
int ckpt_find_syscall_insn(pid_t pid, uint64_t start, uint64_t end, uint64_t *ip);

/* Open /proc/PID/mem (O_RDWR) for reading and writing task memory; reads and
 * writes go through FOLL_FORCE, so read-only and PROT_NONE pages work too. */
int ckpt_open_mem(pid_t pid);
int ckpt_mem_read(int memfd, uint64_t addr, void *buf, size_t len);
int ckpt_mem_write(int memfd, uint64_t addr, const void *buf, size_t len);

#endif
