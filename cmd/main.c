/*
 * cmd/main.c — `ursa`: global flags and dispatch to one command per file.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"

#ifndef URSA_VERSION
#define URSA_VERSION "0.1.0"
#endif

static const struct urs_cmd cmds[] = {
	{"demo", cmd_demo, "run the actor runtime on this machine and report what it did"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ursa [--version] [--help] COMMAND [ARGS...]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-v")) {
		printf("ursa version %s\nspec: 1.0.2\n", URSA_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "ursa: unknown command '%s' (see ursa --help)\n", argv[1]);
	return 2;
}
