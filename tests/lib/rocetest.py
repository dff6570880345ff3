# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Shared helpers of the replay/meter tests (tests/test_replay_*.py,
selftests/bpf/test_meter_parse.py). Not a test file itself.

- RoCEv2 frame construction with scapy (Ethernet, 802.1Q/802.1ad tags,
  IPv4/IPv6 + extension headers, UDP 4791) and BTH/extended-header bytes
  written here from [IBPKT]'s layout tables, plus a 4-byte ICRC
  placeholder (the meter does not check the ICRC).
- Capture writing with scapy's PcapWriter (nanosecond timestamps, optional
  wire length > captured length to imitate a snap length).
- `run_replay`: runs the already built build/rocemeter replay.
- `tshark_frames`: tshark as the independent decoder of captures.
- `SeqEpoch` / `ReplayModel`: an independent Python model of [SEQOBS]
  ("Applicability and Provisioning", "Bounded Sequence Observation
  Algorithm", "Per-Request Transitions", "Qualification Flags") and of what
  `rocemeter replay --help` and docs/architecture.md "Time" document (final
  report per closure, non-final reports of changed epochs at the
  --report-interval boundaries of capture time, finals at end of input, the
  capture clock made non-decreasing).
  It keeps the PENDING positions as explicit intervals: it shares nothing
  with the bitmap engine in include/rocemeter/seqobs.h.
- `compare_reports`: expected reports against the tool's JSON Lines.
"""
import ipaddress
import json
import os
import re
import struct
import subprocess
from collections import Counter
from decimal import Decimal

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
from scapy.packet import Raw
from scapy.utils import PcapWriter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")
ROCEMETER = os.environ.get("ROCEMETER", os.path.join(ROOT, BUILD, "rocemeter"))
# The project's shared captures: ROCEMETER_PCAPS, or shared/ beside the
# checkout (as CI lays it out).
PCAPS = os.environ.get("ROCEMETER_PCAPS") or os.path.join(ROOT, "..", "shared", "data", "pcaps")

M = 1 << 24
HALF = 1 << 23

# rdmaSequenceFlags masks ([SEQOBS] "Qualification Flags").
FINAL = 0x0001
PROFILE_VIOLATION = 0x0002
CAPTURE_DISCONTINUITY = 0x0004
STATE_EXHAUSTION = 0x0008
SERIAL_DISCONTINUITY = 0x0010
GENERATION_UNVERIFIED = 0x0020


def stat_table(descriptions=False):
    """The meter's statistics as (enum suffix, name) pairs -- or (suffix,
    name, description) -- in index order: the one list RM_STATS(X) in
    include/rocemeter/meter.h (enum rm_stat, the names of `status` and
    --stats-json, and their descriptions)."""
    with open(os.path.join(ROOT, "include", "rocemeter", "meter.h")) as f:
        text = f.read()
    body = re.search(r"#define RM_STATS\(X\)(.*?)\n\n", text, re.S).group(1)
    body = re.sub(r"\\\n", " ", body)
    rows = re.findall(r'X\((\w+),\s*"(\w+)",\s*\w+,\s*"((?:[^"\\]|\\.)*)"\)', body)
    return rows if descriptions else [(suffix, name) for suffix, name, _ in rows]


# Statistic names (RM_STATS in include/rocemeter/meter.h).
STAT_NAMES = [name for _, name in stat_table()]

# ---------------------------------------------------------------------------
# BTH opcodes ([IBPKT] "BTH Opcode master table") and the extended headers
# that follow them ("Operation -> Extended Header mapping"), in bytes.
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_LAST_IMM, SEND_ONLY, SEND_ONLY_IMM = range(0x00, 0x06)
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_LAST_IMM, WRITE_ONLY, WRITE_ONLY_IMM = range(0x06, 0x0C)
READ_REQUEST = 0x0C
READ_RESP_FIRST, READ_RESP_MIDDLE, READ_RESP_LAST, READ_RESP_ONLY = range(0x0D, 0x11)
ACK, ATOMIC_ACK, CMP_SWAP, FETCH_ADD = 0x11, 0x12, 0x13, 0x14
SEND_LAST_INV, SEND_ONLY_INV = 0x16, 0x17
UC_SEND_ONLY = 0x24
UD_SEND_ONLY = 0x64
CNP = 0x81

RETH, IMMDT, AETH, ATOMICETH, ATOMICACKETH, IETH, DETH = 16, 4, 4, 28, 8, 4, 8
_EXT_BY_SUFFIX = {
    0x03: IMMDT, 0x05: IMMDT, 0x06: RETH, 0x09: IMMDT, 0x0A: RETH, 0x0B: RETH + IMMDT,
    0x0C: RETH, 0x0D: AETH, 0x0F: AETH, 0x10: AETH, 0x11: AETH, 0x12: AETH + ATOMICACKETH,
    0x13: ATOMICETH, 0x14: ATOMICETH, 0x16: IETH, 0x17: IETH,
}


def ext_len(opcode):
    """Bytes of extended transport headers after the BTH for this opcode."""
    svc, op = opcode & 0xE0, opcode & 0x1F
    if svc == 0x60:  # UD: DETH (+ ImmDt)
        return DETH + (IMMDT if op == 0x05 else 0)
    if svc in (0x00, 0x20):  # RC, UC
        return _EXT_BY_SUFFIX.get(op, 0)
    return 0


def bth(opcode, qp, psn, pkey=0xFFFF, tver=0, padcnt=0, se=0, mig=0, ackreq=0, fecn=0, becn=0):
    """The 12-byte BTH, laid out as in [IBPKT] ("Base Transport Header")."""
    return (bytes([opcode, (se << 7) | (mig << 6) | (padcnt << 4) | tver])
            + struct.pack("!H", pkey) + bytes([(fecn << 7) | (becn << 6)])
            + qp.to_bytes(3, "big") + bytes([ackreq << 7]) + psn.to_bytes(3, "big"))


def roce_payload(opcode, qp, psn, pkey=0xFFFF, data=b"\x5a" * 8, tver=0, padcnt=0, ext=None, ackreq=1):
    """UDP payload: BTH + extended headers (pattern bytes) + data + pad + ICRC
    placeholder. ext overrides the extended-header length (to build malformed
    requests)."""
    n = ext_len(opcode) if ext is None else ext
    return (bth(opcode, qp, psn, pkey=pkey, tver=tver, padcnt=padcnt, ackreq=ackreq)
            + bytes((0x11 * (i + 1)) & 0xFF for i in range(n)) + data + b"\0" * padcnt
            + b"\xde\xad\xbe\xef")  # ICRC placeholder


def l2(vlans=(), outer_8021ad=False):
    """Ethernet plus VLAN tags (outer first). outer_8021ad: the outer tag uses
    TPID 0x88A8 (QinQ)."""
    pkt = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    for i, v in enumerate(vlans):
        pkt = pkt / (Dot1AD(vlan=v) if (i == 0 and outer_8021ad) else Dot1Q(vlan=v))
    return pkt


def family_of(addr):
    return 6 if ":" in addr else 4


def roce_frame(src, dst, qp, psn, opcode=SEND_ONLY, pkey=0xFFFF, vlans=(), outer_8021ad=False,
               sport=49152, dport=4791, ip_options=None, ext6=(), payload=None, **kw):
    """A RoCEv2 frame as bytes. ext6: scapy IPv6 extension header layers
    placed between IPv6 and UDP. payload: the UDP payload (default a
    well-formed BTH + headers for opcode)."""
    if payload is None:
        payload = roce_payload(opcode, qp, psn, pkey=pkey, **kw)
    if family_of(src) == 4:
        ip = IP(src=src, dst=dst, ttl=64, options=ip_options) if ip_options else IP(src=src, dst=dst, ttl=64)
    else:
        ip = IPv6(src=src, dst=dst, hlim=64)
        for h in ext6:
            ip = ip / h
    return bytes(l2(vlans, outer_8021ad) / ip / UDP(sport=sport, dport=dport) / Raw(payload))


class Frame:
    """One capture record: bytes, arrival time (UNIX ns), wire length."""

    def __init__(self, data, ts_ns, wirelen=None):
        self.data = bytes(data)
        self.ts_ns = ts_ns
        self.wirelen = len(self.data) if wirelen is None else wirelen


T0 = 1_700_000_000 * 10**9  # a capture start time, UNIX ns


def write_pcap(path, frames, linktype=1, snaplen=65535):
    """frames: iterable of Frame. Nanosecond pcap (libpcap >= 1.5 reads it).
    snaplen: the file header's snap length (262144 lets a frame of more than
    64 KiB in whole, as tcpdump writes GRO/GSO frames)."""
    w = PcapWriter(path, linktype=linktype, nano=True, sync=True, snaplen=snaplen)
    w.write_header(None)
    for f in frames:
        w.write_packet(f.data, sec=f.ts_ns // 10**9, usec=f.ts_ns % 10**9, wirelen=f.wirelen)
    w.close()


# ---------------------------------------------------------------------------
# Running the tool.

class Replay:
    def __init__(self, proc, stats):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.stats = stats
        self.reports = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()] \
            if proc.returncode == 0 else []


def run_replay(pcaps, tmp_path, *args):
    """build/rocemeter replay --json --stats-json FILE ARGS PCAPS."""
    if isinstance(pcaps, (str, os.PathLike)):
        pcaps = [pcaps]
    stats_file = os.path.join(str(tmp_path), "stats-%d.json" % os.getpid())
    if os.path.exists(stats_file):
        os.unlink(stats_file)
    cmd = [ROCEMETER, "replay", "--json", "--stats-json", stats_file] + [str(a) for a in args] \
        + [str(p) for p in pcaps]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    stats = None
    if os.path.exists(stats_file):
        with open(stats_file) as f:
            stats = json.load(f)
        os.unlink(stats_file)
    return Replay(proc, stats)


def pin_dir(ifname, netns=None, bpffs=None):
    """BPFFS/rocemeter/NETNS/IFINDEX, the pin directory of interface ifname
    (user/common/paths.h, docs/service.md): netns is the name of a network
    namespace under /run/netns, or None for this process's own."""
    bpffs = bpffs or os.environ.get("ROCEMETER_BPFFS") or "/sys/fs/bpf"
    ns = ["-n", netns] if netns else []
    link = subprocess.run(["ip", *ns, "-j", "link", "show", "dev", ifname], capture_output=True, text=True,
                          check=True).stdout
    ifindex = json.loads(link)[0]["ifindex"]
    ino = os.stat("/run/netns/" + netns if netns else "/proc/self/ns/net").st_ino
    return os.path.join(bpffs, "rocemeter", str(ino), str(ifindex))


