# user/common/: what every program of the binary uses: the subcommand
# registry, configuration (INI) and its limits, option values and option
# tables (params.c: getopt, values and help of a command from one table), the log,
# addresses (addr.c), paths on bpffs and under the run directory, error-message formatting,
# TLS 1.3 contexts, the JSON Lines and text report writers, the
# Prometheus metrics (exposition writer, HTTP server on libmicrohttpd), the
# capability check and `rocemeter check-config`.
ROCEMETER_SRCS += user/common/addr.c user/common/config.c user/common/errmsg.c user/common/tls.c \
                  user/common/report_json.c user/common/report_text.c user/common/log.c \
                  user/common/opts.c user/common/paths.c user/common/clock.c user/common/metrics.c \
                  user/common/jsonw.c user/common/timefmt.c user/common/caps.c \
                  user/common/cmd_check_config.c user/common/store_syntax.c user/common/params.c \
                  user/common/health.c user/common/capture_settings.c \
                  user/common/safe_text.c
LDLIBS         += -ljansson -lmicrohttpd
# The configuration directory the package installs (paths.h RM_COLLECT_CONF: report's default --config).
CFLAGS         += -DRM_SYSCONFDIR='"$(SYSCONFDIR)"'
CHECK_PROGS    += $(BUILD)/tests/unit/test_config
# rocemeter check-config: exit 0 or 2, TLS files included (no root).
CHECK_SCRIPTS  += tests/unit/test_check_config.py
# The [capture] section: FILE:LINE and the reason for each bad key or line.
CHECK_SCRIPTS  += tests/unit/test_capture_config.py
# Option values and tables, command-line overrides, paths and the log's levels.
CHECK_PROGS    += $(BUILD)/tests/unit/test_opts
# The include rule of docs/architecture.md ("Who may include what").
CHECK_PROGS    += scripts/check-layers
CHECK_SCRIPTS  += tests/unit/test_layers.py
# Calls within a folder flow one way but for the circles docs/architecture.md allows by name
# ("Calls within a folder"), read from the built objects with nm.
CHECK_PROGS    += scripts/check-circles
CHECK_SCRIPTS  += tests/unit/test_circles.py
# The tree laid out by .clang-format, and no function over the limit of docs/architecture.md.
CHECK_PROGS    += scripts/check-format scripts/check-functions
CHECK_SCRIPTS  += tests/unit/test_style.py
# Commit subjects `area: summary` within 72 characters, each with a body (CONTRIBUTING.md "Commits").
CHECK_PROGS    += scripts/check-commits
CHECK_SCRIPTS  += tests/unit/test_commits.py
# docs/README.md lists every page of docs/; the docs' relative links name files that exist.
CHECK_SCRIPTS  += tests/unit/test_docs_index.py
# The exposition writer against the text format's rules (escapes, HELP and TYPE lines).
CHECK_PROGS    += $(BUILD)/tests/unit/test_metrics
# The shipped alerting and recording rules (docs/prometheus/): promtool check and its unit tests.
CHECK_SCRIPTS  += tests/unit/test_prometheus_rules.py
# The sequence health of an epoch on [SEQOBS]'s verification examples.
CHECK_PROGS    += $(BUILD)/tests/unit/test_health
# ISO-8601 UTC times printed and parsed (report --since/--until).
CHECK_PROGS    += $(BUILD)/tests/unit/test_timefmt
# Names from outside: the rule (UTF-8, no controls or bidi overrides) and the escaping (safe_text.h).
CHECK_PROGS    += $(BUILD)/tests/unit/test_safe_text
# The map iterator (map_iter.h) on hash and array maps the test creates (root).
CHECK_PROGS    += $(BUILD)/selftests/bpf/test_map_iter
# docs/json.md against the tables the commands print from.
CHECK_SCRIPTS  += tests/unit/test_json_schema.py
# One manual page per command with every option, `rocemeter help CMD`, bash completion, make install.
CHECK_SCRIPTS  += tests/unit/test_manpages.py
