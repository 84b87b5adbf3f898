/*
 * report.h - a campaign's report from the trace store, as Markdown: what ran
 * (command line, seed, build, times), the counts, the crash states by
 * verdict, the slowest workloads, and each violation with its reproducer and
 * the commands that replay it.  `btrsim campaign --report FILE` writes it;
 * `make run` puts it in reports/campaign.md.
 */
#ifndef BTRSIM_TRACES_REPORT_H
#define BTRSIM_TRACES_REPORT_H

#include "traces/store.h"

#include <stdint.h>
#include <stdio.h>

/* Writes the report of campaign `id` (db: the database's path, for the
 * commands it shows).  0 or -1 with err. */
int report_campaign(struct store *s, const char *db, int64_t id, FILE *out, char *err,
		    size_t errlen);

#endif
