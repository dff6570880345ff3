# End-to-end: the demo (the main job); replay vs IPFIX decoders, live export over TLS 1.3 to an OpenSSL
# peer and to the collector.
CHECK_SCRIPTS  += selftests/system/test_export_e2e.py
CHECK_SCRIPTS  += selftests/system/test_demo.py
# Prometheus metrics of attach and collect, scraped by a real Prometheus server.
CHECK_SCRIPTS  += selftests/system/test_metrics.py
# The sequence counters of both daemons per observation point against frames with requests dropped; the violation line.
CHECK_SCRIPTS  += selftests/system/test_sequence_metrics.py
# The shipped alert rules live: Prometheus and Alertmanager fire and resolve on requests dropped on a veth.
CHECK_SCRIPTS  += selftests/system/test_alerts.py
# Every JSON key of every command against docs/json.md.
CHECK_SCRIPTS  += selftests/system/test_json_keys.py
