// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * tls.c - TLS 1.3 contexts with mutual authentication and explicit peer
 * authorisation ([SEQOBS] "Security Considerations"); see tls.h.
 * Name matching is OpenSSL's X509_check_host / X509_check_ip_asc, used in
 * one place (peer_name_ok) both during the handshake and after it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "errmsg.h"
#include "tls.h"

/* The authorised names, attached to each SSL_CTX for the verify callback. */
struct peer_names {
	int n;
	char name[RM_MAX_PEER_NAMES][256];
};

static int names_idx = -1;
static int mismatch_idx = -1; /* per SSL: why the peer's name was refused (malloc'ed text) */
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void names_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	free(ptr);
}

static void names_idx_init(void)
{
	names_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, names_free);
	mismatch_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, names_free);
}

char *rm_tls_errors(const char *what, char *buf, size_t len)
{
	size_t off;
	unsigned long e;
	const char *data;
	int flags;

	if (!buf || !len)
		return buf;
	if (what != buf)
		snprintf(buf, len, "%s", what ? what : "");
	off = strlen(buf);
	while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
		const char *reason = ERR_reason_error_string(e);
		char tmp[128];

		if (!reason) {
			ERR_error_string_n(e, tmp, sizeof(tmp));
			reason = tmp;
		}
		if (off + 1 < len)
			off += snprintf(buf + off, len - off, "%s%s%s%s%s", off ? ": " : "", reason,
					(flags & ERR_TXT_STRING) && data && *data ? " (" : "",
					(flags & ERR_TXT_STRING) && data ? data : "",
					(flags & ERR_TXT_STRING) && data && *data ? ")" : "");
		if (off >= len)
			off = len - 1;
	}
	return buf;
}

/* 0 if path names a readable file, else -EINVAL (none) or open(2)'s -errno, with a message naming it. */
static int check_file(const char *key, const char *path, char *err, size_t errlen)
{
	int fd;

	if (!path[0]) {
		rm_errf(err, errlen, "tls: no %s file configured (TLS needs %s = FILE, or transport = tcp)", key, key);
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		rm_errf(err, errlen, "tls: %s file %s: %s", key, path, strerror(e));
		return -e;
	}
	close(fd);
	return 0;
}

static int is_address(const char *name)
{
	unsigned char a[16];

	return inet_pton(AF_INET, name, a) == 1 || inet_pton(AF_INET6, name, a) == 1;
}

/* The index of the first of the names that cert carries, or -1. */
static int peer_name_index(X509 *cert, const char (*name)[256], int n)
{
	for (int i = 0; i < n; i++) {
		if (is_address(name[i])) {
			if (X509_check_ip_asc(cert, name[i], 0) == 1)
				return i;
		} else if (X509_check_host(cert, name[i], 0, X509_CHECK_FLAG_NO_WILDCARDS, NULL) == 1) {
			return i;
		}
	}
	return -1;
}

/* 1 if cert carries one of the names, else 0. */
static int peer_name_ok(X509 *cert, const char (*name)[256], int n)
{
	return peer_name_index(cert, name, n) >= 0;
}

/* "CN=x (DNS:a, DNS:b, IP:192.0.2.1)": the names a certificate carries. */
static void cert_names(X509 *cert, char *buf, size_t len)
{
	GENERAL_NAMES *sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	char cn[256] = "";
	size_t off;
	int n = 0;

	X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
	snprintf(buf, len, "CN=%s", cn[0] ? cn : "(none)");
	off = strlen(buf);
	for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans) && off + 1 < len; i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
		char ip[INET6_ADDRSTRLEN] = "";

		if (g->type == GEN_DNS) {
			off += (size_t)snprintf(buf + off, len - off, "%sDNS:%.*s", n++ ? ", " : " (",
						ASN1_STRING_length(g->d.dNSName),
						(const char *)ASN1_STRING_get0_data(g->d.dNSName));
		} else if (g->type == GEN_IPADD) {
			int l = ASN1_STRING_length(g->d.iPAddress);

			inet_ntop(l == 16 ? AF_INET6 : AF_INET, ASN1_STRING_get0_data(g->d.iPAddress), ip, sizeof(ip));
			off += (size_t)snprintf(buf + off, len - off, "%sIP:%s", n++ ? ", " : " (", ip);
		}
	}
	if (n && off + 1 < len)
		snprintf(buf + off, len - off, ")");
	GENERAL_NAMES_free(sans);
}

