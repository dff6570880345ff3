# Flow label (seed 002): tc program, `rocemeter flowlabel`, attach/detach/status API,
# benchmark baselines. Tests: host vectors, BPF_PROG_TEST_RUN selftest, pytest
# (independent labels with zlib/scapy, ICRC/UDP checksum, netns end to end).
BPF_NAMES      += flowlabel baseline
ROCEMETER_SRCS += user/flowlabel.c
CHECK_PROGS    += $(BUILD)/tests/test_flowlabel