def derived_observation_point(ifname, netns=None):
    """The observationPointId `attach` derives for ifname without observation_point_id
    (docs/configuration.md "observation_point_id"), computed here with hashlib from
    /etc/machine-id and what ethtool -P and ip(8) say of the interface: SHA-256 of
    machine-id, NUL, the name, NUL, the permanent address (or, when ethtool reports
    none or all zeros, the current Ethernet address); its first 8 octets big-endian, bits 63 and 62 set to 0 and 1."""
    import hashlib
    pre = ["ip", "netns", "exec", netns] if netns else []
    with open("/etc/machine-id") as f:
        mid = f.read().strip()
    perm = subprocess.run([*pre, "ethtool", "-P", ifname], capture_output=True, text=True, check=True).stdout
    perm = perm.split("address:")[1].strip()  # "not set" when the device has none
    mac = b"" if perm == "not set" else bytes.fromhex(perm.replace(":", ""))
    if not any(mac):
        link = json.loads(subprocess.run([*pre, "ip", "-j", "link", "show", "dev", ifname], capture_output=True,
                                         text=True, check=True).stdout)[0]
        mac = bytes.fromhex(link["address"].replace(":", "")) if link.get("link_type") == "ether" else b""
    d = hashlib.sha256(mid.encode() + b"\0" + ifname.encode() + b"\0" + mac).digest()
    return int.from_bytes(d[:8], "big") % (1 << 62) + (1 << 62)