/* "certificate CN=x (DNS:a) carries none of the authorised peer names (p, q)". */
static void mismatch_text(X509 *cert, const char (*name)[256], int n, char *buf, size_t len)
{
	char have[600], want[600];
	size_t off = 0;

	cert_names(cert, have, sizeof(have));
	want[0] = '\0';
	for (int i = 0; i < n && off + 1 < sizeof(want); i++)
		off += (size_t)snprintf(want + off, sizeof(want) - off, "%s%s", i ? ", " : "", name[i]);
	snprintf(buf, len, "certificate %s carries none of the authorised peer names (%s)", have, want);
}

/* Verify callback: the chain as OpenSSL verified it, plus the name at depth 0. */
static int verify_cb(int ok, X509_STORE_CTX *xs)
{
	SSL *ssl;
	const struct peer_names *pn;
	X509 *cert;

	if (!ok || X509_STORE_CTX_get_error_depth(xs) != 0)
		return ok;
	ssl = X509_STORE_CTX_get_ex_data(xs, SSL_get_ex_data_X509_STORE_CTX_idx());
	pn = ssl ? SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), names_idx) : NULL;
	cert = X509_STORE_CTX_get_current_cert(xs);
	if (!pn || !peer_name_ok(cert, pn->name, pn->n)) {
		char *reason = malloc(1400);

		/* The alert says only "hostname mismatch": keep the names for the log. */
		if (reason && ssl && pn) {
			mismatch_text(cert, pn->name, pn->n, reason, 1400);
			free(SSL_get_ex_data(ssl, mismatch_idx));
			if (!SSL_set_ex_data(ssl, mismatch_idx, reason))
				free(reason);
		} else {
			free(reason);
		}
		X509_STORE_CTX_set_error(xs, X509_V_ERR_HOSTNAME_MISMATCH);
		return 0;
	}
	return 1;
}

int rm_tls_name_mismatch(SSL *ssl, char *buf, size_t len)
{
	const char *reason;

	if (!ssl || mismatch_idx < 0 || !(reason = SSL_get_ex_data(ssl, mismatch_idx)))
		return 0;
	snprintf(buf, len, "%s", reason);
	return 1;
}

/* A pass phrase is never asked for: a service has no terminal, and a prompt would hang it. */
static int no_passphrase(char *buf, int size, int rwflag, void *userdata)
{
	*(int *)userdata = 1;
	return -1;
}

