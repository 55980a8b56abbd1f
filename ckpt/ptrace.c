/*
 * ckpt/ptrace.c — seize/interrupt/detach, registers, FPU state and
 * syscall injection for checkpoint and restore (see ckpt_ptrace.h).
 */
#include "ckpt/ptrace.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/common.h"

int ckpt_get_regs(pid_t pid, struct user_regs_struct *regs)
{
	struct iovec iov = {regs, sizeof(*regs)};
	return ptrace(PTRACE_GETREGSET, pid, (void *) NT_PRSTATUS, &iov) < 0 ? -errno : 0;
}

int ckpt_set_regs(pid_t pid, const struct user_regs_struct *regs)
{
	struct iovec iov = {(void *) regs, sizeof(*regs)};
	return ptrace(PTRACE_SETREGSET, pid, (void *) NT_PRSTATUS, &iov) < 0 ? -errno : 0;
}

int ckpt_get_xsave(pid_t pid, void *buf, uint32_t *len)
{
	struct iovec iov = {buf, *len};
	if (ptrace(PTRACE_GETREGSET, pid, (void *) NT_X86_XSTATE, &iov) < 0)
		return -errno;
	*len = (uint32_t) iov.iov_len;
	return 0;
}

int ckpt_set_xsave(pid_t pid, const void *buf, uint32_t len)
{
	struct iovec iov = {(void *) buf, len};
	return ptrace(PTRACE_SETREGSET, pid, (void *) NT_X86_XSTATE, &iov) < 0 ? -errno : 0;
}

/* Wait for the next ptrace stop of pid; -ESRCH if it died. */
static int wait_stop(pid_t pid, int *status)
{
	for (;;) {
		int st;
		pid_t r = waitpid(pid, &st, __WALL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return -ESRCH;
		if (WIFSTOPPED(st)) {
			*status = st;
			return 0;
		}
	}
}

int ckpt_seize_start(struct ckpt_tracee *t, pid_t pid, unsigned long extra_opts,
		     struct urs_err *err)
{
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *) (PTRACE_O_TRACESYSGOOD | extra_opts)) < 0)
		return urs_err_set(err, -errno, "pid %d: PTRACE_SEIZE: %m", pid);
	if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) < 0) {
		int e = -errno;
		ptrace(PTRACE_DETACH, pid, 0, 0);
		return urs_err_set(err, e, "pid %d: PTRACE_INTERRUPT: %s", pid, strerror(-e));
	}
	return 0;
}

int ckpt_seize(struct ckpt_tracee *t, pid_t pid, unsigned long extra_opts, struct urs_err *err)
{
	int r = ckpt_seize_start(t, pid, extra_opts, err);
	return r ? r : ckpt_seize_wait(t, err);
}

int ckpt_seize_wait(struct ckpt_tracee *t, struct urs_err *err)
{
	pid_t pid = t->pid;
	for (;;) {
		int st = 0, r = wait_stop(pid, &st);
		if (r)
			return urs_err_set(err, r, "pid %d: exited while being seized", pid);
		int ev = st >> 16;
		if (ev == PTRACE_EVENT_STOP) {
			t->group_stopped = WSTOPSIG(st) != SIGTRAP;
			break;
		}
		if (ev == 0 && (WSTOPSIG(st) & 0x7f) != SIGTRAP && !t->stopped_sig) {
			/* a signal dequeued before the trap: keep it (and its siginfo)
			 * for the image and to re-deliver at detach */
			t->stopped_sig = WSTOPSIG(st);
			if (ptrace(PTRACE_GETSIGINFO, pid, 0, t->stopped_info) < 0)
				memset(t->stopped_info, 0, sizeof(t->stopped_info));
		}
		if (ptrace(PTRACE_CONT, pid, 0, 0) < 0)
			return urs_err_set(err, -errno, "pid %d: PTRACE_CONT: %m", pid);
	}
	int r = ckpt_get_regs(pid, &t->base);
	if (r) {
		ptrace(PTRACE_DETACH, pid, 0, 0);
		return urs_err_set(err, r, "pid %d: reading registers: %s", pid, strerror(-r));
	}
	return 0;
}

