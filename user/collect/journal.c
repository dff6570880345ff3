// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * journal.c - the received-Messages journal (journal.h): a file per open
 * Transport Session under DATABASE.received/, written as the session
 * reads, rotated at a bound, removed once the session's end is committed,
 * and read at the next start after kill -9 or a crash.
 *
 * A file is a header (the session, and the counts of what was decoded
 * before the file's first octet), Messages that restore the session's
 * Templates (not counted: they were received before), then every octet
 * received since. At the next start the octets are decoded again, only to
 * count the records; read minus committed is what the crash lost.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector_int.h"
#include "common/log.h"
#include "journal.h"

#define MAGIC "RMRECV2"

/* The first octets of a file (host byte order: the file is read by the same host). */
struct jhead {
	char magic[8];
	int64_t session_id, run_id;
	uint64_t started_ms;
	uint64_t messages, records, rejected, octets; /* decoded before the first octet of the body */
	uint64_t snapshot_octets;                     /* Template Messages before the received octets */
	char peer[64];
	char transport[8];
	char subject[256]; /* the authorised peer's certificate subject; "" for plain TCP */
};

/* A session whose end waits for its transaction. */
struct pending {
	int64_t session_id;
	uint64_t gen;
};

struct rm_journal {
	char dir[300];
	struct rm_backend *store;
	uint32_t pen;
	GArray *pending; /* struct pending */
	int failed_logged;
};

struct rm_journal *rm_journal_open(const char *dir, struct rm_backend *store, uint32_t pen, char *err, size_t errlen)
{
	struct rm_journal *j;
	char parent[300], *slash;

	err[0] = 0;
	if (!rm_backend_has_journal(store))
		return NULL;
	j = calloc(1, sizeof(*j));
	if (!j) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	j->store = store;
	j->pen = pen;
	j->pending = g_array_new(FALSE, FALSE, sizeof(struct pending));
	errno = 0;
	snprintf(parent, sizeof(parent), "%s", dir);
	if ((slash = strrchr(parent, '/')) && slash != parent) {
		*slash = 0;
		if (mkdir(parent, 0700) < 0 && errno != EEXIST) /* the spool directory may not exist yet */
			goto fail;
		errno = 0;
	}
	if ((size_t)snprintf(j->dir, sizeof(j->dir), "%s", dir) >= sizeof(j->dir) ||
	    (mkdir(j->dir, 0700) < 0 && errno != EEXIST)) {
	fail:
		snprintf(err, errlen, "received-Messages journal %s: %s", dir,
			 errno ? strerror(errno) : "path too long");
		rm_journal_close(j);
		return NULL;
	}
	return j;
}

static void path_of(const struct rm_journal *j, int64_t id, const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%" PRId64 "%s", j->dir, id, suffix);
}

void rm_journal_close(struct rm_journal *j)
{
	if (!j)
		return;
	rm_journal_tick(j);
	g_array_free(j->pending, TRUE);
	free(j);
}

/* All of buf to fd. 0 or -1 (errno). */
static int write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void journal_failed(struct conn *c, const char *what)
{
	struct rm_journal *j = c->srv->journal;

	if (!j->failed_logged++)
		rm_log(RM_LOG_ERR,
		       "session %" PRId64 ": received-Messages journal %s: %s; what this session reads from now on "
		       "is lost without a count if the collector is killed (further failures are not logged)",
		       c->session_id, what, strerror(errno));
	if (c->jfd >= 0)
		close(c->jfd);
	c->jfd = -1;
}

/* One Template Record as a Message of its own (Set ID 2, or 3 for an Options Template). */
static void snapshot_one(void *arg, uint32_t domain, int options, const uint8_t *rec, size_t len)
{
	GByteArray *g = arg;
	size_t total = 16 + 4 + len;
	uint8_t h[20] = { 0, 10, (uint8_t)(total >> 8), (uint8_t)total };

	if (total > 65535 || !rec)
		return;
	h[12] = (uint8_t)(domain >> 24);
	h[13] = (uint8_t)(domain >> 16);
	h[14] = (uint8_t)(domain >> 8);
	h[15] = (uint8_t)domain;
	h[17] = options ? 3 : 2;
	h[18] = (uint8_t)((4 + len) >> 8);
	h[19] = (uint8_t)(4 + len);
	g_byte_array_append(g, h, sizeof(h));
	g_byte_array_append(g, rec, (guint)len);
}

/*
 * Write c's file at path: header with c's counts as base, c's Templates,
 * then the octets not yet decoded. The fd, or -1 (errno).
 */
static int write_file(struct conn *c, const char *path)
{
	struct jhead h = { .session_id = c->session_id,
			   .run_id = c->srv->run_id,
			   .started_ms = c->started_ms,
			   .messages = c->messages,
			   .records = c->records,
			   .rejected = c->rejected,
			   .octets = c->octets };
	GByteArray *snap = g_byte_array_new();
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), e;

	memcpy(h.magic, MAGIC, sizeof(h.magic));
	snprintf(h.peer, sizeof(h.peer), "%s", c->peer);
	snprintf(h.transport, sizeof(h.transport), "%s", c->ssl ? "tls" : "tcp");
	if (c->ssl)
		rm_tls_peer_subject(c->ssl, h.subject, sizeof(h.subject));
	if (c->dec)
		rm_ipfix_templates_each(c->dec, snapshot_one, snap);
	h.snapshot_octets = snap->len;
	if (fd < 0)
		goto fail;
	/* Room for the file up to its rotation, so that a disk that fills up does not stop it (best effort). */
	(void)!fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, sizeof(h) + snap->len + RM_JOURNAL_ROTATE_BYTES + 262144);
	if (write_all(fd, &h, sizeof(h)) < 0 || write_all(fd, snap->data, snap->len) < 0 ||
	    (c->len && write_all(fd, c->buf, c->len) < 0))
		goto fail;
	g_byte_array_free(snap, TRUE);
	c->jbytes = c->len;
	return fd;
