/*
 * cmd/resume.c — `ursa resume ID`: thaw a paused container.
 */
#include "cmd/cmd.h"

int urs_freeze_cmd(const char *cmd, int argc, char **argv, bool frozen);

int cmd_resume(int argc, char **argv)
{
	return urs_freeze_cmd("resume", argc, argv, false);
}