static SSL_CTX *make_ctx(const struct rm_tls_settings *s, int server, char *err, size_t errlen)
{
	SSL_CTX *ctx;
	struct peer_names *pn;
	char what[600], buf[1024];
	int encrypted = 0;

	if (s->plain_tcp) {
		rm_errf(err, errlen, "tls: transport = tcp, no TLS context");
		return NULL;
	}
	if (s->n_peer_names <= 0) {
		rm_errf(err, errlen,
			"tls: no peer_name configured: TLS requires at least one explicitly "
			"authorised peer name");
		return NULL;
	}
	for (int i = 0; i < s->n_peer_names && i < RM_MAX_PEER_NAMES; i++)
		if (!s->peer_names[i][0]) {
			rm_errf(err, errlen, "tls: peer_name %d is empty", i + 1);
			return NULL;
		}
	if (check_file("ca", s->ca, err, errlen) || check_file("cert", s->cert, err, errlen) ||
	    check_file("key", s->key, err, errlen))
		return NULL;

	pthread_once(&names_once, names_idx_init);
	if (names_idx < 0) {
		rm_errf(err, errlen, "%s", rm_tls_errors("tls: ex_data index", buf, sizeof(buf)));
		return NULL;
	}
	ERR_clear_error();
	ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (!ctx) {
		rm_errf(err, errlen, "%s", rm_tls_errors("tls: SSL_CTX_new", buf, sizeof(buf)));
		return NULL;
	}
	pn = calloc(1, sizeof(*pn));
	if (!pn || !SSL_CTX_set_ex_data(ctx, names_idx, pn)) {
		free(pn);
		rm_errf(err, errlen, "tls: out of memory");
		goto fail;
	}
	pn->n = s->n_peer_names < RM_MAX_PEER_NAMES ? s->n_peer_names : RM_MAX_PEER_NAMES;
	memcpy(pn->name, s->peer_names, sizeof(pn->name));
	for (int i = 0; i < pn->n; i++)
		pn->name[i][255] = '\0';

	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION)) {
		rm_errf(err, errlen, "%s", rm_tls_errors("tls: cannot restrict to TLS 1.3", buf, sizeof(buf)));
		goto fail;
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, s->cert) != 1) {
		snprintf(what, sizeof(what), "tls: cert file %s", s->cert);
		rm_errf(err, errlen, "%s", rm_tls_errors(what, buf, sizeof(buf)));
		goto fail;
	}
	SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
	SSL_CTX_set_default_passwd_cb_userdata(ctx, &encrypted);
	if (SSL_CTX_use_PrivateKey_file(ctx, s->key, SSL_FILETYPE_PEM) != 1) {
		if (encrypted) {
			ERR_clear_error();
			rm_errf(err, errlen,
				"tls: key file %s is encrypted: rocemeter never asks for a pass phrase (a service has "
				"no "
				"terminal); store the key unencrypted, readable by root only "
				"(openssl pkey -in %s -out NEWFILE)",
				s->key, s->key);
			goto fail;
		}
		if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
			snprintf(what, sizeof(what), "tls: key file %s does not match cert file %s", s->key, s->cert);
		else
			snprintf(what, sizeof(what), "tls: key file %s", s->key);
		rm_errf(err, errlen, "%s", rm_tls_errors(what, buf, sizeof(buf)));
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		snprintf(what, sizeof(what), "tls: key file %s does not match cert file %s", s->key, s->cert);
		rm_errf(err, errlen, "%s", rm_tls_errors(what, buf, sizeof(buf)));
		goto fail;
	}
	if (SSL_CTX_load_verify_file(ctx, s->ca) != 1) {
		snprintf(what, sizeof(what), "tls: ca file %s", s->ca);
		rm_errf(err, errlen, "%s", rm_tls_errors(what, buf, sizeof(buf)));
		goto fail;
	}
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	if (server) {
		STACK_OF(X509_NAME) *cas = SSL_load_client_CA_file(s->ca);

		if (!cas) {
			snprintf(what, sizeof(what), "tls: ca file %s: no CA names", s->ca);
			rm_errf(err, errlen, "%s", rm_tls_errors(what, buf, sizeof(buf)));
			goto fail;
		}
		SSL_CTX_set_client_CA_list(ctx, cas);
		/*
		 * One (stateful, never resumable: no cache) ticket right after the
		 * client's certificate is accepted: in TLS 1.3 the client finishes
		 * first, and this record tells it the server did not refuse it.
		 */
		SSL_CTX_set_num_tickets(ctx, 1);
		SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"rocemeter", 9);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verify_cb);
	} else {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, verify_cb);
	}
	/* The purpose of the peer's role: a client checks serverAuth, a server clientAuth. */
	SSL_CTX_set_purpose(ctx, server ? X509_PURPOSE_SSL_CLIENT : X509_PURPOSE_SSL_SERVER);
	SSL_CTX_set_default_passwd_cb(ctx, NULL); /* the userdata pointed into this frame */
	SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
	ERR_clear_error();
	return ctx;
fail:
	SSL_CTX_free(ctx);
	ERR_clear_error();
	return NULL;
}

SSL_CTX *rm_tls_client_ctx(const struct rm_tls_settings *s, char *err, size_t errlen)
{
	return make_ctx(s, 0, err, errlen);
}

SSL_CTX *rm_tls_server_ctx(const struct rm_tls_settings *s, char *err, size_t errlen)
{
	return make_ctx(s, 1, err, errlen);
}

