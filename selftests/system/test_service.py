# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The systemd units under a live systemd (252, Debian bookworm), booted in a container.

scripts/container-root debootstraps a minimal bookworm root once and caches it
under /var/cache/rocemeter; each run boots a copy-on-write overlay of it with
systemd-nspawn, installs the project into it (`make install DESTDIR=...`) and
drives it from outside (nsenter into the container's PID 1):

    network namespace H (made here)              the container (its own network namespace C)
    rocemeter collect 192.0.2.1:4740  <--TLS--   rocemeter@rm-cPID.service (XDP on rm-cPID)
    tcpreplay RoCEv2 frames on rmshPID ------->  rm-cPID  (a name with '-': an escaped instance)
                                                 rocemeter-collect.service on 127.0.0.1:4741

The container sees the host's bpffs (--bind=/sys/fs/bpf, docs/service.md): the
meter's pins are keyed by C's namespace and the interface's ifindex, and the
host, from another mount namespace, must see that meter as live, not stale.

The tests run in file order on one container (each step builds on the last);
none measures time. Skips only without root or when the Debian mirror cannot
be reached to build the root; everything else that goes wrong fails.
"""
import functools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time

import pytest

import procs  # tests/lib: commands
import rocetest as rt  # tests/lib: frames and captures

ROOT = rt.ROOT
PID = os.getpid()
IFACE = "rm-c%d" % PID            # inside the container; '-' makes the instance name escaped
HOST_IF = "rmsh%d" % PID          # its peer, in namespace NS_HOST
NS_HOST, NS_CT = "rmsvc-h%d" % PID, "rmsvc-c%d" % PID
MACHINE = "rmsvc%d" % PID
HOST_ADDR, CT_ADDR = "192.0.2.1", "192.0.2.2"  # TEST-NET-1, only inside the two namespaces made here
SRC, DST, QP = "10.9.0.1", "10.9.0.2", 0x1A2B
PREFIX = "/usr/local"
RM = PREFIX + "/sbin/rocemeter"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (debootstrap, systemd-nspawn, BPF)")


# The container's commands and boot are slower than a host's.
sh = functools.partial(procs.sh, timeout=120)
wait_for = functools.partial(procs.wait_for, timeout=60, interval=0.2)


class Container:
    """One booted container and the two network namespaces around it."""

    def __init__(self, image):
        self.image = image
        self.work = tempfile.mkdtemp(prefix="rm-svc-%d-" % PID)
        self.merged = os.path.join(self.work, "merged")
        self.nspawn = None
        self.pid1 = None
        self.collector = None
        self.pins_netns = None

    # -- set-up and tear-down
    def build(self):
        for d in ("upper", "ovl-work", "merged"):
            os.mkdir(os.path.join(self.work, d))
        sh("mount", "-t", "overlay", "overlay", "-o", "lowerdir=%s,upperdir=%s/upper,workdir=%s/ovl-work"
           % (self.image, self.work, self.work), self.merged)
        self.install()
        self.pki = os.path.join(self.work, "pki")
        sh(os.path.join(ROOT, "scripts", "gen-certs"), self.pki)
        etc = os.path.join(self.merged, "etc", "rocemeter")
        for f in ("ca.pem", "exporter.pem", "exporter.key", "collector.pem", "collector.key"):
            shutil.copy(os.path.join(self.pki, f), etc)
        # The two namespaces and the veth between them; the container gets C.
        sh("ip", "netns", "add", NS_HOST)
        sh("ip", "netns", "add", NS_CT)
        sh("ip", "link", "add", HOST_IF, "netns", NS_HOST, "type", "veth", "peer", "name", IFACE, "netns", NS_CT)
        sh("ip", "-n", NS_HOST, "addr", "add", HOST_ADDR + "/24", "dev", HOST_IF)
        sh("ip", "-n", NS_CT, "addr", "add", CT_ADDR + "/24", "dev", IFACE)
        for ns, dev in ((NS_HOST, HOST_IF), (NS_CT, IFACE), (NS_HOST, "lo"), (NS_CT, "lo")):
            sh("ip", "-n", ns, "link", "set", dev, "up")
        self.pins_netns = os.stat("/run/netns/" + NS_CT).st_ino

    def install(self):
        """The project into the overlay (test_deb.py installs its package instead)."""
        sh("make", "-C", ROOT, "-s", "install", "DESTDIR=" + self.merged, "PREFIX=" + PREFIX, timeout=600)

    def boot(self):
        # No udev, no machined on the host is needed: --register=no --keep-unit, and a
        # prepared network namespace instead of --network-veth/--network-interface
        # (which wait for udev to have seen the interface). CAP_BPF, CAP_PERFMON and
        # CAP_NET_ADMIN are not in the container's bounding set by default, nor bpf(2)
        # in its system-call filter; the host's bpffs is bound in (docs/service.md).
        self.console = open(os.path.join(self.work, "console.log"), "w")
        self.nspawn = subprocess.Popen(
            ["systemd-nspawn", "--quiet", "--boot", "--directory", self.merged, "--machine", MACHINE,
             "--register=no", "--keep-unit", "--network-namespace-path=/run/netns/" + NS_CT,
             "--capability=CAP_BPF,CAP_PERFMON,CAP_NET_ADMIN", "--system-call-filter=bpf",
             "--bind=/sys/fs/bpf"],
            stdin=subprocess.DEVNULL, stdout=self.console, stderr=subprocess.STDOUT)

        def pid1():
            assert self.nspawn.poll() is None, "systemd-nspawn exited: " + self.console_text()
            try:
                with open("/proc/%d/task/%d/children" % (self.nspawn.pid, self.nspawn.pid)) as f:
                    kids = f.read().split()
            except OSError:
                return None
            return int(kids[0]) if kids else None
        self.pid1 = wait_for(pid1, "the container's PID 1")

        def booted():
            p = self.run("systemctl", "is-system-running", check=False)
            return p.stdout.strip() in ("running", "degraded")
        wait_for(booted, "the container's systemd to finish booting", timeout=120)

    def console_text(self):
        with open(os.path.join(self.work, "console.log")) as f:
            return f.read()[-3000:]

    def close(self):
        if self.collector and self.collector.poll() is None:
            self.collector.terminate()
            try:
                self.collector.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.collector.kill()
        if self.nspawn and self.nspawn.poll() is None:
            if self.pid1:
                self.run("systemctl", "poweroff", "--no-block", check=False)
            try:
                self.nspawn.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.nspawn.kill()
                self.nspawn.wait(timeout=30)
        if os.path.ismount(self.merged):
            sh("umount", self.merged, check=False)
        if self.pins_netns:  # pins of a meter that could not stop cleanly
            shutil.rmtree("/sys/fs/bpf/rocemeter/%d" % self.pins_netns, ignore_errors=True)
        sh("ip", "netns", "del", NS_HOST, check=False)
        sh("ip", "netns", "del", NS_CT, check=False)
        shutil.rmtree(self.work, ignore_errors=True)

    # -- inside the container
    def run(self, *cmd, check=True, timeout=120):
        return sh("nsenter", "-t", self.pid1, "-a", "--", *cmd, check=check, timeout=timeout,
                  env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"})

    def write(self, path, text):
        with open(os.path.join(self.merged, path.lstrip("/")), "w") as f:
            f.write(text)

    def show(self, unit, *props):
        out = self.run("systemctl", "show", unit, "-p", ",".join(props)).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def systemctl(self, verb, unit, check=True):
        """systemctl VERB UNIT; a failure shows the unit's journal."""
        p = self.run("systemctl", verb, unit, check=False)
        if check and p.returncode != 0:
            log = self.run("journalctl", "--no-pager", "-n", "30", "-u", unit, check=False).stdout
            raise AssertionError("systemctl %s %s failed (%d): %s\n%s" % (verb, unit, p.returncode, p.stderr, log))
        return p

    def journal(self, unit=None):
        out = self.run("journalctl", "--no-pager", "-o", "json", *(("-u", unit) if unit else ())).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    # -- outside: the collector and the traffic in namespace H
    def start_collector(self):
        self.db = os.path.join(self.work, "host-collector.db")
        self.collector_log = open(os.path.join(self.work, "collector.log"), "w")
        self.collector = subprocess.Popen(
            ["ip", "netns", "exec", NS_HOST, rt.ROCEMETER, "collect", "--listen", HOST_ADDR + ":4740",
             "--db", self.db, "--cert", self.pki + "/collector.pem", "--key", self.pki + "/collector.key",
             "--ca", self.pki + "/ca.pem", "--peer-name", "exporter.rocemeter.test"],
            stdout=self.collector_log, stderr=subprocess.STDOUT)
        wait_for(lambda: "listening on" in open(self.collector_log.name).read(), "the host's collector")

    def collector_text(self):
        with open(self.collector_log.name) as f:
            return f.read()

    def send(self, psns):
        pcap = os.path.join(self.work, "frames-%d.pcap" % time.monotonic_ns())
        rt.write_pcap(pcap, [rt.Frame(rt.roce_frame(SRC, DST, QP, p), rt.T0 + i * 1000) for i, p in enumerate(psns)])
        sh("ip", "netns", "exec", NS_HOST, "tcpreplay", "-q", "-t", "-i", HOST_IF, pcap)


@pytest.fixture(scope="module")
def ct():
    for tool in ("systemd-nspawn", "debootstrap", "nsenter", "tcpreplay"):
        assert shutil.which(tool), "%s missing: run 'make deps'" % tool
    p = sh(os.path.join(ROOT, "scripts", "container-root"), check=False, timeout=1800)
    if p.returncode == 3:
        pytest.skip("NO NETWORK TO THE DEBIAN MIRROR: cannot debootstrap the container root: "
                    + p.stderr.strip().splitlines()[-1])
    assert p.returncode == 0, "scripts/container-root failed: " + p.stderr[-3000:]
    c = Container(p.stdout.strip())
    try:
        c.build()
        c.boot()
        c.start_collector()
        yield c
    finally:
        c.close()


def unit_of(iface):
    return "rocemeter@%s.service" % iface.replace("-", "\\x2d")  # what systemd-escape makes of it


METER = unit_of(IFACE)


def meter_conf(window=64, export=True, extra=""):
    text = ("[meter]\nwindow = %d\nidle_timeout_ms = 0\n[provision]\nconnection = %s %s %d any\n"
            % (window, SRC, DST, QP))
    if export:
        text += ("[export]\ncollector = %s\nport = 4740\nca = /etc/rocemeter/ca.pem\n"
                 "cert = /etc/rocemeter/exporter.pem\nkey = /etc/rocemeter/exporter.key\n"
                 "peer_name = collector.rocemeter.test\nreport_interval_ms = 0\n" % HOST_ADDR)
    return text + extra


def wait_session(ct, n):
    """The daemon has taken up Transport Session n: epochs opened from now on are reported in it
    (a new session first closes every open epoch, [SEQOBS])."""
    def taken_up():
        pid = str(main_pid(ct))  # this process's lines, not an earlier run's
        return any(e["MESSAGE"] == "export: Transport Session %d established" % n and e.get("_PID") == pid
                   for e in ct.journal(METER))
    wait_for(taken_up, "the meter to take up export session %d" % n)


def status(ct):
    return json.loads(ct.run(RM, "status", IFACE, "--json").stdout)[0]


def main_pid(ct):
    return int(ct.show(METER, "MainPID")["MainPID"])


def test_meter_unit_starts_ready_with_pins(ct):
    """systemctl start returns once the daemon said READY=1 (Type=notify); the unit
    needs no device unit (no udev here) and its sandbox leaves bpffs writable."""
    assert ct.run("systemd-escape", IFACE).stdout.strip() == METER[len("rocemeter@"):-len(".service")]
    ct.write("/etc/rocemeter/%s.conf" % IFACE, meter_conf())
    ct.systemctl("start", METER)
    st = ct.show(METER, "ActiveState", "SubState", "MainPID", "Type")
    assert (st["ActiveState"], st["SubState"], st["Type"]) == ("active", "running", "notify"), st
    s = status(ct)
    assert s["state"] == "live" and s["xdp_prog_id"] > 0, s
    ifindex = json.loads(ct.run("ip", "-j", "link", "show", "dev", IFACE).stdout)[0]["ifindex"]
    assert s["pins"] == "/sys/fs/bpf/rocemeter/%d/%d" % (ct.pins_netns, ifindex)
    # bpftool reads the pins (BTF names), and sees our program on the interface.
    dump = json.loads(ct.run("bpftool", "-j", "map", "dump", "pinned", s["pins"] + "/stats").stdout)
    assert dump and "formatted" in dump[0], dump
    net = json.loads(ct.run("bpftool", "-j", "net", "show", "dev", IFACE).stdout)
    assert [x["id"] for e in net for x in e.get("xdp", [])] == [s["xdp_prog_id"]], net
    # The export session to the collector outside the container is up.
    wait_session(ct, 1)
    assert "TLS 1.3 peer" in ct.collector_text()


def test_traffic_is_metered(ct):
    ct.send([1, 2, 4])  # 3 is skipped
    wait_for(lambda: status(ct)["meter"]["eligible_requests"] == 3, "3 eligible requests")
    (c,) = status(ct)["contexts"]
    assert (c["requestPacketTotalCount"], c["skippedPsnTotalCount"], c["pendingPsnCount"]) == (3, 1, 1), c


def test_journal_has_priorities_and_fields(ct):
    """Under journald every line is an entry with its priority and IFACE (and
    SESSION/PEER for the export session), not a line of text on a stream."""
    entries = [e for e in ct.journal(METER) if e.get("SYSLOG_IDENTIFIER") == "rocemeter"]
    attached = [e for e in entries if e["MESSAGE"].startswith("attached to " + IFACE)]
    assert attached and attached[0]["PRIORITY"] == "5" and attached[0]["IFACE"] == IFACE, entries
    assert attached[0]["ROCEMETER_COMMAND"] == "attach"
    session = [e for e in entries if "Transport Session" in e["MESSAGE"]]
    assert session and session[0]["SESSION"] == "1" and HOST_ADDR in session[0]["PEER"], entries


def test_another_mount_namespace_sees_a_live_meter(ct):
    """From the host's mount namespace (another /run, the same bpffs) the meter
    is live, asked of the kernel; detach cannot prove its process there and so
    neither signals anyone nor removes its pins."""
    outside = ["nsenter", "--net=/run/netns/" + NS_CT, rt.ROCEMETER]
    s = json.loads(sh(*outside, "status", IFACE, "--json").stdout)[0]
    assert s["state"] == "live" and not s["stale"], s
    p = sh(*outside, "detach", IFACE, check=False)
    assert p.returncode == 1 and "cannot be proved" in p.stderr, p.stderr
    assert os.path.exists(os.path.join(s["pins"], "contexts"))
    assert ct.show(METER, "ActiveState")["ActiveState"] == "active"
    a = sh(*outside, "attach", IFACE, "--replace-stale", check=False)
    assert a.returncode == 1 and "already metered" in a.stderr, a.stderr
    assert status(ct)["state"] == "live"


def test_reload_good_and_refused(ct):
    """ExecReload= runs `rocemeter check-config` first: a refused file fails the
    reload and changes nothing; a good one is applied (the open epoch closes)."""
    ct.write("/etc/rocemeter/%s.conf" % IFACE, meter_conf(window=0))
    p = ct.systemctl("reload", METER, check=False)
    assert p.returncode != 0
    assert ct.show(METER, "ActiveState")["ActiveState"] == "active"
    msgs = [e["MESSAGE"] for e in ct.journal(METER)]
    assert any("window: '0' is not an integer in 1..4194304" in m for m in msgs), msgs[-10:]
    assert status(ct)["contexts"][0]["rdmaSequenceWindow"] == 64  # unchanged
    ct.write("/etc/rocemeter/%s.conf" % IFACE, meter_conf(window=32))
    ct.systemctl("reload", METER)
    wait_for(lambda: any("reload: configuration" in e["MESSAGE"] and "window 32" in e["MESSAGE"]
                         for e in ct.journal(METER)), "the reload to be applied")
    ct.send([10])
    wait_for(lambda: any(c["rdmaSequenceWindow"] == 32 and c["state"] == "open"
                         for c in status(ct)["contexts"]), "an epoch with the new window")


def test_sigkill_restarts_and_replaces_stale_pins(ct):
    old = main_pid(ct)
    assert old > 0, ct.show(METER, "ActiveState", "SubState")  # kill -9 0 would hit this test's process group
    ct.run("kill", "-9", str(old))
    wait_for(lambda: main_pid(ct) not in (0, old) and ct.show(METER, "ActiveState")["ActiveState"] == "active",
             "systemd to restart the meter (RestartSec=5s)", timeout=90)
    assert int(ct.show(METER, "NRestarts")["NRestarts"]) == 1
    msgs = [e["MESSAGE"] for e in ct.journal(METER)]
    assert any(m.startswith("removing stale pins of " + IFACE) for m in msgs), msgs[-10:]
    assert status(ct)["state"] == "live"
    wait_session(ct, 1)  # the new process's first session


def test_stop_exports_final_reports(ct):
    """systemctl stop: SIGTERM, every open epoch gets a final report, exported over
    TLS to the collector outside before the session closes; pins removed."""
    ct.send([20, 21, 23])
    wait_for(lambda: any(c["requestPacketTotalCount"] == 3 and c["state"] == "open"
                         for c in status(ct)["contexts"]), "the new epoch")
    pins = status(ct)["pins"]
    ct.systemctl("stop", METER)
    assert ct.show(METER, "ActiveState", "Result")["Result"] == "success"
    assert not os.path.exists(pins)
    wait_for(lambda: "peer closed the session" in ct.collector_text(), "the collector to see the session end")
    db = sqlite3.connect(ct.db)
    db.row_factory = sqlite3.Row
    rows = db.execute("SELECT * FROM epochs ORDER BY id").fetchall()
    final = [dict(r) for r in rows if r["outcome"] == "complete"]
    assert final, [dict(r) for r in rows]
    last = final[-1]
    # 20, 21, 23: three requests, 22 skipped and, at the final report, abandoned.
    assert (last["requests"], last["skipped"], last["abandoned"]) == (3, 1, 1), last


def test_configuration_error_is_not_restarted(ct):
    """Exit status 2 (a refused file) ends in failed, not in an endless restart."""
    ct.write("/etc/rocemeter/%s.conf" % IFACE, meter_conf(extra="[capture]\nbogus = 1\n"))
    p = ct.systemctl("start", METER, check=False)
    assert p.returncode != 0
    st = ct.show(METER, "ActiveState", "SubState", "ExecMainStatus", "NRestarts")
    assert (st["ActiveState"], st["SubState"], st["ExecMainStatus"]) == ("failed", "failed", "2"), st
    ct.run("systemctl", "reset-failed", METER)
    # Unescaped, the '-' of the instance becomes a '/': an invalid name, refused, not restarted.
    p = ct.systemctl("start", "rocemeter@%s.service" % IFACE, check=False)
    assert p.returncode != 0
    unit = "rocemeter@%s.service" % IFACE
    st = ct.show(unit, "ActiveState", "ExecMainStatus")
    assert (st["ActiveState"], st["ExecMainStatus"]) == ("failed", "2"), st
    # The whole journal: a process that exits at once may leave entries journald cannot tie to its unit.
    msgs = [e["MESSAGE"] for e in ct.journal()]
    assert any("'rm/c%d' is not a valid interface name" % PID in m for m in msgs), "\n".join(msgs[-20:])
    ct.run("systemctl", "reset-failed", unit)


def test_collect_unit(ct):
    """rocemeter-collect.service: READY once listening, its database in
    StateDirectory=/var/lib/rocemeter, SIGHUP ignored, a meter in the same
    container exports into it, and stop retires what is open."""
    ct.write("/etc/rocemeter/collect.conf",
             "[collect]\nlisten = 127.0.0.1:4741\ndb = /var/lib/rocemeter/collector.db\n"
             "cert = /etc/rocemeter/collector.pem\nkey = /etc/rocemeter/collector.key\n"
             "ca = /etc/rocemeter/ca.pem\npeer_name = exporter.rocemeter.test\n")
    ct.systemctl("start", "rocemeter-collect.service")
    st = ct.show("rocemeter-collect.service", "ActiveState", "Type", "StateDirectory")
    assert (st["ActiveState"], st["Type"], st["StateDirectory"]) == ("active", "notify", "rocemeter"), st
    mode = ct.run("stat", "-c", "%a", "/var/lib/rocemeter").stdout.strip()
    assert mode == "700"
    pid = int(ct.show("rocemeter-collect.service", "MainPID")["MainPID"])
    ct.run("systemctl", "kill", "-s", "HUP", "rocemeter-collect.service")
    ct.run("systemctl", "kill", "-s", "USR1", "rocemeter-collect.service")
    # The meter exports to it: a session starts, so the collector outlived the signals.
    conf = meter_conf().replace("collector = %s\nport = 4740" % HOST_ADDR, "collector = 127.0.0.1\nport = 4741")
    ct.write("/etc/rocemeter/%s.conf" % IFACE, conf)
    ct.systemctl("start", METER)
    wait_for(lambda: any("TLS 1.3 peer" in e["MESSAGE"] for e in ct.journal("rocemeter-collect.service")),
             "the meter's session with the container's collector")
    wait_session(ct, 1)
    ct.send([30, 32])
    wait_for(lambda: any(c["requestPacketTotalCount"] == 2 and c["state"] == "open" for c in status(ct)["contexts"]),
             "two requests")
    ct.systemctl("stop", METER)
    assert int(ct.show("rocemeter-collect.service", "MainPID")["MainPID"]) == pid
    ct.systemctl("stop", "rocemeter-collect.service")
    assert ct.show("rocemeter-collect.service", "Result")["Result"] == "success"
    out = ct.run(RM, "report", "--db", "/var/lib/rocemeter/collector.db", "--json").stdout
    epochs = [json.loads(line) for line in out.splitlines() if line.strip()]
    log = "\n".join(e["MESSAGE"] for e in ct.journal("rocemeter-collect.service"))
    assert any(e.get("outcome") == "complete" for e in epochs), "%r\n%s" % (epochs, log)