fail:
	e = errno;
	g_byte_array_free(snap, TRUE);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	errno = e;
	return -1;
}

void rm_journal_session_start(struct rm_journal *j, struct conn *c)
{
	char path[340];

	c->jfd = -1;
	if (!j)
		return;
	path_of(j, c->session_id, "", path, sizeof(path));
	c->jfd = write_file(c, path);
	if (c->jfd < 0)
		journal_failed(c, path);
}

void rm_journal_append(struct conn *c, const uint8_t *buf, size_t n)
{
	if (c->jfd < 0)
		return;
	if (write_all(c->jfd, buf, n) < 0)
		journal_failed(c, "write");
	else
		c->jbytes += n;
}

void rm_journal_counted(struct conn *c)
{
	struct rm_session_counts cnt = { .messages = c->messages,
					 .records = c->records,
					 .octets = c->octets,
					 .rejected = c->rejected,
					 .verdicts = c->rs ? rm_rules_verdict_counts(c->rs) : NULL };

	if (!c->closing)
		rm_collector_store_check(c->srv, rm_backend_session_counts(c->srv->store, c->session_id, &cnt),
					 "session counts");
}

void rm_journal_rotate_due(struct conn *c)
{
	struct rm_journal *j = c->srv->journal;
	char tmp[340], path[340];
	int fd;

	if (c->jfd < 0 || c->jbytes < RM_JOURNAL_ROTATE_BYTES)
		return;
	path_of(j, c->session_id, ".tmp", tmp, sizeof(tmp));
	path_of(j, c->session_id, "", path, sizeof(path));
	fd = write_file(c, tmp);
	if (fd < 0 || rename(tmp, path) < 0) {
		/* The old file stays whole and goes on growing: correct, only not bounded. */
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return;
	}
	close(c->jfd);
	c->jfd = fd;
}

static void remove_file(struct rm_journal *j, int64_t id)
{
	char path[340];

	path_of(j, id, "", path, sizeof(path));
	unlink(path);
}

void rm_journal_session_end(struct conn *c, uint64_t gen)
{
	struct rm_journal *j = c->srv->journal;
	struct pending p = { c->session_id, gen };

	if (!j)
		return;
	if (c->jfd >= 0)
		close(c->jfd);
	c->jfd = -1;
	if (rm_backend_transactions(j->store) > gen)
		remove_file(j, c->session_id);
	else
		g_array_append_val(j->pending, p);
}

void rm_journal_tick(struct rm_journal *j)
{
	uint64_t now;
	guint k = 0;

	if (!j)
		return;
	now = rm_backend_transactions(j->store);
	for (guint i = 0; i < j->pending->len; i++) {
		struct pending p = g_array_index(j->pending, struct pending, i);

		if (now > p.gen)
			remove_file(j, p.session_id);
		else
			g_array_index(j->pending, struct pending, k++) = p;
	}
	g_array_set_size(j->pending, k);
}

/* ---------------- the next start ---------------- */

/* What decoding a file again counts. */
struct recount {
	uint64_t records, rejected;
};

static void rc_record(void *arg, uint32_t domain, uint16_t tid, const struct rm_report *r, const uint8_t *raw,
		      size_t len)
{
	((struct recount *)arg)->records++;
}

static void rc_reject(void *arg, uint32_t domain, uint16_t tid, const uint8_t *raw, size_t len, const char *reason)
{
	((struct recount *)arg)->rejected++;
}

static const struct rm_ipfix_sink recount_sink = { .record = rc_record, .reject = rc_reject };

/*
 * Decode n octets of Messages at p with dec, as the session did: each whole
 * Message counted in l, its records in rc; stops at a framing error or a
 * fatal one (where the session ended). Returns the octets left (an
 * incomplete Message).
 */
