# Tests of the XDP meter's parsing/classification and of `rocemeter replay`
# (pytest; root and bpffs, which scripts/run-tests mounts). They run the
# already built build/rocemeter over the real captures in
# /work/shared/data/pcaps and over synthetic captures built with scapy;
# tshark is the independent decoder, tests/rocetest.py holds the helpers and
# a Python model of seed 000.
CHECK_SCRIPTS += tests/test_replay_captures.py tests/test_replay_synthetic.py tests/test_meter_parse.py
