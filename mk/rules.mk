# user/rules/: what the collector decides without I/O: the IPFIX decoder
# (Templates bound by PEN and element number), the collector rules of
# [SEQOBS] "Collector Processing", their memory budget and the epochs' slab pool.
ROCEMETER_SRCS += user/rules/ipfix_decode.c user/rules/collector_rules.c user/rules/pool.c user/rules/budget.c
CHECK_PROGS    += $(BUILD)/tests/unit/test_collector_rules $(BUILD)/tests/unit/test_ipfix_decode
# The slab pool of the rules' epochs.
CHECK_PROGS    += $(BUILD)/tests/unit/test_pool
# The memory budget and its charges by the rules (epochs) and the decoder (Templates).
CHECK_PROGS    += $(BUILD)/tests/unit/test_budget
