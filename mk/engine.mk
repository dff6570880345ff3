# The sequence observation engine (include/rocemeter/seqobs.h), host builds:
# the specification's worked examples and transition rows, the counter-limit
# path with a lowered limit, and a randomized differential test against a
# set-based model written from the specification's text.
CHECK_PROGS    += $(BUILD)/tests/unit/test_seqobs
TEST_CFLAGS_unit/test_seqobs_limit := -DRM_COUNTER_MAX=200
CHECK_PROGS    += $(BUILD)/tests/unit/test_seqobs_limit
CHECK_PROGS    += $(BUILD)/tests/unit/test_seqobs_random
