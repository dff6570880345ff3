# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Per-command documentation: every command of `rocemeter --help` has a
manual page docs/man/rocemeter-COMMAND.8 with the sections SIGNALS,
ENVIRONMENT, FILES and EXIT STATUS, and every option its --help lists
appears there; `rocemeter help COMMAND` prints the command's --help; the
bash completion offers the commands and each command's options; `make
install` installs the pages and the completion. Needs the built binary, no
root."""
import os
import re
import subprocess

import pytest

from procs import ROCEMETER, ROOT  # tests/lib
from procs import rocemeter as run  # run(*args): `rocemeter ARGS`, its CompletedProcess


def commands():
    out = run("--help").stdout
    names = re.findall(r"^  ([a-z][a-z-]*) ", out.split("Commands:")[1], re.M)
    assert {"attach", "detach", "status", "replay", "connections", "collect", "report", "flowlabel"} <= set(names)
    return names


def options(cmd):
    p = run(cmd, "--help")
    assert p.returncode == 0, p.stderr
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", p.stdout)), set(re.findall(r"^\s+(-[a-zA-Z]),", p.stdout,
                                                                                         re.M))


@pytest.mark.parametrize("cmd", commands())
def test_man_page_has_every_option(cmd):
    path = os.path.join(ROOT, "docs", "man", "rocemeter-%s.8" % cmd)
    assert os.path.exists(path), "no manual page for " + cmd
    page = open(path).read()
    text = page.replace("\\-", "-")
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SIGNALS", "ENVIRONMENT", "FILES", "EXIT STATUS"):
        assert re.search(r"^\.SH %s$" % section, page, re.M), (cmd, section)
    longs, shorts = options(cmd)
    assert "--help" in longs
    for o in sorted(longs):
        assert re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(o), text), "%s: %s is not in %s" % (cmd, o, path)
    for o in sorted(shorts):
        assert re.search(r"(?<![\w-])%s," % re.escape(o), text), "%s: %s is not in %s" % (cmd, o, path)
    # groff reads it without warnings
    p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", path], capture_output=True, text=True)
    assert p.returncode == 0 and not p.stderr.strip(), p.stderr


@pytest.mark.parametrize("cmd", commands())
def test_help_command(cmd):
    a, b = run("help", cmd), run(cmd, "--help")
    assert a.returncode == b.returncode == 0
    assert a.stdout == b.stdout and a.stdout


def test_help_unknown_command():
    p = run("help", "nosuch")
    assert p.returncode == 2 and "unknown command 'nosuch'" in p.stderr


@pytest.mark.parametrize("args", [("nosuch",), ("help", "nosuch")])
def test_unknown_command_is_a_usage_line(args):
    """A mistyped command is a usage error: a plain "rocemeter: ..." line, not a timestamped log line."""
    p = run(*args)
    first = p.stderr.splitlines()[0]
    assert p.returncode == 2
    assert first.startswith("rocemeter: ") and "unknown command 'nosuch'" in first, first


def complete(words):
    """COMPREPLY of completion/rocemeter for the command line `words` (the last one is completed)."""
    script = ('source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _rocemeter; printf "%%s\\n" "${COMPREPLY[@]}"'
              % (os.path.join(ROOT, "completion", "rocemeter"), " ".join("'%s'" % w for w in words), len(words) - 1))
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return set(p.stdout.split())


def test_bash_completion():
    assert set(commands()) | {"help"} <= complete([ROCEMETER, ""])
    assert complete([ROCEMETER, "re"]) == {"reenable", "replay", "report"}
    assert complete([ROCEMETER, "attach", "--me"]) == {"--metrics"}
    assert options("report")[0] == complete([ROCEMETER, "report", "--"])
    assert complete([ROCEMETER, "report", "--format", ""]) == {"text", "json", "csv", "html"}
    # report --reason: the closure reasons' names ([SEQOBS] "Defined Masks"), as report's error lists them
    reasons = {"profileViolation", "captureDiscontinuity", "stateExhaustion", "serialDiscontinuity"}
    assert complete([ROCEMETER, "report", "--reason", ""]) == reasons
    assert all(r in run("report", "--help").stdout.replace("\n", " ") for r in reasons)
    assert complete([ROCEMETER, "help", "fl"]) == {"flowlabel"}
    assert complete([ROCEMETER, "co"]) == {"collect", "connections"}
    assert options("connections")[0] == complete([ROCEMETER, "connections", "--"])
    assert complete([ROCEMETER, "connections", "--live", "l"]) == {n for n in os.listdir("/sys/class/net")
                                                                   if n.startswith("l")}


def test_make_install_installs_pages_and_completion(tmp_path):
    p = subprocess.run(["make", "-C", ROOT, "-s", "install", "DESTDIR=%s" % tmp_path, "PREFIX=/usr"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    for cmd in commands():
        assert (tmp_path / "usr/share/man/man8" / ("rocemeter-%s.8" % cmd)).exists(), cmd
    assert (tmp_path / "usr/share/man/man8/rocemeter.8").exists()
    assert (tmp_path / "usr/share/bash-completion/completions/rocemeter").read_text() == \
        open(os.path.join(ROOT, "completion", "rocemeter")).read()
    assert (tmp_path / "usr/share/doc/rocemeter/json.md").exists()
    assert (tmp_path / "usr/share/doc/rocemeter/metrics.md").exists()
    assert (tmp_path / "usr/share/doc/rocemeter/prometheus/rocemeter-rules.yml").exists()


def test_flowlabel_spread_documented_and_completed():
    """`flowlabel spread` (a second word, user/common/command.h RM_SUBCOMMAND): its options are in
    the flowlabel page, `flowlabel --help` names it, and the completion offers it and its options."""
    p = run("flowlabel", "spread", "--help")
    assert p.returncode == 0 and p.stdout.startswith("Usage: rocemeter flowlabel spread"), p.stderr
    longs = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", p.stdout))
    shorts = set(re.findall(r"^\s+(-[a-zA-Z]),", p.stdout, re.M))
    text = open(os.path.join(ROOT, "docs", "man", "rocemeter-flowlabel.8")).read().replace("\\-", "-")
    for o in sorted(longs):
        assert re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(o), text), o
    for o in sorted(shorts):
        assert re.search(r"(?<![\w-])%s," % re.escape(o), text), o
    assert "rocemeter flowlabel spread" in run("flowlabel", "--help").stdout
    assert run("help", "flowlabel", "spread").stdout == p.stdout
    assert complete([ROCEMETER, "flowlabel", "sp"]) == {"spread"}
    assert complete([ROCEMETER, "flowlabel", "spread", "--"]) == longs
    assert complete([ROCEMETER, "flowlabel", "spread", "--switch-hash", "crc32"]) == {"crc32-lo", "crc32-hi"}
    assert complete([ROCEMETER, "flowlabel", "spread", "--key", "5"]) == {"5tuple", "5tuple+label"}
    assert complete([ROCEMETER, "collect", "--key", "/etc/host"]) >= {"/etc/hostname"}