static size_t recount(struct rm_ipfix_session *dec, const uint8_t *p, size_t n, struct rm_store_lost_session *l,
		      struct recount *rc)
{
	char err[300];
	size_t off = 0;

	while (off < n) {
		long m = rm_ipfix_frame(p + off, n - off, err, sizeof(err));

		if (m <= 0)
			return m < 0 ? 0 : n - off;
		if (l) {
			l->messages++;
			l->octets += (uint64_t)m;
		}
		if (rm_ipfix_message(dec, p + off, (size_t)m, &recount_sink, rc, err, sizeof(err)) < 0)
			return 0;
		off += (size_t)m;
	}
	return 0;
}

/* Read a whole file. Its octets (free them) and *n, or NULL. */
static uint8_t *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	struct stat sb;

	if (!f)
		return NULL;
	if (fstat(fileno(f), &sb) == 0 && sb.st_size >= (off_t)sizeof(struct jhead) && (buf = malloc(sb.st_size)) &&
	    fread(buf, 1, sb.st_size, f) != (size_t)sb.st_size) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*n = buf ? (size_t)sb.st_size : 0;
	return buf;
}

/* One file: its session's loss counted in the store. 1 counted, 0 nothing to count (removed), -1 kept. */
static int recover_file(struct rm_journal *j, const char *path, uint64_t now_ms, uint64_t *lost,
			struct rm_store_lost_session *l)
{
	size_t n;
	uint8_t *buf = read_file(path, &n);
	struct jhead h;
	struct rm_ipfix_session *dec;
	struct recount ignored = { 0 }, rc = { 0 };
	int ret;

	if (!buf || memcmp(buf, MAGIC, sizeof(h.magic))) {
		rm_log(RM_LOG_WARNING, "received-Messages journal %s: not a journal file (removed)", path);
		free(buf);
		unlink(path);
		return 0;
	}
	memcpy(&h, buf, sizeof(h));
	h.peer[sizeof(h.peer) - 1] = h.transport[sizeof(h.transport) - 1] = h.subject[sizeof(h.subject) - 1] = 0;
	if (h.snapshot_octets > n - sizeof(h) || !(dec = rm_ipfix_session_new(j->pen))) {
		free(buf);
		return -1;
	}
	*l = (struct rm_store_lost_session){ .id = h.session_id,
					     .run_id = h.run_id,
					     .peer = h.peer,
					     .subject = h.subject,
					     .transport = h.transport,
					     .started_ms = h.started_ms,
					     .messages = h.messages,
					     .octets = h.octets };
	recount(dec, buf + sizeof(h), h.snapshot_octets, NULL, &ignored);
	l->partial_octets =
		recount(dec, buf + sizeof(h) + h.snapshot_octets, n - sizeof(h) - h.snapshot_octets, l, &rc);
	l->records = h.records + rc.records;
	l->rejected = h.rejected + rc.rejected;
	rm_ipfix_session_free(dec);
	ret = rm_backend_session_lost(j->store, l, now_ms, lost);
	free(buf);
	if (ret < 0) {
		rm_log(RM_LOG_ERR, "received-Messages journal %s: not counted (%s); kept for the next start", path,
		       rm_backend_error(j->store));
		return -1;
	}
	unlink(path);
	return *lost || l->partial_octets ? 1 : 0;
}

int rm_journal_recover(struct rm_journal *j, uint64_t now_ms)
{
	DIR *d;
	struct dirent *de;
	uint64_t sessions = 0, total = 0;
	int ret = 0;

	if (!j || !(d = opendir(j->dir)))
		return 0;
	while ((de = readdir(d))) {
		char path[600], *end;
		uint64_t lost = 0;
		struct rm_store_lost_session l;
		long long id = strtoll(de->d_name, &end, 10);

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", j->dir, de->d_name);
		if (id <= 0 || *end) { /* a rotation the crash interrupted: the file it was to replace is whole */
			unlink(path);
			continue;
		}
		int r = recover_file(j, path, now_ms, &lost, &l);

		if (r < 0)
			ret = -1;
		if (r > 0) {
			sessions++;
			total += lost;
			rm_log(RM_LOG_WARNING,
			       "collector restarted: session %" PRId64 " from %s: %" PRIu64 " of its %" PRIu64
			       " records read were not committed by the run that ended (collector resource drop "
			       "'collector-crash')%s",
			       l.id, l.peer, lost, l.records + l.rejected,
			       l.partial_octets ? "; an incomplete last Message was lost with it" : "");
		}
	}
	closedir(d);
	if (sessions)
		rm_log(RM_LOG_NOTICE,
		       "collector restarted: %" PRIu64 " records of %" PRIu64
		       " sessions read and not committed by the run that ended are counted as drops",
		       total, sessions);
	return ret;
}
