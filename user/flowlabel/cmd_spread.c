// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cmd_spread.c - `rocemeter flowlabel spread`: the connections of a
 * capture (the census over it, census/census_run.h) or N generated QPs between two
 * hosts, through the ECMP spread model of spread.h, as text
 * or JSON (docs/json.md "flowlabel spread"; docs/flowlabel.md "Spread over
 * ECMP paths").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "census/census_run.h"
#include "common/command.h"
#include "common/jsonw.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/params.h"
#include "flowlabel/spread.h"

#define RM_SPREAD_QPS_MAX       65536
#define RM_SPREAD_PATHS_DEFAULT 8
#define RM_SPREAD_QP_BASE       0x100
#define RM_SPREAD_SPORT         49152
#define RM_ROCEV2_PORT          4791

struct spread_args {
	const char *read, *src, *dst, *keys, *labels, *hashes, *config, *encapsulation;
	uint32_t qps, qp_base, paths, seed;
	uint16_t sport;
	int json, verbose, mix;
};

#define A struct spread_args
static const struct rm_opt spread_opts[] = {
	RM_OPT("read", 'r', "FILE", RM_OPT_ARG, "the connections of capture FILE (pcap, pcapng)", RM_OPT_AT(A, read)),
	RM_CENSUS_CAPTURE_OPTS(A, config, encapsulation),
	RM_OPT("qps", 'n', "N", RM_OPT_UINT, "or N generated QPs (1..%llu) from --src to --dst, sharing one 5-tuple",
	       RM_OPT_AT(A, qps), .lo = 1, .hi = RM_SPREAD_QPS_MAX, .hv = { RM_SPREAD_QPS_MAX }),
	RM_OPT("src", 's', "ADDR", RM_OPT_ARG, "source address of the generated QPs (IPv6 or IPv4)", RM_OPT_AT(A, src)),
	RM_OPT("dst", 'd', "ADDR", RM_OPT_ARG, "their destination address", RM_OPT_AT(A, dst)),
	RM_OPT("qp-base", 'q', "QPN", RM_OPT_UINT, "destination QP of the first one, the next +1 (default %#llx)",
	       RM_OPT_AT(A, qp_base), .lo = 0, .hi = RM_QPN_MAX, .hv = { RM_SPREAD_QP_BASE }),
	RM_OPT("sport", 'u', "PORT", RM_OPT_UINT, "their UDP source port (default %llu)", RM_OPT_AT(A, sport), .lo = 0,
	       .hi = 65535, .hv = { RM_SPREAD_SPORT }),
	RM_OPT("paths", 'k', "K", RM_OPT_UINT, "equal-cost paths, 1..%llu (default %llu)", RM_OPT_AT(A, paths), .lo = 1,
	       .hi = RM_SPREAD_PATHS_MAX, .hv = { RM_SPREAD_PATHS_MAX, RM_SPREAD_PATHS_DEFAULT }),
	RM_OPT("key", 'K', "LIST", RM_OPT_ARG, "what the switch hashes: 5tuple, 5tuple+label, addr+label (default all)",
	       RM_OPT_AT(A, keys)),
	RM_OPT("label", 'L', "LIST", RM_OPT_ARG,
	       "the Flow Label: arriving, or as the program writes it: literal, crc32, crc32c, mpeg2 (default all)",
	       RM_OPT_AT(A, labels)),
	RM_OPT("switch-hash", 'H', "LIST", RM_OPT_ARG,
	       "the switch's hash: crc16-ccitt, crc32-lo, crc32-hi, xor16 (default all)", RM_OPT_AT(A, hashes)),
	RM_OPT("mix", 'm', NULL, RM_OPT_FLAG, "the program's --mix: murmur3 finalizer on its CRC", RM_OPT_AT(A, mix)),
	RM_OPT("seed", 'S', "N", RM_OPT_UINT, "the program's --seed: XORed into its initial CRC register",
	       RM_OPT_AT(A, seed), .lo = 0, .hi = UINT32_MAX),
	RM_OPT("verbose", 'v', NULL, RM_OPT_FLAG, "each connection's labels and path too", RM_OPT_AT(A, verbose)),
	RM_OPT("json", 'j', NULL, RM_OPT_FLAG, "one JSON object (docs/json.md \"flowlabel spread\")",
	       RM_OPT_AT(A, json)),
	RM_OPT("help", 'h', NULL, RM_OPT_HELP, "this text"),
	{ 0 },
};
#undef A

static void usage(FILE *f)
{
	fprintf(f, "Usage: rocemeter flowlabel spread -r FILE [--config FILE] [--encapsulation LIST] [OPTIONS]\n"
		   "       rocemeter flowlabel spread -n N -s ADDR -d ADDR [OPTIONS]\n\n"
		   "Which of K equal-cost paths each RoCEv2 connection takes when a switch\n"
		   "hashes the 5-tuple, the 5-tuple and the Flow Label, or the addresses and\n"
		   "the Flow Label, with the label as it arrives or as the flow-label program\n"
		   "writes it (each hash variant): per class the paths used, the most loaded\n"
		   "path's share of the connections, the pairs of connections sharing a path\n"
		   "(collisions) and Jain's fairness index over the K paths.\n\n"
		   "Options:\n");
	rm_opts_help(f, spread_opts, 25, 6);
	fprintf(f, "\nThe path is the switch hash's 16-bit value modulo K (docs/flowlabel.md).\n"
		   "Exit status: 0 ok, 1 the capture could not be read, 2 usage error.\n");
}

static const struct rm_cmd_opts spread_cmd = { .t = spread_opts, .usage = usage, .usage_on_error = 1 };

/* A comma list of names into want[0..n-1] (1: chosen); all when list is NULL. 0 or -1 (said). */
static int parse_list(const char *opt, const char *list, int (*from)(const char *), int n, int *want)
{
	char buf[256], *save = NULL, *t;

	for (int i = 0; i < n; i++)
		want[i] = !list;
	if (!list)
		return 0;
	snprintf(buf, sizeof(buf), "%s", list);
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int v = from(t);

		if (v < 0) {
			rm_log_cmd(RM_LOG_ERR, "%s: unknown name '%s' (see --help)", opt, t);
			return -1;
		}
		want[v] = 1;
	}
	return 0;
}

