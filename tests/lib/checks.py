"""tests/lib/checks.py — what the Python tests share: one line per check
("ok    what" / "FAIL  what" with its detail), the closing "N passed, N
failed" line and exit code, and polling a condition with a deadline (tests
wait on states, never on a fixed sleep)."""
import os
import sys
import time

counts = {"passed": 0, "failed": 0}


def report(ok, what, detail=""):
    if ok:
        counts["passed"] += 1
        print(f"ok    {what}")
    else:
        counts["failed"] += 1
        print(f"FAIL  {what}" + (f"\n        {detail}" if detail else ""))
    sys.stdout.flush()


def poll(cond, deadline=20.0):
    """Call cond() until it is true or @deadline seconds passed; its last value."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def done():
    """Print the closing line; the exit code."""
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    return 1 if counts["failed"] else 0


def need_root_and(path, package):
    """None when we are root and @path exists; else the exit code after the
    plan line: a skip, or (CI=true: scripts/setup installs @package) a failure."""
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root")
        return 77
    if not os.path.exists(path):
        if os.environ.get("CI") == "true":
            print(f"FAIL: no {path} (CI=true: scripts/setup installs {package})")
            return 1
        print(f"1..0 # SKIP no {path} ({package})")
        return 77
    return None
