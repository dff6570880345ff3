# user/meter/ and bpf/meter.bpf.c: the XDP meter and its daemon: loading and
# configuring the BPF object, pins and locks, capture-loss observation, the
# ring-buffer reporter and its schedule, provisioning and violated
# connections, the daemon, and the subcommands `attach`, `detach`, `status`
# and `reenable`.
BPF_NAMES      += meter
ROCEMETER_SRCS += user/meter/meter.c user/meter/reporter.c user/meter/pins.c user/meter/observe.c \
                  user/meter/provision.c user/meter/violations.c \
                  user/meter/daemon.c user/meter/features.c user/meter/identity.c user/meter/netns.c user/meter/meter_metrics.c user/meter/cmd_attach.c user/meter/cmd_detach.c \
                  user/meter/cmd_status.c user/meter/status.c user/meter/cmd_reenable.c
# The BPF build of the engine across CPUs, the specification's examples,
# violations and mirror mode through BPF_PROG_TEST_RUN; attach/detach/status
# on a veth pair in a network namespace.
CHECK_PROGS    += $(BUILD)/selftests/bpf/test_meter_cpus
CHECK_PROGS    += $(BUILD)/selftests/bpf/test_verify_budget
CHECK_SCRIPTS  += selftests/system/test_live_meter.py
# The kernel's own mirroring into the meter: tc u32 + mirred to the metered
# veth (local SPAN) and into a vxlan device (remote mirror, [capture] vxlan).
CHECK_SCRIPTS  += selftests/system/test_live_mirror.py
# One QP on two CPUs at once (two veth queues, XPS, pinned senders): exact
# counters; packets/s per core against the parse-only XDP program, printed.
CHECK_SCRIPTS  += selftests/system/test_live_two_cpus.py
# Epoch lifecycle: idle expiry, reload, shutdown, capture discontinuity,
# eviction and sd_notify readiness.
CHECK_SCRIPTS  += selftests/system/test_lifecycle.py
# What a deployment meets besides the unit: signals while starting, pins keyed by
# namespace and ifindex, a detach that proves its target, renames, actionable errors.
CHECK_SCRIPTS  += selftests/system/test_deploy.py
CHECK_SCRIPTS  += selftests/system/test_status_netns.py
# The kernel feature probes of attach, each missing feature forced (docs/requirements.md).
CHECK_SCRIPTS  += selftests/system/test_kernel_features.py
# The default observationPointId: two namespaces, one interface name, two IDs.
CHECK_SCRIPTS  += selftests/system/test_obs_identity.py
# include/rocemeter/bth.h on the host: the opcode predicates and BTH fields
# against the BTH opcode table ([IBPKT]).
CHECK_PROGS    += $(BUILD)/tests/unit/test_bth
# Which provisioning lines cover a connection; the reload rule for violated
# connections (user/meter/provision.c).
CHECK_PROGS    += $(BUILD)/tests/unit/test_provision
# docs/meter.md's table of statistics against RM_STATS (include/rocemeter/meter.h).
CHECK_SCRIPTS  += tests/unit/test_stats_doc.py
# docs/meter.md's bpftool section against the BTF of build/meter.bpf.o.
CHECK_SCRIPTS  += tests/unit/test_readme_bpftool.py
