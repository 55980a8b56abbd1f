/*
 * tests/shim/test_start.c — the containerd-shim-ursa-v2 binary as
 * containerd runs it (no containerd, no container): `start` in a bundle
 * prints the address (no newline) and writes BUNDLE/address; the daemon
 * answers Connect with its own pid; a second container of the same pod
 * (io.kubernetes.cri.sandbox-id) gets the same address and shim, another
 * pod a new one; Shutdown with no container ends a shim and removes its
 * socket; a daemon that cannot start makes `start` fail with the reason;
 * `delete` prints a DeleteResponse and nothing else on stdout, removes the
 * socket of a shim that was killed and keeps that of one that serves the
 * rest of its pod.
 *
 *   SHIM=build/containerd-shim-ursa-v2 build/tests/shim/test_start
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "shim/proto/task.pb-c.h"
#include "shim/ttrpc.h"

extern char **environ;

static char dir[64];
static const char *shim;
static size_t out_len; /* bytes the last run printed */

/* run the shim with @args in @cwd; its stdout into @out; exit status */
static int run_shim(const char *cwd, const char *const *args, char *out, size_t len,
		    const char *ttrpc_addr)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (chdir(cwd) < 0)
			_exit(120);
		dup2(p[1], 1);
		if (ttrpc_addr)
			setenv("TTRPC_ADDRESS", ttrpc_addr, 1);
		else
			unsetenv("TTRPC_ADDRESS");
		execv(shim, (char *const *) args);
		_exit(121);
	}
	close(p[1]);
	size_t got = 0;
	ssize_t n;
	while (got < len - 1 && (n = read(p[0], out + got, len - 1 - got)) > 0)
		got += (size_t) n;
	out[got] = 0;
	out_len = got;
	close(p[0]); /* read to EOF: the daemon kept no copy of stdout */
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void bundle(const char *name, const char *sandbox, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", dir, name);
	assert_int_equal(mkdir(path, 0700), 0);
	char f[256];
	snprintf(f, sizeof(f), "%s/config.json", path);
	FILE *c = fopen(f, "we");
	if (sandbox)
		fprintf(c, "{\"annotations\":{\"io.kubernetes.cri.sandbox-id\":\"%s\"}}", sandbox);
	else
		fprintf(c, "{}");
	fclose(c);
}

static int start(const char *bdir, const char *id, char *addr, size_t len, const char *ta)
{
	const char *args[] = {shim,
			      "-namespace",
			      "ursa-test",
			      "-address",
			      "/run/ursa-test-ctrd.sock",
			      "-publish-binary",
			      "/bin/true",
			      "-id",
			      id,
			      "start",
			      NULL};
	return run_shim(bdir, args, addr, len, ta);
}

static int dial(const char *addr)
{
	assert_int_equal(strncmp(addr, "unix://", 7), 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", addr + 7);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
	return fd;
}

static void read_full(int fd, void *b, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (uint8_t *) b + got, n - got);
		assert_true(r > 0);
		got += (size_t) r;
	}
}

/* one call, answered: the reply's payload decoded by @unpack-free callers */
static Ttrpc__Response *rpc(int fd, const char *method, const ProtobufCMessage *m)
{
	uint8_t b[512];
	long n = ttrpc_request_put(b, 1, "containerd.task.v2.Task", method, m, "ursa-test");
	assert_int_equal(write(fd, b, (size_t) n), n);
	uint8_t h[TTRPC_HDR_LEN];
	read_full(fd, h, sizeof(h));
	struct ttrpc_hdr hd;
	assert_int_equal(ttrpc_hdr_get(h, &hd), 0);
	uint8_t *p = malloc(hd.len + 1);
	read_full(fd, p, hd.len);
	Ttrpc__Response *r = ttrpc__response__unpack(NULL, hd.len, p);
	free(p);
	assert_non_null(r);
	return r;
}

static uint32_t shim_pid(const char *addr)
{
	int fd = dial(addr);
	Containerd__Task__V2__PidsRequest c = CONTAINERD__TASK__V2__PIDS_REQUEST__INIT;
	c.id = "c1";
	Ttrpc__Response *r = rpc(fd, "Connect", &c.base);
	assert_null(r->status);
	Containerd__Task__V2__ConnectResponse *cr = containerd__task__v2__connect_response__unpack(
		NULL, r->payload.len, r->payload.data);
	uint32_t pid = cr->shim_pid;
	containerd__task__v2__connect_response__free_unpacked(cr, NULL);
	ttrpc__response__free_unpacked(r, NULL);
	close(fd);
	return pid;
}

/* Shutdown with no container: the shim exits and its socket goes */
static void shutdown_shim(const char *addr)
{
	uint32_t pid = shim_pid(addr);
	int pfd = (int) syscall(SYS_pidfd_open, pid, 0);
	assert_true(pfd >= 0);
	int fd = dial(addr);
	Containerd__Task__V2__ShutdownRequest s = CONTAINERD__TASK__V2__SHUTDOWN_REQUEST__INIT;
	Ttrpc__Response *r = rpc(fd, "Shutdown", &s.base);
	assert_null(r->status);
	ttrpc__response__free_unpacked(r, NULL);
	struct pollfd p = {.fd = pfd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 30000), 1); /* a deadline far above the expected */
	close(pfd);
	close(fd);
	assert_int_equal(access(addr + 7, F_OK), -1);
}

