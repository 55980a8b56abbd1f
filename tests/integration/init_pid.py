#!/usr/bin/env python3
"""tests/integration/init_pid.py — the --pid-file pid is the container's init,
as with runc (docs/sandbox.md, "Processes"), checked for ursa and for runc
(the oracle) side by side, from a caller that is a child subreaper as
containerd's shim and conmon are:

  - the pid file names a process whose /proc/PID/root is the container's
    root (a marker file only the rootfs has) and whose pid, mount, net, uts
    and ipc namespaces are not the caller's; `nsenter -t PID -a` lands inside
    (it sees the marker and the spec's hostname); `state` reports that pid;
  - a new network namespace has loopback only, as runc gives it; ursa's NIC
    only with the annotation run.ursa.network=sandbox; a port forward without
    the NIC, or the NIC without a network namespace of its own, is refused;
  - without a mount namespace of its own, exec lands in the container's
    root, and (ursa) delete leaves no mount on the host;
  - with a pids limit of 1 the container's init alone fills it (pids.current
    is 1: the supervisor is not counted);
  - the init is reparented to the caller and reaped by it, with its status:
    SIGKILL of the init -> killed by signal 9; under ursa also SIGKILL of the
    supervisor alone (the init runs on: `ursa kill` still stops it, and the
    caller reaps it), and of both at once; after each, `delete --force` leaves
    no state directory, no process and no cgroup;
  - a supervisor that dies says so: `state` and `delete` name the signal
    (SIGSEGV, from its crash note) or that it was killed without a word
    (SIGKILL), and a crash leaves an error line in the --log file.

Every wait is on an event (the reaped child) or a polled condition with a
deadline. Prints one line per check and "N passed, N failed" last; exit 1 on
any failure. Skips (77) without root or busybox; CI=true makes a missing
runc a failure.
"""
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from checks import done, need_root_and, poll, report  # noqa: E402

URSA = os.environ.get("URSA", "build/ursa")
RUNC = shutil.which("runc")
BUSYBOX = "/bin/busybox"
PR_SET_CHILD_SUBREAPER = 36


class Runtime:
    def __init__(self, name, binary, work):
        self.name, self.binary = name, binary
        self.root = os.path.join(work, "root-" + name)

    def run(self, *args, check=False):
        # the container keeps create's stdio: files, not pipes read to EOF
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            p = subprocess.run([self.binary, "--root", self.root, *args],
                               stdin=subprocess.DEVNULL, stdout=out, stderr=err, text=True,
                               timeout=60)
            out.seek(0)
            err.seek(0)
            p.stdout, p.stderr = out.read(), err.read()
        if check and p.returncode != 0:
            raise RuntimeError(f"{self.name} {' '.join(args)}: rc {p.returncode}: {p.stderr}")
        return p

    def state(self, cid):
        p = self.run("state", cid)
        return json.loads(p.stdout) if p.returncode == 0 else None

    def sup_pid(self, cid):
        """ursa's supervisor, from its record (runc has none)."""
        with open(os.path.join(self.root, cid, "state.json")) as f:
            return json.load(f)["sup_pid"]


def make_bundle(work, name, token, pids_limit=None):
    b = os.path.join(work, "bundle-" + name)
    rootfs = os.path.join(b, "rootfs")
    os.makedirs(os.path.join(rootfs, "bin"))
    shutil.copy(BUSYBOX, os.path.join(rootfs, "bin", "busybox"))
    for a in ("sh", "sleep", "cat", "hostname"):
        os.symlink("busybox", os.path.join(rootfs, "bin", a))
    with open(os.path.join(rootfs, "marker-" + token), "w") as f:
        f.write(token + "\n")
    subprocess.run([URSA, "spec", "--bundle", b], check=True)
    with open(os.path.join(b, "config.json")) as f:
        cfg = json.load(f)
    cfg["process"]["terminal"] = False
    cfg["process"]["args"] = ["/bin/sleep", "600"]
    cfg["hostname"] = "h-" + token[-12:]
    if pids_limit:
        cfg["linux"].setdefault("resources", {})["pids"] = {"limit": pids_limit}
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(cfg, f)
    return b


