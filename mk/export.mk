# Export transport: TLS 1.3 contexts (mutual authentication, explicit peer
# authorisation) and the exporter thread (IPFIX over TCP/TLS, reconnect,
# bounded queue). Test PKI: scripts/gen-certs.
ROCEMETER_SRCS += user/tls.c user/export.c
