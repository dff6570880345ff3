// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * spool.c - the spool file: at close, what could not be inserted is written to
 * spool_dir and inserted at the next start (chstore.h "Spool").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "chstore_impl.h"
#include "common/limits.h"
#include "common/log.h"

/*
 * The versions: 1 (no store named), 2 (the store named), 3 (a batch holds
 * T_POINTS too). Versions 1 and 2 hold the tables before T_POINTS.
 */
static const char spool_magic_v1[8] = { 'R', 'M', 'S', 'P', 'O', 'O', 'L', '1' };
static const char spool_magic_v2[8] = { 'R', 'M', 'S', 'P', 'O', 'O', 'L', '2' };
static const char spool_magic[8] = { 'R', 'M', 'S', 'P', 'O', 'O', 'L', '3' };

static int put_le(FILE *f, uint64_t v, int n)
{
	uint8_t le[8];

	for (int i = 0; i < n; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	return fwrite(le, 1, (size_t)n, f) == (size_t)n ? 0 : -1;
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * The spool directory may hold rows that the next start sends with this
 * collector's credentials: it must be this user's and writable by nobody
 * else (as OpenSSH's checks of ~/.ssh). Missing is fine (created at close,
 * mode 0700). 0, or -EPERM / -errno with err naming it, its owner or mode
 * and the fix.
 */
int rm_chs_spool_dir_check(const char *dir, char *err, size_t errlen)
{
	struct stat sb;

	if (lstat(dir, &sb) < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "store_spool_dir %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "store_spool_dir %s: not a directory (a symbolic link is not followed)", dir);
		return -ENOTDIR;
	}
	if (sb.st_uid != geteuid()) {
		snprintf(err, errlen,
			 "store_spool_dir %s: owned by uid %u, not by the collector's user (uid %u): chown it, or "
			 "use a directory of the collector's user",
			 dir, (unsigned)sb.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (sb.st_mode & 022) {
		snprintf(err, errlen,
			 "store_spool_dir %s: mode %04o: writable by group or others, who could plant the rows sent "
			 "at the next start: chmod 700 %s",
			 dir, (unsigned)(sb.st_mode & 07777), dir);
		return -EPERM;
	}
	return 0;
}

void rm_chs_spool_dir_make(const char *dir)
{
	struct stat sb;

	if (lstat(dir, &sb) == 0 || errno != ENOENT)
		return;
	if (g_mkdir_with_parents(dir, 0700) == 0)
		rm_log(RM_LOG_INFO, "ClickHouse store: made the spool directory %s (mode 0700)", dir);
}

/* Does table t of batch b go to the spool? Unsent rows; not the run's own runs and limits rows when skip_run. */
static int spool_table(const struct batch *b, int t, int skip_run)
{
	if (b->sent[t] || !b->body[t]->len)
		return 0;
	return !(skip_run && !b->from_spool && (t == T_RUNS || t == T_LIMITS));
}

/*
 * The unsent tables of batches (the inflight group, then the queue) into
 * chs->spool_path as ONE batch (the rows of each table in their order; so a
 * spool written again and again does not grow by batches): the magic, the
 * store's name (u32 LE length, octets), then 'B', retired, raw, conns (u32
 * LE) and per table its length (u64 LE) and rows. skip_run: leave out the
 * run's own runs and limits rows (a run that never reached ClickHouse and
 * received no session). Written to a temporary name created anew
 * (O_EXCL after removing a stale one, O_NOFOLLOW), synced and renamed:
 * the file is whole or absent. *what gets the counts in words. 0 (also
 * when there is nothing to write: no file, *what empty), or -errno with err.
 */
int rm_chs_spool_write(struct rm_chstore *chs, struct batch *const lists[2], int skip_run, char *what, size_t whatlen,
		       char *err, size_t errlen)
{
	char tmp[sizeof(chs->spool_path) + 8];
	uint64_t len[T__N] = { 0 }, retired = 0, raw = 0, conns = 0, total = 0;
	FILE *f;
	int fd, rc = 0;

	*what = '\0';
	for (int q = 0; q < 2; q++)
		for (const struct batch *b = lists[q]; b; b = b->next) {
			for (int t = 0; t < T__N; t++)
				if (spool_table(b, t, skip_run))
					len[t] += b->body[t]->len;
			retired += b->sent[T_EPOCHS] ? 0 : b->retired;
			raw += b->sent[T_RAW] ? 0 : b->raw;
			conns += b->sent[T_CONNS] ? 0 : b->conns;
		}
	for (int t = 0; t < T__N; t++)
		total += len[t];
	if (!total)
		return 0;
	snprintf(what, whatlen,
		 "%" PRIu64 " epoch outcomes, %" PRIu64 " raw records, %" PRIu64 " counts of refused connections, "
		 "%" PRIu64 " octets of rows in all",
		 retired, raw, conns, total);
	if (mkdir(chs->spool_dir, 0700) < 0 && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", chs->spool_dir, strerror(-rc));
		return rc;
	}
	if ((rc = rm_chs_spool_dir_check(chs->spool_dir, err, errlen)) < 0)
		return rc;
	snprintf(tmp, sizeof(tmp), "%s.tmp", chs->spool_path);
	if (unlink(tmp) < 0 && errno != ENOENT) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
		return rc;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "wb"))) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	errno = 0;
	if (fwrite(spool_magic, 1, sizeof(spool_magic), f) != sizeof(spool_magic) ||
	    put_le(f, strlen(chs->store_name), 4) ||
	    fwrite(chs->store_name, 1, strlen(chs->store_name), f) != strlen(chs->store_name))
		rc = -1;
	if (!rc)
		rc = fputc('B', f) == EOF || put_le(f, retired, 4) || put_le(f, raw, 4) || put_le(f, conns, 4);
	for (int t = 0; t < T__N && !rc; t++) {
		rc = put_le(f, len[t], 8);
		for (int q = 0; q < 2 && !rc; q++)
			for (const struct batch *b = lists[q]; b && !rc; b = b->next)
				if (spool_table(b, t, skip_run) &&
				    fwrite(b->body[t]->data, 1, b->body[t]->len, f) != b->body[t]->len)
					rc = -1;
	}
	if (!rc && (fflush(f) || fsync(fileno(f))))
		rc = -1;
	if (rc) {
		rc = -(errno ? errno : EIO);
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
	}
	if (fclose(f) && !rc) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
	}
	if (!rc && rename(tmp, chs->spool_path) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", chs->spool_path, strerror(-rc));
	}
	if (rc)
		unlink(tmp);
	return rc;
}

