# Randomized differential test of the sequence observation engine
# (include/rocemeter/seqobs.h) against a simple model written from seed 000.
CHECK_PROGS += $(BUILD)/tests/test_seqobs_random
