# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The Debian package (`make deb`): built with the Debian tools, lintian without
errors, installed with dpkg into the bookworm container of test_service.py (the
same cached root, the same overlay and namespaces), used, and purged.

    network namespace H (made here)            the container (namespace C)
    tcpreplay RoCEv2 frames on rmshPID ----->  rm-cPID: rocemeter@rm-cPID.service (from the .deb)
                                               exporting to rocemeter-collect.service on 127.0.0.1:4741

Expected values come from dpkg and systemd (dpkg-query, dpkg -L, systemctl) and
from the frames the test sends; the tests run in file order on one container.
"""
import json
import os
import re
import shutil
import subprocess

import pytest

import rocetest as rt  # tests/lib: frames and captures
import test_service as svc  # the container, its namespaces, the meter's configuration

ROOT = rt.ROOT
RM = "/usr/sbin/rocemeter"
CONFFILES = {"/etc/rocemeter/example.conf", "/etc/rocemeter/collect.conf.example"}
COLLECT = "rocemeter-collect.service"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (dpkg, systemd-nspawn, BPF)")


@pytest.fixture(scope="module")
def deb():
    for tool in ("dpkg-buildpackage", "dh", "lintian", "fakeroot"):
        assert shutil.which(tool), "%s missing: run 'make deps'" % tool
    p = svc.sh("make", "-C", ROOT, "-s", "--no-print-directory", "deb", timeout=1200)
    m = re.search(r"^deb: (\S+\.deb)$", p.stdout, re.M)
    assert m, p.stdout
    path = os.path.join(ROOT, m.group(1))
    assert os.path.isfile(path)
    return path


class PackageContainer(svc.Container):
    """test_service.py's container without `make install`: the package comes in with dpkg."""

    def install(self):
        os.makedirs(os.path.join(self.merged, "etc", "rocemeter"), exist_ok=True)  # the operator's PKI


@pytest.fixture(scope="module")
def ct(deb):
    p = svc.sh(os.path.join(ROOT, "scripts", "container-root"), check=False, timeout=1800)
    if p.returncode == 3:
        pytest.skip("NO NETWORK TO THE DEBIAN MIRROR: cannot debootstrap the container root")
    assert p.returncode == 0, "scripts/container-root failed: " + p.stderr[-3000:]
    c = PackageContainer(p.stdout.strip())
    try:
        c.build()
        c.boot()
        shutil.copy(deb, os.path.join(c.merged, "var", "tmp", "rocemeter.deb"))
        yield c
    finally:
        c.close()


def test_lintian_has_no_errors(deb):
    changes = deb[: -len(".deb")] + ".changes"
    p = subprocess.run(["lintian", "--fail-on", "error", changes], capture_output=True, text=True, timeout=300)
    errors = [line for line in p.stdout.splitlines() if line.startswith("E:")]
    assert p.returncode == 0 and not errors, p.stdout + p.stderr


def test_install_registers_units_conffiles_tmpfiles(ct):
    ct.run("dpkg", "-i", "/var/tmp/rocemeter.deb", timeout=300)
    st = ct.run("dpkg-query", "-W", "-f=${Status}", "rocemeter").stdout
    assert st == "install ok installed", st
    # its Depends met by dpkg -i alone: libjs-d3 among them (the D3 of report --format html)
    assert "libjs-d3" in ct.run("dpkg-query", "-W", "-f=${Depends}", "rocemeter").stdout
    conffiles = ct.run("dpkg-query", "-W", "-f=${Conffiles}", "rocemeter").stdout.split()
    assert CONFFILES <= set(conffiles), conffiles
    for unit, path in ((COLLECT, "/lib/systemd/system/" + COLLECT),
                       (svc.METER, "/lib/systemd/system/rocemeter@.service")):
        text = ct.run("systemctl", "cat", unit).stdout
        assert text.startswith("# " + path), text[:200]
        assert "ExecStart=%s " % RM in text, text
    # Installed, neither enabled nor started: the meter is per interface, the collector needs its file.
    assert ct.run("systemctl", "is-enabled", COLLECT, check=False).stdout.strip() == "disabled"
    assert ct.show(COLLECT, "ActiveState")["ActiveState"] == "inactive"
    # tmpfiles made the run directory at installation.
    assert ct.run("stat", "-c", "%a %U", "/run/rocemeter").stdout.split() == ["755", "root"]
    # Both units run as root (capabilities bounded): the package makes no account.
    assert ct.run("getent", "passwd", "rocemeter", check=False).returncode == 2
    assert ct.run(RM, "--version").stdout.strip() == "rocemeter 0.1.0"