/*
 * The store a spool file's contents belong to: after the magic of version
 * 2 or 3, its name into store; "" for a file of the first version (no
 * name); *tables: the tables of each of its batches (T__N, or T_POINTS for
 * versions 1 and 2). Returns the offset of the first batch, or 0 when data
 * is not a spool file.
 */
static size_t spool_header(const char *data, size_t len, char *store, size_t storelen, int *tables)
{
	uint64_t n;

	*store = '\0';
	*tables = T_POINTS;
	if (len >= sizeof(spool_magic_v1) && !memcmp(data, spool_magic_v1, sizeof(spool_magic_v1)))
		return sizeof(spool_magic_v1);
	if (len < sizeof(spool_magic) + 4 ||
	    (memcmp(data, spool_magic, sizeof(spool_magic)) && memcmp(data, spool_magic_v2, sizeof(spool_magic_v2))))
		return 0;
	if (!memcmp(data, spool_magic, sizeof(spool_magic)))
		*tables = T__N;
	n = get_le((const uint8_t *)data + sizeof(spool_magic), 4);
	if (n > len - sizeof(spool_magic) - 4 || n >= storelen)
		return 0;
	memcpy(store, data + sizeof(spool_magic) + 4, n);
	store[n] = '\0';
	return sizeof(spool_magic) + 4 + n;
}

