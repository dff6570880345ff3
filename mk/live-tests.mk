# Live tests of the XDP meter and its loader (issue 3): the BPF build of the
# engine across CPUs, seed 000 examples, violations and mirror mode through
# BPF_PROG_TEST_RUN (selftests/test_meter_cpus.c), and attach/detach/status
# on a veth pair with a network namespace (tests/test_live_meter.py).
CHECK_PROGS    += $(BUILD)/selftests/test_meter_cpus
CHECK_SCRIPTS  += tests/test_live_meter.py
