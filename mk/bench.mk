# Benchmarks: `make bench` runs scripts/bench over BENCH_PROGS.
# bench.bpf.c is the BPF_PROG_TEST_RUN driver (new BTH dest QP and PSN per
# run, then a tail call into the meter or the parse-only baseline);
# selftests/bench/bench_meter.c prints the meter's ns/packet. Figures only.
BPF_NAMES      += bench
BENCH_PROGS    += $(BUILD)/selftests/bench/bench_meter
# selftests/bench/bench_report.c: report's read rate from SQLite over 1,000,000 stored epochs, next to a
# plain SQLite table of the same rows (docs/benchmarks.md "Reading the store").
BENCH_PROGS    += $(BUILD)/selftests/bench/bench_report
