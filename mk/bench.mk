# Benchmarks: `make bench` runs scripts/bench over BENCH_PROGS.
# bench.bpf.c is the BPF_PROG_TEST_RUN driver (new BTH dest QP and PSN per
# run, then a tail call into the meter or the parse-only baseline);
# selftests/bench/bench_meter.c prints the meter's ns/packet. Figures only.
BPF_NAMES      += bench
BENCH_PROGS    += $(BUILD)/selftests/bench/bench_meter
