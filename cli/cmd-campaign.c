/* cmd-campaign.c - `btrsim campaign`: bounded and random workloads, every crash state judged. */
#include "cli/cli.h"
#include "cli/explore_opts.h"
#include "traces/ace.h"
#include "traces/campaign.h"
#include "traces/report.h"

#include <errno.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: btrsim campaign [--seq N [--ops SET] [--files SET]] [--random N [--length L]]\n"
	"                       [--subvol] [--quota] [--defrag] [--reflink]\n"
	"                       [--shard I/N] [--limit N] [--count] [--db FILE] [explore options]\n"
	"\n"
	"Explore many workloads, each like 'btrsim explore', and record each as a run\n"
	"of one campaign in the trace database.\n"
	"\n"
	"  --seq N             every workload of N core operations (1 to 3) in the\n"
	"                      style of CrashMonkey's ACE: a setup that makes the\n"
	"                      files and syncs, then N operations, each followed by a\n"
	"                      persistence point (traces/README.md, \"Bounded workloads\")\n"
	"  --ops SET           the operations, comma-separated (all: create,mkdir,write,\n"
	"                      fallocate,truncate,link,rename,unlink,rmdir,symlink,\n"
	"                      setxattr,removexattr,chmod; defrag, clone, clone-range\n"
	"                      and dedupe may be named too)\n"
	"  --files SET         the files, comma-separated absolute paths, 2 to 4, at most\n"
	"                      one directory deep (/foo,/A/foo,/A/bar); the last does\n"
	"                      not exist after the setup\n"
	"  --subvol            subvolumes: with --seq the subvolume set (the files in a\n"
	"                      subvolume /S, default /foo,/A/bar; operations on them in\n"
	"                      /S and in its snapshot /T, and snapshot, subvol-create,\n"
	"                      subvol-delete, subvol-sync; --ops from create,write,\n"
	"                      truncate,unlink,link,rename,rmdir,snapshot,subvol-create,\n"
	"                      subvol-delete,subvol-sync); with --random workloads\n"
	"                      with subvolume operations (gen-workload --subvols)\n"
	"  --random N          N seeded random workloads (seeds SEED, SEED+1, ...)\n"
	"  --length L          operations per random workload (200)\n"
	"  --defrag            random workloads include defrag (gen-workload --defrag)\n"
	"  --reflink           random workloads include clone, clone-range and dedupe\n"
	"  --shard I/N         only workloads I, I+N, I+2N, ... (to split a campaign\n"
	"                      across processes or machines; 0 <= I < N)\n"
	"  --shard auto        the shard of this task of a Slurm array job: I from\n"
	"                      SLURM_ARRAY_TASK_ID less SLURM_ARRAY_TASK_MIN, N from\n"
	"                      SLURM_ARRAY_TASK_COUNT (traces/slurm/campaign.sbatch)\n"
	"  --limit N           stop after N workloads\n"
	"  --count             print how many workloads the campaign (this shard, within\n"
	"                      --limit) would run, and exit: nothing is explored\n"
	"  --db FILE           record into the trace database FILE (created when missing)\n"
	"  --report FILE       write the campaign's report (Markdown) to FILE; needs --db\n"
	"  --no-minimize       report violations as found, without minimizing them\n"
	EXPLORE_OPTS_HELP
	"  --faults sweep      every fault point of the catalogue in turn, on its 1st and\n"
	"                      its 4th hit, over every workload (like fstests with\n"
	"                      fail_make_request): ref must return an error or turn\n"
	"                      read-only, never corrupt or lose acknowledged data\n"
	"  -q, --quiet         no progress line (there is none when stderr is not a\n"
	"                      terminal, unless BTRSIM_PROGRESS=1; BTRSIM_PROGRESS=0:\n"
	"                      never)\n"
	"  -h, --help          show this help\n"
	"\n"
	"Prints each violation with its minimized reproducer, then the counts:\n"
	"workloads, crash states, violations, states per second.\n"
	"Exit status: 0 every state consistent, 1 a violation or a failure, 2 bad usage.\n";

const struct cli_cmd cli_cmd_campaign;

static int shard_arg(const char *arg, unsigned *i, unsigned *n)
{
	char *end;
	unsigned long a = strtoul(arg, &end, 10);
	if (end == arg || *end != '/')
		return -1;
	const char *b = end + 1;
	unsigned long m = strtoul(b, &end, 10);
	if (end == b || *end || m == 0 || m > 1000000 || a >= m)
		return -1;
	*i = (unsigned)a;
	*n = (unsigned)m;
	return 0;
}

