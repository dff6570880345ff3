# user/replay/: `rocemeter replay`: capture files read with libpcap (user/capture/), each
# frame run through the meter's BPF program with BPF_PROG_TEST_RUN.
ROCEMETER_SRCS += user/replay/replay.c user/replay/cmd_replay.c
# Parse verdicts of the XDP meter, and replay over the real captures beside
# the checkout and over synthetic captures built with scapy; tshark is the
# independent decoder, tests/lib/rocetest.py holds the helpers and a Python model
# of the sequence observation algorithm.
CHECK_SCRIPTS  += selftests/bpf/test_replay_captures.py selftests/bpf/test_replay_synthetic.py selftests/bpf/test_meter_parse.py
# Capture time: report boundaries across gaps, idle expiry first, timestamps
# that go backwards, near 0 or past 2038.
CHECK_SCRIPTS  += selftests/bpf/test_replay_time.py
# Mirrored copies (ERSPAN I/II/III, VXLAN, RSPAN): counters equal to the plain
# frames' per observation point, GRE sequence gaps, bad mirror headers
# (scapy.contrib.erspan builds them, tshark's ERSPAN dissector checks them).
CHECK_SCRIPTS  += selftests/bpf/test_meter_mirror.py
# Write errors on the outputs (standard output, --ipfix-out, --stats-json).
CHECK_SCRIPTS  += selftests/bpf/test_replay_outputs.py
# Under ASan+UBSan (make check-sanitize only): every shared capture through replay, three ways,
# as the plain build prints it.
SAN_SCRIPTS    += selftests/bpf/test_replay_sanitize.py
