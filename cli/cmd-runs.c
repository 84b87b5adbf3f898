/* cmd-runs.c - `btrsim runs`: the runs recorded in a trace database. */
#include "cli/cli.h"
#include "traces/store.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

static const char usage_text[] =
	"usage: btrsim runs [--db FILE] [--campaign ID]\n"
	"\n"
	"List the runs recorded in the trace database FILE (by 'btrsim explore --db\n"
	"FILE' and 'btrsim campaign --db FILE'), oldest first: id, kind, start time\n"
	"(UTC), the first 12 hex digits of the workload's SHA-256, operations, IO\n"
	"requests recorded, crash states and violations.  The\n"
	"database is not created when missing (traces/README.md, \"Trace store\").\n"
	"\n"
	"  --db FILE           the trace database (traces/btrsim.db, where 'make run'\n"
	"                      records)\n"
	"  --campaign ID       only the runs of campaign ID\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 listed, 1 the database is missing or unusable, 2 bad usage.\n";

const struct cli_cmd cli_cmd_runs;

static int cmd_runs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'D' },
		{ "campaign", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = CLI_DEFAULT_DB;
	int64_t campaign = 0;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'D': db = optarg; break;
		case 'c':
			if (cli_parse_id(optarg, &campaign))
				return cli_usage_error(&cli_cmd_runs, "--campaign takes a campaign id, not '%s'",
						       optarg);
			break;
		case 'h': return cli_help(&cli_cmd_runs);
		default:
			return cli_usage_error(&cli_cmd_runs, "unknown option or missing argument '%s'",
					       argv[optind - 1]);
		}
	}
	if (optind != argc)
		return cli_usage_error(&cli_cmd_runs, "unexpected argument '%s'", argv[optind]);
	char err[1024];
	struct store *s;
	if (store_open_existing(db, &s, err, sizeof(err)))
		return cli_fail(&cli_cmd_runs, "%s", err);
	int r = store_list_runs(s, campaign, stdout, err, sizeof(err));
	store_close(s);
	if (r)
		return cli_fail(&cli_cmd_runs, "%s", err);
	return 0;
}

const struct cli_cmd cli_cmd_runs = {
	.name = "runs",
	.summary = "list the runs recorded in a trace database",
	.usage = usage_text,
	.run = cmd_runs,
};
