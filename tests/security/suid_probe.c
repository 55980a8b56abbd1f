/* suid_probe: installed setuid-root in a rootfs; prints its euid and CapEff. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void)
{
	char l[256];
	FILE *f = fopen("/proc/self/status", "r");
	printf("euid %d\n", (int) geteuid());
	while (f && fgets(l, sizeof(l), f))
		if (!strncmp(l, "CapEff", 6) || !strncmp(l, "NoNewPrivs", 10))
			fputs(l, stdout);
	return 0;
}
