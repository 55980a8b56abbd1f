#!/usr/bin/env python3
"""tests/spec/oracle.py — nothing accepted that is not applied (#17.5):
ursa next to runc (the oracle, /usr/sbin/runc), each with a private --root,
on mutated bundles of one busybox rootfs.

  - refusals: every mutation in REFUSE is refused by `ursa create` with an
    error naming the field by its JSON path, and leaves nothing behind (no
    state directory, no cgroup, no process); runc must refuse it too, except
    where runc is wrong (accepts and ignores it): those rows say so;
  - hooks: prestart, createRuntime and createContainer get status "created",
    poststart "running" (crun and the runtime-tools hooks_stdin program);
  - what must work: no mount namespace in linux.namespaces (the host's is
    shared, as with runc), rootfsPropagation "unbindable", and
    linux.resources.blockIO throttles, written where runc writes them.

Prints one line per check and "N passed, N failed" last; exit 1 on any
failure, 77 without root, busybox or runc (CI=true: a missing runc fails).
"""
import copy
import glob
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from checks import done, need_root_and, report  # noqa: E402

URSA = os.environ.get("URSA", "build/ursa")
RUNC = os.environ.get("RUNC", "/usr/sbin/runc")
BUSYBOX = "/bin/busybox"


class Runtime:
    def __init__(self, name, binary, work):
        self.name, self.binary = name, binary
        self.root = os.path.join(work, "root-" + name)

    def run(self, *args):
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            p = subprocess.run([self.binary, "--root", self.root, *args],
                               stdin=subprocess.DEVNULL, stdout=out, stderr=err, text=True,
                               timeout=60)
            out.seek(0)
            err.seek(0)
            p.stdout, p.stderr = out.read(), err.read()
        return p

    def gone(self, cid):
        subprocess.run([self.binary, "--root", self.root, "delete", "--force", cid],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)


def build_rootfs(work):
    r = os.path.join(work, "rootfs")
    for d in ("bin", "proc", "dev", "sys", "tmp", "etc", "mnt"):
        os.makedirs(os.path.join(r, d), exist_ok=True)
    shutil.copy(BUSYBOX, os.path.join(r, "bin/busybox"))
    for a in ("sh", "cat", "echo", "true", "sleep", "grep", "ls"):
        os.symlink("busybox", os.path.join(r, "bin", a))
    return r


def base_config(work, rootfs):
    d = os.path.join(work, "spec")
    os.makedirs(d, exist_ok=True)
    subprocess.run([URSA, "spec", "--bundle", d], check=True)
    with open(os.path.join(d, "config.json")) as f:
        c = json.load(f)
    c["root"] = {"path": rootfs}
    c["process"]["terminal"] = False
    c["process"]["args"] = ["true"]
    return c