static void test_start_group_shutdown(void **state)
{
	(void) state;
	char b1[128], b2[128], b3[128], a1[256], a2[256], a3[256], f[256], fa[256];
	bundle("c1", "pod-a", b1, sizeof(b1));
	bundle("c2", "pod-a", b2, sizeof(b2));
	bundle("c3", NULL, b3, sizeof(b3));
	assert_int_equal(start(b1, "c1", a1, sizeof(a1), NULL), 0);
	assert_non_null(strstr(a1, "unix:///run/containerd/s/"));
	assert_null(strchr(a1, '\n'));
	snprintf(f, sizeof(f), "%s/address", b1);
	FILE *af = fopen(f, "re");
	assert_non_null(af);
	assert_non_null(fgets(fa, sizeof(fa), af));
	fclose(af);
	assert_string_equal(fa, a1);
	uint32_t p1 = shim_pid(a1);
	assert_true(p1 > 0);

	assert_int_equal(start(b2, "c2", a2, sizeof(a2), NULL), 0);
	assert_string_equal(a2, a1); /* the pod's shim */
	assert_int_equal(shim_pid(a2), p1);
	assert_int_equal(start(b3, "c3", a3, sizeof(a3), NULL), 0);
	assert_string_not_equal(a3, a1); /* a container of no pod: its own */
	assert_true(shim_pid(a3) != p1);

	/* containerd's cleanup of c2 (delete) while the pod's shim serves c1:
	 * the shim's socket stays */
	char out[512];
	const char *del[] = {shim, "-namespace", "ursa-test", "-address", "/run/x.sock", "-id",
			     "c2", "-bundle",	 b2,	      "delete",	  NULL};
	assert_int_equal(run_shim(b2, del, out, sizeof(out), NULL), 0);
	assert_int_equal(access(a1 + 7, F_OK), 0);
	assert_int_equal(shim_pid(a1), p1);

	shutdown_shim(a1);
	shutdown_shim(a3);
}

/* a shim killed leaves its socket; containerd's cleanup (delete) removes it */
static void test_delete_after_kill(void **state)
{
	(void) state;
	char b[128], a[256], out[512];
	bundle("killed", NULL, b, sizeof(b));
	assert_int_equal(start(b, "killed", a, sizeof(a), NULL), 0);
	uint32_t pid = shim_pid(a);
	int pfd = (int) syscall(SYS_pidfd_open, pid, 0);
	assert_true(pfd >= 0);
	assert_int_equal(kill((pid_t) pid, SIGKILL), 0);
	struct pollfd p = {.fd = pfd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 30000), 1);
	close(pfd);
	assert_int_equal(access(a + 7, F_OK), 0); /* left behind by SIGKILL */
	const char *del[] = {shim,     "-namespace", "ursa-test", "-address", "/run/x.sock", "-id",
			     "killed", "-bundle",    b,		  "delete",   NULL};
	assert_int_equal(run_shim(b, del, out, sizeof(out), NULL), 0);
	assert_int_equal(access(a + 7, F_OK), -1);
}

/* the daemon cannot start (its events address is no socket path): start says why */
static void test_start_failure_reported(void **state)
{
	(void) state;
	char b[128], out[256], ta[300];
	bundle("bad", NULL, b, sizeof(b));
	memset(ta, 'x', sizeof(ta) - 1);
	ta[0] = '/';
	ta[sizeof(ta) - 1] = 0;
	assert_int_equal(start(b, "bad", out, sizeof(out), ta), 1);
	assert_string_equal(out, ""); /* no address: containerd sees the failure */
}

/* a state directory others may write is refused, with the reason */
static void test_start_refuses_open_dir(void **state)
{
	(void) state;
	char b[128], out[256];
	bundle("open", NULL, b, sizeof(b));
	struct stat st;
	assert_int_equal(stat("/run/containerd/ursa", &st), 0);
	assert_int_equal(chmod("/run/containerd/ursa", 0777), 0);
	int rc = start(b, "open", out, sizeof(out), NULL);
	assert_int_equal(chmod("/run/containerd/ursa", st.st_mode & 07777), 0);
	assert_int_equal(rc, 1);
	assert_string_equal(out, "");
}

static void test_delete_prints_response(void **state)
{
	(void) state;
	char b[128], out[512];
	bundle("del", NULL, b, sizeof(b));
	const char *args[] = {shim,  "-namespace", "ursa-test", "-address", "/run/x.sock", "-id",
			      "del", "-bundle",	   b,		"delete",   NULL};
	assert_int_equal(run_shim(b, args, out, sizeof(out), NULL), 0);
	Containerd__Task__V2__DeleteResponse *r =
		containerd__task__v2__delete_response__unpack(NULL, out_len, (const uint8_t *) out);
	assert_non_null(r); /* nothing but the message on stdout */
	assert_int_equal(r->exit_status, 137);
	assert_non_null(r->exited_at);
	containerd__task__v2__delete_response__free_unpacked(r, NULL);
}

static int group_setup(void **state)
{
	(void) state;
	shim = getenv("SHIM");
	if (!shim || geteuid() != 0)
		return 0;
	snprintf(dir, sizeof(dir), "/tmp/ursa-test-start.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int group_teardown(void **state)
{
	(void) state;
	if (!dir[0])
		return 0;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	rmdir("/run/containerd/ursa/ursa-test"); /* the delete's ursa --root */
	return system(cmd);
}

int main(void)
{
	if (!getenv("SHIM") || geteuid() != 0) {
		printf("skip: needs root and SHIM=containerd-shim-ursa-v2\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_group_shutdown),
		cmocka_unit_test(test_start_failure_reported),
		cmocka_unit_test(test_start_refuses_open_dir),
		cmocka_unit_test(test_delete_prints_response),
		cmocka_unit_test(test_delete_after_kill),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
