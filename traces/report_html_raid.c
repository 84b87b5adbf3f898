/* report_html_raid.c - the report's "RAID fault campaign" section: the newest
 * campaign `btrsim raid-campaign --db` recorded, a table per profile as in its
 * Markdown report (traces/raidcamp.h). */
#include "traces/report_html_internal.h"

#include <stdbool.h>
#include <string.h>

/* The header of one profile's table. */
static void table_head(FILE *f, const char *profile)
{
	fputs("<h3>", f);
	rh_esc(f, profile, 0);
	fputs("</h3>\n<table>\n<tr><th class=\"n\">disks</th><th>fault</th><th>within</th>"
	      "<th class=\"n\">injected</th><th class=\"n\">detected</th><th class=\"n\">repaired</th>"
	      "<th class=\"n\">lost</th><th class=\"n\">wrong</th><th>verdict</th></tr>\n",
	      f);
}

static int rows(struct rh *r, int64_t id)
{
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "SELECT profile, disks, fault, within, injected, detected, repaired, lost, files,"
		    " mounted, wrong, failed, verdict FROM raid_runs WHERE campaign_id = ?1 ORDER BY idx",
		    &st))
		return -1;
	sqlite3_bind_int64(st, 1, id);
	FILE *f = r->f;
	char profile[32] = "";
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *p = rh_col(st, 0) ? rh_col(st, 0) : "?";
		if (strcmp(p, profile)) {
			if (profile[0])
				fputs("</table>\n", f);
			snprintf(profile, sizeof(profile), "%s", p);
			table_head(f, profile);
		}
		fputs("<tr>", f);
		rh_td_int(r, st, 1);
		rh_td(r, st, 2, 0);
		fprintf(f, "<td>%s</td>", sqlite3_column_int(st, 3) ? "yes" : "no");
		for (int i = 4; i <= 6; i++)
			rh_td_int(r, st, i);
		fprintf(f, "<td class=\"n\">%lld of %lld%s</td>", (long long)sqlite3_column_int64(st, 7),
			(long long)sqlite3_column_int64(st, 8),
			sqlite3_column_int(st, 9) ? "" : " (no mount)");
		rh_td_int(r, st, 10);
		const char *v = rh_col(st, 12) ? rh_col(st, 12) : "?";
		bool failed = sqlite3_column_int(st, 11) != 0;
		fprintf(f, "<td%s>", failed ? " class=\"bad\"" : !strncmp(v, "not injected", 12) ? " class=\"note\"" : "");
		rh_esc(f, v, 0);
		fputs("</td></tr>\n", f);
	}
	if (profile[0])
		fputs("</table>\n", f);
	return rh_finish(r, st, rc, "RAID runs");
}

int rh_raid(struct rh *r)
{
	FILE *f = r->f;
	int64_t n = 0;
	if (rh_count(r, "SELECT count(*) FROM raid_campaigns", &n))
		return -1;
	if (!n) {
		fputs("<p>No RAID fault campaign recorded (<code>btrsim raid-campaign --db FILE</code> "
		      "records one; <code>make run</code> does).</p>\n",
		      f);
		return 0;
	}
	sqlite3_stmt *st;
	if (rh_prep(r,
		    "SELECT id, args, seed, build, started, files, runs, failed, not_injected"
		    " FROM raid_campaigns ORDER BY id DESC LIMIT 1",
		    &st))
		return -1;
	int rc = sqlite3_step(st);
	int64_t id = 0;
	if (rc == SQLITE_ROW) {
		id = sqlite3_column_int64(st, 0);
		int64_t failed = sqlite3_column_int64(st, 7);
		fprintf(f, "<p>RAID campaign %lld (the newest of %lld), seed %lld, started ", (long long)id,
			(long long)n, (long long)sqlite3_column_int64(st, 2));
		rh_esc(f, rh_col(st, 4) ? rh_col(st, 4) : "?", 0);
		fputs(" (UTC) by build <code>", f);
		rh_esc(f, rh_col(st, 3) ? rh_col(st, 3) : "?", 0);
		fprintf(f, "</code>, %lld files per run: %lld runs, <span class=\"%s\">%lld failed</span>, "
			   "%lld whose fault could not be injected. Command: <code>",
			(long long)sqlite3_column_int64(st, 5), (long long)sqlite3_column_int64(st, 6),
			failed ? "bad" : "good", (long long)failed, (long long)sqlite3_column_int64(st, 8));
		rh_esc(f, rh_col(st, 1) ? rh_col(st, 1) : "", 0);
		fputs("</code>.</p>\n", f);
		rc = SQLITE_DONE;
	}
	if (rh_finish(r, st, rc, "RAID campaign"))
		return -1;
	fputs("<p class=\"note\">Each run: a new volume of the profile, a seeded workload, the fault, "
	      "then every acknowledged file read back (mounted degraded when a disk is gone) and a "
	      "scrub that mends. <em>injected</em>: fault events that acted on the disks; "
	      "<em>detected</em>: the devices' error counters, the parity and superblock sectors the "
	      "scrub found wrong, devices found missing and a mount refused; <em>repaired</em>: "
	      "sectors rewritten; <em>lost</em>: acknowledged files unreadable; <em>wrong</em>: files "
	      "read back with wrong bytes (never allowed). <em>within</em>: the fault stays within "
	      "what the profile tolerates (then nothing may be lost). A fault that could not be "
	      "injected says why and is neither passed nor failed.</p>\n",
	      f);
	return rows(r, id);
}
