/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tls.h - OpenSSL 3 contexts for the IPFIX export session ([SEQOBS],
 * "Security Considerations": TLS 1.3 over TCP, mutually authenticated,
 * confidential, explicitly authorised peers). RFC 7011 still names TLS 1.1;
 * RFC 8996 and RFC 9325 forbid it, so only TLS 1.3 is offered and accepted.
 *
 * Both contexts:
 *   - TLS 1.3 as minimum and maximum protocol version;
 *   - own certificate chain (s->cert) and private key (s->key), PEM;
 *   - the peer's chain verified against s->ca (PEM CA file) with the
 *     certificate purpose of its role (the server's EKU serverAuth, the
 *     client's clientAuth) and one of s->peer_names checked during the
 *     handshake (exact name, no wildcards), so a refused peer gets an alert;
 *   - no session resumption (no session cache on either side): every
 *     Transport Session is fully authenticated.
 * The server requires a client certificate (SSL_VERIFY_FAIL_IF_NO_PEER_CERT)
 * and sends one ticket (never resumable) after accepting it: in TLS 1.3 the
 * client finishes its handshake first, and that record tells the exporter
 * it was not refused (export.c waits briefly for it).
 *
 * Configuration errors (s->plain_tcp set, an empty peer_names list, a
 * missing or unreadable file, a key that does not match the certificate, an
 * encrypted key: no pass phrase is ever asked for, a prompt would hang a
 * service) return NULL with a message in err that names the file or setting.
 */
#ifndef ROCEMETER_TLS_H
#define ROCEMETER_TLS_H

#include <stddef.h>
#include <openssl/ssl.h>

#include "config.h"

/*
 * Client context of the exporter. Use rm_tls_client_setup() on each new SSL
 * for SNI. Returns NULL with a reason in err on a configuration error.
 */
SSL_CTX *rm_tls_client_ctx(const struct rm_tls_settings *s, char *err, size_t errlen);

/* Server context of the collector (client certificate required). */
SSL_CTX *rm_tls_server_ctx(const struct rm_tls_settings *s, char *err, size_t errlen);

/*
 * Per-connection client setup: sends SNI with the first DNS name of
 * s->peer_names (none for an address). Returns 0, or -EPROTO with OpenSSL's
 * reason.
 */
int rm_tls_client_setup(SSL *ssl, const struct rm_tls_settings *s, char *err, size_t errlen);

/*
 * After the handshake: 0 if the peer presented a certificate that verified
 * (SSL_get_verify_result X509_V_OK) and that carries one of s->peer_names
 * (a DNS subjectAltName, or the subject CN when the certificate has no DNS
 * subjectAltName; a peer name that is an IP address matches an IP SAN);
 * exact match, case-insensitive, no wildcards. Else -EACCES with the
 * reason, e.g. "tls: peer certificate CN=x.test carries none of the
 * authorised peer names (a.test, b.test)". With s->plain_tcp there is no
 * certificate: -EACCES.
 */
int rm_tls_authorize_peer(SSL *ssl, const struct rm_tls_settings *s, char *err, size_t errlen);

/*
 * The authorised peer name (of s->peer_names, as configured) that the peer's
 * certificate carries, the first that rm_tls_authorize_peer() matched, into
 * buf. 0, or -1 when none does (no certificate, plain TCP).
 */
int rm_tls_authorized_name(SSL *ssl, const struct rm_tls_settings *s, char *buf, size_t len);

/*
 * Append the reasons of the calling thread's OpenSSL error queue (and
 * clear it) to buf, "; "-separated, after `what`. Returns buf.
 */
char *rm_tls_errors(const char *what, char *buf, size_t len);

/*
 * After a handshake that failed on the peer's name (X509_V_ERR_HOSTNAME_MISMATCH):
 * 1 with "certificate CN=x (DNS:a, IP:192.0.2.1) carries none of the
 * authorised peer names (p, q)" in buf, or 0 when no name was refused.
 */
int rm_tls_name_mismatch(SSL *ssl, char *buf, size_t len);

/* Short description of a peer certificate's subject and names, e.g. "/CN=a.test SAN DNS:a.test,IP:::1". */
void rm_tls_peer_subject(SSL *ssl, char *buf, size_t len);

#endif /* ROCEMETER_TLS_H */
