/*
 * cmd/tty.h — the pty relay `ursa run` uses when it is its own console
 * socket (see tty.c).
 */
#ifndef URSA_CMD_TTY_H
#define URSA_CMD_TTY_H

#include <stdbool.h>

/* Receive the pty master sent over a console socket. fd or negative errno. */
int urs_tty_recv_master(int sock);
/* Relay our stdin/stdout <-> @master until the container's side closes. */
void urs_tty_relay(int master);

#endif
