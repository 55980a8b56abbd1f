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

/**
 * ckpt_seize() - seize a task and stop it
 * @t: the tracee record (cleared first)
 * @pid: the task (a thread id works too)
 * @extra_opts: PTRACE_O_* besides TRACESYSGOOD
 * @err: what failed, naming the pid
 *
 * PTRACE_SEIZE (options: TRACESYSGOOD | extra) + PTRACE_INTERRUPT, then
 * wait for the task to stop and save its registers in t->base. Blocks
 * until the task traps.
 *
 * Return: 0, or a negative errno (-ESRCH: it exited meanwhile; -EPERM:
 * not ours to trace).
 */
int ckpt_seize(struct ckpt_tracee *t, pid_t pid, unsigned long extra_opts, struct urs_err *err);

/**
 * ckpt_seize_start() - the first half of ckpt_seize(): seize and interrupt
 * @t: the tracee record (cleared first)
 * @pid: the task
 * @extra_opts: PTRACE_O_* besides TRACESYSGOOD
 * @err: what failed
 *
 * For tasks in a frozen cgroup: they only trap once thawed, so seize them
 * all, thaw, then wait for each (ckpt_seize_wait).
 *
 * Return: 0 or the failing ptrace request's negative errno (the task is
 * detached again when the interrupt fails).
 */
int ckpt_seize_start(struct ckpt_tracee *t, pid_t pid, unsigned long extra_opts,
		     struct urs_err *err);

/**
 * ckpt_seize_wait() - the second half of ckpt_seize(): wait for the trap
 * @t: a tracee after ckpt_seize_start()
 * @err: what failed
 *
 * A signal dequeued before the trap is kept (t->stopped_sig and its
 * siginfo) to be re-delivered at detach; a group stop is noted.
 *
 * Return: 0; -ESRCH if the task exited; another negative errno from ptrace.
 */
int ckpt_seize_wait(struct ckpt_tracee *t, struct urs_err *err);

/**
 * ckpt_wait_new_child() - wait for the first stop of an auto-attached
 *                         (clone-traced) child
 * @t: its tracee record (cleared first)
 * @pid: the child
 * @err: what failed
 *
 * Return: 0 with its registers in t->base; -ESRCH if it died first; or a
 * negative errno from waitpid/ptrace.
 */
int ckpt_wait_new_child(struct ckpt_tracee *t, pid_t pid, struct urs_err *err);

/**
 * ckpt_detach() - put t->base back and detach
 * @t: a stopped tracee
 *
 * Re-delivers a signal seen while seizing, with its siginfo when the last
 * stop was a signal-delivery stop; a task that was group-stopped when
 * seized is left stopped (a new SIGSTOP is queued before the detach).
 *
 * Return: 0, or the first negative errno of restoring the registers or of
 * PTRACE_DETACH (the detach is tried either way).
 */
int ckpt_detach(struct ckpt_tracee *t);

/**
 * ckpt_get_regs() - read a stopped tracee's general registers
 * @pid: the tracee
 * @regs: filled (NT_PRSTATUS)
 *
 * Return: 0 or ptrace's negative errno.
 */
int ckpt_get_regs(pid_t pid, struct user_regs_struct *regs);

/**
 * ckpt_set_regs() - write a stopped tracee's general registers
 * @pid: the tracee
 * @regs: the registers (NT_PRSTATUS)
 *
 * Return: 0 or ptrace's negative errno.
 */
int ckpt_set_regs(pid_t pid, const struct user_regs_struct *regs);

/**
 * ckpt_get_xsave() - read the extended FPU state (NT_X86_XSTATE)
 * @pid: a stopped tracee
 * @buf: where it goes
 * @len: the buffer size in, used size out
 *
 * Return: 0 or ptrace's negative errno.
 */
int ckpt_get_xsave(pid_t pid, void *buf, uint32_t *len);

/**
 * ckpt_set_xsave() - write the extended FPU state (NT_X86_XSTATE)
 * @pid: a stopped tracee
 * @buf: the state, as ckpt_get_xsave() read it
 * @len: its size
 *
 * Return: 0 or ptrace's negative errno (-EINVAL for a state the kernel
 * refuses).
 */