def report_key(r):
    """(family, src, dst, dest QP, P_Key) of a JSON report."""
    if "sourceIPv4Address" in r:
        fam, s, d = 4, r["sourceIPv4Address"], r["destinationIPv4Address"]
    else:
        fam, s, d = 6, r["sourceIPv6Address"], r["destinationIPv6Address"]
    return (fam, ipaddress.ip_address(s), ipaddress.ip_address(d), r["rdmaDestinationQP"],
            r["rdmaPartitionKey"])


def make_key(src, dst, qp, pkey=0xFFFF):
    return (family_of(src), ipaddress.ip_address(src), ipaddress.ip_address(dst), qp, pkey)


# ---------------------------------------------------------------------------
# tshark, the independent decoder.

TSHARK_FIELDS = ["frame.time_epoch", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "udp.dstport",
                 "infiniband.bth.destqp", "infiniband.bth.opcode", "infiniband.bth.psn",
                 "infiniband.bth.p_key"]


def tshark_frames(path):
    """Every frame of a capture as decoded by tshark: a list of dicts with
    ts_ns and, for UDP destination port 4791, rec = Rec. Frames with UDP
    source port 69 are dissected as TFTP by default: decode port 69 as
    InfiniBand too (only 4791-destination frames are used as RoCEv2)."""
    cmd = ["tshark", "-n", "-r", path, "-d", "udp.port==69,infiniband", "-T", "fields",
           "-E", "separator=\t", "-E", "occurrence=f"]
    for f in TSHARK_FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300).stdout
    frames = []
    for line in out.splitlines():
        v = dict(zip(TSHARK_FIELDS, line.split("\t")))
        ts_ns = int(Decimal(v["frame.time_epoch"]) * 10**9)
        rec = None
        if v.get("udp.dstport") == "4791":
            assert v["infiniband.bth.opcode"], "tshark did not decode a BTH: %r" % line
            src = v["ip.src"] or v["ipv6.src"]
            dst = v["ip.dst"] or v["ipv6.dst"]
            rec = Rec(make_key(src, dst, int(v["infiniband.bth.destqp"], 0), int(v["infiniband.bth.p_key"], 0)),
                      int(v["infiniband.bth.opcode"], 0), int(v["infiniband.bth.psn"], 0))
        frames.append({"ts_ns": ts_ns, "rec": rec})
    return frames


