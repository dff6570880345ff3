/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * types.h - fixed-width integer types for headers shared by the BPF objects
 * and the host code. On the BPF target the types come from vmlinux.h, which
 * every BPF source includes first; on the host from <linux/types.h>.
 */
#ifndef ROCEMETER_TYPES_H
#define ROCEMETER_TYPES_H

#ifdef __bpf__
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#else
#include <linux/types.h>
#include <stdbool.h>
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#endif

#endif /* ROCEMETER_TYPES_H */
