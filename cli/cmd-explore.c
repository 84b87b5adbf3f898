/* cmd-explore.c - `btrsim explore`: every crash state of a workload, judged. */
#include "cli/cli.h"
#include "cli/explore_opts.h"
#include "traces/record.h"
#include "version.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: btrsim explore [options] WORKLOAD\n"
	"\n"
	"Run the workload on ref over memory disks with every request recorded, then\n"
	"crash it everywhere: before each flush and each FUA write, and at the end,\n"
	"the volatile writes of that moment are kept or dropped in every combination\n"
	"(all subsets up to --max-subset writes, seeded samples beyond, and torn\n"
	"multi-sector writes); with several disks each disk's cache fails on its own.\n"
	"Each state must mount, pass 'btrsim check', and show what the oracle allows:\n"
	"the state after some operation between the last completed fsync, fdatasync or\n"
	"sync and the crash (traces/README.md).  A violation is minimized (delta\n"
	"debugging over the operations, then over the persisted writes) and printed as\n"
	"a workload file.\n"
	"\n"
	EXPLORE_OPTS_HELP
	"  --check CMD         an application's checker (traces/README.md, \"Recording\n"
	"                      applications\"): in each state the oracle accepts, the\n"
	"                      file system is mounted through FUSE on a writable copy\n"
	"                      and CMD runs there under sh -c, in the mount; a status\n"
	"                      other than 0 is a violation (verdict app); states with\n"
	"                      the same tree share the verdict (ref target only)\n"
	"  --check-timeout S   a checker still running after S seconds is killed, with\n"
	"                      all it started, and that is a violation (60)\n"
	"  --db FILE           record the run in the trace database FILE (created when\n"
	"                      missing): IO log, results, crash states, violations;\n"
	"                      list with 'btrsim runs', replay with 'btrsim replay'\n"
	"  --no-minimize       report a violation as found, without minimizing it\n"
	"  -q, --quiet         no progress line (there is none when stderr is not a\n"
	"                      terminal, unless BTRSIM_PROGRESS=1; BTRSIM_PROGRESS=0:\n"
	"                      never)\n"
	"  -v, --verbose       a line per crash point\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 every state consistent, 1 a violation (printed) or a failure,\n"
	"2 bad usage.\n";

const struct cli_cmd cli_cmd_explore;

