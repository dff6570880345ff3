# user/collect/: `rocemeter collect` (IPFIX over TLS 1.3 -> decoder ->
# collector rules -> the store of user/store/) and `rocemeter report`.
ROCEMETER_SRCS += user/collect/ipfix_decode.c user/collect/collector_rules.c user/collect/pool.c \
                  user/collect/budget.c user/collect/collector.c user/collect/accept.c user/collect/session.c \
                  user/collect/collector_metrics.c user/collect/cmd_collect.c user/collect/cmd_report.c
CHECK_PROGS    += $(BUILD)/tests/unit/test_collector_rules $(BUILD)/tests/unit/test_ipfix_decode
# The slab pool of the rules' epochs.
CHECK_PROGS    += $(BUILD)/tests/unit/test_pool
# The memory budget and its charges by the rules (epochs) and the decoder (Templates).
CHECK_PROGS    += $(BUILD)/tests/unit/test_budget
CHECK_SCRIPTS  += selftests/system/test_collector.py
# Availability and bounded resources on a hostile network (docs/collector.md).
CHECK_SCRIPTS  += selftests/system/test_collector_limits.py
BENCH_PROGS    += $(BUILD)/selftests/bench/bench_collect
