# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""What a deployment meets besides the unit (docs/service.md): signals while
starting, pins and locks keyed by network namespace and ifindex, a detach that
touches nothing it cannot prove, renamed interfaces, and errors an operator can
act on. The units themselves run under a live systemd in test_service.py.

Veth pairs and namespaces carry this process's ID in their names. Nothing here
measures time: waits only bound how long a test may hang.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

import rocetest as rt  # tests/lib
from procs import sh, wait_for  # tests/lib
from test_lifecycle import FINAL, CD, Notify  # the sd_notify listener and flag names

ROCEMETER = rt.ROCEMETER
PID = os.getpid()
SRC, DST, QP = "10.7.0.1", "10.7.0.2", 0x321
_seq = [0]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (BPF, namespaces)")


def tag():
    _seq[0] += 1
    return "%d%d" % (PID % 100000, _seq[0])


class Link:
    """dev (metered; in namespace `ns_dev`, or the root one) <-> peer in namespace ns (the sender)."""

    def __init__(self, dev=None, ns_dev=None):
        t = tag()
        self.ns = "rmdp" + t
        self.dev = dev or "rmdp%sa" % t
        self.peer = "rmdp%sb" % t
        self.ns_dev = ns_dev
        sh("ip", "netns", "add", self.ns)
        where = ["netns", ns_dev] if ns_dev else []
        sh("ip", "link", "add", self.dev, *where, "type", "veth", "peer", "name", self.peer, "netns", self.ns)
        sh("ip", *(["-n", ns_dev] if ns_dev else []), "link", "set", self.dev, "up")
        sh("ip", "-n", self.ns, "link", "set", self.peer, "up")
        self.pins = rt.pin_dir(self.dev, ns_dev)

    def send(self, tmp_path, psns):
        pcap = str(tmp_path / ("send-%d.pcap" % time.monotonic_ns()))
        rt.write_pcap(pcap, [rt.Frame(rt.roce_frame(SRC, DST, QP, p), rt.T0 + i * 1000) for i, p in enumerate(psns)])
        sh("ip", "netns", "exec", self.ns, "tcpreplay", "-q", "-t", "-i", self.peer, pcap)

    def close(self):
        sh("ip", *(["-n", self.ns_dev] if self.ns_dev else []), "link", "del", self.dev, check=False)
        sh("ip", "netns", "del", self.ns, check=False)
        shutil.rmtree(self.pins, ignore_errors=True)


