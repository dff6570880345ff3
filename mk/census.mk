# user/census/ and bpf/census.bpf.c: the connection census (tc ingress live,
# BPF_PROG_TEST_RUN over captures): what it counted per connection key, the
# eligibility rule of the profile and the ready [provision] lines; used by
# `connections` (here), `flowlabel spread` (user/flowlabel/) and by
# `attach --census` / `status --connections` (user/meter/).
BPF_NAMES      += census
ROCEMETER_SRCS += user/census/census.c user/census/connections.c
# `rocemeter connections`: the connection census over capture files (census_run.c) or live.
ROCEMETER_SRCS += user/census/census_run.c user/census/cmd_connections.c
# The opcode classes against the BTH opcode table, the eligibility rule, the
# [provision] section read back by the configuration loader, the JSON.
CHECK_PROGS    += $(BUILD)/tests/unit/test_connections
# `connections FILE...` over the real captures against tshark, over a
# synthetic capture (READ, atomics, UD, UC, CNP, malformed, VLANs, IPv6), and
# its [provision] lines replayed with `replay --config`.
CHECK_SCRIPTS  += selftests/bpf/test_connections.py
# Live: connections --live, attach --census with status --connections, the
# census before the flow-label program, detach of a killed census (veth pair).
CHECK_SCRIPTS  += selftests/system/test_connections_live.py
