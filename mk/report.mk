# user/report/: `rocemeter report`: the stored epochs (user/store/store_read.h, either store)
# beside their sequence health, as a table, in words, JSON, CSV, per connection (--summary)
# or one offline HTML page.
ROCEMETER_SRCS += user/report/cmd_report.c user/report/report_table.c user/report/report_summary.c \
                  user/report/report_html.c user/report/report_select.c
# report --format html: the page is compiled in (.incbin), so the object depends on it.
$(BUILD)/user/report/report_html.o: user/report/report_html.page
# report --format html in Debian's chromium (headless): numbers, console, requests, screenshot.
CHECK_SCRIPTS  += selftests/system/test_report_html.py
# Observation point names from outside: refused, escaped, CSV formulas; the tables' columns.
CHECK_SCRIPTS  += selftests/system/test_report_names.py
# report's views: --anomalies, --summary, the table and --verbose; the table at 132 columns in tmux.
CHECK_SCRIPTS  += selftests/system/test_report_views.py
# Two switches' mirror loss where the operator looks (--summary, --anomalies, the HTML page's marks), the
# filters of a point and a closure reason, SESSION, the collector's configuration as the default store, and
# the HTML page of two switches and of the demo's captures at 1,400 and 1,920 px in chromium.
CHECK_SCRIPTS  += selftests/system/test_report_switches.py
