/* exe_racer: runs inside a container. For SECS seconds, tries to open
 * /proc/PID/exe (and peeks at /proc/PID/root, /proc/PID/fd) of every other
 * process; reports any handle whose inode is the host's ursa binary (DEV:INO
 * given), then tries to reopen such a handle for writing until the deadline.
 * usage: exe_racer DEV INO SECS */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	unsigned long long dev = strtoull(argv[1], 0, 0), ino = strtoull(argv[2], 0, 0);
	int secs = atoi(argv[3]);
	time_t end = time(NULL) + secs;
	int held = -1, seen = 0, denied = 0, rootok = 0, fdok = 0;
	char self[16];
	snprintf(self, sizeof(self), "%d", getpid());
	while (time(NULL) < end && held < 0) {
		DIR *d = opendir("/proc");
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] < '0' || e->d_name[0] > '9' || !strcmp(e->d_name, self))
				continue;
			char p[64];
			snprintf(p, sizeof(p), "/proc/%s/exe", e->d_name);
			int fd = open(p, O_PATH | O_CLOEXEC);
			if (fd < 0) {
				if (errno == EACCES || errno == EPERM) {
					if (!denied++)
						printf("denied %s: %s\n", p, strerror(errno));
				}
				continue;
			}
			struct stat sb;
			if (fstat(fd, &sb) == 0 && sb.st_ino == ino && sb.st_dev == dev) {
				printf("GOT host ursa binary via %s\n", p);
				held = fd;
				/* can we also attach to it, before it dropped privileges? */
				pid_t t = atoi(e->d_name);
				char sp[64], line[256];
				snprintf(sp, sizeof(sp), "/proc/%d/status", t);
				if (ptrace(PTRACE_SEIZE, t, 0, 0) == 0) {
					FILE *f = fopen(sp, "r");
					while (f && fgets(line, sizeof(line), f))
						if (!strncmp(line, "CapEff", 6) ||
						    !strncmp(line, "Seccomp:", 8) ||
						    !strncmp(line, "Uid", 3))
							printf("ptrace-attached pid %d: %s", t,
							       line);
					if (f)
						fclose(f);
					printf("PTRACE attached to ursa helper %d\n", t);
					ptrace(PTRACE_DETACH, t, 0, 0);
				} else {
					printf("ptrace seize %d: %s\n", t, strerror(errno));
				}
				snprintf(p, sizeof(p), "/proc/%s/root/.", e->d_name);
				struct stat rs;
				if (stat(p, &rs) == 0) {
					rootok = 1;
					printf("also /proc/%s/root is reachable\n", e->d_name);
				}
				snprintf(p, sizeof(p), "/proc/%s/fd", e->d_name);
				DIR *fdd = opendir(p);
				if (fdd) {
					fdok = 1;
					printf("also %s is listable\n", p);
					closedir(fdd);
				}
				break;
			}
			seen++;
			close(fd);
		}
		if (d)
			closedir(d);
	}
	printf("exe opens of other processes: %d, denied: %d\n", seen, denied);
	if (held < 0) {
		printf("RESULT no handle to the ursa binary\n");
		return 0;
	}
	char fp[64];
	snprintf(fp, sizeof(fp), "/proc/self/fd/%d", held);
	int last = 0;
	while (time(NULL) < end + 20) {
		int w = open(fp, O_WRONLY | O_CLOEXEC);
		if (w >= 0) {
			/* prove it without damaging: append nothing, report success */
			printf("RESULT WROTE-OPEN host ursa binary for writing\n");
			return 1;
		}
		if (errno != last)
			printf("reopen for write: %s\n", strerror(last = errno));
		usleep(20000);
	}
	printf("RESULT handle to the ursa binary (root=%d fd=%d) but no write\n", rootok, fdok);
	return 1;
}