def reap(pid, deadline=30.0):
    """Wait for our (adopted) child @pid; its wait status, or None."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            w, st = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if w == pid:
            return st
        time.sleep(0.01)
    return None


def cgroup_dirs(cid):
    n = 0
    for top in ("/sys/fs/cgroup",):
        for dirpath, dirnames, _ in os.walk(top):
            if dirpath.count("/") > 9:
                dirnames[:] = []
                continue
            n += sum(1 for d in dirnames if d == cid)
    return n


def no_leftovers(rt, cid, pids):
    gone = poll(lambda: all(not os.path.exists(f"/proc/{p}") or
                            open(f"/proc/{p}/stat").read().split(")")[-1].split()[0] == "Z"
                            for p in pids if p))
    left = [os.path.join(rt.root, cid)] if os.path.exists(os.path.join(rt.root, cid)) else []
    ncg = cgroup_dirs(cid)
    report(gone and not left and ncg == 0,
           f"{rt.name}: {cid}: delete --force leaves nothing (processes, state dir, cgroups)",
           f"processes gone {gone}, state {left}, cgroup dirs {ncg}")


def create_started(rt, bundle, cid, pidfile):
    rt.run("create", "--bundle", bundle, "--pid-file", pidfile, cid, check=True)
    rt.run("start", cid, check=True)
    with open(pidfile) as f:
        return int(f.read().strip())


def ns_checks(rt, bundle, cid, token, work):
    pidfile = os.path.join(work, f"{cid}.pid")
    pid = create_started(rt, bundle, cid, pidfile)
    st = rt.state(cid) or {}
    report(st.get("pid") == pid, f"{rt.name}: state reports the pid-file pid ({st.get('pid')} vs {pid})")
    report(os.path.exists(f"/proc/{pid}/root/marker-{token}") and
           not os.path.exists(f"/marker-{token}"),
           f"{rt.name}: /proc/PID/root of the pid-file pid is the container's root")
    differ = [ns for ns in ("pid", "mnt", "net", "uts", "ipc")
              if os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}")]
    report(len(differ) == 5, f"{rt.name}: its pid, mnt, net, uts, ipc namespaces are the container's",
           f"differ from the host's: {differ}")
    p = subprocess.run(["nsenter", "-t", str(pid), "-a", "/bin/sh", "-c",
                        f"cat /marker-{token}; hostname"], capture_output=True, text=True,
                       timeout=30)
    want = f"{token}\nh-{token[-12:]}\n"
    report(p.returncode == 0 and p.stdout == want,
           f"{rt.name}: nsenter -t PID -a lands inside (marker, hostname)",
           f"rc {p.returncode} out {p.stdout!r} err {p.stderr.strip()!r}")
    os.kill(pid, signal.SIGKILL)
    st = reap(pid)
    report(st is not None and os.WIFSIGNALED(st) and os.WTERMSIG(st) == 9,
           f"{rt.name}: SIGKILL of the init: the caller reaps it, killed by signal 9 ({st})")
    sup = None
    rt.run("delete", "--force", cid)
    no_leftovers(rt, cid, [pid, sup])


def pids_check(rt, bundle, cid, work):
    pidfile = os.path.join(work, f"{cid}.pid")
    pid = create_started(rt, bundle, cid, pidfile)
    cur = None

    def pids_current():
        nonlocal cur
        with open(f"/proc/{pid}/cgroup") as f:
            for line in f:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                if "pids" in ctrls.split(","):
                    try:
                        with open(f"/sys/fs/cgroup/pids{path}/pids.current") as g:
                            cur = int(g.read())
                    except OSError:
                        pass
        return cur == 1
    # runc's setup threads may still be on their way out: a state to reach
    poll(pids_current)
    report(cur == 1, f"{rt.name}: pids limit 1: the init alone fills it (pids.current {cur})")
    rt.run("delete", "--force", cid)
    reap(pid)
    no_leftovers(rt, cid, [pid])


def ifaces(pid):
    with open(f"/proc/{pid}/net/dev") as f:
        return sorted(line.split(":")[0].strip() for line in f.readlines()[2:])


def edit_bundle(bundle, fn):
    p = os.path.join(bundle, "config.json")
    with open(p) as f:
        cfg = json.load(f)
    fn(cfg)
    with open(p, "w") as f:
        json.dump(cfg, f)


def network_checks(rt, bundle, cid, work):
    """A new network namespace has loopback only, as runc gives it; ursa's
    NIC only when the annotation asks; what cannot apply is refused."""
    pid = create_started(rt, bundle, cid, os.path.join(work, cid + ".pid"))
    got = ifaces(pid)
    report(got == ["lo"], f"{rt.name}: a new network namespace has loopback only ({got})")
    rt.run("delete", "--force", cid)
    reap(pid)
    if rt.name != "ursa":
        return
    edit_bundle(bundle, lambda c: c.setdefault("annotations", {}).update(
        {"run.ursa.network": "sandbox"}))
    pid = create_started(rt, bundle, cid, os.path.join(work, cid + ".pid"))
    got = ifaces(pid)
    report(got == ["eth0", "lo"], f"{rt.name}: run.ursa.network=sandbox adds the NIC ({got})")
    rt.run("delete", "--force", cid)
    reap(pid)
    edit_bundle(bundle, lambda c: c["annotations"].update({"run.ursa.network": "none",
                                                           "run.ursa.ports": "18080:80"}))
    p = rt.run("create", "--bundle", bundle, cid)
    report(p.returncode != 0 and "run.ursa.ports" in p.stderr and
           not os.path.exists(os.path.join(rt.root, cid)),
           f"{rt.name}: a port forward without the NIC is refused, naming it",
           p.stderr.strip())
    edit_bundle(bundle, lambda c: (c["annotations"].update({"run.ursa.network": "sandbox"}),
                                   c["annotations"].pop("run.ursa.ports"),
                                   c["linux"].update(namespaces=[
                                       n for n in c["linux"]["namespaces"]
                                       if n["type"] != "network"])))
    p = rt.run("create", "--bundle", bundle, cid)
    report(p.returncode != 0 and "new network namespace" in p.stderr and
           not os.path.exists(os.path.join(rt.root, cid)),
           f"{rt.name}: the NIC without a network namespace of its own is refused",
           p.stderr.strip())


def crash_checks(rt, bundle, work, tag):
    """ursa only: a supervisor that dies says so, in state/delete and --log."""
    log = os.path.join(work, "log.json")
    for sig, want in ((signal.SIGSEGV, "died of signal 11 (SIGSEGV)"),
                      (signal.SIGKILL, "is gone without a word: killed (SIGKILL")):
        cid = f"ip{tag}-crash{int(sig)}"
        rt.run("--log", log, "--log-format", "json", "create", "--bundle", bundle, "--pid-file",
               os.path.join(work, cid + ".pid"), cid, check=True)
        pid = int(open(os.path.join(work, cid + ".pid")).read())
        sup = rt.sup_pid(cid)
        os.kill(sup, sig)
        poll(lambda: not os.path.exists(f"/proc/{sup}") or
             open(f"/proc/{sup}/stat").read().split(")")[-1].split()[0] == "Z")
        st = rt.run("state", cid)
        report(st.returncode == 0 and want in st.stderr,
               f"{rt.name}: supervisor killed by {sig.name}: state says so", st.stderr.strip())
        if sig == signal.SIGSEGV:
            lines = [json.loads(x) for x in open(log) if "died of signal" in x]
            report(any(x.get("level") == "error" and want in x.get("msg", "") for x in lines),
                   f"{rt.name}: ... and the crash left an error line in the --log file",
                   str(lines))
        d = rt.run("delete", "--force", cid)
        report(d.returncode == 0 and want in d.stderr, f"{rt.name}: ... and delete says so too",
               d.stderr.strip())
        w = reap(pid)
        # the workload never ran: its status says killed (137, as a created
        # container deleted), never 0
        report(w is not None and ((os.WIFEXITED(w) and os.WEXITSTATUS(w) == 137) or
                                  (os.WIFSIGNALED(w) and os.WTERMSIG(w) == signal.SIGKILL)),
               f"{rt.name}: ... and the init that never started ends as killed",
               f"wait status {w}")
        reap(sup, 5)
        no_leftovers(rt, cid, [pid, sup])


def nomnt_checks(rt, bundle, cid, token, work):
    """No mount namespace of its own (the host's, chrooted, as runc does):
    exec lands in the container's root, not the host's; delete leaves no
    mount on the host (ursa; runc leaves its mounts behind)."""
    edit_bundle(bundle, lambda c: (c["linux"].update(namespaces=[
        n for n in c["linux"]["namespaces"] if n["type"] != "mount"]),
        c["linux"].pop("maskedPaths", None), c["linux"].pop("readonlyPaths", None)))
    rootfs = os.path.join(bundle, "rootfs")
    pid = create_started(rt, bundle, cid, os.path.join(work, cid + ".pid"))
    p = rt.run("exec", cid, "/bin/cat", f"/marker-{token}")
    inside = p.returncode == 0 and p.stdout == token + "\n"
    if rt.name == "ursa":
        report(inside, f"{rt.name}: no mount namespace: exec lands in the container's root",
               f"rc {p.returncode} out {p.stdout!r} err {p.stderr.strip()!r}")
    else:  # runc 1.1 execs into the host's root there: not an oracle for this
        print(f"# {rt.name}: no mount namespace: exec in the container's root: {inside}")
    rt.run("delete", "--force", cid)
    reap(pid)
    with open("/proc/self/mountinfo") as f:
        left = [ln for ln in f if rootfs in ln]
    if rt.name == "ursa":
        report(not left, f"{rt.name}: no mount namespace: delete leaves no mount on the host",
               f"{len(left)} left")
    subprocess.run(["umount", "-R", rootfs], stderr=subprocess.DEVNULL)


def supervisor_kills(rt, bundle, work, tag):
    """ursa only: SIGKILL of the supervisor, then of the init; and of both."""
    for both in (False, True):
        cid = f"ip{tag}-{'both' if both else 'sup'}"
        pid = create_started(rt, bundle, cid, os.path.join(work, cid + ".pid"))
        sup = rt.sup_pid(cid)
        os.kill(sup, signal.SIGKILL)
        if both:
            os.kill(pid, signal.SIGKILL)
        else:
            poll(lambda: not os.path.exists(f"/proc/{sup}") or
                 open(f"/proc/{sup}/stat").read().split(")")[-1].split()[0] == "Z")
            alive = os.path.exists(f"/proc/{pid}/ns/pid")
            report(alive, f"{rt.name}: SIGKILL of the supervisor alone: the init runs on")
            k = rt.run("kill", cid, "KILL")
            report(k.returncode == 0, f"{rt.name}: ... and `kill ID KILL` still stops it",
                   k.stderr.strip())
        st = reap(pid)
        what = "both" if both else "the supervisor, then kill"
        report(st is not None and os.WIFSIGNALED(st) and os.WTERMSIG(st) == 9,
               f"{rt.name}: SIGKILL of {what}: the caller reaps the init, signal 9 ({st})")
        reap(sup, 5)
        rt.run("delete", "--force", cid)
        no_leftovers(rt, cid, [pid, sup])


def main():
    rc = need_root_and(BUSYBOX, "busybox-static")
    if rc is not None:
        return rc
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("FAIL  cannot become a child subreaper")
        return 1
    runtimes = []
    work = tempfile.mkdtemp(prefix="ursa-initpid-")
    runtimes.append(Runtime("ursa", URSA, work))
    if RUNC:
        runtimes.append(Runtime("runc", RUNC, work))
    elif os.environ.get("CI") == "true":
        report(False, "runc (the oracle) is installed", "scripts/setup installs it")
    else:
        print("# runc not found: ursa alone, no oracle")
    tag = str(os.getpid())
    try:
        for rt in runtimes:
            token = f"{rt.name}-{tag}"
            ns_checks(rt, make_bundle(work, rt.name, token), f"ip{tag}-{rt.name}", token, work)
            pids_check(rt, make_bundle(work, rt.name + "-pids", token, pids_limit=1),
                       f"ip{tag}-{rt.name}-pids", work)
            network_checks(rt, make_bundle(work, rt.name + "-net", token),
                           f"ip{tag}-{rt.name}-net", work)
            nomnt_checks(rt, make_bundle(work, rt.name + "-nomnt", token),
                         f"ip{tag}-{rt.name}-nomnt", token, work)
        supervisor_kills(runtimes[0], make_bundle(work, "ursa-sup", "s" + tag), work, tag)
        crash_checks(runtimes[0], make_bundle(work, "ursa-crash", "c" + tag), work, tag)
    finally:
        for rt in runtimes:
            p = rt.run("list", "--format", "json")
            for c in json.loads(p.stdout or "[]") or []:
                rt.run("delete", "--force", c["id"])
        shutil.rmtree(work, ignore_errors=True)
    return done()


if __name__ == "__main__":
    sys.exit(main())
