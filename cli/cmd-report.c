/* cmd-report.c - `btrsim report`: the HTML report of a trace database. */
#include "cli/cli.h"
#include "traces/report_html.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

/* What `make coverage` leaves, read when --coverage is not given. */
#define DEFAULT_COVERAGE "build/coverage/coverage.info"

static const char usage_text[] =
	"usage: btrsim report [--db FILE] -o DIR [--campaign ID] [--coverage FILE]\n"
	"\n"
	"Write a static HTML report of the trace database FILE: DIR/index.html and\n"
	"SVG plots beside it (no JavaScript, nothing loaded from elsewhere).  Sections:\n"
	"the campaigns and the runs outside one; crash states per workload and per\n"
	"flush epoch, by verdict; violations with their reproducers and the replay\n"
	"commands; the fault points hit; fuzzing (execs/s and findings over time);\n"
	"coverage per folder (traces/README.md, \"Reports\").  Tables show at most 200\n"
	"rows and say how many they left out.  The database is read, never changed (but\n"
	"for an older schema, migrated on open as every reading command does).\n"
	"\n"
	"  --db FILE           the trace database (traces/btrsim.db, where 'make run'\n"
	"                      records)\n"
	"  -o, --output DIR    the report's directory (created when missing; the files\n"
	"                      of an earlier report there are replaced)\n"
	"  --campaign ID       only campaign ID's runs\n"
	"  --coverage FILE     an lcov tracefile for the coverage section (default:\n"
	"                      " DEFAULT_COVERAGE ",\n"
	"                      which 'make coverage' leaves, when it exists)\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 written, 1 the database or the coverage file is missing or\n"
	"unusable, or the report could not be written, 2 bad usage.\n";

const struct cli_cmd cli_cmd_report;

static int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'D' },	      { "output", required_argument, NULL, 'o' },
		{ "campaign", required_argument, NULL, 'c' }, { "coverage", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },	      { NULL, 0, NULL, 0 },
	};
	struct report_html_opts o = { .db = CLI_DEFAULT_DB };
	uint64_t campaign = 0;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'D': o.db = optarg; break;
		case 'o': o.dir = optarg; break;
		case 'C': o.coverage = optarg; break;
		case 'c':
			if (cli_parse_u64(optarg, &campaign, 0) || campaign == 0 || campaign > INT64_MAX)
				return cli_usage_error(&cli_cmd_report, "--campaign takes a campaign id, not '%s'",
						       optarg);
			break;
		case 'h': return cli_help(&cli_cmd_report);
		default:
			return cli_usage_error(&cli_cmd_report, "unknown option or missing argument '%s'",
					       argv[optind - 1]);
		}
	}
	if (optind != argc)
		return cli_usage_error(&cli_cmd_report, "unexpected argument '%s'", argv[optind]);
	if (!o.dir || !*o.dir)
		return cli_usage_error(&cli_cmd_report, "give the report's directory: -o DIR");
	if (!*o.db)
		return cli_usage_error(&cli_cmd_report, "--db takes a file name");
	if (!o.coverage && access(DEFAULT_COVERAGE, R_OK) == 0)
		o.coverage = DEFAULT_COVERAGE;
	o.campaign = (int64_t)campaign;
	char err[1024];
	if (report_html(&o, err, sizeof(err)))
		return cli_fail(&cli_cmd_report, "%s", err);
	printf("report: %s/index.html\n", o.dir);
	return 0;
}

const struct cli_cmd cli_cmd_report = {
	.name = "report",
	.summary = "write the HTML report of a trace database",
	.usage = usage_text,
	.run = cmd_report,
};