# ---------------------------------------------------------------------------
# The model.

class Rec:
    """A parsed RoCEv2 frame as the model sees it."""

    def __init__(self, key, opcode, psn, malformed=False, irregular=None):
        self.key = key
        self.opcode = opcode
        self.psn = psn
        self.malformed = malformed  # malformed BTH/extended headers ([SEQOBS]: profile violation)
        # The BTH was read, but the frame has a form the meter does not meter
        # (the statistic of its cause: ip_fragments for a first fragment,
        # unsupported_encapsulation, unsupported_tpid, malformed_udp for a UDP
        # length beyond the IP payload). A request in such a frame closes its
        # connection's epoch: captureDiscontinuity (the meter could not
        # observe it), or profileViolation for malformed_udp.
        self.irregular = irregular


def pool_windows(window, max_contexts=65536, max_windows=0):
    """Windows in the meter's pool (docs/configuration.md max_windows): the
    configured number, or max_contexts / 16, at least 64, at most what 32
    MiB holds and at most max_contexts; 1 when W <= 64 (never used)."""
    if max_windows:
        return max_windows
    if window <= 64:
        return 1
    nw = (window + 63) // 64
    s1 = (nw + 63) // 64
    size = 8 * (nw + s1 + (s1 + 63) // 64 + 1)
    return max(1, min(max(max_contexts // 16, 64), (32 << 20) // size, max_contexts))


class SeqEpoch:
    """One epoch of [SEQOBS]'s bounded sequence observation. Every retained
    extended position in [L, H] is SEEN or PENDING; the PENDING ones are kept
    explicitly as a sorted list of half-open intervals [a, b) (so W = 2^22
    costs nothing), every other retained position is SEEN."""

    def __init__(self, window, psn, ts_ns):
        # No active epoch: S = H = p; retain only p as SEEN; requests = 1.
        self.W = window
        self.S = self.H = psn
        self.pend = []
        self.c = Counter(requests=1)
        self.first_ns = self.last_ns = ts_ns
        self.flags = 0
        self.reported = None  # requests at the last non-final report
        # A frame that may have carried a request of any connection was seen
        # after this epoch started (unattributed_is_loss): whatever closes
        # the epoch adds captureDiscontinuity; its next request starts anew.
        self.stale = False
        # docs/meter.md "Memory": the epoch holds a pool window while a
        # PENDING position lies more than 63 positions below H.
        self.pooled = False

    def needs_window(self, psn):
        """Accounting psn would leave a PENDING position retained more than
        63 positions below the new H (the epoch must take a pool window)."""
        u = (psn - (self.H % M)) % M
        d = u if u < M // 2 else u - M
        if self.pooled or u == M // 2 or d < 1 or d > self.W:
            return False
        h2 = self.H + d
        low = max(self.S, h2 - self.W + 1)
        if d > 64:
            return True
        return any(max(a, low) < b and max(a, low) < h2 - 63 for a, b in self.pend)

    @property
    def L(self):
        return max(self.S, self.H - self.W + 1)

    def pending(self):
        return sum(b - a for a, b in self.pend)

    def _take_pending(self, q):
        """If q is PENDING, make it SEEN and return True."""
        for i, (a, b) in enumerate(self.pend):
            if a <= q < b:
                self.pend[i:i + 1] = [iv for iv in ((a, q), (q + 1, b)) if iv[0] < iv[1]]
                return True
        return False

    def observe(self, psn, ts_ns):
        """Account psn; False if it needs a serial discontinuity closure."""
        u = (psn - (self.H % M)) % M
        if u == M // 2:
            return False
        d = u if u < M // 2 else u - M
        if d > self.W:
            return False
        self.c["requests"] += 1
        self.last_ns = ts_ns
        if d >= 1:
            # H+1 .. H+d-1 become PENDING, H+d is SEEN.
            if d > 1:
                self.pend.append((self.H + 1, self.H + d))
            self.c["skipped"] += d - 1
            self.H += d
            # Pending positions that fall below the new L expire, once each.
            low, kept = self.L, []
            for a, b in self.pend:
                if b <= low:
                    self.c["expired"] += b - a
                elif a < low:
                    self.c["expired"] += low - a
                    kept.append((low, b))
                else:
                    kept.append((a, b))
            self.pend = kept
        else:
            q = self.H + d
            if q >= self.L:
                if self._take_pending(q):
                    self.c["filled"] += 1
                else:
                    self.c["repeated"] += 1
            else:
                self.c["unclassified_late"] += 1
        self.check(final=False)
        return True

    def close(self, reason):
        """Closure: pending positions are abandoned."""
        self.c["abandoned"] += self.pending()
        self.pend = []
        self.pooled = False
        self.flags = FINAL | reason | (CAPTURE_DISCONTINUITY if self.stale else 0)
        self.check(final=True)

    def check(self, final):
        c, p = self.c, self.pending()
        assert c["skipped"] == c["filled"] + c["expired"] + c["abandoned"] + p
        assert 0 <= p <= self.W - 1
        assert c["repeated"] + c["unclassified_late"] + c["filled"] <= c["requests"] - 1
        assert (p == 0) if final else (c["abandoned"] == 0)
        assert all(self.L <= a < b <= self.H for a, b in self.pend)

    def snapshot(self):
        c = self.c
        return {
            "rdmaSequenceWindow": self.W,
            "skippedPsnTotalCount": c["skipped"], "filledPsnTotalCount": c["filled"],
            "expiredPsnTotalCount": c["expired"], "abandonedPsnTotalCount": c["abandoned"],
            "pendingPsnCount": self.pending(), "repeatedPsnTotalCount": c["repeated"],
            "requestPacketTotalCount": c["requests"],
            "unclassifiedLatePacketTotalCount": c["unclassified_late"],
            "flowStartMilliseconds": self.first_ns // 10**6,
            "flowEndMilliseconds": self.last_ns // 10**6,
        }


def _key_sort_bytes(key):
    fam, s, d, qp, pk = key
    return s.packed.ljust(16, b"\0") + d.packed.ljust(16, b"\0") + struct.pack("<IHB", qp, pk, fam)


class ReplayModel:
    """Expected reports and statistics of `rocemeter replay` over a frame
    sequence. provisioned(key) -> bool; interval_ms as --report-interval.

    Feed frames with frame(ts_ns, rec=Rec) for RoCEv2 frames whose BTH parses,
    or frame(ts_ns, verdict="stat_name") for frames the parser stops at.
    Expected reports: self.reports, in emission order; each is a dict with
    'key', 'epoch' (index of the epoch within its key, from 0), 'report_id',
    'tag' (emission order class: reports of one walk with equal first
    arrival time may come in any order), and the counter fields."""

    def __init__(self, window=1 << 22, provisioned=lambda key: True, interval_ms=None, generation_verified=False,
                 idle_timeout_ms=60000, max_contexts=65536, names_qp=lambda key: False, unattributed_is_loss=True,
                 max_windows=0):
        self.W = window
        self.pool = pool_windows(window, max_contexts, max_windows)
        # A UC/UD/RD/XRC request is a profile violation of the RC connection
        # whose key it carries when that connection is known: it has a
        # context, or a provisioning line names its destination QP.
        self.names_qp = names_qp
        self.unattributed_is_loss = unattributed_is_loss
        self.violated = set()  # keys with a recorded profile violation
        self.max_contexts = max_contexts  # contexts are kept after closure (eviction = none)
        # Idle expiration ([SEQOBS] lists it among closure causes; [meter]
        # idle_timeout_ms, default 60 s): a request arriving more than the
        # timeout after its epoch's last request closes that epoch first
        # (finalEpoch alone); replay also sweeps silent epochs once per second
        # of capture time (user/replay/replay.c).
        self.idle_ns = idle_timeout_ms * 10**6
        self.next_idle_sweep = 0
        self.provisioned = provisioned
        self.interval = interval_ms
        self.gen_flag = 0 if generation_verified else GENERATION_UNVERIFIED
        self.ctx = {}  # key -> {"epoch": SeqEpoch|None, "disabled": bool, "n": epochs so far, "rid": reports}
        self.stats = Counter()
        self.reports = []
        self.event = 0
        self.next_report_ms = None
        self.ended = False
        self.capture_faults = 0
        # The capture clock is made non-decreasing: a frame stamped before
        # an earlier one arrives at the latest time seen (counted).
        self.clock = None
        self.backwards = 0

    def _emit(self, key, ep, final, tag):
        st = self.ctx[key]
        st["rid"] += 1
        r = ep.snapshot()
        r["rdmaSequenceFlags"] = (ep.flags if final else 0) | self.gen_flag
        r.update(key=key, epoch=st["n"] - 1, report_id=st["rid"], tag=tag, final=final)
        self.reports.append(r)

    def _walk(self, final, idle_before=None, reason=0):
        self.event += 1
        open_ = [(st["epoch"].first_ns, _key_sort_bytes(k), k) for k, st in self.ctx.items() if st["epoch"]]
        for first, _, k in sorted(open_):
            ep = self.ctx[k]["epoch"]
            if idle_before is not None and ep.last_ns >= idle_before:
                continue
            # A non-final report is due only for an epoch that counted a
            # request since its last report (its first: since it started).
            if not final and ep.reported == ep.c["requests"]:
                continue
            ep.reported = ep.c["requests"]
            if final:
                ep.close(reason)
            self._emit(k, ep, final, (self.event, first))
            if final:
                self.ctx[k]["epoch"] = None

    def _start(self, st, psn, ts_ns):
        st["epoch"] = SeqEpoch(self.W, psn, ts_ns)
        st["n"] += 1
        st["rid"] = 0
        self.stats["epochs_started"] += 1

    def frame(self, ts_ns, rec=None, verdict=None, cut=False, unattributed=False):
        """cut: the capture's snap length cut the frame (caplen < wire length).
        unattributed: a frame the parser stopped at that may have carried a
        request (an unsupported header before the BTH, a first fragment
        without its BTH): counted, and with unattributed_is_loss a capture
        fault for every open epoch."""
        assert not self.ended
        self.stats["frames"] += 1
        if self.clock is not None and ts_ns < self.clock:
            self.backwards += 1
            ts_ns = self.clock
        self.clock = ts_ns
        if self.interval:
            ms = ts_ns // 10**6
            if self.next_report_ms is None:
                self.next_report_ms = ms + self.interval
            if ms >= self.next_report_ms:
                # The first boundary passed: idle expiry as of that boundary
                # first, then the changed epochs. Later boundaries before
                # this frame find nothing changed: skipped.
                due_ns = self.next_report_ms * 10**6
                if self.idle_ns:
                    self._walk(final=True, idle_before=due_ns - self.idle_ns)
                self._walk(final=False)
                self.next_report_ms += ((ms - self.next_report_ms) // self.interval + 1) * self.interval
        if self.idle_ns and ts_ns >= self.next_idle_sweep:
            if self.next_idle_sweep:
                self._walk(final=True, idle_before=ts_ns - self.idle_ns)
            self.next_idle_sweep = ts_ns + 10**9
        self.event += 1
        if rec is None:
            self.stats[verdict or "not_rocev2"] += 1
            if unattributed:
                self.stats["unattributed_frames"] += 1
                if self.unattributed_is_loss:
                    for st in self.ctx.values():
                        if st["epoch"]:
                            st["epoch"].stale = True
            # A frame the capture cut before it could be classified may have
            # been any context's request: a capture fault ([SEQOBS]), every
            # open epoch closes with captureDiscontinuity.
            if cut and verdict in ("malformed_eth", "malformed_ip", "malformed_udp", "malformed_bth"):
                self.capture_faults += 1
                self._walk(final=True, reason=CAPTURE_DISCONTINUITY)
            return
        assert verdict is None
        self.stats[rec.irregular or "rocev2"] += 1
        op = rec.opcode
        known = rec.key in self.ctx or (self.provisioned(rec.key) and self.names_qp(rec.key))
        if op == CNP or (op >= 0x20 and not known):
            self.stats["cnp" if op == CNP else "other_transport"] += 1
            return
        if READ_RESP_FIRST <= op <= ATOMIC_ACK:
            self.stats["responses"] += 1
            return
        if op >= 0x20:
            self.stats["other_transport"] += 1
        # An irregular form decides the closure; else a malformed request.
        eligible = op <= WRITE_ONLY_IMM and not rec.malformed and not rec.irregular
        if rec.malformed and not rec.irregular:
            self.stats["malformed_bth"] += 1
        # An unsupported request read in a form not metered is still an
        # observed unsupported request: a profile violation, not a capture gap.
        unobserved = rec.irregular not in (None, "malformed_udp") and op <= WRITE_ONLY_IMM
        st = self.ctx.get(rec.key)
        if st is None:
            if not self.provisioned(rec.key):
                self.stats["not_provisioned"] += 1
                return
            if rec.key in self.violated:
                self.stats["disabled_requests"] += 1
                return
            if unobserved:
                self.stats["unobserved_requests"] += 1  # no epoch to close
                return
            if not eligible:
                # A violation is recorded whatever the table's state; a
                # context holds it too when there is room.
                self.stats["profile_violations"] += 1
                self.violated.add(rec.key)
                if len(self.ctx) < self.max_contexts:
                    self.ctx[rec.key] = {"epoch": None, "disabled": True, "n": 0, "rid": 0}
                return
            if len(self.ctx) >= self.max_contexts:
                self.stats["table_full"] += 1
                return
            st = self.ctx[rec.key] = {"epoch": None, "disabled": False, "n": 0, "rid": 0}
        if st["disabled"]:
            self.stats["disabled_requests"] += 1
            return
        ep = st["epoch"]
        if eligible:
            self.stats["eligible_requests"] += 1
            idle = ep is not None and self.idle_ns and ts_ns > ep.last_ns and ts_ns - ep.last_ns > self.idle_ns
            if ep is not None and (ep.stale or idle):
                ep.close(0)
                self._emit(rec.key, ep, True, (self.event, 0))
                self.stats["epochs_closed_in_datapath"] += 1
                ep = st["epoch"] = None
            if ep is not None and ep.needs_window(rec.psn):
                if sum(1 for x in self.ctx.values() if x["epoch"] and x["epoch"].pooled) >= self.pool:
                    # no window left: the epoch closes as it is, the request starts anew
                    ep.close(STATE_EXHAUSTION)
                    self._emit(rec.key, ep, True, (self.event, 0))
                    self.stats["epochs_closed_in_datapath"] += 1
                    self.stats["window_pool_exhausted"] += 1
                    ep = st["epoch"] = None
                else:
                    ep.pooled = True
                    self.stats["window_pool_taken"] += 1
            if ep is None:
                self._start(st, rec.psn, ts_ns)
            elif not ep.observe(rec.psn, ts_ns):
                ep.close(SERIAL_DISCONTINUITY)
                self._emit(rec.key, ep, True, (self.event, 0))
                self.stats["epochs_closed_in_datapath"] += 1
                self._start(st, rec.psn, ts_ns)
            elif ep.pooled and not ep.pending():
                ep.pooled = False
        elif unobserved:
            # A request the meter could not observe: the epoch closes with
            # captureDiscontinuity; the connection stays enabled.
            self.stats["unobserved_requests"] += 1
            if ep is not None:
                ep.close(CAPTURE_DISCONTINUITY)
                self._emit(rec.key, ep, True, (self.event, 0))
                self.stats["epochs_closed_in_datapath"] += 1
                st["epoch"] = None
        else:
            # Unsupported or malformed request: close with profileViolation,
            # disable; the offending packet is not counted.
            self.stats["profile_violations"] += 1
            self.violated.add(rec.key)
            if ep is not None:
                ep.close(PROFILE_VIOLATION)
                self._emit(rec.key, ep, True, (self.event, 0))
                self.stats["epochs_closed_in_datapath"] += 1
                st["epoch"] = None
            st["disabled"] = True

    def end(self):
        """End of input: every open epoch closes with finalEpoch alone."""
        self._walk(final=True)
        self.ended = True
        return self


COUNTER_FIELDS = ["rdmaSequenceWindow", "rdmaSequenceFlags", "skippedPsnTotalCount", "filledPsnTotalCount",
                  "expiredPsnTotalCount", "abandonedPsnTotalCount", "pendingPsnCount",
                  "repeatedPsnTotalCount", "requestPacketTotalCount", "unclassifiedLatePacketTotalCount",
                  "flowStartMilliseconds", "flowEndMilliseconds"]


def compare_reports(expected, got):
    """expected: ReplayModel.reports; got: the tool's JSON reports, in output
    order. Checks one report per expected report with equal key and counters;
    epoch IDs nonzero, one per (key, epoch), strictly increasing in order of
    first serialization; report IDs 1, 2, 3.. per epoch; output order = the
    model's emission order (up to ties inside one walk)."""
    assert len(got) == len(expected), "expected %d reports, got %d:\n%s" % (
        len(expected), len(got), "\n".join(json.dumps(r) for r in got))
    # Epoch IDs in order of first appearance.
    first_seen = []
    key_of_epoch = {}
    for r in got:
        eid = r["rdmaSequenceEpochId"]
        assert eid > 0
        if eid not in key_of_epoch:
            key_of_epoch[eid] = report_key(r)
            first_seen.append(eid)
        else:
            assert key_of_epoch[eid] == report_key(r), "epoch %d changed its key" % eid
    assert first_seen == sorted(first_seen) and len(set(first_seen)) == len(first_seen), \
        "epoch IDs not increasing in order of first serialization: %r" % first_seen
    # Epoch index within the key = rank of the epoch ID among the key's epochs.
    per_key = {}
    for eid in first_seen:
        per_key.setdefault(key_of_epoch[eid], []).append(eid)
    index = {(k, eid): i for k, ids in per_key.items() for i, eid in enumerate(ids)}
    by_id = {(r["key"], r["epoch"], r["report_id"]): r for r in expected}
    assert len(by_id) == len(expected)
    tags = []
    seen = set()
    for r in got:
        k = report_key(r)
        ident = (k, index[(k, r["rdmaSequenceEpochId"])], r["rdmaSequenceReportId"])
        assert ident in by_id, "unexpected report %s\nexpected:\n%s" % (
            json.dumps(r), "\n".join(str(e) for e in expected))
        assert ident not in seen, "duplicate report %s" % json.dumps(r)
        seen.add(ident)
        e = by_id[ident]
        mine = {f: r[f] for f in COUNTER_FIELDS}
        theirs = {f: e[f] for f in COUNTER_FIELDS}
        assert mine == theirs, "report %s\n  got      %r\n  expected %r" % (ident, mine, theirs)
        tags.append(e["tag"])
    assert tags == sorted(tags), "reports out of order: %r" % tags


def expected_stats(model, frames_read=None, truncated=0):
    s = {n: model.stats.get(n, 0) for n in STAT_NAMES}
    s["frames_read"] = model.stats["frames"] if frames_read is None else frames_read
    s["frames_truncated_by_capture"] = truncated
    s["capture_faults"] = model.capture_faults
    s["timestamps_backwards"] = model.backwards
    return s