/* --shard auto: this Slurm array task's shard; 0, or -1 with why. */
static int slurm_shard(unsigned *i, unsigned *n, char *why, size_t len)
{
	const char *id = getenv("SLURM_ARRAY_TASK_ID"), *cnt = getenv("SLURM_ARRAY_TASK_COUNT");
	const char *min = getenv("SLURM_ARRAY_TASK_MIN");
	if (!id || !cnt) {
		snprintf(why, len, "--shard auto needs SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT "
			 "(it runs as a task of a Slurm array job)");
		return -1;
	}
	char *end;
	errno = 0;
	unsigned long t = strtoul(id, &end, 10), lo = 0, c;
	bool bad = errno || end == id || *end;
	if (min && *min) {
		lo = strtoul(min, &end, 10);
		bad = bad || *end || lo > t;
	}
	c = strtoul(cnt, &end, 10);
	bad = bad || *end || c == 0 || c > 1000000 || t - lo >= c;
	if (bad) {
		snprintf(why, len, "--shard auto: SLURM_ARRAY_TASK_ID=%s, SLURM_ARRAY_TASK_MIN=%s, "
			 "SLURM_ARRAY_TASK_COUNT=%s make no shard (an array of consecutive ids: --array=0-N)",
			 id, min ? min : "", cnt);
		return -1;
	}
	*i = (unsigned)(t - lo);
	*n = (unsigned)c;
	return 0;
}

static int write_report(struct store *s, const char *db, int64_t id, const char *path, char *err,
			size_t errlen)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	int r = report_campaign(s, db, id, f, err, errlen);
	if (fclose(f) && !r) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		r = -1;
	}
	return r;
}

