# Flow label (seed 002): tc program, `rocemeter flowlabel`, attach/detach/status API,
# benchmark baselines. Tests: host vectors, BPF_PROG_TEST_RUN selftest, pytest
# (independent labels with zlib/scapy, ICRC/UDP checksum, netns end to end).
BPF_NAMES      += flowlabel baseline
ROCEMETER_SRCS += user/flowlabel.c
CHECK_PROGS    += $(BUILD)/tests/test_flowlabel
CHECK_PROGS    += $(BUILD)/selftests/test_flowlabel_bpf
CHECK_SCRIPTS  += tests/test_flowlabel.py
BENCH_PROGS    += $(BUILD)/selftests/bench_flowlabel
# fl_helper drives the BPF program for tests/test_flowlabel.py (not a test itself).
check: $(BUILD)/selftests/fl_helper
$(BUILD)/selftests/test_flowlabel_bpf $(BUILD)/selftests/fl_helper $(BUILD)/selftests/bench_flowlabel: \
	selftests/fl_frames.h