int ckpt_wait_new_child(struct ckpt_tracee *t, pid_t pid, struct urs_err *err)
{
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	int st = 0, r = wait_stop(pid, &st);
	if (r)
		return urs_err_set(err, r, "pid %d: new child died before its first stop", pid);
	r = ckpt_get_regs(pid, &t->base);
	if (r)
		return urs_err_set(err, r, "pid %d: reading registers: %s", pid, strerror(-r));
	return 0;
}

int ckpt_detach(struct ckpt_tracee *t)
{
	int r = ckpt_set_regs(t->pid, &t->base);
	if (t->sig_stop && t->stopped_sig) {
		/* a signal-delivery stop delivers the detach's signal at once,
		 * with this siginfo (else a made-up SI_USER one) */
		uint8_t info[128];
		memcpy(info, t->stopped_info, sizeof(info));
		memcpy(info, &t->stopped_sig, sizeof(int)); /* si_signo */
		ptrace(PTRACE_SETSIGINFO, t->pid, 0, info);
	}
	/* resuming a group-stopped tracee (to inject) ends its stop: queue a new
	 * SIGSTOP before letting go; it is taken before any user instruction runs */
	if (t->group_stopped)
		kill(t->pid, SIGSTOP);
	if (ptrace(PTRACE_DETACH, t->pid, 0, (void *) (long) t->stopped_sig) < 0 && !r)
		r = -errno;
	return r;
}

/* A SIGTRAP delivery stop of ours (a single step or an int3): a siginfo
 * from a process (si_code <= 0) is someone else's SIGTRAP merged into it,
 * kept for the caller. Then SIGTRAP is blocked again (the forced one
 * unblocked it), so that one queued meanwhile stays queued. */
static int took_trap(struct ckpt_tracee *t)
{
	siginfo_t si;
	if (ptrace(PTRACE_GETSIGINFO, t->pid, 0, &si) < 0)
		return -errno;
	if (si.si_code <= 0 && !t->trap_foreign) {
		memset(t->trap_info, 0, sizeof(t->trap_info));
		memcpy(t->trap_info, &si,
		       sizeof(si) < sizeof(t->trap_info) ? sizeof(si) : sizeof(t->trap_info));
		t->trap_foreign = 1;
	}
	uint64_t all = ~0ull;
	if (ptrace(PTRACE_SETSIGMASK, t->pid, (void *) 8, &all) < 0)
		return -errno;
	t->in_syscall_stop = 0;
	t->sig_stop = 1;
	return 0;
}

/* Resume @t with @req (PTRACE_CONT or PTRACE_SINGLESTEP) until it stops
 * with a plain SIGTRAP at @ip (registers in *regs). Other stops on the way
 * (events, other signals) are resumed, suppressing the signal; a SIGTRAP
 * elsewhere is resumed too unless @exact (a single step must land on @ip).
 * Bounded: a task that cannot get there (its page gone: a fault,
 * suppressed, faults again) is an error, not a loop. */
static int resume_to(struct ckpt_tracee *t, int req, uint64_t ip, bool exact,
		     struct user_regs_struct *regs)
{
	for (int resumes = 0; resumes < 256; resumes++) {
		if (ptrace(req, t->pid, 0, 0) < 0)
			return -errno;
		int st = 0, r = wait_stop(t->pid, &st);
		if (r)
			return r;
		if (WSTOPSIG(st) != SIGTRAP || (st >> 16))
			continue;
		if ((r = ckpt_get_regs(t->pid, regs)))
			return r;
		if (regs->rip == ip)
			return 0;
		if (exact)
			return -EFAULT;
	}
	return -EFAULT;
}

int ckpt_run_code(struct ckpt_tracee *t, uint64_t entry, uint64_t stop_ip,
		  struct user_regs_struct *regs)
{
	*regs = t->base;
	regs->rip = entry;
	regs->orig_rax = (uint64_t) -1;
	int r = ckpt_set_regs(t->pid, regs);
	if (!r)
		r = resume_to(t, PTRACE_CONT, stop_ip, false, regs);
	return r ? r : took_trap(t);
}

