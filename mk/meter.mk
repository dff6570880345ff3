# user/meter/ and bpf/meter.bpf.c: the XDP meter and its daemon: loading and
# configuring the BPF object, pins and locks, capture-loss observation, the
# ring-buffer reporter, `attach`, `detach` and `status`.
BPF_NAMES      += meter
ROCEMETER_SRCS += user/meter/meter.c user/meter/reporter.c user/meter/pins.c user/meter/observe.c \
                  user/meter/attach.c user/meter/status.c
# The BPF build of the engine across CPUs, the specification's examples,
# violations and mirror mode through BPF_PROG_TEST_RUN; attach/detach/status
# on a veth pair in a network namespace.
CHECK_PROGS    += $(BUILD)/selftests/test_meter_cpus
CHECK_SCRIPTS  += tests/test_live_meter.py
# Epoch lifecycle: idle expiry, reload, shutdown, capture discontinuity,
# eviction and sd_notify readiness.
CHECK_SCRIPTS  += tests/test_lifecycle.py
# include/rocemeter/bth.h on the host: the opcode predicates and BTH fields
# against seed 001's tables.
CHECK_PROGS    += $(BUILD)/tests/test_bth
