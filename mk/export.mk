# user/export/: the exporter: IPFIX encoder (Templates, Data Records, Flow
# Keys), epoch and report ID allocation per Transport Session, and the
# transport thread (IPFIX over TCP and TLS 1.3, reconnect, bounded queue).
# Test PKI: scripts/gen-certs.
ROCEMETER_SRCS += user/export/ipfix.c user/export/ids.c user/export/export.c
CHECK_PROGS    += $(BUILD)/tests/unit/test_ipfix
# test_export: cmocka unit tests; with --drive / --serve it is the helper
# that selftests/system/test_export.py drives (exporter, small TLS server).
CHECK_PROGS    += $(BUILD)/selftests/system/test_export
CHECK_SCRIPTS  += selftests/system/test_export.py
# Uses tests/lib/ipfix_write (JSON Lines reports on stdin -> IPFIX file), a
# helper rather than a test, which the pytest file builds with make itself.
CHECK_SCRIPTS  += selftests/system/test_ipfix_decoders.py
# docs/rocemeter-ie.xml against RM_IPFIX_IES and RM_FLAGS, read through the
# helper tests/lib/ie_table, which the pytest file builds with make itself.
CHECK_SCRIPTS  += tests/unit/test_ie_model.py
BENCH_PROGS    += $(BUILD)/selftests/bench/bench_export
