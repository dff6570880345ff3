# selftests/progs/: the BPF programs of tests and benchmarks, never part of
# rocemeter (as the kernel's tools/testing/selftests/bpf/progs/). `make`
# builds each NAME.bpf.c into build/selftests/progs/ with its skeleton
# NAME.skel.h (struct NAME), as it builds bpf/.
#   bench      the BPF_PROG_TEST_RUN driver of selftests/bench/bench_meter.c:
#              a new BTH dest QP and PSN per run, then a tail call into the
#              meter or the parse-only baseline
#   baseline   the parse-only XDP and tc programs of the benchmarks; the XDP
#              one is also the other XDP program of selftests/system/
#              test_live_two_cpus.py and test_deploy.py
#   vlan_push  the tc program that selftests/system/test_live_meter.py puts on
#              the sending veth end to give the meter VLAN tags as packet
#              metadata
TEST_BPF_NAMES += bench baseline vlan_push
