# Benchmarks: `make bench` runs scripts/bench over BENCH_PROGS.
# selftests/bench/bench_meter.c prints the meter's ns/packet through the
# driver of selftests/progs/bench.bpf.c (mk/progs.mk). Figures only.
BENCH_PROGS    += $(BUILD)/selftests/bench/bench_meter
# selftests/bench/bench_report.c: report's read rate from SQLite over 1,000,000 stored epochs, next to a
# plain SQLite table of the same rows (docs/benchmarks.md "Reading the store").
BENCH_PROGS    += $(BUILD)/selftests/bench/bench_report
