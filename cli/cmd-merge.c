/* cmd-merge.c - `btrsim merge`: trace stores brought together into one (traces/store_merge.c). */
#include "cli/cli.h"
#include "traces/store.h"

#include <getopt.h>
#include <stdio.h>

static const char usage_text[] =
	"usage: btrsim merge OUT.db IN.db...\n"
	"\n"
	"Add everything of each trace store IN.db to OUT.db (created when missing):\n"
	"campaigns, runs with their IO logs, results, crash states, fault points hit\n"
	"and violations with their reproducers, fuzzing findings and statistics, RAID\n"
	"fault campaigns.  Ids are renumbered; identical workloads and payloads are\n"
	"stored once; each run keeps the store it came from (runs.source) and its\n"
	"origin, so merging a store twice adds nothing.  Each input is read, never\n"
	"changed, and must be of this btrsim's schema version.  'runs', 'violations',\n"
	"'replay' and 'report' work on the result as on any store.\n"
	"\n"
	"  -q, --quiet    no line per input\n"
	"  -h, --help     show this help\n"
	"\n"
	"Exit status: 0, 1 when an input could not be merged (those before it are),\n"
	"2 for bad usage.\n";

const struct cli_cmd cli_cmd_merge;

static int cmd_merge(int argc, char **argv)
{
	static const struct option longopts[] = { { "quiet", no_argument, NULL, 'q' },
						   { "help", no_argument, NULL, 'h' }, { 0 } };
	bool quiet = false;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'q': quiet = true; break;
		case 'h': return cli_help(&cli_cmd_merge);
		default: return cli_usage_error(&cli_cmd_merge, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind < 2)
		return cli_usage_error(&cli_cmd_merge, "needs the output store and at least one input");
	char err[1024];
	struct store *out;
	if (store_open(argv[optind], &out, err, sizeof(err)))
		return cli_fail(&cli_cmd_merge, "%s", err);
	int rc = 0;
	for (int i = optind + 1; i < argc && !rc; i++) {
		struct store_merge_stats st;
		if (store_merge(out, argv[i], &st, err, sizeof(err))) {
			rc = cli_fail(&cli_cmd_merge, "%s", err);
			break;
		}
		if (!quiet)
			printf("%s: %lld runs added (%lld there already), %lld crash states, %lld violations, "
			       "%lld new workloads, %lld campaigns, %lld RAID campaigns, %lld findings, "
			       "%lld fuzzing statistics\n",
			       argv[i], (long long)st.runs, (long long)st.runs_there, (long long)st.states,
			       (long long)st.violations, (long long)st.workloads, (long long)st.campaigns,
			       (long long)st.raid_campaigns, (long long)st.findings,
			       (long long)st.fuzz_stats);
	}
	store_close(out);
	return rc;
}

const struct cli_cmd cli_cmd_merge = {
	.name = "merge",
	.summary = "merge trace stores (a campaign's shards) into one",
	.usage = usage_text,
	.run = cmd_merge,
};
