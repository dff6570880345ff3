# user/flowlabel/ and bpf/flowlabel.bpf.c: the IPv6 Flow Label program (tc
# clsact), `rocemeter flowlabel`, its attach/detach/status API, and the
# parse-only baseline programs of the benchmarks. Tests: host vectors, a
# BPF_PROG_TEST_RUN selftest, pytest (independent labels with zlib and scapy,
# ICRC and UDP checksum, end to end over veth).
BPF_NAMES      += flowlabel baseline
ROCEMETER_SRCS += user/flowlabel/flowlabel.c user/flowlabel/cmd_flowlabel.c
# The ECMP spread model of `flowlabel spread` (its command, reading captures, is user/replay/cmd_spread.c).
ROCEMETER_SRCS += user/flowlabel/spread.c
CHECK_PROGS    += $(BUILD)/tests/unit/test_flowlabel
CHECK_PROGS    += $(BUILD)/selftests/bpf/test_flowlabel_bpf
CHECK_SCRIPTS  += selftests/system/test_flowlabel.py
BENCH_PROGS    += $(BUILD)/selftests/bench/bench_flowlabel
# fl_helper drives the BPF program for selftests/system/test_flowlabel.py (not a test itself).
check: $(BUILD)/tests/lib/fl_helper
