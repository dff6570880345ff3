# user/meter/ and bpf/meter.bpf.c: the XDP meter and its daemon: loading and
# configuring the BPF object, pins and locks, capture-loss observation, the
# ring-buffer reporter and its schedule, the daemon, and the subcommands
# `attach`, `detach` and `status`.
BPF_NAMES      += meter
ROCEMETER_SRCS += user/meter/meter.c user/meter/reporter.c user/meter/pins.c user/meter/observe.c \
                  user/meter/daemon.c user/meter/cmd_attach.c user/meter/cmd_detach.c \
                  user/meter/cmd_status.c
# The BPF build of the engine across CPUs, the specification's examples,
# violations and mirror mode through BPF_PROG_TEST_RUN; attach/detach/status
# on a veth pair in a network namespace.
CHECK_PROGS    += $(BUILD)/selftests/bpf/test_meter_cpus
CHECK_SCRIPTS  += selftests/system/test_live_meter.py
# Epoch lifecycle: idle expiry, reload, shutdown, capture discontinuity,
# eviction and sd_notify readiness.
CHECK_SCRIPTS  += selftests/system/test_lifecycle.py
# What a deployment meets besides the unit: signals while starting, pins keyed by
# namespace and ifindex, a detach that proves its target, renames, actionable errors.
CHECK_SCRIPTS  += selftests/system/test_deploy.py
# include/rocemeter/bth.h on the host: the opcode predicates and BTH fields
# against the BTH opcode table ([IBPKT]).
CHECK_PROGS    += $(BUILD)/tests/unit/test_bth