static int parse_addr(const char *opt, const char *s, int *family, uint8_t *a)
{
	memset(a, 0, 16);
	if (inet_pton(AF_INET6, s, a) == 1) {
		*family = 6;
		return 0;
	}
	if (inet_pton(AF_INET, s, a) == 1) {
		*family = 4;
		return 0;
	}
	rm_log_cmd(RM_LOG_ERR, "%s '%s': not an IPv6 or IPv4 address", opt, s);
	return -1;
}

/* N QPs from src to dst with one 5-tuple. Returns the array (n filled) or NULL (said). */
static struct rm_spread_conn *generated(const struct spread_args *a, size_t *n)
{
	const struct rm_fl_params opt = { .mix = (uint32_t)a->mix, .seed = a->seed };
	struct rm_spread_conn *c, proto = { .dport = RM_ROCEV2_PORT };
	int fs, fd;

	if (!a->src || !a->dst) {
		rm_log_cmd(RM_LOG_ERR, "--qps needs --src and --dst");
		return NULL;
	}
	if (parse_addr("--src", a->src, &fs, proto.src) || parse_addr("--dst", a->dst, &fd, proto.dst))
		return NULL;
	if (fs != fd) {
		rm_log_cmd(RM_LOG_ERR, "--src and --dst are of different families");
		return NULL;
	}
	proto.family = (uint8_t)fs;
	proto.sport = a->sport;
	c = calloc(a->qps, sizeof(*c));
	if (!c) {
		rm_log_cmd(RM_LOG_ERR, "out of memory");
		return NULL;
	}
	for (uint32_t i = 0; i < a->qps; i++) {
		c[i] = proto;
		c[i].dqp = a->qp_base + i; /* within 24 bits: checked by cmd_spread() */
		rm_spread_conn_labels(&c[i], &opt);
	}
	*n = a->qps;
	return c;
}

/*
 * One connection seen at two observation points: census keys equal but for
 * obs. The census sorts its entries by every field but obs (census.h), so
 * such keys are neighbours.
 */
static int same_connection(const struct rm_ctx_key *a, const struct rm_ctx_key *b)
{
	struct rm_ctx_key x = *a, y = *b;

	x.obs = y.obs = 0;
	return !memcmp(&x, &y, sizeof(x));
}