int rm_tls_client_setup(SSL *ssl, const struct rm_tls_settings *s, char *err, size_t errlen)
{
	char buf[512];

	for (int i = 0; i < s->n_peer_names && i < RM_MAX_PEER_NAMES; i++) {
		if (is_address(s->peer_names[i]))
			continue;
		if (SSL_set_tlsext_host_name(ssl, s->peer_names[i]) != 1) {
			rm_errf(err, errlen, "%s", rm_tls_errors("tls: SNI", buf, sizeof(buf)));
			return -EPROTO;
		}
		break;
	}
	return 0;
}

void rm_tls_peer_subject(SSL *ssl, char *buf, size_t len)
{
	X509 *cert = ssl ? SSL_get0_peer_certificate(ssl) : NULL;
	GENERAL_NAMES *sans;
	size_t off;

	if (!len)
		return;
	if (!cert) {
		snprintf(buf, len, "no certificate");
		return;
	}
	X509_NAME_oneline(X509_get_subject_name(cert), buf, (int)len);
	off = strlen(buf);
	sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
	for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans) && off + 1 < len; i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);

		if (g->type == GEN_DNS) {
			off += snprintf(buf + off, len - off, "%sDNS:%.*s", i ? "," : " SAN ",
					ASN1_STRING_length(g->d.dNSName),
					(const char *)ASN1_STRING_get0_data(g->d.dNSName));
		} else if (g->type == GEN_IPADD) {
			char ip[INET6_ADDRSTRLEN] = "";
			int l = ASN1_STRING_length(g->d.iPAddress);

			inet_ntop(l == 16 ? AF_INET6 : AF_INET, ASN1_STRING_get0_data(g->d.iPAddress), ip, sizeof(ip));
			off += snprintf(buf + off, len - off, "%sIP:%s", i ? "," : " SAN ", ip);
		}
	}
	GENERAL_NAMES_free(sans);
}

int rm_tls_authorized_name(SSL *ssl, const struct rm_tls_settings *s, char *buf, size_t len)
{
	X509 *cert = ssl && !s->plain_tcp ? SSL_get0_peer_certificate(ssl) : NULL;
	int i = cert ? peer_name_index(cert, s->peer_names,
				       s->n_peer_names < RM_MAX_PEER_NAMES ? s->n_peer_names : RM_MAX_PEER_NAMES)
		     : -1;

	if (i < 0)
		return -1;
	snprintf(buf, len, "%s", s->peer_names[i]);
	return 0;
}

int rm_tls_authorize_peer(SSL *ssl, const struct rm_tls_settings *s, char *err, size_t errlen)
{
	X509 *cert;
	long vr;
	char subj[512], names[512];
	size_t off = 0;

	if (!ssl || s->plain_tcp) {
		rm_errf(err, errlen, "tls: no TLS session, no peer certificate");
		return -EACCES;
	}
	cert = SSL_get0_peer_certificate(ssl);
	if (!cert) {
		rm_errf(err, errlen, "tls: the peer presented no certificate");
		return -EACCES;
	}
	vr = SSL_get_verify_result(ssl);
	rm_tls_peer_subject(ssl, subj, sizeof(subj));
	if (vr != X509_V_OK) {
		rm_errf(err, errlen, "tls: peer certificate %s did not verify: %s", subj,
			X509_verify_cert_error_string(vr));
		return -EACCES;
	}
	if (peer_name_ok(cert, s->peer_names,
			 s->n_peer_names < RM_MAX_PEER_NAMES ? s->n_peer_names : RM_MAX_PEER_NAMES))
		return 0;
	names[0] = '\0';
	for (int i = 0; i < s->n_peer_names && i < RM_MAX_PEER_NAMES && off + 1 < sizeof(names); i++)
		off += snprintf(names + off, sizeof(names) - off, "%s%s", i ? ", " : "", s->peer_names[i]);
	rm_errf(err, errlen, "tls: peer certificate %s carries none of the authorised peer names (%s)", subj, names);
	return -EACCES;
}
