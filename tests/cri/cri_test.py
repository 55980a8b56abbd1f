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
    succeed, and no shim of the pod and no container is left.
Every wait polls a condition with a deadline; none sleeps a fixed time.
"""
import json
import os
import subprocess
import sys
import time

import grpc
import runtime_pb2 as pb
import runtime_pb2_grpc as rpc

SOCK, LOGS, TAG = sys.argv[1], sys.argv[2], sys.argv[3]
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("ok " if ok else "FAIL ") + name + ("" if ok else ": " + detail), flush=True)


def poll(cond, deadline=30.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def shims():
    out = subprocess.run(["pgrep", "-f", "containerd-shim-ursa-v2 .*-namespace k8s.io "],
                         capture_output=True, text=True).stdout.split()
    return [p for p in out if p and int(p) != os.getpid()]


def main():
    ch = grpc.insecure_channel("unix://" + SOCK)
    rt = rpc.RuntimeServiceStub(ch)
    v = rt.Version(pb.VersionRequest(version="v1"))
    check("version", v.runtime_name == "containerd", str(v))

    host_net = pb.NamespaceOption(network=pb.NODE)  # no CNI here: the host's network
    pod_cfg = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=TAG, uid=TAG + "-uid", namespace="default", attempt=0),
        log_directory=LOGS,  # no hostname: kubelet sends none for host-network pods
        linux=pb.LinuxPodSandboxConfig(
            security_context=pb.LinuxSandboxSecurityContext(namespace_options=host_net)))
    pod = rt.RunPodSandbox(pb.RunPodSandboxRequest(config=pod_cfg, runtime_handler=os.environ.get("HANDLER", "ursa"))).pod_sandbox_id
    st = rt.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=pod)).status
    check("pod-ready", st.state == pb.SANDBOX_READY and st.runtime_handler == os.environ.get("HANDLER", "ursa"), str(st.state))

    ids = []
    for name in ("c1", "c2"):
        cfg = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name, attempt=0),
            image=pb.ImageSpec(image="docker.io/library/busybox:ursa-cri"),
            command=["/bin/sleep", "100000"], log_path=name + ".log",
            linux=pb.LinuxContainerConfig(
                security_context=pb.LinuxContainerSecurityContext(namespace_options=host_net)))
        cid = rt.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=pod, config=cfg, sandbox_config=pod_cfg)).container_id
        rt.StartContainer(pb.StartContainerRequest(container_id=cid))
        ids.append(cid)

    def state(cid):
        return rt.ContainerStatus(pb.ContainerStatusRequest(container_id=cid)).status.state

    running = poll(lambda: all(state(c) == pb.CONTAINER_RUNNING for c in ids))
    check("containers-running", running, str([state(c) for c in ids]))

    def pid(cid):
        info = rt.ContainerStatus(pb.ContainerStatusRequest(container_id=cid, verbose=True)).info
        return json.loads(info.get("info", "{}")).get("pid", 0)

    s = shims()
    check("one-shim-per-pod", len(s) == 1, "shims: %s" % s)
    nets = set()
    for c in ids:
        p = pid(c)
        nets.add(os.readlink("/proc/%d/ns/net" % p) if p else "no pid")
    check("shared-network", len(nets) == 1 and "no pid" not in nets, str(nets))

    r = rt.ExecSync(pb.ExecSyncRequest(container_id=ids[0], cmd=["sh", "-c", "echo hi; exit 3"],
                                       timeout=30))
    check("exec-sync", r.stdout == b"hi\n" and r.exit_code == 3, "%r %d" % (r.stdout, r.exit_code))

    for c in ids:
        rt.StopContainer(pb.StopContainerRequest(container_id=c, timeout=10))
    exited = poll(lambda: all(state(c) == pb.CONTAINER_EXITED for c in ids))
    check("containers-stopped", exited, str([state(c) for c in ids]))
    for c in ids:
        rt.RemoveContainer(pb.RemoveContainerRequest(container_id=c))
    rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=pod))
    rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=pod))
    left = rt.ListContainers(pb.ListContainersRequest()).containers
    check("pod-removed", len(left) == 0, str(left))
    gone = poll(lambda: not shims())
    check("no-shim-left", gone, "shims: %s" % shims())


try:
    main()
except grpc.RpcError as e:
    check("cri", False, "%s: %s" % (e.code(), e.details()))
passed = sum(results)
print("%d passed, %d failed" % (passed, len(results) - passed))
sys.exit(0 if results and all(results) else 1)
