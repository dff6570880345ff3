# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The commands the Python tests run, written once: sh() for any command, wait_for() to poll a
condition, rocemeter() and rocemeter_report() for the binary under test, run_check() for the tree's
check scripts. A failure names what was run and what came back; no timing is asserted (a timeout
only bounds a hang). Not a test file itself."""
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROCEMETER = os.path.join(ROOT, os.environ.get("BUILD", "build"), "rocemeter")


def sh(*cmd, check=True, timeout=60, **kw):
    """Run cmd (each word str()-ed), its output captured as text, and return the CompletedProcess.
    With check, a non-zero exit fails the test naming the command, its status and its output. kw goes
    to subprocess.run (env, input, cwd, ...)."""
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError("%s failed (%d): %s%s" % (" ".join(map(str, cmd)), p.returncode, p.stdout, p.stderr))
    return p


def wait_for(pred, what, timeout=30, interval=0.05):
    """Call pred() every interval seconds until it returns a true value, and return that value; fail
    the test naming `what` once timeout seconds have passed. pred is called at least once."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(interval)


def rocemeter(*args, binary=ROCEMETER, timeout=60, **kw):
    """`rocemeter ARGS` with standard input from /dev/null and its output captured as text: the
    CompletedProcess, whatever its exit status. kw goes to subprocess.run."""
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, **kw)


def rocemeter_report(db, *args, binary=ROCEMETER, text=True):
    """`rocemeter report --db DB ARGS`, which must exit 0: its standard output (bytes unless text)."""
    p = subprocess.run([binary, "report", "--db", str(db), *args], capture_output=True, text=text, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def run_check(script, root, *args, **kw):
    """One of the tree's check scripts (scripts/check-*) over the tree at root: the CompletedProcess,
    its TAP on standard output. kw goes to subprocess.run (env)."""
    return subprocess.run([script, '--root', str(root), *args], capture_output=True, text=True, **kw)