def bundle(work, name, cfg):
    d = os.path.join(work, "b-" + name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    return d


def leftovers(rt, cid):
    """What `create` of cid left behind: state dir, cgroups, processes."""
    left = []
    if os.path.exists(os.path.join(rt.root, cid)):
        left.append(f"state dir {rt.root}/{cid}")
    for cg in glob.glob(f"/sys/fs/cgroup/*/**/{cid}", recursive=True):
        left.append(f"cgroup {cg}")
    for p in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(p, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if cid.encode() in argv and b"create" not in argv:
            left.append(f"process {p.split('/')[2]}")
    return left


# ---- refusals ----------------------------------------------------------------------

def m_set(path, value):
    """A mutation setting config[path...] = value (None deletes it)."""
    def f(c):
        o = c
        for k in path[:-1]:
            if isinstance(o, dict) and k not in o:
                o[k] = {}
            o = o[k]
        if value is None:
            del o[path[-1]]
        else:
            o[path[-1]] = copy.deepcopy(value)
    return f


def m_ns_add(t):
    def f(c):
        c["linux"]["namespaces"].append({"type": t})
    return f


def m_mount_add(m):
    def f(c):
        c["mounts"].append(m)
    return f


# (name, mutation, what ursa's error must contain, runc refuses too?)
REFUSE = [
    ("mount-relative", m_mount_add({"destination": "mnt", "type": "tmpfs", "source": "tmpfs"}),
     'mounts[7].destination: "mnt" is not an absolute path', False),  # runc 1.1: a warning
    ("no-ociVersion", m_set(["ociVersion"], None), "ociVersion", False),  # runc: not checked
    ("no-root-path", m_set(["root"], {}), "root.path", True),
    ("ns-unknown", m_ns_add("bogus"), "linux.namespaces[", True),
    ("ns-duplicate", m_ns_add("pid"), "linux.namespaces[", True),
    ("rlimit-unknown", m_set(["process", "rlimits"], [{"type": "RLIMIT_BOGUS", "hard": 1,
                                                        "soft": 1}]),
     "process.rlimits[0].type", True),
    ("cwd-relative", m_set(["process", "cwd"], "tmp"), "process.cwd", True),
    ("seccomp-action", m_set(["linux", "seccomp"], {"defaultAction": "SCMP_ACT_BOGUS"}),
     "linux.seccomp.defaultAction", True),
    ("seccomp-arch", m_set(["linux", "seccomp"], {"defaultAction": "SCMP_ACT_ALLOW",
                                                  "architectures": ["SCMP_ARCH_BOGUS"]}),
     "linux.seccomp.architectures[0]", True),
    ("userns-no-maps", m_ns_add("user"), "linux.uidMappings", True),
    # linux.resources this host cannot apply (hybrid: no hugetlb, net_cls,
    # net_prio or rdma hierarchy; BFQ has no leaf weights)
    ("hugepages", m_set(["linux", "resources", "hugepageLimits"],
                        [{"pageSize": "2MB", "limit": 2097152}]),
     "linux.resources.hugepageLimits", True),
    ("net-classid", m_set(["linux", "resources", "network"], {"classID": 1048577}),
     "linux.resources.network.classID", True),
    ("net-prio", m_set(["linux", "resources", "network"],
                       {"priorities": [{"name": "eth0", "priority": 5}]}),
     "linux.resources.network.priorities", True),
    ("rdma", m_set(["linux", "resources", "rdma"], {"mlx5_1": {"hcaHandles": 3}}),
     "linux.resources.rdma", True),
    ("blkio-leaf-weight", m_set(["linux", "resources", "blockIO"], {"leafWeight": 300}),
     "linux.resources.blockIO.leafWeight", True),
    ("memory-kernel", m_set(["linux", "resources", "memory"], {"kernel": 104857600}),
     "linux.resources.memory.kernel", False),  # runc 1.1 ignores it (a warning)
    ("intel-rdt", m_set(["linux", "intelRdt"], {"closID": "guaranteed_group"}),
     "linux.intelRdt", False),  # runc 1.1 accepts a closID without resctrl
    # LSMs this host has not (see docs/sandbox.md "What is refused")
    ("apparmor", m_set(["process", "apparmorProfile"], "docker-default"),
     "process.apparmorProfile", True),
    ("selinux", m_set(["process", "selinuxLabel"], "system_u:system_r:container_t:s0"),
     "process.selinuxLabel", True),
    ("mount-label", m_set(["linux", "mountLabel"], "system_u:object_r:container_file_t:s0"),
     "linux.mountLabel", True),
    ("no-mountns-masked", lambda c: c["linux"].update(
        namespaces=[n for n in c["linux"]["namespaces"] if n["type"] != "mount"]),
     'linux.maskedPaths: needs a mount namespace of its own', True),
    ("masked-relative", m_set(["linux", "maskedPaths"], ["proc/kcore"]),
     'linux.maskedPaths[0]: "proc/kcore" is not an absolute path', False),  # runc: not checked
    ("readonly-relative", m_set(["linux", "readonlyPaths"], ["proc/sys"]),
     'linux.readonlyPaths[0]: "proc/sys" is not an absolute path', False),  # runc: not checked
]


def refusals(work, base, ursa, runc):
    for name, mut, path, runc_refuses in REFUSE:
        cfg = copy.deepcopy(base)
        mut(cfg)
        b = bundle(work, name, cfg)
        cid = "spec-" + name
        u = ursa.run("create", "--bundle", b, cid)
        err = u.stderr.strip().replace("\n", " | ")
        report(u.returncode != 0 and path in u.stderr,
               f"{name}: ursa refuses, naming {path}", err or "accepted")
        left = leftovers(ursa, cid)
        report(not left, f"{name}: ursa leaves nothing behind", ", ".join(left))
        ursa.gone(cid)
        if runc:
            r = runc.run("create", "--bundle", b, cid)
            if runc_refuses is None:  # runc's verdict, for the record
                print(f"note  {name}: runc {'refuses' if r.returncode else 'accepts'} it"
                      f" {r.stderr.strip()[-200:]}")
                runc.gone(cid)
                continue
            report((r.returncode != 0) == runc_refuses,
                   f"{name}: runc {'refuses' if runc_refuses else 'accepts'} it too",
                   r.stderr.strip()[-300:])
            runc.gone(cid)


# ---- hooks -------------------------------------------------------------------------

HOOK = """#!/bin/sh
echo "$1 $(cat)" >> "$2"
"""


def hooks(work, base, ursa):
    log = os.path.join(work, "hooks.log")
    script = os.path.join(work, "hook.sh")
    with open(script, "w") as f:
        f.write(HOOK)
    os.chmod(script, 0o755)
    cfg = copy.deepcopy(base)
    # createContainer runs in the container's mount namespace: the script and
    # the log at the same paths in the rootfs, a writable bind of work
    cfg["mounts"].append({"destination": work, "type": "bind", "source": work,
                          "options": ["rbind", "rw"]})
    cfg["hooks"] = {k: [{"path": script, "args": ["hook", k, log]}]
                    for k in ("prestart", "createRuntime", "createContainer", "poststart")}
    b = bundle(work, "hooks", cfg)
    p = ursa.run("run", "--bundle", b, "spec-hooks")
    ursa.gone("spec-hooks")
    got = {}
    try:
        with open(log) as f:
            for line in f:
                k, st = line.split(" ", 1)
                got[k] = json.loads(st)["status"]
    except (OSError, ValueError) as e:
        report(False, "hooks ran", f"{e}; {p.stderr.strip()}")
        return
    want = {"prestart": "created", "createRuntime": "created", "createContainer": "created",
            "poststart": "running"}
    for k, v in want.items():
        report(got.get(k) == v, f"hooks: {k} gets status {v!r}", f"got {got.get(k)!r}")


# ---- what must work ----------------------------------------------------------------

def run_out(rt, work, base, name, mut, cmd):
    """`run` a bundle (mut applied) with `sh -c cmd`: (returncode, stdout, stderr)."""
    cfg = copy.deepcopy(base)
    cfg["process"]["args"] = ["sh", "-c", cmd]
    mut(cfg)
    b = bundle(work, f"{name}-{rt.name}", cfg)
    cid = f"spec-{name}"
    p = rt.run("run", "--bundle", b, cid)
    rt.gone(cid)
    return p.returncode, p.stdout, p.stderr.strip()


def propagation(work, base, ursa, runc):
    for prop, want in (("unbindable", 1), ("runbindable", None)):
        mut = m_set(["linux", "rootfsPropagation"], prop)
        rc, out, err = run_out(ursa, work, base, prop, mut,
                               "awk '$5 == \"/\"' /proc/self/mountinfo; "
                               "grep -c ' unbindable ' /proc/self/mountinfo")
        lines = out.splitlines()
        ok = rc == 0 and len(lines) == 2 and "unbindable" in lines[0]
        if want is not None:
            ok = ok and int(lines[1]) == want
        report(ok, f"rootfsPropagation {prop}: / is unbindable inside"
               + (" (and nothing else)" if want else " (and every mount below)"),
               f"rc {rc}: {out!r} {err}")
        if runc:  # runc 1.1 cannot bind the unbindable rootfs onto itself (fixed in 1.2)
            rc, out, err = run_out(runc, work, base, prop, mut, "true")
            print(f"note  rootfsPropagation {prop}: runc: rc {rc} {err[-160:]}")


def no_mount_ns(work, base, ursa, runc):
    """No mount namespace listed: the host's is shared (the spec's MUST), the
    root entered with chroot, as runc does; the mounts stay on the host."""
    host_ns = os.readlink("/proc/self/ns/mnt")
    for rt in (ursa, runc) if runc else (ursa,):
        rootfs = build_rootfs(os.path.join(work, "nomnt-" + rt.name))

        def mut(c):
            c["root"] = {"path": rootfs}
            c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"]
                                        if n["type"] != "mount"]
            del c["linux"]["maskedPaths"]
            del c["linux"]["readonlyPaths"]
        try:
            rc, out, err = run_out(rt, work, base, "nomnt", mut,
                                   "readlink /proc/self/ns/mnt; ls /bin/busybox; ls /proc/1/")
            with open("/proc/self/mountinfo") as f:
                left = [ln for ln in f if rootfs in ln]
        finally:
            subprocess.run(["umount", "-R", rootfs], stderr=subprocess.DEVNULL)
        lines = out.splitlines()
        report(rc == 0 and lines[:2] == [host_ns, "/bin/busybox"],
               f"no mount namespace: {rt.name} shares the host's, chrooted in the rootfs",
               f"rc {rc}: {lines} {err[-200:]}")
        if rt is ursa:  # runc leaves its mounts on the host
            report(not left, "no mount namespace: ursa run leaves no mount on the host",
                   f"{len(left)} left: {left[:2]}")


def block_device():
    """MAJ:MIN of a whole disk (not a partition), a real one before a loop."""
    best = None
    for d in sorted(glob.glob("/sys/block/*/dev")):
        name = d.split("/")[3]
        if name.startswith(("ram", "zram")):
            continue
        with open(d) as f:
            mm = f.read().strip()
        if not name.startswith("loop"):
            return mm
        best = best or mm
    return best


def cg_file(pid, ctrl, name):
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if ctrl in ctrls.split(","):
                with open(f"/sys/fs/cgroup/{ctrl}{path}/{name}") as g:
                    return g.read().strip()
    return None


BLKIO_FILES = ("blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device",
               "blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device")


def resources(work, base, ursa, runc):
    dev = block_device()
    if not dev or not os.path.isdir("/sys/fs/cgroup/blkio"):
        # this host has both; CI=true: not running them is a failure
        if os.environ.get("CI") == "true":
            report(False, "resources: a block device and a v1 blkio hierarchy (CI=true)",
                  f"device {dev!r}")
            return
        print("skip  resources: no block device or no v1 blkio hierarchy")
        return
    major, minor = (int(x) for x in dev.split(":"))
    rates = (1048576, 2097152, 300, 400)
    # a weight needs a proportional I/O scheduler (CFQ/BFQ): without one
    # the blkio hierarchy has no weight file (a VM's virtio disk with
    # "none"), and both runtimes must refuse it
    has_weight = any(os.path.exists(f"/sys/fs/cgroup/blkio/{f}")
                     for f in ("blkio.weight", "blkio.bfq.weight"))
    blk = {"weight": 300} if has_weight else {}
    for (k, v) in zip(("throttleReadBpsDevice", "throttleWriteBpsDevice",
                       "throttleReadIOPSDevice", "throttleWriteIOPSDevice"), rates):
        blk[k] = [{"major": major, "minor": minor, "rate": v}]

    def mut(c):
        c["linux"]["resources"]["blockIO"] = blk
        c["linux"]["resources"]["memory"] = {"kernelTCP": 104857600}
        c["linux"]["resources"]["cpu"] = {"burst": 1000}
    cat = " ".join(f"/sys/fs/cgroup/blkio/{f}" for f in BLKIO_FILES)
    weight = "/sys/fs/cgroup/blkio/blkio.bfq.weight"
    cmd = (f"cat {cat}; " + (f"cat {weight} 2>/dev/null || cat /sys/fs/cgroup/blkio/blkio.weight; "
                             if has_weight else "") +
           "cat /sys/fs/cgroup/memory/memory.kmem.tcp.limit_in_bytes "
           "/sys/fs/cgroup/cpu/cpu.cfs_burst_us")
    rc, out, err = run_out(ursa, work, base, "blkio", mut, cmd)
    lines = out.splitlines()
    want = [f"{dev} {v}" for v in rates] + (["300"] if has_weight else []) + ["104857600", "1000"]
    nb = 5 if has_weight else 4
    report(rc == 0 and lines == want, f"blockIO throttles on {dev}" +
           (", weight" if has_weight else "") + ", kernelTCP, cpu.burst: in the cgroup files",
           f"rc {rc}: {lines} {err}")
    if runc:
        rc2, out2, err2 = run_out(runc, work, base, "blkio", mut, cmd)
        l2 = out2.splitlines()
        report(rc2 == 0 and l2[:nb] == lines[:nb], "blockIO: runc writes the same files",
               f"runc rc {rc2}: {l2} {err2[-200:]}")
        print(f"note  runc 1.1 ignores kernelTCP and cpu.burst: {l2[nb:]}")
    if not has_weight:
        def wmut(c):
            c["linux"]["resources"]["blockIO"] = {"weight": 300}
        rc, out, err = run_out(ursa, work, base, "blkiow", wmut, "true")
        report(rc != 0 and "linux.resources.blockIO.weight" in err,
               "blockIO.weight on a host without a weight file: ursa refuses, naming it",
               f"rc {rc}: {err}")
        if runc:
            rc2, _, err2 = run_out(runc, work, base, "blkiow", wmut, "true")
            report(rc2 != 0, "blockIO.weight there: runc fails too", f"runc rc {rc2}: {err2[-200:]}")
    # ursa update goes through the same code
    cfg = copy.deepcopy(base)
    cfg["process"]["args"] = ["sleep", "60"]
    b = bundle(work, "update", cfg)
    cid = "spec-update"
    p = ursa.run("create", "--bundle", b, cid)
    try:
        st = json.loads(ursa.run("state", cid).stdout)
        res = os.path.join(work, "res.json")
        with open(res, "w") as f:
            json.dump({"blockIO": {"throttleWriteBpsDevice": [
                {"major": major, "minor": minor, "rate": 5242880}]}}, f)
        u = ursa.run("update", "--resources", res, cid)
        got = cg_file(st["pid"], "blkio", "blkio.throttle.write_bps_device")
        report(u.returncode == 0 and got == f"{dev} 5242880",
               "update: blockIO.throttleWriteBpsDevice applied", f"{u.stderr} {got!r}")
        with open(res, "w") as f:
            json.dump({"hugepageLimits": [{"pageSize": "2MB", "limit": 2097152}]}, f)
        u = ursa.run("update", "--resources", res, cid)
        report(u.returncode != 0 and "linux.resources.hugepageLimits" in u.stderr,
               "update: hugepageLimits refused naming the field", u.stderr.strip())
    except (ValueError, KeyError, OSError) as e:
        report(False, "update", f"{e}: {p.stderr}")
    ursa.gone(cid)


def main():
    global RUNC
    rc = need_root_and(BUSYBOX, "busybox-static")
    if rc is not None:
        return rc
    if not os.access(RUNC, os.X_OK):
        if os.environ.get("CI") == "true":
            print(f"FAIL: no runc at {RUNC}")
            return 1
        print(f"note: no runc at {RUNC}: ursa alone")
        RUNC = None
    with tempfile.TemporaryDirectory(prefix="ursa-spec-") as work:
        os.chmod(work, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        rootfs = build_rootfs(work)
        base = base_config(work, rootfs)
        ursa = Runtime("ursa", URSA, work)
        runc = Runtime("runc", RUNC, work) if RUNC else None
        only = sys.argv[1:]
        for name, fn in (("refusals", lambda: refusals(work, base, ursa, runc)),
                         ("hooks", lambda: hooks(work, base, ursa)),
                         ("propagation", lambda: propagation(work, base, ursa, runc)),
                         ("resources", lambda: resources(work, base, ursa, runc)),
                         ("nomountns", lambda: no_mount_ns(work, base, ursa, runc))):
            if not only or name in only:
                fn()
    return done()


if __name__ == "__main__":
    sys.exit(main())
