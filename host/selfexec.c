/*
 * host/selfexec.c — see selfexec.h.
 */
#include "host/selfexec.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/common.h"

extern char **environ;

bool urs_needs_sealed_self(uint64_t bounding, bool userns)
{
	return !userns && (bounding & (1ull << CAP_SYS_PTRACE));
}

bool urs_running_sealed(void)
{
	char exe[64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = 0;
	return !strncmp(exe, "/memfd:ursa", 11);
}

int urs_reexec_sealed(char **argv)
{
	_cleanup_close_ int src = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (src < 0)
		return -errno;
	struct stat sb;
	if (fstat(src, &sb) < 0)
		return -errno;
	_cleanup_close_ int mfd = memfd_create("ursa", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return -errno;
	for (off_t done = 0; done < sb.st_size;) {
		ssize_t n = sendfile(mfd, src, NULL, (size_t) (sb.st_size - done));
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += n;
	}
	if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
		return -errno;
	fexecve(mfd, argv, environ);
	return -errno;
}