static int cmd_explore(int argc, char **argv)
{
	static const struct option opts[] = {
		EXPLORE_LONG_OPTS,
		{ "verbose", no_argument, NULL, 'v' },
		{ "db", required_argument, NULL, 'D' },
		{ "no-minimize", no_argument, NULL, 'M' },
		{ "check", required_argument, NULL, 'C' },
		{ "check-timeout", required_argument, NULL, 'T' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = NULL;
	struct cli_explore ce;
	cli_explore_init(&ce);
	bool minimize = true, quiet = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vqh", opts, NULL)) != -1) {
		int e = cli_explore_opt(&ce, &cli_cmd_explore, c, optarg);
		if (e > 0)
			return e;
		if (e == 0)
			continue;
		switch (c) {
		case 'D': db = optarg; break;
		case 'M': minimize = false; break;
		case 'C':
			if (!optarg[0])
				return cli_usage_error(&cli_cmd_explore, "--check takes a command");
			ce.o.check_cmd = optarg;
			break;
		case 'T': {
			uint64_t v;
			if (cli_parse_u64(optarg, &v, 0) || v < 1 || v > 86400)
				return cli_usage_error(&cli_cmd_explore,
						       "--check-timeout takes 1 to 86400 seconds, not '%s'",
						       optarg);
			ce.o.check_timeout_ms = (unsigned)v * 1000;
			break;
		}
		case 'q': quiet = true; break;
		case 'v': ce.o.log = stdout; break;
		case 'h': return cli_help(&cli_cmd_explore);
		default: return cli_usage_error(&cli_cmd_explore, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error(&cli_cmd_explore, "takes one workload");
	struct wl_workload w = { 0 };
	char err[1024];
	if (wl_parse_file(argv[optind], &w, err, sizeof(err))) {
		cli_explore_free(&ce);
		return cli_fail(&cli_cmd_explore, "%s", err);
	}
	cli_explore_mount(&ce, &w);
	if (cli_explore_quota(&ce, &w)) {
		wl_free(&w);
		cli_explore_free(&ce);
		return cli_fail(&cli_cmd_explore, "out of memory");
	}
	if (db && ce.o.lose_disk) { /* (a replay could not judge its states the same) */
		wl_free(&w);
		cli_explore_free(&ce);
		return cli_usage_error(&cli_cmd_explore, "--lose-disk is not recorded: not with --db");
	}
	if (cli_explore_load(&ce, err, sizeof(err))) {
		wl_free(&w);
		return cli_fail(&cli_cmd_explore, "%s", err);
	}
	if (ce.o.check_cmd && ce.o.target == EXPLORE_KERNEL) {
		wl_free(&w);
		cli_explore_free(&ce);
		return cli_usage_error(&cli_cmd_explore, "--check runs with ref's states: not with --target kernel");
	}
	/* Opened first, so that a database that cannot be used stops the
	 * command before the exploration rather than after it. */
	struct record_opts ro = { .kind = "explore", .build = cli_build_string(),
				  .faults = ce.faults_text, .minimize = minimize };
	if (db && store_open(db, &ro.store, err, sizeof(err))) {
		wl_free(&w);
		cli_explore_free(&ce);
		return cli_fail(&cli_cmd_explore, "%s", err);
	}
	cli_print_seed(ce.o.seed);
	ce.o.progress = cli_progress_stream(quiet);
	struct record_outcome out;
	int r = record_explore(&w, &ce.o, &ro, &out, err, sizeof(err));
	store_close(ro.store);
	wl_free(&w);
	cli_explore_free(&ce);
	if (r < 0) {
		record_outcome_free(&out);
		return cli_fail(&cli_cmd_explore, "%s", err);
	}
	const struct explore_result *res = &out.res;
	printf("%zu operations, %zu crash points, %zu crash states (%.0f/s), %zu violation%s",
	       res->ops, res->crash_points, res->states,
	       res->seconds > 0 ? (double)res->states / res->seconds : 0.0, res->violations,
	       res->violations == 1 ? "" : "s");
	if (res->detected)
		printf(", %zu with injected damage detected", res->detected);
	if (res->cached && ce.o.target == EXPLORE_KERNEL)
		printf(", %zu judged by an earlier state with the same disks", res->cached);
	if (res->hangs)
		printf(", %zu hang%s", res->hangs, res->hangs == 1 ? "" : "s");
	if (ce.o.check_cmd)
		printf("; the checker ran in %zu states (%zu more shared a tree with one of them%s)",
		       res->checked, res->check_cached, res->check_hangs ? ", some hung" : "");
	if (res->degraded_states)
		printf("; %zu states with a disk lost, %zu of them unreadable (the write hole)",
		       res->degraded_states, res->write_hole);
	printf("\n");
	if (ce.o.target == EXPLORE_REF)
		cli_explore_print_memo(res->cached);
	if (out.run_id)
		printf("recorded as run %lld in %s\n", (long long)out.run_id, db);
	if (r == 1) {
		fprintf(stderr, "btrsim explore: %s\n", res->violation);
		if (out.reproducer)
			printf("minimized reproducer:\n%s", out.reproducer);
		if (out.script)
			printf("as a shell script for the kernel%s:\n%s",
			       out.run_id ? " ('btrsim violations --script' prints it again)" : "",
			       out.script);
	}
	record_outcome_free(&out);
	return r == 1 ? 1 : 0;
}

const struct cli_cmd cli_cmd_explore = {
	.name = "explore",
	.summary = "crash a workload at every point and judge every state",
	.usage = usage_text,
	.run = cmd_explore,
};
