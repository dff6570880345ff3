# user/common/: what every program of the binary uses: the subcommand
# registry, configuration (INI), error-message formatting, TLS 1.3 contexts,
# and the JSON Lines and text report writers.
ROCEMETER_SRCS += user/common/config.c user/common/errmsg.c user/common/tls.c \
                  user/common/report_json.c user/common/report_text.c
LDLIBS         += -ljansson
CHECK_PROGS    += $(BUILD)/tests/unit/test_config
# The include rule of docs/architecture.md ("Who may include what").
CHECK_PROGS    += scripts/check-layers
CHECK_SCRIPTS  += tests/unit/test_layers.py