def test_meter_and_collector_units_report_epochs(ct):
    """The packaged units end to end: the meter on the veth exports to the packaged
    collector; `rocemeter report` shows the epoch of the frames sent."""
    ct.write("/etc/rocemeter/collect.conf",
             "[collect]\nlisten = 127.0.0.1:4741\ndb = /var/lib/rocemeter/collector.db\n"
             "cert = /etc/rocemeter/collector.pem\nkey = /etc/rocemeter/collector.key\n"
             "ca = /etc/rocemeter/ca.pem\npeer_name = exporter.rocemeter.test\n")
    ct.systemctl("start", COLLECT)
    assert ct.show(COLLECT, "ActiveState")["ActiveState"] == "active"
    conf = svc.meter_conf().replace("collector = %s\nport = 4740" % svc.HOST_ADDR, "collector = 127.0.0.1\nport = 4741")
    ct.write("/etc/rocemeter/%s.conf" % svc.IFACE, conf)
    ct.systemctl("start", svc.METER)
    svc.wait_session(ct, 1)
    ct.send([1, 2, 4])

    def metered():
        s = json.loads(ct.run(RM, "status", svc.IFACE, "--json").stdout)[0]
        return s["meter"]["eligible_requests"] == 3
    svc.wait_for(metered, "3 eligible requests")
    ct.systemctl("stop", svc.METER)  # final reports
    svc.wait_for(lambda: any("peer closed the session" in e["MESSAGE"] for e in ct.journal(COLLECT)),
                 "the collector to see the session end")
    out = ct.run(RM, "report", "--db", "/var/lib/rocemeter/collector.db", "--json").stdout
    epochs = [json.loads(line) for line in out.splitlines() if line.strip()]
    done = [e for e in epochs if e.get("outcome") == "complete"]
    assert done and done[-1]["key"]["rdmaDestinationQP"] == svc.QP, epochs
    o = done[-1]["observed"]
    # 1, 2, 4: three requests, 3 skipped and, at the final report, abandoned.
    assert (o["requestPacketTotalCount"], o["skippedPsnTotalCount"], o["abandonedPsnTotalCount"]) == (3, 1, 1), o
    # On the installed host report alone reads the store of /etc/rocemeter/collect.conf, and the HTML page
    # inlines D3 from libjs-d3, a Depends of the package (before: the usage, and D3 missing).
    assert ct.run(RM, "report", "--json").stdout == out
    ct.run(RM, "report", "--format", "html", "--output", "/var/tmp/report.html")
    assert ct.run("grep", "-c", "var d3={version:", "/var/tmp/report.html").stdout.strip() == "1"
    ct.systemctl("start", svc.METER)  # left running: the purge must stop it


def test_purge_leaves_nothing_behind(ct):
    files = [f for f in ct.run("dpkg", "-L", "rocemeter").stdout.splitlines()
             if f and ct.run("test", "-f", f, check=False).returncode == 0]
    assert RM in files and CONFFILES <= set(files)
    pins = json.loads(ct.run(RM, "status", svc.IFACE, "--json").stdout)[0]["pins"]
    assert os.path.isdir(pins)
    ct.run("apt-get", "purge", "-y", "rocemeter", timeout=300)
    assert ct.run("dpkg-query", "-W", "-f=${Status}", "rocemeter", check=False).stdout.strip() in ("", "unknown ok not-installed")
    left = [f for f in files if ct.run("test", "-e", f, check=False).returncode == 0]
    assert not left, left
    for unit in (COLLECT, svc.METER):
        assert ct.run("systemctl", "cat", unit, check=False).returncode != 0
    assert ct.show(svc.METER, "ActiveState")["ActiveState"] == "inactive"  # prerm stopped the instance
    assert not os.path.exists(pins)  # the stopped meter removed its pins
    for d in ("/var/lib/rocemeter", "/run/rocemeter"):
        assert ct.run("test", "-e", d, check=False).returncode != 0, d
    # What the operator wrote stays: the PKI and the two configurations, nothing of the package.
    etc = set(os.listdir(os.path.join(ct.merged, "etc", "rocemeter")))
    assert etc == {"ca.pem", "exporter.pem", "exporter.key", "collector.pem", "collector.key",
                   "collect.conf", svc.IFACE + ".conf"}, etc
    assert ct.run("getent", "passwd", "rocemeter", check=False).returncode == 2