/*
 * The census's connections of capture file, as the model's connections:
 * each once, whatever number of observation points saw it (points), its
 * headers (ports, Flow Label, Src_QP) from the first point. NULL (said) on
 * failure.
 */
static struct rm_spread_conn *from_capture(const struct spread_args *a, const struct rm_capture_settings *cap,
					   size_t *n, uint64_t *frames, size_t *varied)
{
	const struct rm_fl_params opt = { .mix = (uint32_t)a->mix, .seed = a->seed };
	const char *file = a->read;
	char *files[] = { (char *)file };
	struct rm_census_result res;
	struct rm_spread_conn *c;
	char err[512];
	int last_varied = 0;

	if (rm_census_captures(files, 1, RM_CENSUS_MAX_CONNECTIONS_DEFAULT, isatty(STDERR_FILENO), &res, frames, err,
			       sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return NULL;
	}
	c = calloc(res.n ? res.n : 1, sizeof(*c));
	if (!c) {
		rm_census_result_free(&res);
		rm_log_cmd(RM_LOG_ERR, "out of memory");
		return NULL;
	}
	*varied = 0;
	*n = 0;
	for (size_t i = 0; i < res.n; i++) {
		const struct rm_census_entry *e = &res.entries[i];

		/* the same connection at another observation point: counted once (the first point's headers) */
		if (*n && same_connection(&res.entries[i - 1].key, &e->key)) {
			c[*n - 1].points++;
			c[*n - 1].frames += e->v.frames;
			*varied += e->v.varies && !last_varied;
			last_varied |= e->v.varies != 0;
			continue;
		}
		last_varied = e->v.varies != 0;
		memset(&c[*n], 0, sizeof(c[*n]));
		c[*n].points = 1;
		c[*n].family = e->key.family;
		memcpy(c[*n].src, e->key.src, 16);
		memcpy(c[*n].dst, e->key.dst, 16);
		c[*n].sport = e->v.udp_sport;
		c[*n].dport = RM_ROCEV2_PORT;
		c[*n].dqp = e->key.dest_qp;
		c[*n].has_sqp = e->v.has_src_qp;
		c[*n].sqp = e->v.src_qp;
		c[*n].label_in = e->v.flow_label;
		c[*n].frames = e->v.frames;
		*varied += e->v.varies != 0;
		rm_spread_conn_labels(&c[*n], &opt);
		++*n;
	}
	if (rm_census_plain_hint(&res, *frames, cap))
		rm_log_cmd(RM_LOG_NOTICE, "%s", rm_census_plain_hint(&res, *frames, cap));
	rm_census_result_free(&res);
	return c;
}

/* The classes chosen by the lists, in table order, run. NULL (said) on failure; *ncls filled. */
static struct rm_spread_class *run_classes(const struct spread_args *a, const struct rm_spread_conn *conns, size_t n,
					   size_t *ncls)
{
	int keys[RM_SPREAD_KEY__COUNT], labels[RM_SPREAD_LABEL__COUNT], hashes[RM_SPREAD_HASH__COUNT];
	struct rm_spread_class *cls;
	size_t m = 0;

	if (parse_list("--key", a->keys, rm_spread_key_from_name, RM_SPREAD_KEY__COUNT, keys) ||
	    parse_list("--label", a->labels, rm_spread_label_from_name, RM_SPREAD_LABEL__COUNT, labels) ||
	    parse_list("--switch-hash", a->hashes, rm_spread_hash_from_name, RM_SPREAD_HASH__COUNT, hashes))
		return NULL;
	cls = calloc(RM_SPREAD_KEY__COUNT * RM_SPREAD_LABEL__COUNT * RM_SPREAD_HASH__COUNT, sizeof(*cls));
	if (!cls) {
		rm_log_cmd(RM_LOG_ERR, "out of memory");
		return NULL;
	}
	for (int k = 0; k < RM_SPREAD_KEY__COUNT; k++)
		for (int l = 0; k == RM_SPREAD_KEY_5TUPLE ? l < 1 : l < RM_SPREAD_LABEL__COUNT; l++)
			for (int h = 0; h < RM_SPREAD_HASH__COUNT; h++) {
				if (!keys[k] || !hashes[h] || (k != RM_SPREAD_KEY_5TUPLE && !labels[l]))
					continue;
				cls[m] = (struct rm_spread_class){ .key = k, .label = l, .hash = h };
				if (rm_spread_class_run(&cls[m], conns, n, a->paths)) {
					rm_log_cmd(RM_LOG_ERR, "out of memory");
					for (size_t i = 0; i < m; i++)
						rm_spread_class_free(&cls[i]);
					free(cls);
					return NULL;
				}
				m++;
			}
	*ncls = m;
	return cls;
}

static int cmd_spread(int argc, char **argv)
{
	static struct rm_config_file cfg; /* large: static */
	char err[512];
	struct spread_args a = { .paths = RM_SPREAD_PATHS_DEFAULT,
				 .qp_base = RM_SPREAD_QP_BASE,
				 .sport = RM_SPREAD_SPORT };
	struct rm_spread_conn *conns;
	struct rm_spread_class *cls;
	size_t n = 0, ncls = 0, varied = 0;
	uint64_t frames = 0;
	int rc;

	rc = rm_opts_parse(&spread_cmd, argc, argv, &a);
	if (rc >= 0)
		return rc;
	if (optind < argc) {
		rm_log_cmd(RM_LOG_ERR, "unexpected argument '%s' (a capture is -r FILE)", argv[optind]);
		return RM_EXIT_USAGE;
	}
	if (!a.read == !a.qps) {
		rm_log_cmd(RM_LOG_ERR, "give either -r FILE or --qps N");
		usage(stderr);
		return RM_EXIT_USAGE;
	}
	if (a.read && (a.src || a.dst)) {
		rm_log_cmd(RM_LOG_ERR, "--src and --dst are for --qps; -r takes the capture's connections");
		return RM_EXIT_USAGE;
	}
	if (!a.read && (a.config || a.encapsulation)) {
		rm_log_cmd(RM_LOG_ERR, "--config and --encapsulation are for -r FILE (a mirrored capture)");
		return RM_EXIT_USAGE;
	}
	/* QPNs are 24 bits: the generated ones must not wrap past RM_QPN_MAX */
	if (a.qps && (uint64_t)a.qp_base + a.qps - 1 > RM_QPN_MAX) {
		rm_log_cmd(RM_LOG_ERR, "--qp-base %#x and --qps %u reach QPN %#llx: a QPN is 24 bits (at most %#x)",
			   a.qp_base, a.qps, (unsigned long long)a.qp_base + a.qps - 1, RM_QPN_MAX);
		return RM_EXIT_USAGE;
	}
	if (a.read && rm_census_capture_setup(&cfg, a.config, a.encapsulation, err, sizeof(err))) {
		rm_log_cmd(RM_LOG_ERR, "%s", err);
		return RM_EXIT_USAGE;
	}
	conns = a.read ? from_capture(&a, &cfg.capture, &n, &frames, &varied) : generated(&a, &n);
	if (!conns)
		return a.read ? RM_EXIT_FAIL : RM_EXIT_USAGE;
	cls = run_classes(&a, conns, n, &ncls);
	if (!cls) {
		free(conns);
		return RM_EXIT_USAGE;
	}
	if (a.json) {
		json_t *o = rm_spread_json(conns, n, a.paths, cls, ncls);

		if (o && a.read) {
			json_object_set_new(o, "frames_read", rm_json_u64(frames));
			json_object_set_new(o, "connections_varied", json_integer((json_int_t)varied));
		}
		rc = o ? rm_json_write(stdout, o) : -ENOMEM;
	} else {
		if (a.read)
			printf("%s: %llu frames, %zu connections (%zu with a UDP source port, Flow Label or Src_QP "
			       "that "
			       "varied: their first frame's taken)\n",
			       a.read, (unsigned long long)frames, n, varied);
		rm_spread_write_text(stdout, conns, n, a.paths, cls, ncls, a.verbose);
		rc = 0;
	}
	for (size_t i = 0; i < ncls; i++)
		rm_spread_class_free(&cls[i]);
	free(cls);
	free(conns);
	if (rc || fflush(stdout) || ferror(stdout)) {
		rm_log_cmd(RM_LOG_ERR, "standard output: %s", strerror(errno ? errno : EIO));
		return RM_EXIT_FAIL;
	}
	return RM_EXIT_OK;
}

RM_SUBCOMMAND(fl_spread, "flowlabel", "spread", cmd_spread);
