/* cmd-replay.c - `btrsim replay`: a recorded run again, or one crash state as images. */
#include "cli/cli.h"
#include "traces/replay.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const char usage_text[] =
	"usage: btrsim replay [--db FILE] RUN\n"
	"       btrsim replay [--db FILE] RUN --crash-state K --out DIR\n"
	"\n"
	"The first form re-executes run RUN of the trace database with the options it\n"
	"was recorded with, and checks that every operation gives the same result,\n"
	"every IO request is the same (disk, kind, sectors, epoch, status, data hash)\n"
	"and every crash state comes out the same; the first divergence is reported.\n"
	"A run on the kernel (explore --target kernel) is run on the kernel again:\n"
	"the kernel's requests differ in detail from run to run, so the results must\n"
	"be the same, the flushes as many, and violations found again when there\n"
	"were; the writes and crash states are counted beside the recorded ones.\n"
	"\n"
	"The second rebuilds crash state K of the run from the stored IO log alone\n"
	"(the build that replays it need not be the one that recorded it) and writes\n"
	"its disks as DIR/disk0.img, DIR/disk1.img, ...: images to 'mount -o loop',\n"
	"'btrfs check' or open with btrsim.\n"
	"\n"
	"  --db FILE           the trace database (traces/btrsim.db, where 'make run'\n"
	"                      records)\n"
	"  --crash-state K     the crash state (its number, 'crash_states.k')\n"
	"  --out DIR           where to write its disk images (created when missing)\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 the same (or images written), 1 a divergence or a failure,\n"
	"2 bad usage.\n";

const struct cli_cmd cli_cmd_replay;

static int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'D' },	      { "crash-state", required_argument, NULL, 'k' },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },	      { NULL, 0, NULL, 0 },
	};
	const char *db = CLI_DEFAULT_DB, *dir = NULL;
	uint64_t k = 0;
	int64_t run = 0;
	bool have_k = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'D': db = optarg; break;
		case 'o': dir = optarg; break;
		case 'k':
			if (cli_parse_u64(optarg, &k, 0) || k > INT64_MAX)
				return cli_usage_error(&cli_cmd_replay, "--crash-state takes a number, not '%s'",
						       optarg);
			have_k = true;
			break;
		case 'h': return cli_help(&cli_cmd_replay);
		default:
			return cli_usage_error(&cli_cmd_replay, "unknown option or missing argument '%s'",
					       argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error(&cli_cmd_replay, "takes one run id");
	if (cli_parse_id(argv[optind], &run))
		return cli_usage_error(&cli_cmd_replay, "'%s' is not a run id", argv[optind]);
	if (have_k != (dir != NULL))
		return cli_usage_error(&cli_cmd_replay, "--crash-state and --out go together");
	char err[1024];
	struct store *s;
	if (store_open_existing(db, &s, err, sizeof(err)))
		return cli_fail(&cli_cmd_replay, "%s", err);
	int r = have_k ? replay_crash_state(s, run, (size_t)k, dir, stdout, err, sizeof(err))
		       : replay_verify(s, run, cli_build_string(), stdout, err, sizeof(err));
	store_close(s);
	if (r)
		return cli_fail(&cli_cmd_replay, "%s", err);
	return 0;
}

const struct cli_cmd cli_cmd_replay = {
	.name = "replay",
	.summary = "re-execute a recorded run, or write a crash state's disk images",
	.usage = usage_text,
	.run = cmd_replay,
};