/* The single-step half of ckpt_inject (registers already set): the kernel
 * reports a step over `syscall` at the syscall's exit, before any user
 * instruction, as a forced SIGTRAP (si_code TRAP_BRKPT): one stop. Other
 * stops on the way (events, a forced SIGSYS) are resumed, suppressing the
 * signal as in the two-stop mode. A SIGTRAP someone queued for this thread
 * while it was blocked takes the trap's place (the kernel merges them):
 * its siginfo is kept in t->trap_info for the caller to queue again. */
static int inject_step(struct ckpt_tracee *t, long *ret)
{
	struct user_regs_struct regs;
	/* stepped somewhere else: not over our syscall (-EFAULT) */
	int r = resume_to(t, PTRACE_SINGLESTEP, t->syscall_ip + 2, true, &regs);
	if (r)
		return r;
	r = took_trap(t);
	*ret = (long) regs.rax;
	return r;
}

int ckpt_inject(struct ckpt_tracee *t, long nr, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		uint64_t a5, uint64_t a6, long *ret)
{
	struct user_regs_struct regs = t->base;
	regs.rip = t->syscall_ip;
	regs.rax = (uint64_t) nr;
	regs.orig_rax = (uint64_t) -1; /* no syscall restart on the way out of this stop */
	regs.rdi = a1;
	regs.rsi = a2;
	regs.rdx = a3;
	regs.r10 = a4;
	regs.r8 = a5;
	regs.r9 = a6;
	int r = ckpt_set_regs(t->pid, &regs);
	if (r)
		return r;
	if (t->step)
		return inject_step(t, ret);
	if (t->trap_after) {
		/* run to the int3 after the syscall: one stop (resume_to) */
		r = resume_to(t, PTRACE_CONT, t->syscall_ip + 3, false, &regs);
		if (r)
			return r;
		t->in_syscall_stop = 0;
		t->sig_stop = 1;
		*ret = (long) regs.rax;
		return 0;
	}
	int syscall_stops = 0;
	while (syscall_stops < 2) {
		if (ptrace(PTRACE_SYSCALL, t->pid, 0, 0) < 0)
			return -errno;
		int st = 0;
		r = wait_stop(t->pid, &st);
		if (r)
			return r;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			syscall_stops++;
			continue;
		}
		/* Event stops (fork, group-stop) and signals: go on. Every blockable
		 * signal is blocked while injecting, so a signal here was forced by
		 * the injected syscall itself (e.g. SIGSYS from a seccomp filter):
		 * suppress it, the task must never see it. */
	}
	t->in_syscall_stop = 1;
	t->sig_stop = 0;
	r = ckpt_get_regs(t->pid, &regs);
	if (r)
		return r;
	*ret = (long) regs.rax;
	return 0;
}

int ckpt_open_mem(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int ckpt_mem_read(int memfd, uint64_t addr, void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = pread(memfd, p, len, (off_t) addr);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		addr += (uint64_t) n;
		len -= (size_t) n;
	}
	return 0;
}

int ckpt_mem_write(int memfd, uint64_t addr, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t n = pwrite(memfd, p, len, (off_t) addr);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		addr += (uint64_t) n;
		len -= (size_t) n;
	}
	return 0;
}

int ckpt_find_syscall_insn(pid_t pid, uint64_t start, uint64_t end, uint64_t *ip)
{
	if (end <= start || end - start > (1u << 20))
		return -EINVAL;
	_cleanup_close_ int fd = ckpt_open_mem(pid);
	if (fd < 0)
		return fd;
	_cleanup_free_ uint8_t *buf = malloc(end - start);
	if (!buf)
		return -ENOMEM;
	int r = ckpt_mem_read(fd, start, buf, end - start);
	if (r)
		return r;
	uint8_t *hit = memmem(buf, end - start, "\x0f\x05", 2);
	if (!hit)
		return -ENOENT;
	*ip = start + (uint64_t) (hit - buf);
	return 0;
}
