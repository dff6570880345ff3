# user/collect/: `rocemeter collect` (IPFIX over TLS 1.3: the listener and
# handshakes, the Transport Sessions, the poll loop and its metrics; the rules
# of user/rules/, the store of user/store/).
ROCEMETER_SRCS += user/collect/collector.c user/collect/accept.c user/collect/session.c user/collect/journal.c \
                  user/collect/collector_metrics.c user/collect/seq_points.c user/collect/cmd_collect.c
# The leaves every file of the loop calls: the batch, the refused connections, the store call's check.
ROCEMETER_SRCS += user/collect/batch.c user/collect/refusals.c user/collect/store_check.c
CHECK_SCRIPTS  += selftests/system/test_collector.py
# Its sequence counters per observation point and the epochs counted when they settle (/metrics).
CHECK_SCRIPTS  += selftests/system/test_collector_metrics.py
# Availability and bounded resources on a hostile network (docs/collector.md).
CHECK_SCRIPTS  += selftests/system/test_collector_limits.py
BENCH_PROGS    += $(BUILD)/selftests/bench/bench_collect
