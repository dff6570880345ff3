# user/flowlabel/ and bpf/flowlabel.bpf.c: the IPv6 Flow Label program (tc
# clsact), `rocemeter flowlabel` and its attach/detach/status API. Tests:
# host vectors, a BPF_PROG_TEST_RUN selftest, pytest (independent labels
# with zlib and scapy, ICRC and UDP checksum, end to end over veth).
BPF_NAMES      += flowlabel
ROCEMETER_SRCS += user/flowlabel/flowlabel.c user/flowlabel/cmd_flowlabel.c
# `rocemeter flowlabel spread`: a capture's connections (the census) or generated QPs through
# the ECMP spread model (spread.c).
ROCEMETER_SRCS += user/flowlabel/spread.c user/flowlabel/cmd_spread.c
CHECK_PROGS    += $(BUILD)/tests/unit/test_flowlabel
CHECK_PROGS    += $(BUILD)/selftests/bpf/test_flowlabel_bpf
CHECK_SCRIPTS  += selftests/system/test_flowlabel.py
# `flowlabel spread` against an independent Python model (zlib.crc32, CRC-16/CCITT and the CRC-32
# variants written from their definitions) over generated QPs and the real captures (tshark).
CHECK_SCRIPTS  += selftests/bpf/test_flowlabel_spread.py
# The label's benefit on the kernel's own IPv6 ECMP (hash policies 0, 3, 1; K = 2, 4, 8; 64 QPs, one 5-tuple).
CHECK_SCRIPTS  += selftests/system/test_flowlabel_ecmp.py
BENCH_PROGS    += $(BUILD)/selftests/bench/bench_flowlabel
# fl_helper drives the BPF program for selftests/system/test_flowlabel.py (not a test itself).
check: $(BUILD)/tests/lib/fl_helper
