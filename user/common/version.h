/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * version.h - the version of the rocemeter binary: `rocemeter --version`
 * (user/main.c) and the daemons' rocemeter_build_info metric
 * (user/common/metrics.c).
 */
#ifndef ROCEMETER_VERSION_H
#define ROCEMETER_VERSION_H

#define RM_VERSION "0.1.0"

#endif
