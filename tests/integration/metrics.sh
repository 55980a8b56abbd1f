#!/usr/bin/env bash
# tests/integration/metrics.sh — `ursa metrics ID` output checked with a real
# parser of the Prometheus text format (Debian's python3-prometheus-client,
# hence /usr/bin/python3): every
# family has HELP and TYPE, names are ursa_*, every sample has sandbox="ID",
# and the values move (a control request is counted, memory is non-zero).
set -u
URSA=${URSA:?}
work=$(mktemp -d /tmp/ursa-metrics.XXXXXX)
root=$work/root
cleanup() {
	"$URSA" --root "$root" delete --force m1 >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/rootfs/bin" "$work/b" "$work/rootfs/proc" "$work/rootfs/dev" "$work/rootfs/sys"
cp /bin/busybox "$work/rootfs/bin/" && ln -s busybox "$work/rootfs/bin/sleep"
(cd "$work/b" && "$URSA" spec) || exit 1
jq --arg rootfs "$work/rootfs" '.root.path = $rootfs | .process.terminal = false
	| .process.args = ["sleep", "1000"]
	| .annotations["run.ursa.network"] = "sandbox"' "$work/b/config.json" > "$work/b/c" &&
	mv "$work/b/c" "$work/b/config.json"
(cd "$work/b" && "$URSA" --root "$root" run -d m1) || { echo "0 passed, 1 failed"; exit 1; }
"$URSA" --root "$root" metrics m1 > "$work/one" 2>&1
"$URSA" --root "$root" metrics m1 > "$work/two" 2>&1
# at rest: receive slots grow under a burst (the sandbox's own startup
# traffic can be one) and shrink after an idle period: up to 5 s for that
for _ in $(seq 50); do
	"$URSA" --root "$root" metrics m1 > "$work/rest" 2>&1
	grep -q '^ursa_net_rx_slots{[^}]*} 1$' "$work/rest" && break
	sleep 0.1
done
# the sandbox's own view of its eth0 (the bundle asks for a new net
# namespace, so it has the netstack's NIC): tx "drop" column, read after
# the scrape (it can only grow)
init=$("$URSA" --root "$root" state m1 | jq -r .pid)
awk '$1 == "eth0:" { print $13 }' "/proc/$init/net/dev" > "$work/qdrop"
/usr/bin/python3 - "$work/one" "$work/two" "$work/qdrop" "$work/rest" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
passed = failed = 0
def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1; print("ok    " + name)
    else:
        failed += 1; print("FAIL  " + name + ("\n      " + detail if detail else ""))
texts = [open(p).read() for p in sys.argv[1:3]]
fams = [list(text_string_to_metric_families(t)) for t in texts]
check("parses, with metric families", len(fams[0]) >= 5, texts[0][:300])
check("every family is ursa_*", all(f.name.startswith("ursa_") for f in fams[0]))
check("HELP on every family", all(f.documentation for f in fams[0]))
check("TYPE on every family", all(f.type in ("counter", "gauge", "histogram") for f in fams[0]))
samples = [s for f in fams[1] for s in f.samples]
check("every sample has sandbox=\"m1\"", all(s.labels.get("sandbox") == "m1" for s in samples))
def val(fam, name, **labels):
    for f in fam:
        for s in f.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return None
check("the first scrape is counted by the second",
      val(fams[1], "ursa_supervisor_control_requests_total", request="metrics") == 2,
      str(val(fams[1], "ursa_supervisor_control_requests_total", request="metrics")))
mem = val(fams[1], "ursa_container_memory_usage_bytes")
check("container memory is reported", mem is not None and mem > 0, str(mem))
pss = val(fams[1], "ursa_supervisor_pss_anon_bytes")
# (no upper bound here: an ASan build's supervisor is far larger; the budget
# is the memory benchmark's business)
check("supervisor Pss_Anon is reported", pss is not None and pss > 0, str(pss))
rest = list(text_string_to_metric_families(open(sys.argv[4]).read()))
slots = val(rest, "ursa_net_rx_slots")
check("netstack: one receive slot in service at rest", slots == 1, str(slots))
rxf = val(fams[1], "ursa_net_frames_total", dir="rx")
check("netstack: frames from the sandbox are counted", rxf is not None and rxf >= 0, str(rxf))
qd = val(fams[1], "ursa_net_drops_total", reason="sandbox_queue")
want = open(sys.argv[3]).read().strip()
check("netstack: eth0 tx_dropped is exported (sandbox_queue)",
      qd is not None and want != "" and qd <= int(want), f"{qd} vs /proc/PID/net/dev {want!r}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
