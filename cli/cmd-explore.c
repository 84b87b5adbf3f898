/* cmd-explore.c - `btrsim explore`: every crash state of a workload, judged. */
#include "cli/cli.h"
#include "traces/explore.h"
#include "traces/store.h"
#include "version.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char usage_text[] =
	"usage: btrsim explore [options] WORKLOAD\n"
	"\n"
	"Run the workload on ref over a memory disk with every write recorded, then\n"
	"crash it everywhere: before each flush and each FUA write, and at the end,\n"
	"the volatile writes of that moment are kept or dropped in every combination\n"
	"(all subsets up to --max-subset writes, seeded samples beyond, and torn\n"
	"multi-sector writes).  Each state must mount, pass 'btrsim check', and show\n"
	"what the oracle allows: the state after some operation between the last\n"
	"completed fsync, fdatasync or sync and the crash (traces/README.md).\n"
	"\n"
	"  --max-subset K      all subsets while at most K writes are volatile (10)\n"
	"  --samples N         random subsets beyond that, per crash point (64)\n"
	"  --torn N            states with a torn write, per crash point (4)\n"
	"  --seed N            the seed of samples and tears (1; printed)\n"
	"  --nodesize SIZE     of the file system made for the run (16k)\n"
	"  --db FILE           record the run in the trace database FILE (created when\n"
	"                      missing; list with 'btrsim runs --db FILE')\n"
	"  -v, --verbose       a line per crash point\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 every state consistent, 1 a violation (printed) or a failure,\n"
	"2 bad usage.\n";

const struct cli_cmd cli_cmd_explore;

/* t as ISO-8601 UTC, "2024-05-01T12:00:00Z". */
static void iso_time(time_t t, char out[32])
{
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, 32, "@%lld", (long long)t);
}

static int cmd_explore(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "max-subset", required_argument, NULL, 'k' }, { "samples", required_argument, NULL, 'n' },
		{ "torn", required_argument, NULL, 't' },       { "seed", required_argument, NULL, 's' },
		{ "nodesize", required_argument, NULL, 'N' },   { "verbose", no_argument, NULL, 'v' },
		{ "db", required_argument, NULL, 'D' },         { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = NULL;
	struct explore_opts o = { .seed = 1 };
	explore_defaults(&o);
	uint64_t v;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		if (c != 'v' && c != 'h' && c != 'D' && c != '?' && cli_parse_u64(optarg, &v, c == 'N'))
			return cli_usage_error(&cli_cmd_explore, "expected a number, not '%s'", optarg);
		switch (c) {
		case 'k':
			if (v > 20)
				return cli_usage_error(&cli_cmd_explore, "--max-subset takes 0 to 20");
			o.max_subset = (unsigned)v;
			break;
		case 'n': o.samples = v > 100000 ? 100000 : (unsigned)v; break;
		case 't': o.torn = v > 10000 ? 10000 : (unsigned)v; break;
		case 's': o.seed = v; break;
		case 'N':
			if (v < 4096 || v > 65536 || (v & (v - 1)))
				return cli_usage_error(&cli_cmd_explore, "--nodesize takes a power of two, 4k to 64k");
			o.nodesize = (uint32_t)v;
			break;
		case 'D': db = optarg; break;
		case 'v': o.log = stdout; break;
		case 'h': return cli_help(&cli_cmd_explore);
		default: return cli_usage_error(&cli_cmd_explore, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error(&cli_cmd_explore, "takes one workload");
	struct wl_workload w = { 0 };
	char err[1024];
	if (wl_parse_file(argv[optind], &w, err, sizeof(err)))
		return cli_fail(&cli_cmd_explore, "%s", err);
	/* Opened first, so that a database that cannot be used stops the
	 * command before the exploration rather than after it. */
	struct store *st = NULL;
	if (db && store_open(db, &st, err, sizeof(err))) {
		wl_free(&w);
		return cli_fail(&cli_cmd_explore, "%s", err);
	}
	printf("seed %llu\n", (unsigned long long)o.seed);
	struct explore_result res;
	char started[32], ended[32];
	iso_time(time(NULL), started);
	int r = explore_run(&w, &o, &res, err, sizeof(err));
	iso_time(time(NULL), ended);
	if (r < 0) {
		/* Not recorded: a run that could not run has no result. */
		wl_free(&w);
		store_close(st);
		return cli_fail(&cli_cmd_explore, "%s", err);
	}
	printf("%zu operations, %zu crash points, %zu crash states (%.0f/s), %zu violation%s\n",
	       res.ops, res.crash_points, res.states,
	       res.seconds > 0 ? (double)res.states / res.seconds : 0.0, res.violations,
	       res.violations == 1 ? "" : "s");
	if (st) {
		char config[128];
		snprintf(config, sizeof(config), "max-subset=%u samples=%u torn=%u nodesize=%u",
			 o.max_subset, o.samples, o.torn, (unsigned)o.nodesize);
		int64_t id;
		int f = store_record_explore(st, &w, o.seed,
					     "v" BTRSIM_VERSION " " BTRSIM_BUILD_ID " " BTRSIM_BUILD_MODE,
					     config, &res, r == 1 ? 1 : 0, started, ended, &id, err,
					     sizeof(err));
		store_close(st);
		if (f) {
			wl_free(&w);
			return cli_fail(&cli_cmd_explore, "%s", err);
		}
		printf("recorded as run %lld in %s\n", (long long)id, db);
	}
	wl_free(&w);
	if (r == 1)
		return cli_fail(&cli_cmd_explore, "%s", res.violation);
	return 0;
}

const struct cli_cmd cli_cmd_explore = {
	.name = "explore",
	.summary = "crash a workload at every point and judge every state",
	.usage = usage_text,
	.run = cmd_explore,
};
