# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Killing, freezing and reaping a `rocemeter collect` process under test, and
killing it while it reads (selftests/system/test_collector_store.py and
test_collector_clickhouse.py: docs/collector.md "What the dead run had read").
Not a test file itself.

A collector here is the harness of selftests/system/test_collector.py (or a
subclass): .proc its subprocess.Popen, .err its open log file, .port, .log(),
.connect(cert), .wait_for(cond, what).

What the collector had read comes from the kernel, not from the collector:
the octets sent minus the exporter's unacknowledged ones (TIOCOUTQ) and the
collector's unread ones (ss's Recv-Q), the collector frozen with SIGSTOP
first so that neither changes.
"""
import fcntl
import os
import signal
import struct
import subprocess
import termios
import time

WAIT = 60.0  # bound for the process to die; never a timing assertion


def freeze(c):
    """SIGSTOP the collector: its sockets stay open, it reads nothing more."""
    os.kill(c.proc.pid, signal.SIGSTOP)


def kill9(c, *socks):
    """kill -9 the collector and wait for it; then close socks (an exporter's sockets) and its log."""
    c.proc.send_signal(signal.SIGKILL)
    c.proc.wait(timeout=WAIT)
    for s in socks:
        s.close()
    c.err.close()


def reap(c):
    """In a finally: a collector still running after a failure before its kill is killed."""
    if c.proc.poll() is None:
        c.proc.kill()
        c.proc.wait()


def unread_octets(port):
    """Octets the kernel holds for the collector's end of its connection on port (Recv-Q, from ss)."""
    out = subprocess.run(["ss", "-tnH", "state", "established", f"( sport = :{port} )"], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out, "no established connection of the collector"
    return int(out[0])


def send_then_freeze(c, s, payload, freeze_at):
    """Send payload on the non-blocking socket s in paced chunks (so that the collector reads as it
    goes); once freeze_at octets are out, SIGSTOP the collector and go on until the kernel takes no
    more (its buffers full) or everything is out. The octets the socket took."""
    s.setblocking(False)
    sent, frozen, stuck_since = 0, False, None
    while sent < len(payload):
        if not frozen and sent >= freeze_at:
            freeze(c)
            frozen = True
        try:
            sent += s.send(payload[sent:sent + 16384])
            stuck_since = None
            if not frozen:
                time.sleep(0.0005)
        except BlockingIOError:
            if frozen and stuck_since is not None and time.monotonic() - stuck_since > 0.5:
                break
            stuck_since = stuck_since or time.monotonic()
            time.sleep(0.001)
    if not frozen:
        freeze(c)
    time.sleep(0.3)  # loopback: what is in flight has arrived
    return sent


def kill_while_reading(c, templates, msgs, freeze_at, ready=None, before_kill=None):
    """A plain-TCP session of the Templates Message then msgs (Data Messages of 100 records each, all
    the same length) sent until the collector is frozen (SIGSTOP) at freeze_at octets of them, then
    kill -9. Returns the records the collector had read in whole Messages, computed from the socket's
    queues (the exporter's octets not acknowledged, TIOCOUTQ; the collector's unread ones, ss), the
    octets of a Message it had read in part, and the records sent."""
    assert len({len(m) for m in msgs}) == 1
    size = len(msgs[0])
    s = c.connect("plain")
    s.sendall(templates)
    c.wait_for(lambda: "started (plain TCP" in c.log(), "the session admitted")
    if ready:
        ready()
    sent = send_then_freeze(c, s, b"".join(msgs), freeze_at)
    unacked = struct.unpack("i", fcntl.ioctl(s.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]
    unread = unread_octets(c.port)
    read = sent - unacked - unread  # of the data Messages (the Templates were read before)
    assert 0 <= read <= sent, (sent, unacked, unread)
    if before_kill:
        before_kill()
    kill9(c, s)
    return (read // size) * 100, read % size, sent // size * 100
