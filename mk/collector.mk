# Collector (issue 6): `rocemeter collect` (IPFIX over TLS 1.3 -> validation ->
# SQLite) and `rocemeter report`.
ROCEMETER_SRCS += user/ipfix_decode.c user/collector_rules.c user/store.c user/collector.c user/report_cmd.c
CHECK_PROGS    += $(BUILD)/tests/test_collector_rules
CHECK_SCRIPTS  += tests/test_collector.py
BENCH_PROGS    += $(BUILD)/tests/bench_collect