/*
 * The batches of the spool file (from_spool set), in order, into *out;
 * *n their number. 0 (also when there is no file: *out NULL), or -1 when
 * the file cannot be read or is malformed (err says why).
 */
static int spool_read(struct rm_chstore *chs, struct batch **out, unsigned *n, char *err, size_t errlen)
{
	gchar *data = NULL;
	gsize len = 0, off;
	GError *gerr = NULL;
	struct batch **tail = out;
	char store[sizeof(chs->store_name)];
	int tables;

	*out = NULL;
	*n = 0;
	if (access(chs->spool_path, F_OK) < 0)
		return 0;
	if (!g_file_get_contents(chs->spool_path, &data, &len, &gerr)) {
		snprintf(err, errlen, "%s", gerr->message);
		g_error_free(gerr);
		return -1;
	}
	off = spool_header(data, len, store, sizeof(store), &tables);
	if (!off)
		goto bad;
	if (*store && strcmp(store, chs->store_name)) {
		snprintf(err, errlen, "%s: rows of the store %.300s, not of %.300s", chs->spool_path, store,
			 chs->store_name);
		g_free(data);
		return -1;
	}
	while (off < len) {
		const uint8_t *p = (const uint8_t *)data;
		struct batch *b;

		if (p[off] != 'B' || len - off < 13)
			goto bad;
		b = rm_chs_batch_new();
		if (!b)
			goto bad;
		b->from_spool = 1;
		b->retired = (uint32_t)get_le(p + off + 1, 4);
		b->raw = (uint32_t)get_le(p + off + 5, 4);
		b->conns = (uint32_t)get_le(p + off + 9, 4);
		off += 13;
		*tail = b;
		tail = &b->next;
		(*n)++;
		for (int t = 0; t < T__N; t++)
			b->sent[t] = 1; /* what the version has no table for */
		for (int t = 0; t < tables; t++) {
			uint64_t l;

			if (len - off < 8)
				goto bad;
			l = get_le(p + off, 8);
			off += 8;
			if (l > len - off)
				goto bad;
			g_byte_array_append(b->body[t], p + off, (guint)l);
			b->sent[t] = !l;
			off += l;
		}
		b->bytes = rm_chs_batch_size(b);
	}
	g_free(data);
	return 0;
bad:
	snprintf(err, errlen, "%s: not a spool file of this version, or cut short", chs->spool_path);
	g_free(data);
	while (*out) {
		struct batch *next = (*out)->next;

		rm_chs_batch_free(*out);
		*out = next;
	}
	*n = 0;
	return -1;
}

/*
 * Spool files of this collector ID for other stores (another URL or
 * database: other names, chstore.h), and one of the first version (no
 * store named): not sent here, logged with their store and what to do.
 */
