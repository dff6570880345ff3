/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_html.h - `rocemeter report --format html`: the epochs that pass
 * report's filters and the collector's limits as one self-contained HTML
 * page (charts drawn by D3 from Debian's libjs-d3, inlined when the page is
 * written; the data embedded as JSON). Used by cmd_report.c.
 */
#ifndef ROCEMETER_REPORT_HTML_H
#define ROCEMETER_REPORT_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "report_select.h"
#include "store/store_read.h"

/* Where D3 is read from unless ROCEMETER_D3_JS names another file (Debian's libjs-d3). */
#define RM_HTML_D3_PATH "/usr/share/javascript/d3/d3.min.js"

/* The page's row caps: top connections by positions never seen, time buckets, epochs per timeline. */
#define RM_HTML_TOP_DEFAULT    25
#define RM_HTML_BUCKETS_MAX    240
#define RM_HTML_TIMELINE_MAX   300
#define RM_HTML_OBS_POINTS_MAX 32

struct rm_html_opts {
	const char *store_label; /* what the page names as the store ("sqlite:FILE") */
	unsigned top;            /* connections shown (0: RM_HTML_TOP_DEFAULT) */
	uint64_t now_ms;         /* UNIX ms: when the page says it was written */
	/* The name of an epoch's observation point, NULL: none known (obs_name NULL: no names). The
	 * page shows it beside the ID (observation_point_name in its data, set as text, never HTML). */
	const char *(*obs_name)(void *arg, const struct rm_epoch_read *e);
	void *obs_name_arg;
	const struct rm_select *select; /* --observation-point, --reason (by the name above); NULL: every epoch */
};

/*
 * Read the D3 library (ROCEMETER_D3_JS or RM_HTML_D3_PATH) into a new
 * NUL-terminated buffer (*len bytes without it). NULL with err naming the
 * file and the package libjs-d3 when it cannot be read.
 */
char *rm_report_html_d3(size_t *len, char *err, size_t errlen);

/*
 * Read every epoch of r that passes f and the collector's last runs
 * (rm_store_reader_limits), and write the page to path (through a
 * temporary file in the same directory, renamed over path when complete;
 * "-" writes to standard output). d3 is rm_report_html_d3()'s text.
 * Returns 0; -EIO/-ENOMEM or the reader's error with err.
 */
int rm_report_html_write(struct rm_store_reader *r, const struct rm_read_filter *f, const struct rm_html_opts *o,
			 const char *d3, const char *path, char *err, size_t errlen);

#endif /* ROCEMETER_REPORT_HTML_H */
