#!/usr/bin/python3
"""tests/cri/cri_test.py — a pod through containerd's CRI plugin with the
runtime handler "ursa", over CRI's gRPC API (as kubelet drives it).

    cri_test.py CONTAINERD_SOCKET LOG_DIR TAG      (run by tests/cri/run)

Checks, one line each, then "N passed, N failed":
  - the runtime answers Version;
  - RunPodSandbox with handler "ursa" makes a ready pod;
  - two containers are created and started in it, and run;
  - the pod is served by ONE containerd-shim-ursa-v2 process (grouped by
    the pod's sandbox id), and its containers share its network;
  - ExecSync in one container returns its output and exit code;
  - StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox
    succeed, and no shim of the pod and no container is left;
  - a second pod of two containers whose shim is killed (SIGKILL): CRI
    reports both containers exited, every process of the pod (the pause
    and both inits) is gone, the pod stops and is removed, no shim is left.
Every wait polls a condition with a deadline; none sleeps a fixed time.
"""
import functools
import json
import os
import subprocess
import sys

import checks  # tests/lib/checks.py: report, poll, done
import grpc
import runtime_pb2 as pb
import runtime_pb2_grpc as rpc

SOCK, LOGS, TAG = sys.argv[1], sys.argv[2], sys.argv[3]
poll = functools.partial(checks.poll, deadline=30.0)


def check(name, ok, detail=""):
    checks.report(ok, name, detail)


def shims():
    out = subprocess.run(["pgrep", "-f", "containerd-shim-ursa-v2 .*-namespace k8s.io "],
                         capture_output=True, text=True).stdout.split()
    return [p for p in out if p and int(p) != os.getpid()]


HANDLER = os.environ.get("HANDLER", "ursa")
HOST_NET = pb.NamespaceOption(network=pb.NODE)  # no CNI here: the host's network


def pod_config(name):
    return pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=name, uid=name + "-uid", namespace="default", attempt=0),
        log_directory=LOGS,  # no hostname: kubelet sends none for host-network pods
        linux=pb.LinuxPodSandboxConfig(
            security_context=pb.LinuxSandboxSecurityContext(namespace_options=HOST_NET)))


def start_containers(rt, pod, pod_cfg, names):
    ids = []
    for name in names:
        cfg = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name, attempt=0),
            image=pb.ImageSpec(image="docker.io/library/busybox:ursa-cri"),
            command=["/bin/sleep", "100000"], log_path=name + ".log",
            linux=pb.LinuxContainerConfig(
                security_context=pb.LinuxContainerSecurityContext(namespace_options=HOST_NET)))
        cid = rt.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=pod, config=cfg, sandbox_config=pod_cfg)).container_id
        rt.StartContainer(pb.StartContainerRequest(container_id=cid))
        ids.append(cid)
    return ids


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def first_pod(rt):
    v = rt.Version(pb.VersionRequest(version="v1"))
    check("version", v.runtime_name == "containerd", str(v))
    pod_cfg = pod_config(TAG)
    pod = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=pod_cfg, runtime_handler=HANDLER)).pod_sandbox_id
    st = rt.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=pod)).status
    check("pod-ready", st.state == pb.SANDBOX_READY and st.runtime_handler == HANDLER, str(st.state))
    ids = start_containers(rt, pod, pod_cfg, ("c1", "c2"))

    running = poll(lambda: all(state(rt, c) == pb.CONTAINER_RUNNING for c in ids))
    check("containers-running", running, str([state(rt, c) for c in ids]))
    s = shims()
    check("one-shim-per-pod", len(s) == 1, "shims: %s" % s)
    # ... and the shim is the pod's one supervisor (issue #21 step 2): the
    # pause container's and both containers' supervisors handed their
    # sandboxes over to it and exited
    sups = lambda: subprocess.run(["pgrep", "-P", s[0] if s else "0", "-x", "ursa-sup"],
                                  capture_output=True, text=True).stdout.split()
    check("one-process-per-pod", bool(s) and poll(lambda: not sups()),
          "supervisors beside the shim: %s" % sups())
    nets = set()
    for c in ids:
        p = pid(rt, c)
        nets.add(os.readlink("/proc/%d/ns/net" % p) if p else "no pid")
    check("shared-network", len(nets) == 1 and "no pid" not in nets, str(nets))

    r = rt.ExecSync(pb.ExecSyncRequest(container_id=ids[0], cmd=["sh", "-c", "echo hi; exit 3"],
                                       timeout=30))
    check("exec-sync", r.stdout == b"hi\n" and r.exit_code == 3, "%r %d" % (r.stdout, r.exit_code))

    for c in ids:
        rt.StopContainer(pb.StopContainerRequest(container_id=c, timeout=10))
    exited = poll(lambda: all(state(rt, c) == pb.CONTAINER_EXITED for c in ids))
    check("containers-stopped", exited, str([state(rt, c) for c in ids]))
    for c in ids:
        rt.RemoveContainer(pb.RemoveContainerRequest(container_id=c))
    rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod))
    rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod))
    left = rt.ListContainers(pb.ListContainersRequest()).containers
    check("pod-removed", len(left) == 0, str(left))
    gone = poll(lambda: not shims())
    check("no-shim-left", gone, "shims: %s" % shims())


def killed_shim_pod(rt):
    pod_cfg = pod_config(TAG + "-k")
    pod = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=pod_cfg, runtime_handler=HANDLER)).pod_sandbox_id
    ids = start_containers(rt, pod, pod_cfg, ("k1", "k2"))
    poll(lambda: all(state(rt, c) == pb.CONTAINER_RUNNING for c in ids))
    info = rt.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=pod, verbose=True)).info
    pids = [json.loads(info.get("info", "{}")).get("pid", 0)] + [pid(rt, c) for c in ids]
    s = shims()
    if len(s) == 1:
        os.kill(int(s[0]), 9)
    exited = poll(lambda: all(state(rt, c) == pb.CONTAINER_EXITED for c in ids))
    check("shim-killed-exits", len(s) == 1 and 0 not in pids and exited,
          "shims %s pids %s states %s" % (s, pids, [state(rt, c) for c in ids]))
    gone = poll(lambda: not any(alive(p) for p in pids if p))
    check("shim-killed-processes-gone", gone, "alive: %s" % [p for p in pids if p and alive(p)])
    rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod))
    for c in ids:
        rt.RemoveContainer(pb.RemoveContainerRequest(container_id=c))
    rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod))
    left = rt.ListContainers(pb.ListContainersRequest()).containers
    pods = rt.ListPodSandbox(pb.ListPodSandboxRequest()).items
    no_shim = poll(lambda: not shims())
    check("shim-killed-pod-removed", not left and not pods and no_shim,
          "containers %s pods %s shims %s" % (left, pods, shims()))


def state(rt, cid):
    return rt.ContainerStatus(pb.ContainerStatusRequest(container_id=cid)).status.state


def pid(rt, cid):
    info = rt.ContainerStatus(pb.ContainerStatusRequest(container_id=cid, verbose=True)).info
    return json.loads(info.get("info", "{}")).get("pid", 0)


def main():
    rt = rpc.RuntimeServiceStub(grpc.insecure_channel("unix://" + SOCK))
    first_pod(rt)
    killed_shim_pod(rt)


try:
    main()
except grpc.RpcError as e:
    check("cri", False, "%s: %s" % (e.code(), e.details()))
sys.exit(checks.done())
