# Export transport: TLS 1.3 contexts (mutual authentication, explicit peer
# authorisation) and the exporter thread (IPFIX over TCP/TLS, reconnect,
# bounded queue). Test PKI: scripts/gen-certs.
ROCEMETER_SRCS += user/tls.c user/export.c
# test_export: cmocka unit tests; with --drive / --serve it is the helper
# that tests/test_export.py drives (exporter, small TLS server).
CHECK_PROGS    += $(BUILD)/tests/test_export
CHECK_SCRIPTS  += tests/test_export.py
BENCH_PROGS    += $(BUILD)/tests/bench_export
