# IPFIX: encoder (RFC 7011), exporter ID allocation, report JSON Lines (jansson).
ROCEMETER_SRCS += user/ipfix.c user/ids.c user/report_json.c
LDLIBS         += -ljansson
CHECK_PROGS    += $(BUILD)/tests/test_ipfix
# Uses selftests/ipfix_write (JSON Lines reports on stdin -> IPFIX file), a
# helper rather than a test, which the pytest file builds with make itself.
CHECK_SCRIPTS  += tests/test_ipfix_decoders.py