void rm_chs_spool_others(struct rm_chstore *chs)
{
	GDir *d = g_dir_open(chs->spool_dir, 0, NULL);
	const char *name, *mine = strrchr(chs->spool_path, '/') + 1;
	size_t idlen = strlen(chs->id);

	if (!d)
		return;
	while ((name = g_dir_read_name(d))) {
		char path[sizeof(chs->spool_path) + 256], store[sizeof(chs->store_name)];
		int tables;
		gchar *data = NULL;
		gsize len = 0;

		const char *rest = name + idlen + 1; /* "spool" (the first version) or "TAG.spool" */

		if (strncmp(name, chs->id, idlen) || name[idlen] != '.' || !strcmp(name, mine) ||
		    (strcmp(rest, "spool") && (strlen(rest) != RM_CHSTORE_SPOOL_TAG_LEN + 6 ||
					       strcmp(rest + RM_CHSTORE_SPOOL_TAG_LEN, ".spool") ||
					       strspn(rest, "0123456789abcdef") != RM_CHSTORE_SPOOL_TAG_LEN)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", chs->spool_dir, name);
		if (!g_file_get_contents(path, &data, &len, NULL))
			continue;
		if (!spool_header(data, len, store, sizeof(store), &tables))
			rm_log(RM_LOG_WARNING, "ClickHouse store: %s is not a spool file of this version: not sent",
			       path);
		else if (!*store)
			rm_log(RM_LOG_WARNING,
			       "ClickHouse store: the spool %s of an earlier version names no store: not sent; if its "
			       "rows belong to this store (%s), rename it to %s and start collect again; else remove "
			       "it",
			       path, chs->store_name, chs->spool_path);
		else
			rm_log(RM_LOG_WARNING,
			       "ClickHouse store: the spool %s holds rows of another store (%s): not sent here; to "
			       "send "
			       "them, run collect once with --store clickhouse:%s, the same --collector-id and "
			       "--store-spool-dir (and that store's credentials); or remove the file to give them up",
			       path, store, store);
		g_free(data);
	}
	g_dir_close(d);
}

/*
 * What an earlier run of this collector ID spooled at its stop: sent now,
 * before the IDs are read (they continue after the spooled ones), and the
 * file removed. Not sent: queued first for the sender, which removes the
 * file once it inserted them. 1 sent or no spool, 0 queued, RM_BACKEND_REFUSED
 * (chs->err) when ClickHouse refuses for a reason no retry mends.
 */
int rm_chs_spool_send(struct rm_chstore *chs, struct rm_ch *ch)
{
	char err[1600];
	struct batch *group, *last;
	uint64_t retired = 0, raw = 0, conns = 0, total = 0;
	unsigned n;
	int rc;

	if (spool_read(chs, &group, &n, err, sizeof(err)) < 0) {
		char bad[sizeof(chs->spool_path) + 8];

		snprintf(bad, sizeof(bad), "%s.bad", chs->spool_path);
		rename(chs->spool_path, bad);
		rm_log(RM_LOG_ERR, "ClickHouse store: spool %s; kept as %s, not sent", err, bad);
		return 1;
	}
	if (!group)
		return 1;
	/* the words of spool_write's line at the close that wrote the file */
	for (struct batch *b = group; b; b = b->next) {
		retired += b->retired;
		raw += b->raw;
		conns += b->conns;
		total += b->bytes;
	}
	snprintf(chs->spool_what, sizeof(chs->spool_what),
		 "%" PRIu64 " epoch outcomes, %" PRIu64 " raw records, %" PRIu64 " counts of refused connections, "
		 "%" PRIu64 " octets of rows in all",
		 retired, raw, conns, total);
	rc = ch ? rm_chs_send_group(chs, ch, group, err, sizeof(err)) : -1;
	if (rc == 0) {
		unlink(chs->spool_path);
		rm_log(RM_LOG_NOTICE, "ClickHouse store: the spool %s (%s) sent and removed", chs->spool_path,
		       chs->spool_what);
		while (group) {
			struct batch *next = group->next;

			rm_chs_batch_free(group);
			group = next;
		}
		return 1;
	}
	if (ch && rm_chstore_refusal_hint(err)) {
		snprintf(chs->err, sizeof(chs->err), "ClickHouse store: sending the spool %s: %s: refused, %s",
			 chs->spool_path, err, rm_chstore_refusal_hint(err));
		while (group) {
			struct batch *next = group->next;

			rm_chs_batch_free(group);
			group = next;
		}
		return RM_BACKEND_REFUSED;
	}
	for (last = group; last->next; last = last->next)
		;
	pthread_mutex_lock(&chs->mu);
	last->next = chs->head;
	if (!chs->head)
		chs->tail = &last->next;
	chs->head = group;
	for (struct batch *b = group; b; b = b->next)
		chs->queued_bytes += b->bytes;
	chs->spool_left = n;
	pthread_cond_signal(&chs->cv);
	pthread_mutex_unlock(&chs->mu);
	rm_log(RM_LOG_WARNING, "ClickHouse store: the spool %s (%s) waits: %s", chs->spool_path, chs->spool_what,
	       ch ? err : "no connection");
	return 0;
}
