# Core: the binary's entry point, the sequence observation engine's tests.
ROCEMETER_SRCS += user/main.c
CHECK_PROGS    += $(BUILD)/tests/test_seqobs
TEST_CFLAGS_test_seqobs_limit := -DRM_COUNTER_MAX=200
CHECK_PROGS    += $(BUILD)/tests/test_seqobs_limit
ROCEMETER_SRCS += user/config.c
BPF_NAMES      += meter
ROCEMETER_SRCS += user/meter.c
ROCEMETER_SRCS += user/reporter.c user/report_text.c user/capture.c user/replay.c
ROCEMETER_SRCS += user/pins.c user/observe.c user/attach.c user/status.c
ROCEMETER_SRCS += user/errmsg.c