class Proc:
    """A rocemeter process with stdout and stderr in files."""

    def __init__(self, tmp_path, args, env=None, prefix=(), stdin=subprocess.DEVNULL):
        n = tag()
        self.out = str(tmp_path / ("p%s.out" % n))
        self.err = str(tmp_path / ("p%s.err" % n))
        with open(self.out, "w") as o, open(self.err, "w") as e:
            self.proc = subprocess.Popen([*prefix, ROCEMETER, *args], stdout=o, stderr=e, stdin=stdin,
                                         env=env or os.environ)
        self.pid = self.proc.pid

    def stderr(self):
        with open(self.err) as f:
            return f.read()

    def stdout(self):
        with open(self.out) as f:
            return f.read()

    def reports(self):
        return [json.loads(line) for line in self.stdout().splitlines() if line.startswith("{")]

    def wait(self, timeout=60):
        return self.proc.wait(timeout=timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def env(tmp_path):
    """A run directory of this test's own (the PID files), the system's bpffs."""
    run = tmp_path / "run"
    run.mkdir()
    return dict(os.environ, ROCEMETER_RUNDIR=str(run))


@pytest.fixture
def things():
    made = []
    yield made
    for t in reversed(made):
        if isinstance(t, Proc):
            t.kill()
        else:
            t.close()


def link(things, **kw):
    lk = Link(**kw)
    things.append(lk)
    return lk


def proc(things, *a, **kw):
    p = Proc(*a, **kw)
    things.append(p)
    return p


def conf(tmp_path, text=None):
    path = tmp_path / ("m%s.conf" % tag())
    path.write_text(text or "[meter]\nidle_timeout_ms = 0\n[provision]\nconnection = %s %s %d any\n"
                    % (SRC, DST, QP))
    return str(path)


def attach(things, tmp_path, env, dev, *args, notify=None, prefix=()):
    e = dict(env)
    if notify:
        e["NOTIFY_SOCKET"] = notify.path
    return proc(things, tmp_path, ["attach", dev, "--json", *args], env=e, prefix=prefix)


def running_own_code(pid, sig, timeout=2):
    """Wait until the process blocks sig (its first instruction in attach/collect does), at most
    timeout s. Before that the dynamic loader runs, where no program can catch a signal."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/status" % pid) as f:
                blk = [line for line in f if line.startswith("SigBlk:")][0]
        except (OSError, IndexError):
            return
        if int(blk.split()[1], 16) & (1 << (sig - 1)):
            return
        time.sleep(0.0005)


def xdp_on(dev, ns=None):
    return " xdp" in sh("ip", *(["-n", ns] if ns else []), "link", "show", "dev", dev).stdout


# ---------------------------------------------------------------------------
# Signals while starting.

@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2])
def test_early_signal_does_not_kill_attach(things, tmp_path, env, sig):
    """A SIGHUP, SIGUSR1 or SIGUSR2 sent while the daemon starts (from its first
    instruction on, while it loads and attaches the program) neither kills it
    nor stops it from starting; SIGUSR1/SIGUSR2 stay harmless once it runs."""
    lk = link(things)
    notify = Notify(tmp_path / "n.sock")
    d = attach(things, tmp_path, env, lk.dev, "--config", conf(tmp_path), notify=notify)
    running_own_code(d.pid, sig)
    d.proc.send_signal(sig)
    assert notify.next() == ["READY=1"], d.stderr()
    if sig == signal.SIGHUP:  # acted on once running: a reload
        assert notify.next() == ["RELOADING=1"] and notify.next() == ["READY=1"]
    d.proc.send_signal(signal.SIGUSR1)
    d.proc.send_signal(signal.SIGUSR2)
    lk.send(tmp_path, [1])
    wait_for(lambda: json.loads(sh(ROCEMETER, "status", lk.dev, "--json", env=env).stdout)[0]["meter"]
             ["eligible_requests"] == 1, "the request to be metered")
    assert d.proc.poll() is None, d.stderr()
    d.proc.send_signal(signal.SIGTERM)
    assert d.wait() == 0, d.stderr()
    assert not os.path.exists(lk.pins) and not xdp_on(lk.dev)


@pytest.mark.parametrize("delay_ms", [0, 1, 5, 20, 100])
def test_sigterm_while_starting_stops_in_order(things, tmp_path, env, delay_ms):
    """SIGTERM at any moment of the start-up: acted on once the daemon runs, so
    it exits 0 (a stop in order, never a death by signal) and leaves neither
    pins nor an XDP program behind."""
    lk = link(things)
    d = attach(things, tmp_path, env, lk.dev, "--config", conf(tmp_path))
    running_own_code(d.pid, signal.SIGTERM)
    time.sleep(delay_ms / 1000)
    d.proc.send_signal(signal.SIGTERM)
    assert d.wait() == 0, d.stderr()
    assert not os.path.exists(lk.pins), os.listdir(lk.pins)
    assert not xdp_on(lk.dev)


# Moments after the start (exec) at which a signal arrives: from at once, while the dynamic
# loader maps the libraries (about 30 ms on a busy host before rocemeter's launcher), to after.
EARLY_MS = [0, 3, 10, 25, 50]


def ran_user_code(pid, sig):
    """The process has run an instruction of its own since exec: it blocks sig, or a loader
    has mapped a library (ld.so maps them before the program's first instruction). Before
    that the kernel is still in execve or has not scheduled it, where no program can act."""
    try:
        with open("/proc/%d/status" % pid) as f:
            blk = [line for line in f if line.startswith("SigBlk:")][0]
        if int(blk.split()[1], 16) & (1 << (sig - 1)):
            return True
        with open("/proc/%d/maps" % pid) as f:
            return any(".so" in line and "/ld-linux" not in line for line in f)
    except (OSError, IndexError):
        return True  # gone: the assertions below say how


def send_early(p, sig, ms):
    """sig ms after exec, but never before the process ran code of its own (ran_user_code)."""
    deadline = time.monotonic() + ms / 1000
    while not ran_user_code(p.pid, sig):
        pass
    time.sleep(max(0.0, deadline - time.monotonic()))
    p.proc.send_signal(sig)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_right_after_exec_never_kills_attach(things, tmp_path, env, sig):
    """A SIGTERM or SIGHUP 0..50 ms after exec, while the dynamic loader still
    runs (the issue: exit 129, nothing logged, 3 of 24 starts): never a death
    by the signal. SIGTERM stops the daemon in order,
    exit 0, with a log line naming the signal; SIGHUP reloads once it runs."""
    lk = link(things)
    cfg = conf(tmp_path)
    for ms in EARLY_MS:
        notify = Notify(tmp_path / ("n%s.sock" % tag()))
        d = attach(things, tmp_path, env, lk.dev, "--config", cfg, "--window", "64", notify=notify)
        send_early(d, sig, ms)
        if sig == signal.SIGHUP:
            assert notify.next() == ["READY=1"], (ms, d.proc.poll(), d.stderr())
            assert notify.next() == ["RELOADING=1"] and notify.next() == ["READY=1"], (ms, d.stderr())
            d.proc.send_signal(signal.SIGTERM)
        rc = d.wait()
        assert rc == 0, "signal at %d ms: exit %d: %s" % (ms, rc, d.stderr())
        assert "SIGTERM received: stopping" in d.stderr(), (ms, d.stderr())
        assert not os.path.exists(lk.pins) and not xdp_on(lk.dev), ms
        notify.close()


def test_signal_right_after_exec_never_kills_collect(things, tmp_path):
    """collect: a SIGHUP 0..50 ms after exec is ignored, a SIGTERM stops it in
    order (exit 0, "stopped" logged): never a death by the signal."""
    for ms in EARLY_MS:
        for sig in (signal.SIGHUP, signal.SIGTERM):
            c = proc(things, tmp_path, ["collect", "--plain-tcp", "--listen", "127.0.0.1:%d" % free_port(),
                                        "--db", str(tmp_path / ("c%s.db" % tag()))])
            send_early(c, sig, ms)
            if sig == signal.SIGHUP:
                wait_for(lambda: "listening on" in c.stderr() or c.proc.poll() is not None,
                         "the collector to listen")
                assert c.proc.poll() is None, (ms, c.proc.returncode, c.stderr())
                c.proc.send_signal(signal.SIGTERM)
            rc = c.wait()
            assert rc == 0, "%s at %d ms: exit %d: %s" % (sig.name, ms, rc, c.stderr())
            assert "stopped" in c.stderr(), (ms, c.stderr())


def test_collect_survives_hup_and_usr(things, tmp_path):
    """collect: SIGHUP (at once and later), SIGUSR1 and SIGUSR2 are ignored;
    SIGTERM still stops it in order."""
    c = proc(things, tmp_path, ["collect", "--plain-tcp", "--listen", "127.0.0.1:%d" % free_port(),
                                "--db", str(tmp_path / "c.db")])
    running_own_code(c.pid, signal.SIGHUP)
    c.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "listening on" in c.stderr() or c.proc.poll() is not None, "the collector to listen")
    for s in (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        c.proc.send_signal(s)
    assert c.proc.poll() is None
    c.proc.send_signal(signal.SIGTERM)
    assert c.wait() == 0, c.stderr()
    assert "stopped" in c.stderr()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------
# Pins and locks keyed by network namespace and ifindex.

def test_same_name_in_two_namespaces(things, tmp_path, env):
    """Two network namespaces, one interface name: both are metered, each with
    its own pins, and detaching one leaves the other running."""
    name = "rmsame%d" % (PID % 100000)
    ns = ["rmdpn%s" % tag(), "rmdpn%s" % tag()]
    for n in ns:
        sh("ip", "netns", "add", n)
        things.append(type("NS", (), {"close": lambda self, n=n: sh("ip", "netns", "del", n, check=False)})())
    links = [link(things, dev=name, ns_dev=n) for n in ns]
    assert links[0].pins != links[1].pins
    ds = []
    for n, lk in zip(ns, links):
        notify = Notify(tmp_path / ("n-%s.sock" % n))
        ds.append(attach(things, tmp_path, env, name, "--config", conf(tmp_path), notify=notify,
                         prefix=("nsenter", "--net=/run/netns/" + n)))
        assert notify.next() == ["READY=1"], ds[-1].stderr()
    for n, lk in zip(ns, links):
        s = json.loads(sh("nsenter", "--net=/run/netns/" + n, ROCEMETER, "status", name, "--json", env=env).stdout)[0]
        assert s["state"] == "live" and s["pins"] == lk.pins, s
    sh("nsenter", "--net=/run/netns/" + ns[0], ROCEMETER, "detach", name, env=env)
    assert ds[0].wait() == 0 and not os.path.exists(links[0].pins)
    assert ds[1].proc.poll() is None and os.path.exists(os.path.join(links[1].pins, "contexts"))
    assert xdp_on(name, ns[1])


def test_pins_of_a_vanished_interface(things, tmp_path, env):
    """Pins kept by a killed daemon whose interface is then deleted: status lists
    them by index as stale, and detach --ifindex removes them."""
    lk = link(things)
    d = attach(things, tmp_path, env, lk.dev, "--config", conf(tmp_path), "--keep-pins")
    wait_for(lambda: xdp_on(lk.dev), "the meter to attach")
    ifindex = int(os.path.basename(lk.pins))
    d.proc.kill()
    d.wait()
    sh("ip", "link", "del", lk.dev)
    assert os.path.exists(os.path.join(lk.pins, "contexts"))
    here = os.stat("/proc/self/ns/net").st_ino  # status lists other namespaces' meters too
    listed = [s for s in json.loads(sh(ROCEMETER, "status", "--json", env=env).stdout)
              if s.get("netns") == here and s["ifindex"] == ifindex]
    assert [(s["interface"], s["stale"]) for s in listed] == [("ifindex %d" % ifindex, True)], listed
    p = sh(ROCEMETER, "detach", lk.dev, env=env, check=False)
    assert p.returncode == 2 and "detach --ifindex N" in p.stderr, p.stderr
    p = sh(ROCEMETER, "detach", "--ifindex", ifindex, env=env)
    assert "removed stale meter pins of ifindex %d" % ifindex in p.stdout
    assert not os.path.exists(lk.pins)


def census_filter(dev):
    """The census's tc filter at dev's ingress (handle 0x524e): its program ID, or None."""
    m = re.search(r"handle 0x524e .* id (\d+)", sh("tc", "filter", "show", "dev", dev, "ingress", check=False).stdout)
    return int(m.group(1)) if m else None


def test_census_pins_of_a_vanished_interface(things, tmp_path, env):
    """attach --census pins the census in the interface's key-based directory;
    after a killed daemon's interface is deleted, detach --ifindex removes the
    census's pins with the meter's."""
    lk = link(things)
    d = attach(things, tmp_path, env, lk.dev, "--config", conf(tmp_path), "--census")
    census = [os.path.join(lk.pins, n) for n in ("census", "census_stats")]
    wait_for(lambda: xdp_on(lk.dev) and all(os.path.exists(c) for c in census), "the meter and census to attach")
    ifindex = int(os.path.basename(lk.pins))
    d.proc.kill()
    d.wait()
    sh("ip", "link", "del", lk.dev)
    assert all(os.path.exists(c) for c in census)
    p = sh(ROCEMETER, "detach", "--ifindex", ifindex, env=env)
    assert "removed the connection census from ifindex %d" % ifindex in p.stdout, p.stdout
    assert not os.path.exists(lk.pins)


def test_replace_stale_removes_a_killed_census(things, tmp_path, env):
    """A daemon with --census killed with -9 leaves its census attached and
    pinned; attach --replace-stale --census replaces both, and a clean stop
    removes them."""
    lk = link(things)
    d = attach(things, tmp_path, env, lk.dev, "--config", conf(tmp_path), "--census")
    census = os.path.join(lk.pins, "census")
    wait_for(lambda: xdp_on(lk.dev) and os.path.exists(census), "the meter and census to attach")
    d.proc.kill()
    d.wait()
    assert census_filter(lk.dev) and os.path.exists(census)
    notify = Notify(tmp_path / "n.sock")
    d = attach(things, tmp_path, env, lk.dev, "--config", conf(tmp_path), "--census", "--replace-stale",
               notify=notify)
    assert notify.next() == ["READY=1"], d.stderr()
    assert census_filter(lk.dev) and os.path.exists(census)
    d.proc.send_signal(signal.SIGTERM)
    assert d.wait() == 0, d.stderr()
    assert not census_filter(lk.dev) and not os.path.exists(lk.pins)


def test_detach_refuses_an_invalid_name(tmp_path):
    """A name that is no interface name never reaches a path: `detach ../../x`
    removes nothing outside rocemeter's directories."""
    bpffs = tmp_path / "bpf"
    (bpffs / "rocemeter").mkdir(parents=True)
    victim = tmp_path / "x" / "contexts"
    victim.parent.mkdir()
    victim.write_text("not a pin")
    e = dict(os.environ, ROCEMETER_BPFFS=str(bpffs), ROCEMETER_RUNDIR=str(tmp_path / "run"))
    for bad in ("../../x", "a/b", "..", "eth0:1"):
        p = sh(ROCEMETER, "detach", bad, env=e, check=False)
        assert p.returncode == 2 and "is not a valid interface name" in p.stderr, (bad, p.stderr)
    assert victim.read_text() == "not a pin"
    assert not (tmp_path / "x.lock").exists() and not list(tmp_path.glob("run/*"))


def start_time(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])  # field 22 (proc(5))


def test_detach_signals_only_the_proved_meter(things, tmp_path, env):
    """detach signals the PID of the PID file only when /proc says it is that
    meter: the same executable and the recorded start time. A PID file naming
    another program, or another rocemeter process, is refused: nobody is
    signalled, nothing is removed."""
    lk = link(things)
    notify = Notify(tmp_path / "n.sock")
    d = attach(things, tmp_path, env, lk.dev, "--config", conf(tmp_path), notify=notify)
    assert notify.next() == ["READY=1"]
    (pidfile,) = [os.path.join(env["ROCEMETER_RUNDIR"], f) for f in os.listdir(env["ROCEMETER_RUNDIR"])
                  if f.endswith(".pid")]
    good = open(pidfile).read()
    assert good.split()[0] == str(d.pid)
    sleeper = subprocess.Popen(["sleep", "600"])
    things.append(type("K", (), {"close": lambda self: (sleeper.kill(), sleeper.wait())})())
    other = proc(things, tmp_path, ["collect", "--plain-tcp", "--listen", "127.0.0.1:%d" % free_port(),
                                    "--db", str(tmp_path / "c.db")])
    wait_for(lambda: "listening on" in other.stderr(), "the other rocemeter process")
    decoys = [(sleeper.pid, start_time(sleeper.pid), "runs"),                  # another program
              (other.pid, start_time(other.pid) + 1, "started at another time")]  # PID reused by a rocemeter
    for pid, start, why in decoys:
        with open(pidfile, "w") as f:
            f.write("%d %d\n" % (pid, start))
        p = sh(ROCEMETER, "detach", lk.dev, env=env, check=False)
        assert p.returncode == 1 and why in p.stderr and "not signalling anyone" in p.stderr, p.stderr
        assert sleeper.poll() is None and other.proc.poll() is None and d.proc.poll() is None
        assert os.path.exists(os.path.join(lk.pins, "contexts")) and xdp_on(lk.dev)
    with open(pidfile, "w") as f:
        f.write(good)
    p = sh(ROCEMETER, "detach", lk.dev, env=env)
    assert "stopped the meter on %s (process %d)" % (lk.dev, d.pid) in p.stdout
    assert d.wait() == 0 and not os.path.exists(lk.pins)


def test_renamed_interface_is_followed(things, tmp_path, env):
    """Renamed while attached (down, rename, up): status finds the meter under
    the new name, and capture-loss detection follows the interface by its
    index: a later carrier loss still closes the open epoch with
    captureDiscontinuity."""
    lk = link(things)
    d = attach(things, tmp_path, env, lk.dev, "--config", conf(tmp_path))
    wait_for(lambda: xdp_on(lk.dev), "the meter to attach")
    new = "rmdpr%d" % (PID % 100000)
    lk.send(tmp_path, [1, 2])
    wait_for(lambda: json.loads(sh(ROCEMETER, "status", lk.dev, "--json", env=env).stdout)[0]["meter"]
             ["eligible_requests"] == 2, "two requests")
    sh("ip", "link", "set", "dev", lk.dev, "down")
    sh("ip", "link", "set", "dev", lk.dev, "name", new)
    things.append(type("R", (), {"close": lambda self: sh("ip", "link", "del", new, check=False)})())
    # The carrier loss closed the epoch of 1, 2: captureDiscontinuity.
    wait_for(lambda: len(d.reports()) == 1, "the first epoch's final report")
    assert d.reports()[0]["rdmaSequenceFlags"] & (FINAL | CD) == FINAL | CD
    sh("ip", "link", "set", "dev", new, "up")
    s = json.loads(sh(ROCEMETER, "status", new, "--json", env=env).stdout)[0]
    assert s["state"] == "live" and s["pins"] == lk.pins, s
    time.sleep(1.5)  # one observation pass sees the carrier back (no assertion on time)
    lk.send(tmp_path, [10, 11, 12])
    wait_for(lambda: any(c["state"] == "open" and c["requestPacketTotalCount"] == 3
                         for c in json.loads(sh(ROCEMETER, "status", new, "--json", env=env).stdout)[0]["contexts"]),
             "a new epoch under the new name")
    sh("ip", "link", "set", "dev", new, "down")
    wait_for(lambda: len(d.reports()) == 2, "the second epoch's final report")
    r = d.reports()[1]
    assert r["rdmaSequenceFlags"] & (FINAL | CD) == FINAL | CD and r["requestPacketTotalCount"] == 3, r
    assert d.proc.poll() is None, d.stderr()
    d.proc.send_signal(signal.SIGTERM)
    assert d.wait() == 0


# ---------------------------------------------------------------------------
# Errors an operator can act on.

def test_another_xdp_program_is_named(things, tmp_path, env):
    """Another XDP program on the interface: attach names it (and how to remove
    it) in either mode, and does not send the operator to --mode generic."""
    lk = link(things)
    sh("ip", "link", "set", "dev", lk.dev, "xdpgeneric", "obj", os.path.join(rt.ROOT, rt.BUILD, "selftests", "progs", "baseline.bpf.o"),
       "sec", "xdp")
    prog = json.loads(sh("ip", "-j", "link", "show", "dev", lk.dev).stdout)[0]["xdp"]["prog"]["id"]
    for mode in ("native", "generic"):
        p = sh(ROCEMETER, "attach", lk.dev, "--provision-all", "--mode", mode, env=env, check=False)
        assert p.returncode == 1, p.stderr
        assert "another XDP program is attached there: 'rm_base_xdp' id %d, generic mode" % prog in p.stderr
        assert "ip link set dev %s xdp off" % lk.dev in p.stderr and "--mode generic" not in p.stderr
        assert not os.path.exists(lk.pins)


def test_missing_capability_is_named(things, tmp_path, env):
    """Without CAP_PERFMON (or as another user, without any), attach names what is
    missing and prints no verifier log unless asked; exit status 4 (EXIT_NOPERMISSION,
    which the unit does not restart on)."""
    lk = link(things)
    caps = "+bpf,+net_admin,+sys_resource"
    p = sh("setpriv", "--bounding-set=-all," + caps, "--inh-caps=-all", ROCEMETER, "attach", lk.dev,
           "--provision-all", env=env, check=False)
    assert p.returncode == 4
    assert "attach needs CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN" in p.stderr and "missing: CAP_PERFMON" in p.stderr
    assert "PROG LOAD LOG" not in p.stderr and "processed" not in p.stderr, p.stderr
    p = sh("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", ROCEMETER, "attach", lk.dev,
           "--provision-all", env=env, check=False)
    assert p.returncode == 4 and "missing: CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN" in p.stderr, p.stderr


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    sh(os.path.join(rt.ROOT, "scripts", "gen-certs"), d)
    sh("openssl", "pkey", "-in", d / "exporter.key", "-aes256", "-passout", "pass:secret", "-out",
       d / "encrypted.key")
    return str(d)


def export_conf(tmp_path, pki, port, cert="exporter", key=None, peer="collector.rocemeter.test"):
    return conf(tmp_path, "[meter]\n[provision]\nconnection = %s %s %d any\n[export]\ncollector = 127.0.0.1\n"
                "port = %d\nca = %s/ca.pem\ncert = %s/%s.pem\nkey = %s/%s\npeer_name = %s\n"
                % (SRC, DST, QP, port, pki, pki, cert, pki, key or cert + ".key", peer))


def collector(things, tmp_path, pki, cert="collector", *extra):
    port = free_port()
    c = proc(things, tmp_path, ["collect", "--listen", "127.0.0.1:%d" % port, "--db", str(tmp_path / "c.db"),
                                "--cert", "%s/%s.pem" % (pki, cert), "--key", "%s/%s.key" % (pki, cert),
                                "--ca", pki + "/ca.pem", "--peer-name", "exporter.rocemeter.test", *extra])
    wait_for(lambda: "listening on" in c.stderr(), "the collector")
    return c, port


def test_refused_peer_names_are_shown(things, tmp_path, env, pki):
    """A TLS peer-name mismatch names what the certificate carries and what is
    authorised, on the exporter's side and on the collector's."""
    lk = link(things)
    # The collector presents a certificate for intruder.rocemeter.test.
    c, port = collector(things, tmp_path, pki, "wrongname")
    d = attach(things, tmp_path, env, lk.dev, "--config", export_conf(tmp_path, pki, port))
    want = ("certificate CN=intruder.rocemeter.test (DNS:intruder.rocemeter.test, IP:127.0.0.1, IP:::1) carries "
            "none of the authorised peer names (collector.rocemeter.test)")
    wait_for(lambda: want in d.stderr(), "the exporter's refusal", timeout=60)
    d.proc.send_signal(signal.SIGTERM)
    d.wait()
    c.proc.send_signal(signal.SIGTERM)
    c.wait()
    # The exporter presents wrongname's certificate to a collector that authorises exporter.rocemeter.test.
    c, port = collector(things, tmp_path, pki)
    d = attach(things, tmp_path, env, lk.dev, "--config", export_conf(tmp_path, pki, port, cert="wrongname"))
    want = ("TLS handshake failed: exporter not authorised: certificate CN=intruder.rocemeter.test "
            "(DNS:intruder.rocemeter.test, IP:127.0.0.1, IP:::1) carries none of the authorised peer names "
            "(exporter.rocemeter.test)")
    wait_for(lambda: want in c.stderr(), "the collector's refusal", timeout=60)
    d.proc.send_signal(signal.SIGTERM)
    d.wait()


def test_encrypted_key_is_refused_not_prompted(things, tmp_path, env, pki):
    """An encrypted private key: a clear error and exit 2, never a pass-phrase
    prompt (stdin stays open here: a prompt would wait on it for ever)."""
    c = proc(things, tmp_path, ["collect", "--listen", "127.0.0.1:%d" % free_port(), "--db", str(tmp_path / "c.db"),
                                "--cert", pki + "/exporter.pem", "--key", pki + "/encrypted.key", "--ca",
                                pki + "/ca.pem", "--peer-name", "x.test"], stdin=subprocess.PIPE)
    assert c.wait(timeout=30) == 2, c.stderr()
    assert "key file %s/encrypted.key is encrypted" % pki in c.stderr()
    lk = link(things)
    d = proc(things, tmp_path, ["attach", lk.dev, "--config", export_conf(tmp_path, pki, 4740, key="encrypted.key")],
             env=env, stdin=subprocess.PIPE)
    assert d.wait(timeout=30) == 2, d.stderr()
    assert "key file %s/encrypted.key is encrypted" % pki in d.stderr() and not xdp_on(lk.dev)


@pytest.mark.parametrize("args,message", [
    (["--listen", "127.0.0.1:70000"], "--listen: '127.0.0.1:70000' is not ADDR:PORT, [IPV6]:PORT or :PORT with "
                                      "PORT in 1..65535"),
    (["--listen", "[::1]:65536"], "PORT in 1..65535"),
    (["--listen", "127.0.0.1:0x10000"], "PORT in 1..65535"),
    (["--max-sessions", "0"], "--max-sessions: '0' is not an integer in 1..65536"),
    (["--pen", "0"], "--pen: '0' is not an integer in 1..4294967295"),
    (["--log-level", "loud"], "--log-level: 'loud' is not err, warning, notice, info or debug"),
])
def test_collect_option_errors(tmp_path, args, message):
    """Each refused option exits 2 with one line that says why (a port above
    65535 was once taken modulo 65536)."""
    p = sh(ROCEMETER, "collect", "--plain-tcp", "--db", tmp_path / "c.db", *args, check=False, timeout=20)
    assert p.returncode == 2 and message in p.stderr, p.stderr


@pytest.mark.parametrize("path", ["/tmp", "/dev/zero", "/dev/null"])
def test_config_must_be_a_regular_file(things, tmp_path, env, path):
    """--config naming a directory or a device: refused before reading (no
    empty configuration, no endless read of /dev/zero), exit 2."""
    for cmd in (["collect", "--plain-tcp", "--db", str(tmp_path / "c.db")], ["check-config"], ["replay"]):
        p = sh(ROCEMETER, *cmd, *(["--config"] if cmd != ["check-config"] else []), path,
               *(["x.pcap"] if cmd == ["replay"] else []), check=False, timeout=20)
        assert p.returncode == 2 and "%s: not a regular file" % path in p.stderr, (cmd, p.stderr)
    lk = link(things)
    p = sh(ROCEMETER, "attach", lk.dev, "--config", path, env=env, check=False, timeout=20)
    assert p.returncode == 2 and "%s: not a regular file" % path in p.stderr, p.stderr


def test_log_level_option(things, tmp_path):
    """--log-level warning keeps the warnings (plain TCP) and drops the notices;
    lines carry a UTC timestamp and their level."""
    c = proc(things, tmp_path, ["collect", "--plain-tcp", "--listen", "127.0.0.1:%d" % free_port(), "--db",
                                str(tmp_path / "c.db"), "--log-level", "warning"])
    wait_for(lambda: "plain TCP transport" in c.stderr() or c.proc.poll() is not None, "the warning")
    c.proc.send_signal(signal.SIGTERM)
    assert c.wait() == 0, c.stderr()
    lines = c.stderr().splitlines()
    assert lines and all(" warning rocemeter collect: " in line for line in lines), lines
    assert all(line[:4].isdigit() and line[10] == "T" and line.split()[0].endswith("Z") for line in lines)


def test_ip_netns_exec_private_bpffs_is_named(things, tmp_path, env):
    """Under `ip netns exec` /sys is remounted and the host's bpffs is hidden: the meter mounts
    its own, whose pins nobody outside sees. It says so, and names nsenter --net instead."""
    ns = "rmdpx%s" % tag()
    sh("ip", "netns", "add", ns)
    things.append(type("NS", (), {"close": lambda self: sh("ip", "netns", "del", ns, check=False)})())
    lk = link(things, ns_dev=ns)
    notify = Notify(tmp_path / "x.sock")
    d = attach(things, tmp_path, env, lk.dev, "--config", conf(tmp_path), notify=notify,
               prefix=("ip", "netns", "exec", ns))
    assert notify.next() == ["READY=1"], d.stderr()
    assert "in a private mount namespace" in d.stderr() and "nsenter --net=/run/netns/NAME" in d.stderr()
    d.proc.terminate()
    assert d.wait() == 0


def test_status_skips_maps_of_another_version(things, tmp_path, env):
    """Pins of another rocemeter build (another struct rm_ctx size) in an interface's pin
    directory: status must not read them into its own structs (that wrote past the buffer and
    crashed it); it says so and shows the rest."""
    lk = link(things)
    os.makedirs(lk.pins, exist_ok=True)
    key_size, big_value = 44, 4096  # struct rm_ctx_key; a value far larger than this build's rm_ctx
    sh("bpftool", "map", "create", os.path.join(lk.pins, "contexts"), "type", "hash", "key", str(key_size),
       "value", str(big_value), "entries", "4", "name", "contexts", "flags", "1")
    sh("bpftool", "map", "create", os.path.join(lk.pins, "stats"), "type", "percpu_array", "key", "4",
       "value", "8", "entries", "1", "name", "stats")
    sh("bpftool", "map", "update", "pinned", os.path.join(lk.pins, "contexts"),
       "key", *(["0x01"] * key_size), "value", *(["0xff"] * big_value))
    for args in (("status", lk.dev), ("status", lk.dev, "--json")):
        p = subprocess.run([ROCEMETER, *args], capture_output=True, text=True, env=env)
        assert p.returncode == 5, (p.returncode, p.stderr)  # stale: no program uses the pins made here
        assert "another rocemeter version" in p.stderr, p.stderr
