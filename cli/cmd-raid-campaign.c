/* cmd-raid-campaign.c - `btrsim raid-campaign`: fault campaigns per profile
 * on 2, 4 and 8 simulated disks (traces/raidcamp.h), with a Markdown report. */
#include "cli/cli.h"
#include "traces/raidcamp.h"
#include "traces/record.h"
#include "traces/store.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
	"usage: btrsim raid-campaign [options]\n"
	"\n"
	"For each profile (single, dup, raid0, raid1, raid1c3, raid1c4, raid10, raid5,\n"
	"raid6) on each volume size its disk count allows, and each fault - bit flips\n"
	"at rest and in flight, latent sectors, lost and misdirected writes, disks\n"
	"lost, a disk lost during a commit, a disk replaced and rebuilt, a disk lost\n"
	"during a full balance - a fresh volume of memory disks takes a seeded\n"
	"workload and the fault; then every\n"
	"acknowledged file is read back and the volume scrubbed.  One line per run;\n"
	"the report has a table per profile: faults injected, detected, repaired,\n"
	"files lost, files with wrong bytes.\n"
	"\n"
	"  --seed N            the seed of every random choice (default 1; printed)\n"
	"  --disks LIST        volume sizes, comma-separated (default 2,4,8)\n"
	"  --profiles LIST     profiles, comma-separated (default: all)\n"
	"  --files N           files per workload (default 16)\n"
	"  --report FILE       the Markdown report (default reports/raid-campaign.md;\n"
	"                      - for standard output)\n"
	"  --db FILE           also record the campaign and its rows in this trace\n"
	"                      database (created when missing), where 'btrsim report'\n"
	"                      shows them\n"
	"  -q, --quiet         no line per run\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 when nothing acknowledged was lost within a profile's\n"
	"redundancy and no file ever read back wrong; 1 otherwise or on failure;\n"
	"2 bad usage.\n";

const struct cli_cmd cli_cmd_raid_campaign;

static int parse_disks(const char *s, struct rc_opts *o)
{
	o->ndisks = 0;
	char *copy = strdup(s), *save = NULL;
	int r = copy ? 0 : -1;
	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && !r; t = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (o->ndisks == sizeof(o->disks) / sizeof(o->disks[0]) || cli_parse_u64(t, &v, 0) || v < 1 ||
		    v > 16)
			r = -1;
		else
			o->disks[o->ndisks++] = (unsigned)v;
	}
	free(copy);
	return r || !o->ndisks ? -1 : 0;
}

static int parse_profiles(const char *s, struct rc_opts *o)
{
	o->profiles = 0;
	char *copy = strdup(s), *save = NULL;
	int r = copy ? 0 : -1;
	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && !r; t = strtok_r(NULL, ",", &save)) {
		int p = rc_profile_lookup(t);
		if (p < 0)
			r = -1;
		else
			o->profiles |= UINT64_C(1) << p;
	}
	free(copy);
	return r || !o->profiles ? -1 : 0;
}

static int cmd_raid_campaign(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },  { "disks", required_argument, NULL, 'd' },
		{ "profiles", required_argument, NULL, 'p' }, { "files", required_argument, NULL, 'f' },
		{ "report", required_argument, NULL, 'r' }, { "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },           { "db", required_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = NULL;
	struct rc_opts o = { .seed = 1, .disks = { 2, 4, 8 }, .ndisks = 3, .files = 16, .progress = stdout };
	const char *report = "reports/raid-campaign.md";
	uint64_t v;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (cli_parse_u64(optarg, &o.seed, 0))
				return cli_usage_error(&cli_cmd_raid_campaign, "--seed takes a number, not '%s'", optarg);
			break;
		case 'd':
			if (parse_disks(optarg, &o))
				return cli_usage_error(&cli_cmd_raid_campaign,
						       "--disks takes numbers from 1 to 16, comma-separated, not '%s'", optarg);
			break;
		case 'p':
			if (parse_profiles(optarg, &o))
				return cli_usage_error(&cli_cmd_raid_campaign, "--profiles: unknown profile in '%s'", optarg);
			break;
		case 'f':
			if (cli_parse_u64(optarg, &v, 0) || v < 2 || v > 1000)
				return cli_usage_error(&cli_cmd_raid_campaign, "--files takes 2 to 1000, not '%s'", optarg);
			o.files = (unsigned)v;
			break;
		case 'r': report = optarg; break;
		case 'D': db = optarg; break;
		case 'q': o.progress = NULL; break;
		case 'h': return cli_help(&cli_cmd_raid_campaign);
		default:
			return cli_usage_error(&cli_cmd_raid_campaign, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error(&cli_cmd_raid_campaign, "unexpected argument '%s'", argv[optind]);
	char err[1024] = "";
	struct store *st = NULL; /* opened first: a store that cannot be used stops the run */
	if (db && store_open(db, &st, err, sizeof(err)))
		return cli_fail(&cli_cmd_raid_campaign, "%s", err);
	cli_print_seed(o.seed);
	char started[32];
	record_iso_now(started);
	struct rc_row *rows;
	size_t n;
	int r = rc_run(&o, &rows, &n, err, sizeof(err));
	if (r) {
		free(rows);
		store_close(st);
		return cli_fail(&cli_cmd_raid_campaign, "%s", err);
	}
	int64_t id = 0;
	char *args = st ? cli_args_text(argc, argv) : NULL;
	r = st ? store_raid_campaign(st, args, cli_build_string(), started, &o, rows, n, &id, err,
				    sizeof(err))
	       : 0;
	free(args);
	store_close(st);
	if (r) {
		free(rows);
		return cli_fail(&cli_cmd_raid_campaign, "%s", err);
	}
	if (db)
		printf("recorded as RAID campaign %lld in %s\n", (long long)id, db);
	size_t failed = 0, skipped = 0;
	for (size_t i = 0; i < n; i++) {
		failed += rc_row_failed(&rows[i]);
		skipped += !rc_row_failed(&rows[i]) && rows[i].not_injected;
	}
	FILE *out = strcmp(report, "-") ? fopen(report, "w") : stdout;
	if (!out) {
		free(rows);
		return cli_fail(&cli_cmd_raid_campaign, "%s: %s", report, strerror(errno));
	}
	rc_report(out, &o, rows, n);
	if (out != stdout && fclose(out)) {
		free(rows);
		return cli_fail(&cli_cmd_raid_campaign, "%s: %s", report, strerror(errno));
	}
	printf("%zu runs, %zu failed, %zu not injected%s%s\n", n, failed, skipped,
	       out != stdout ? "; report in " : "", out != stdout ? report : "");
	free(rows);
	return failed ? 1 : 0;
}

const struct cli_cmd cli_cmd_raid_campaign = {
	.name = "raid-campaign",
	.summary = "fault campaigns per RAID profile on 2, 4 and 8 disks",
	.usage = usage_text,
	.run = cmd_raid_campaign,
};
