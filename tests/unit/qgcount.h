/*
 * qgcount.h - the quota-group tests' own count (qgcount.c), and what their
 * messages are about.
 */
#ifndef BTRSIM_TESTS_QGCOUNT_H
#define BTRSIM_TESTS_QGCOUNT_H

#include "ref/format.h"
#include "ref/ref.h"

#include <stdbool.h>
#include <stddef.h>

/* What the checks are about, for their messages. */
extern char qg_where[160];

/* rfer and excl of every subvolume tree the root tree holds (the top level,
 * and deleted ones not yet freed whole), ascending, then of every group above
 * level 0 the quota tree holds; *dropping (when not NULL): whether a deleted
 * one is there.  Free the result. */
struct ref_qgroup *qcount(ref_fs *fs, size_t *count, bool *dropping);
/* The entry of group id in a list of n, or NULL. */
const struct ref_qgroup *qfind(const struct ref_qgroup *q, size_t n, uint64_t id);

#endif
