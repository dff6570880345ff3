/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_select.h - report's selection of epochs beyond the store's filters
 * (store_read.h): the observation point (--observation-point [DOMAIN/]ID or
 * NAME) and the closure reason (--reason NAME) of an epoch, and whether
 * the point asked for is one the store knows. Used by cmd_report.c for
 * every format, and by the HTML page (report_html.h).
 */
#ifndef ROCEMETER_REPORT_SELECT_H
#define ROCEMETER_REPORT_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include "store/store_read.h"

/* The selection; the zero value with reason -1 selects every epoch. */
struct rm_select {
	const char *point; /* --observation-point as given; NULL: any point */
	int point_is_id;   /* it reads as [DOMAIN/]ID too */
	int has_domain;    /* DOMAIN/ID: the Observation Domain is given */
	uint64_t domain, id;
	int reason; /* enum rm_closure (common/report_text.h); -1: any */
};

/* No selection: every epoch passes. */
void rm_select_init(struct rm_select *s);

/*
 * --observation-point TEXT: an epoch passes when its exporter named its
 * point TEXT, or when TEXT is [DOMAIN/]ID (decimal or 0x) and the epoch's
 * observationPointId is ID (and its Observation Domain DOMAIN). Any text
 * may be a name: nothing is refused here (rm_select_known() checks that
 * the store knows it).
 */
void rm_select_point(struct rm_select *s, const char *text);

/*
 * --reason NAME: the epochs whose final report carried closure reason NAME
 * (rm_closure_key(): profileViolation, captureDiscontinuity,
 * stateExhaustion, serialDiscontinuity; ASCII case ignored). 0, or -EINVAL
 * with "--reason: 'X' is not a closure reason: profileViolation, ..." in
 * err.
 */
int rm_select_reason(struct rm_select *s, const char *name, char *err, size_t errlen);

/* 1 when e passes s, else 0; e->obs_name must be set (its exporter's name of its point, or NULL). */
int rm_select_epoch(const struct rm_select *s, const struct rm_epoch_read *e);

/* An epoch's observation point's name, as cmd_report.c looks it up (NULL: none known). */
typedef const char *rm_select_name_fn(void *arg, const struct rm_epoch_read *e);

/*
 * Whether the store of r knows the point of s (no --observation-point:
 * yes): a name or ID its exporters gave a name (rm_store_reader_points()),
 * else an epoch of that point (the epochs of f's collector, read until the
 * first one; name_of(names, e) gives an epoch's name). 0 when it does;
 * -ENOENT when not, with err "--observation-point: 'X' is no observation
 * point of the store; known: 7 leaf1, 8 leaf2, 9" (the first 32, then how
 * many more; "none" for an empty store); another negative value with err
 * when the store cannot be read.
 */
int rm_select_known(struct rm_store_reader *r, const struct rm_read_filter *f, const struct rm_select *s,
		    rm_select_name_fn *name_of, void *names, char *err, size_t errlen);

#endif /* ROCEMETER_REPORT_SELECT_H */
