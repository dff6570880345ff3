# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""`rocemeter replay` over every shared capture in the sanitizer build (make
check-sanitize: ASan and UBSan, halt_on_error, no recovery; it once found
qsort(NULL, 0) in user/meter/reporter.c at a report with no open context).
Three runs over all captures as one stream, each through other writers and
limits (JSON Lines with periodic reports, the IPFIX file and the statistics;
the wide text with a tiny window and context table, mirror decapsulation):
each must exit 0 without a sanitizer report, and print byte for byte what
the plain build prints, so that the instrumented run is the one CI checks.

Skipped outside check-sanitize (ROCEMETER_SANITIZED unset): with two plain
builds the comparison says nothing. Needs root (BPF_PROG_TEST_RUN).
"""
import glob
import os
import subprocess

import pytest

import rocetest as rt  # tests/lib

PLAIN = os.environ.get("ROCEMETER_PLAIN", os.path.join(rt.ROOT, "build", "rocemeter"))
CAPTURES = sorted(glob.glob(os.path.join(rt.PCAPS, "*.pcap")) + glob.glob(os.path.join(rt.PCAPS, "*.pcapng")))

pytestmark = [
    pytest.mark.skipif(not os.environ.get("ROCEMETER_SANITIZED"), reason="the sanitizer build only (make check-sanitize)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (BPF)"),
]

RUNS = {
    "json": ["--provision-all", "--json", "--report-interval", "100", "--ipfix-out", "{d}/r.ipfix",
             "--stats-json", "{d}/stats.json"],
    "text-limits": ["--provision-all", "--wide", "--window", "4", "--max-contexts", "8", "--report-interval", "10",
                    "--stats-json", "{d}/stats.json"],
    "mirrors": ["--provision-all", "--encapsulation", "auto", "--json", "--stats-json", "{d}/stats.json"],
}


def replay(binary, args, d):
    os.makedirs(d, exist_ok=True)
    p = subprocess.run([binary, "replay", *[a.format(d=d) for a in args], *CAPTURES], capture_output=True,
                       timeout=600, stdin=subprocess.DEVNULL)
    files = {f: open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))}
    return p, files


@pytest.mark.parametrize("run", sorted(RUNS))
def test_replay_every_capture_clean_and_as_the_plain_build(tmp_path, run):
    assert len(CAPTURES) >= 20, "the shared captures (%s)" % rt.PCAPS
    san, san_files = replay(rt.ROCEMETER, RUNS[run], str(tmp_path / "san"))
    err = san.stderr.decode(errors="replace")
    assert "runtime error" not in err and "Sanitizer" not in err, err[-4000:]
    assert san.returncode == 0, err[-4000:]
    plain, plain_files = replay(PLAIN, RUNS[run], str(tmp_path / "plain"))
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert san.stdout == plain.stdout and len(san.stdout) > 0
    assert san_files == plain_files
