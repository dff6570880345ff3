# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""The store options of `collect` and `report` as an operator meets them, with
a SQLite store (no server, no root, no network): the same short option for
--store in both commands, the help and manual page naming "the store" (SQLite
or ClickHouse), the errors of report on a directory, a missing file and an
uninitialised file, and --limits on a store without a collector run (nothing
to report: exit 0, as report --help documents). Expected texts come from the
C library's strerror (os.strerror) and docs/fleet.md."""
import errno
import os
import sqlite3

from procs import ROOT  # tests/lib
from procs import rocemeter as run  # run(*args): `rocemeter ARGS`, its CompletedProcess


def tables(path):
    with sqlite3.connect(path) as db:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_short_store_option_is_S_in_collect_and_report(tmp_path):
    """-S is --store in both commands; -s stays report's --since."""
    db = tmp_path / "s.db"
    p = run("collect", "--store-init", "-S", "sqlite:%s" % db)
    assert p.returncode == 0, p.stderr
    assert "runs" in tables(db)
    p = run("report", "-S", "sqlite:%s" % db, "-s", "1h")
    assert p.returncode == 0 and p.stdout == "", p.stderr
    for cmd in ("collect", "report"):
        assert "  -S, --store STORE" in run(cmd, "--help").stdout
    assert "  -s, --since T" in run("report", "--help").stdout
    assert "-s, --store" not in run("collect", "--help").stdout


def test_collect_help_and_man_say_the_store():
    """collect stores into the store of --store, SQLite or ClickHouse, not "in SQLite"."""
    help_text = run("collect", "--help").stdout
    with open(os.path.join(ROOT, "docs", "man", "rocemeter-collect.8")) as f:
        man = f.read()
    summary = [line for line in run("--help").stdout.splitlines() if line.startswith("  collect ")]
    for text in (help_text, man, summary[0]):
        assert "in SQLite" not in text
    assert "store epoch outcomes in the store (SQLite or ClickHouse" in " ".join(help_text.split())
    assert "in the store (SQLite or ClickHouse)" in man
    assert "ClickHouse" in summary[0]


def test_report_on_a_directory(tmp_path):
    p = run("report", "--store", "sqlite:%s" % tmp_path)
    assert p.returncode == 1
    assert p.stderr == "rocemeter report: %s: %s\n" % (tmp_path, os.strerror(errno.EISDIR)), p.stderr
    # collect says the same
    p = run("collect", "--store-init", "--store", "sqlite:%s" % tmp_path)
    assert p.returncode == 1 and p.stderr.endswith("%s: %s\n" % (tmp_path, os.strerror(errno.EISDIR))), p.stderr


def test_report_on_a_missing_file(tmp_path):
    p = run("report", "--store", "sqlite:%s/none.db" % tmp_path)
    assert p.returncode == 1
    assert p.stderr == "rocemeter report: %s/none.db: %s\n" % (tmp_path, os.strerror(errno.ENOENT)), p.stderr
    assert not os.path.exists(tmp_path / "none.db")  # report never creates a store


def test_report_on_an_uninitialised_file(tmp_path):
    """A SQLite file without the collector's tables: say how to create them."""
    f = tmp_path / "zero.db"
    f.write_bytes(b"")
    for args in ((), ("--limits",)):
        p = run("report", "--store", "sqlite:%s" % f, *args)
        assert p.returncode == 1
        assert "run 'rocemeter collect --store-init --store sqlite:%s'" % f in p.stderr, p.stderr


def test_limits_without_a_collector_run(tmp_path):
    """An initialised store no collector has run on: nothing to report, exit 0 (report --help)."""
    db = tmp_path / "empty.db"
    assert run("collect", "--store-init", "--store", "sqlite:%s" % db).returncode == 0
    p = run("report", "--store", "sqlite:%s" % db, "--limits")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "no collector run recorded\n" and p.stderr == ""
    p = run("report", "--store", "sqlite:%s" % db, "--limits", "--json")
    assert p.returncode == 0 and p.stdout == "" and p.stderr == "", p.stderr
    assert ("0 ok (also nothing to report: no epoch matches, or --limits on a store\n"
            "without a collector run)") in run("report", "--help").stdout


def test_outcome_error_names_output(tmp_path):
    """`report --format html -o F`: -o is --outcome, -O is --output (-o reads
    as "output" to many). The error names the outcomes and the option that writes a file;
    a real outcome given to -o still filters (exit 0)."""
    db = tmp_path / "o.db"
    assert run("collect", "--store-init", "-S", "sqlite:%s" % db).returncode == 0
    page = tmp_path / "r.html"
    p = run("report", "-S", "sqlite:%s" % db, "--format", "html", "-o", str(page))
    assert p.returncode == 2, p
    assert ("--outcome (-o) takes one of complete, incomplete, invalid, open, not '%s'; "
            "to write a file use --output (-O)" % page) in p.stderr, p.stderr
    assert not page.exists()
    p = run("report", "-S", "sqlite:%s" % db, "-o", "invalid")
    assert p.returncode == 0, p.stderr


def test_output_is_not_the_store(tmp_path):
    """`report --format html -O` naming the SQLite store itself (by another
    spelling or a symlink) or its -wal, -shm or -journal file is a usage error
    (exit 2) naming both, and the store is left as it was (trial: the page
    overwrote c1.db, exit 0). Another file is written as before."""
    db = tmp_path / "c1.db"
    assert run("collect", "--store-init", "-S", "sqlite:%s" % db).returncode == 0
    before = db.read_bytes()
    (tmp_path / "link.db").symlink_to(db)
    (tmp_path / "c1.db-wal").write_bytes(b"")  # -wal exists, -shm and -journal do not
    for out in (db, tmp_path / "." / "c1.db", tmp_path / "link.db", tmp_path / "c1.db-wal",
                tmp_path / "c1.db-shm", tmp_path / "c1.db-journal"):
        p = run("report", "-d", str(db), "--format", "html", "-O", str(out))
        assert p.returncode == 2, (out, p)
        assert "--output %s is the store's file %s" % (out, db) in p.stderr, p.stderr
        assert db.read_bytes() == before
    assert not (tmp_path / "c1.db-shm").exists() and not (tmp_path / "c1.db-journal").exists()
    assert (tmp_path / "c1.db-wal").read_bytes() == b""
    page = tmp_path / "c1.html"
    p = run("report", "-S", "sqlite:%s" % db, "--format", "html", "-O", str(page))
    assert p.returncode == 0, p.stderr
    assert page.read_text().startswith("<!DOCTYPE html>")


def test_output_error_names_the_given_path(tmp_path):
    """-O in a missing directory: the error names the path given, not the temporary file (trial)."""
    db = tmp_path / "o.db"
    assert run("collect", "--store-init", "-S", "sqlite:%s" % db).returncode == 0
    out = str(tmp_path / "nonexistdir" / "x.html")
    p = run("report", "-S", "sqlite:%s" % db, "--format", "html", "-O", out)
    assert p.returncode == 1, p
    assert "%s: %s" % (out, os.strerror(errno.ENOENT)) in p.stderr and ".tmp." not in p.stderr, p.stderr
