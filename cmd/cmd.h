/*
 * cmd/cmd.h — the ursa CLI's command table. One file per command under
 * cmd/; each exports `int cmd_NAME(int argc, char **argv)` returning the
 * process exit status.
 */
#ifndef URSA_CMD_CMD_H
#define URSA_CMD_CMD_H

struct urs_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

int cmd_demo(int argc, char **argv);

#endif