static int cmd_campaign(int argc, char **argv)
{
	bool shard_auto = false;
	static const struct option opts[] = {
		EXPLORE_LONG_OPTS,
		{ "seq", required_argument, NULL, 'S' },    { "ops", required_argument, NULL, 'O' },
		{ "files", required_argument, NULL, 'f' },  { "random", required_argument, NULL, 'R' },
		{ "length", required_argument, NULL, 'L' }, { "shard", required_argument, NULL, 'I' },
		{ "limit", required_argument, NULL, 'l' },  { "db", required_argument, NULL, 'D' },
		{ "count", no_argument, NULL, 'C' },
		{ "no-minimize", no_argument, NULL, 'M' },  { "quiet", no_argument, NULL, 'q' },
		{ "report", required_argument, NULL, 'P' }, { "subvol", no_argument, NULL, 'V' },
		{ "defrag", no_argument, NULL, 'G' },       { "reflink", no_argument, NULL, 'Y' },
		{ "help", no_argument, NULL, 'h' },         { NULL, 0, NULL, 0 },
	};
	struct cli_explore ce;
	cli_explore_init(&ce);
	struct campaign_opts c = { .shards = 1, .random_ops = 200, .out = stdout };
	c.ro.minimize = true;
	c.ro.build = cli_build_string();
	const char *db = NULL, *report = NULL;
	bool quiet = false;
	uint64_t v;
	int ch;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		int e = cli_explore_opt(&ce, &cli_cmd_campaign, ch, optarg);
		if (e > 0)
			return e;
		if (e == 0)
			continue;
		if (strchr("SRLl", ch) && cli_parse_u64(optarg, &v, 0))
			return cli_usage_error(&cli_cmd_campaign, "expected a number, not '%s'", optarg);
		switch (ch) {
		case 'S':
			if (v < 1 || v > 3)
				return cli_usage_error(&cli_cmd_campaign, "--seq takes 1, 2 or 3");
			c.seq = (unsigned)v;
			break;
		case 'O': c.ops = optarg; break;
		case 'f': c.files = optarg; break;
		case 'V': c.subvol = true; break;
		case 'G': c.defrag = true; break;
		case 'Y': c.reflink = true; break;
		case 'R': c.random = v > 10000000 ? 10000000 : (size_t)v; break;
		case 'L':
			if (v < 1 || v > 100000)
				return cli_usage_error(&cli_cmd_campaign, "--length takes 1 to 100000");
			c.random_ops = (size_t)v;
			break;
		case 'l': c.limit = v; break;
		case 'C': c.count_only = true; break;
		case 'I':
			if (!strcmp(optarg, "auto")) {
				char why[256];
				if (slurm_shard(&c.shard, &c.shards, why, sizeof(why)))
					return cli_usage_error(&cli_cmd_campaign, "%s", why);
				printf("shard %u/%u (this Slurm array task)\n", c.shard, c.shards);
				shard_auto = true;
			} else if (shard_arg(optarg, &c.shard, &c.shards))
				return cli_usage_error(&cli_cmd_campaign, "--shard takes I/N with 0 <= I < N, not '%s'",
						       optarg);
			break;
		case 'D': db = optarg; break;
		case 'P': report = optarg; break;
		case 'M': c.ro.minimize = false; break;
		case 'q': quiet = true; break;
		case 'h': return cli_help(&cli_cmd_campaign);
		default:
			return cli_usage_error(&cli_cmd_campaign, "unknown option or missing argument '%s'",
					       argv[optind - 1]);
		}
	}
	if (optind != argc)
		return cli_usage_error(&cli_cmd_campaign, "unexpected argument '%s'", argv[optind]);
	if (!c.seq && !c.random)
		return cli_usage_error(&cli_cmd_campaign, "give --seq N or --random N (or both)");
	if (!c.seq && (c.ops || c.files))
		return cli_usage_error(&cli_cmd_campaign, "--ops and --files go with --seq");
	if (report && !db)
		return cli_usage_error(&cli_cmd_campaign, "--report needs --db: the report is read from it");
	if (ce.faults_path && !strcmp(ce.faults_path, "sweep")) {
		c.fault_sweep = true; /* a plan file named "sweep" is ./sweep */
		ce.faults_path = NULL;
	}
	char err[1024];
	if (db && ce.o.lose_disk) {
		cli_explore_free(&ce);
		return cli_usage_error(&cli_cmd_campaign, "--lose-disk is not recorded: not with --db");
	}
	if (cli_explore_load(&ce, err, sizeof(err)))
		return cli_fail(&cli_cmd_campaign, "%s", err);
	/* Checked before the store is touched: a bad --ops or --files is usage. */
	struct ace *a;
	if (c.seq) {
		if ((c.subvol ? ace_new_subvol : ace_new)(c.seq, c.ops, c.files, &a, err,
							  sizeof(err))) {
			cli_explore_free(&ce);
			return cli_usage_error(&cli_cmd_campaign, "%s", err);
		}
		ace_free(a);
	}
	c.o = ce.o;
	c.quota = ce.quota;
	c.mount = ce.mount;
	c.ro.faults = ce.faults_text;
	c.progress = cli_progress_stream(quiet);
	char *args = cli_args_text(argc, argv);
	if (args && shard_auto) { /* the command line as given, and the shard it meant */
		size_t l = strlen(args) + 48;
		char *with = malloc(l);
		if (with)
			snprintf(with, l, "%s (shard %u/%u)", args, c.shard, c.shards);
		free(args);
		args = with;
	}
	c.args = args;
	if (c.count_only) {
		struct campaign_result res;
		int r = campaign_run(&c, &res, err, sizeof(err));
		free(args);
		cli_explore_free(&ce);
		if (r < 0)
			return cli_fail(&cli_cmd_campaign, "%s", err);
		printf("%zu workloads\n", res.workloads);
		return 0;
	}
	if (db && store_open(db, &c.ro.store, err, sizeof(err))) {
		free(args);
		cli_explore_free(&ce);
		return cli_fail(&cli_cmd_campaign, "%s", err);
	}
	cli_print_seed(c.o.seed);
	struct campaign_result res;
	int r = campaign_run(&c, &res, err, sizeof(err));
	if (r >= 0 && report && write_report(c.ro.store, db, res.id, report, err, sizeof(err)))
		r = -EIO;
	store_close(c.ro.store);
	free(args);
	cli_explore_free(&ce);
	if (r < 0)
		return cli_fail(&cli_cmd_campaign, "%s", err);
	printf("%zu workloads, %zu crash states (%.0f/s), %zu violations", res.workloads, res.states,
	       res.seconds > 0 ? (double)res.states / res.seconds : 0.0, res.violations);
	if (res.failures)
		printf(", %zu workloads could not run", res.failures);
	if (res.detected)
		printf(", %zu states with injected damage detected", res.detected);
	printf(" in %.1f s\n", res.seconds);
	cli_explore_print_memo(res.cached);
	if (res.degraded_states)
		printf("%zu states judged again with a disk lost, %zu of them unreadable (the write hole)\n",
		       res.degraded_states, res.write_hole);
	if (res.id)
		printf("recorded as campaign %lld in %s ('btrsim runs --db %s --campaign %lld')\n",
		       (long long)res.id, db, db, (long long)res.id);
	if (report)
		printf("report: %s\n", report);
	return r;
}

const struct cli_cmd cli_cmd_campaign = {
	.name = "campaign",
	.summary = "explore bounded (ACE-style) and random workloads, recorded",
	.usage = usage_text,
	.run = cmd_campaign,
};
