# user/export/: the exporter: IPFIX encoder (Templates, Data Records, Flow
# Keys), epoch and report ID allocation per Transport Session, and the
# transport thread (IPFIX over TCP and TLS 1.3, reconnect, bounded queue).
# Test PKI: scripts/gen-certs.
ROCEMETER_SRCS += user/export/ipfix.c user/export/ids.c user/export/export.c
CHECK_PROGS    += $(BUILD)/tests/test_ipfix
# test_export: cmocka unit tests; with --drive / --serve it is the helper
# that tests/test_export.py drives (exporter, small TLS server).
CHECK_PROGS    += $(BUILD)/tests/test_export
CHECK_SCRIPTS  += tests/test_export.py
# Uses selftests/ipfix_write (JSON Lines reports on stdin -> IPFIX file), a
# helper rather than a test, which the pytest file builds with make itself.
CHECK_SCRIPTS  += tests/test_ipfix_decoders.py
# docs/rocemeter-ie.xml against RM_IPFIX_IES and RM_FLAGS, read through the
# helper selftests/ie_table, which the pytest file builds with make itself.
CHECK_SCRIPTS  += tests/test_ie_model.py
BENCH_PROGS    += $(BUILD)/tests/bench_export
