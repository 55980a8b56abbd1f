#!/usr/bin/env python3
"""tests/integration/pty_intr.py — run a command on a new terminal (a pty
that is its controlling terminal, the command its foreground process group,
as in an interactive shell; signals at their defaults), wait until a
process whose command line matches the regular expression RUNNING exists,
type one control character on the terminal (default ^C: the kernel sends
SIGINT to the foreground group), and print how it ended as a shell would:
its exit code, or 128 + N when it died of signal N ("timeout" if it did not
end within SECONDS; it is then killed).

    pty_intr.py SECONDS RUNNING [--key CHAR] -- CMD [ARGS...]
"""
import os
import pty
import re
import select
import signal
import sys
import time


def running(pattern):
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = f.read().rstrip(b"\0").replace(b"\0", b" ")
        except OSError:
            continue
        if pattern.search(argv):
            return True
    return False


def main():
    args = sys.argv[1:]
    secs, ready = float(args[0]), re.compile(args[1].encode())
    key = b"\x03"
    rest = args[2:]
    if rest[:1] == ["--key"]:
        key = rest[1].encode()
        rest = rest[2:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    pid, master = pty.fork()
    if pid == 0:
        for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(s, signal.SIG_DFL)
        os.execvp(rest[0], rest)
    out, sent, status = b"", False, None
    end = time.monotonic() + secs
    while time.monotonic() < end:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
        r, _, _ = select.select([master], [], [], 0.05)
        if r:
            try:
                out += os.read(master, 4096)
            except OSError:
                pass
        if not sent and running(ready):
            os.write(master, key)
            sent = True
    if status is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        print("timeout" if sent else "never ready")
        sys.stderr.write(out.decode(errors="replace"))
        return 1
    if os.WIFSIGNALED(status):
        print(128 + os.WTERMSIG(status))
    else:
        print(os.WEXITSTATUS(status))
    return 0


sys.exit(main())