int ckpt_set_xsave(pid_t pid, const void *buf, uint32_t len);

/**
 * ckpt_inject() - run syscall @nr in the task
 * @t: a stopped tracee with t->syscall_ip set
 * @nr: the syscall number
 * @a1: first argument
 * @a2: second argument
 * @a3: third argument
 * @a4: fourth argument
 * @a5: fifth argument
 * @a6: sixth argument
 * @ret: gets the raw return value (negative errno on failure)
 *
 * Runs from t->base's registers with rip at t->syscall_ip. With
 * t->trap_after the task is left in the int3's signal-delivery stop (the
 * SIGTRAP is discarded by the next resume), with t->step in the
 * single-step's SIGTRAP delivery stop (likewise), else in the syscall's
 * exit stop; an injection that removes the int3's page (munmap of the
 * blob) needs trap_after = 0. Signals forced on the way (a seccomp SIGSYS)
 * are suppressed. The caller restores t->base (ckpt_detach does).
 *
 * Return: 0 or a negative errno for a ptrace failure (the task died:
 * -ESRCH; it did not get where it should: -EFAULT).
 */
int ckpt_inject(struct ckpt_tracee *t, long nr, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		uint64_t a5, uint64_t a6, long *ret);

/**
 * ckpt_run_code() - run code the caller wrote into the task
 * @t: a stopped tracee
 * @entry: where the code starts
 * @stop_ip: the address after its int3 (the int3 is at @stop_ip - 1)
 * @regs: gets the registers at the int3
 *
 * From @entry with t->base's other registers, every signal blocked, until
 * its int3 at @stop_ip - 1 (one stop). The int3's SIGTRAP is forced, so only for a task whose
 * SIGTRAP handler is SIG_DFL (as t->step; a SIGTRAP someone else queued is reported the same way,
 * in t->trap_info). Other stops are resumed with their signal suppressed.
 *
 * Return: 0; -EFAULT if the code does not get there (bounded, not a
 * loop); or ptrace's negative errno.
 */
int ckpt_run_code(struct ckpt_tracee *t, uint64_t entry, uint64_t stop_ip,
		  struct user_regs_struct *regs);

/**
 * ckpt_find_syscall_insn() - find a `syscall` instruction (0f 05)
 * @pid: the task
 * @start: the first address of the range (e.g. its vDSO)
 * @end: the end of the range [start, end), at most 1 MiB after @start
 * @ip: gets the instruction's address
 *
 * Reads the range through /proc/PID/mem into a temporary buffer.
 *
 * Return: 0; -ENOENT if there is none; -EINVAL for an empty or too large
 * range; -ENOMEM; or the read's negative errno.
 */
int ckpt_find_syscall_insn(pid_t pid, uint64_t start, uint64_t end, uint64_t *ip);

/**
 * ckpt_open_mem() - open /proc/PID/mem (O_RDWR) for task memory
 * @pid: the task (the caller must be allowed to ptrace it)
 *
 * Reads and writes go through FOLL_FORCE, so read-only and PROT_NONE pages
 * work too.
 *
 * Return: the fd (the caller closes it), or a negative errno.
 */
int ckpt_open_mem(pid_t pid);

/**
 * ckpt_mem_read() - read all of [@addr, @addr + @len) of the task
 * @memfd: from ckpt_open_mem()
 * @addr: the task's address
 * @buf: where the bytes go
 * @len: their count
 *
 * Return: 0, or a negative errno (-EIO for an unmapped address).
 */
int ckpt_mem_read(int memfd, uint64_t addr, void *buf, size_t len);

/**
 * ckpt_mem_write() - write all of @buf at @addr in the task
 * @memfd: from ckpt_open_mem()
 * @addr: the task's address
 * @buf: the bytes
 * @len: their count
 *
 * Return: 0, or a negative errno (-EIO for an unmapped address).
 */
int ckpt_mem_write(int memfd, uint64_t addr, const void *buf, size_t len);

#endif
