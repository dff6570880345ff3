# user/census/ and bpf/census.bpf.c: the connection census (tc ingress live,
# BPF_PROG_TEST_RUN over captures): what it counted per connection key, the
# eligibility rule of the profile and the ready [provision] lines; used by
# `connections` (user/replay/) and by `attach --census` / `status
# --connections` (user/meter/).
BPF_NAMES      += census
ROCEMETER_SRCS += user/census/census.c user/census/connections.c
