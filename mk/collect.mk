# user/collect/: `rocemeter collect` (IPFIX over TLS 1.3: the listener and
# handshakes, the Transport Sessions, the poll loop and its metrics; the rules
# of user/rules/, the store of user/store/) and `rocemeter report`.
ROCEMETER_SRCS += user/collect/collector.c user/collect/accept.c user/collect/session.c user/collect/journal.c \
                  user/collect/collector_metrics.c user/collect/seq_points.c user/collect/cmd_collect.c \
                  user/collect/cmd_report.c user/collect/report_table.c user/collect/report_summary.c \
                  user/collect/report_html.c
# report --format html: the page is compiled in (.incbin), so the object depends on it.
$(BUILD)/user/collect/report_html.o: user/collect/report_html.page
CHECK_SCRIPTS  += selftests/system/test_collector.py
# Its sequence counters per observation point and the epochs counted when they settle (/metrics).
CHECK_SCRIPTS  += selftests/system/test_collector_metrics.py
# report --format html in Debian's chromium (headless): numbers, console, requests, screenshot.
CHECK_SCRIPTS  += selftests/system/test_report_html.py
# Observation point names from outside: refused, escaped, CSV formulas; the tables' columns.
CHECK_SCRIPTS  += selftests/system/test_report_names.py
# Availability and bounded resources on a hostile network (docs/collector.md).
CHECK_SCRIPTS  += selftests/system/test_collector_limits.py
BENCH_PROGS    += $(BUILD)/selftests/bench/bench_collect
