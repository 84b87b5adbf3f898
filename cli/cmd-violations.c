/* cmd-violations.c - `btrsim violations`: the violations in a trace database. */
#include "cli/cli.h"
#include "traces/store.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

static const char usage_text[] =
	"usage: btrsim violations [--db FILE] [--run ID] [--full]\n"
	"       btrsim violations [--db FILE] --reproducer ID\n"
	"       btrsim violations [--db FILE] --script ID\n"
	"\n"
	"List the crash-consistency violations recorded in the trace database FILE:\n"
	"id, run, crash state, verdict (mount, check, read, oracle) and what was\n"
	"wrong.  --reproducer prints violation ID's minimized reproducer, a workload\n"
	"file that 'btrsim explore' runs again (its comments name the crash state).\n"
	"\n"
	"  --db FILE           the trace database (traces/btrsim.db, where 'make run'\n"
	"                      records)\n"
	"  --run ID            only the violations of run ID\n"
	"  --full              each with its reproducer\n"
	"  --reproducer ID     print violation ID's reproducer only\n"
	"  --script ID         print violation ID's stand-alone shell script (a run on\n"
	"                      the kernel: mkfs, mount, the operations as xfs_io and\n"
	"                      shell commands, the crash point described)\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 printed, 1 no such violation or an unusable database, 2 bad usage.\n";

const struct cli_cmd cli_cmd_violations;

static int cmd_violations(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'D' },	 { "run", required_argument, NULL, 'r' },
		{ "full", no_argument, NULL, 'f' },	 { "reproducer", required_argument, NULL, 'R' },
		{ "script", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },	 { NULL, 0, NULL, 0 },
	};
	const char *db = CLI_DEFAULT_DB;
	int64_t run = 0, rep = 0;
	bool full = false, script = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'D': db = optarg; break;
		case 'f': full = true; break;
		case 'r':
			if (cli_parse_id(optarg, &run))
				return cli_usage_error(&cli_cmd_violations, "--run takes a run id, not '%s'", optarg);
			break;
		case 'R':
		case 'S':
			if (cli_parse_id(optarg, &rep))
				return cli_usage_error(&cli_cmd_violations,
						       "--%s takes a violation id, not '%s'",
						       c == 'S' ? "script" : "reproducer", optarg);
			script = c == 'S';
			break;
		case 'h': return cli_help(&cli_cmd_violations);
		default:
			return cli_usage_error(&cli_cmd_violations, "unknown option or missing argument '%s'",
					       argv[optind - 1]);
		}
	}
	if (optind != argc)
		return cli_usage_error(&cli_cmd_violations, "unexpected argument '%s'", argv[optind]);
	if (rep && (run || full))
		return cli_usage_error(&cli_cmd_violations, "--%s goes alone",
				       script ? "script" : "reproducer");
	char err[1024];
	struct store *s;
	if (store_open_existing(db, &s, err, sizeof(err)))
		return cli_fail(&cli_cmd_violations, "%s", err);
	int r = rep ? store_print_reproducer(s, rep, script, stdout, err, sizeof(err))
		    : store_list_violations(s, run, full, stdout, err, sizeof(err));
	store_close(s);
	if (r)
		return cli_fail(&cli_cmd_violations, "%s", err);
	return 0;
}

const struct cli_cmd cli_cmd_violations = {
	.name = "violations",
	.summary = "list the violations in a trace database, print a reproducer",
	.usage = usage_text,
	.run = cmd_violations,
};
