/* cmd-gen.c - `btrsim gen-workload`: a random workload, a pure function of its options. */
#include "cli/cli.h"
#include "traces/run.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage_text[] =
	"usage: btrsim gen-workload [options]\n"
	"\n"
	"Print a random workload (traces/README.md, \"Random workloads\") to standard\n"
	"output: the same options give the same workload on every machine.  It has no\n"
	"expectations; run it on the kernel with 'btrsim run --host DIR --record\n"
	"--annotate OUT' to make the kernel's results the expectations for ref.\n"
	"\n"
	"  --seed N            the seed (default 1)\n"
	"  --ops N             how many operations (default 1000, at most 1000000)\n"
	"  --names N           names per directory level (default 6)\n"
	"  --depth N           directory depth (default 3)\n"
	"  --max-offset SIZE   writes start below this (default 1G)\n"
	"  --max-len SIZE      and are at most this long (default 1M)\n"
	"  --bad PERCENT       share of deliberately bad operations (default 5)\n"
	"  --no-sync           leave out fsync, fdatasync and sync\n"
	"  --subvols           add subvol-create, snapshot (some read-only), subvol-delete,\n"
	"                      subvol-sync, and operations in read-only snapshots\n"
	"  --quota             start with quota-enable (quota groups on), then the same\n"
	"                      operations as without it\n"
	"  --text              writes with an odd seed write compressible text (tN),\n"
	"                      then the same operations as without it\n"
	"  --defrag            add defrag (some with a compression)\n"
	"  --reflink           add clone, clone-range and dedupe\n"
	"  -h, --help          show this help\n";

const struct cli_cmd cli_cmd_gen;

static int cmd_gen(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },   { "ops", required_argument, NULL, 'o' },
		{ "names", required_argument, NULL, 'n' },  { "depth", required_argument, NULL, 'd' },
		{ "max-offset", required_argument, NULL, 'O' },
		{ "max-len", required_argument, NULL, 'L' }, { "bad", required_argument, NULL, 'b' },
		{ "no-sync", no_argument, NULL, 'S' },      { "help", no_argument, NULL, 'h' },
		{ "subvols", no_argument, NULL, 'V' },      { "quota", no_argument, NULL, 'Q' },
		{ "text", no_argument, NULL, 'T' },         { "defrag", no_argument, NULL, 'G' },
		{ "reflink", no_argument, NULL, 'K' },
		{ NULL, 0, NULL, 0 },
	};
	struct wl_gen_opts o = { .seed = 1, .ops = 1000 };
	wl_gen_defaults(&o);
	uint64_t v;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		bool sizes = c == 'O' || c == 'L';
		if (!strchr("SVQTGKh?", c) && cli_parse_u64(optarg, &v, sizes))
			return cli_usage_error(&cli_cmd_gen, "expected a number, not '%s'", optarg);
		switch (c) {
		case 's': o.seed = v; break;
		case 'o':
			if (v > WL_GEN_MAX_OPS)
				return cli_usage_error(&cli_cmd_gen, "--ops takes 0 to %u, not '%s'",
						       WL_GEN_MAX_OPS, optarg);
			o.ops = (size_t)v;
			break;
		case 'n':
			if (v < 1 || v > 1000)
				return cli_usage_error(&cli_cmd_gen, "--names takes 1 to 1000");
			o.names = (unsigned)v;
			break;
		case 'd':
			if (v < 1 || v > 32)
				return cli_usage_error(&cli_cmd_gen, "--depth takes 1 to 32");
			o.depth = (unsigned)v;
			break;
		case 'O': o.max_offset = v; break;
		case 'L': o.max_len = v; break;
		case 'b':
			if (v > 100)
				return cli_usage_error(&cli_cmd_gen, "--bad takes a percentage");
			o.bad_percent = (unsigned)v;
			break;
		case 'S': o.syncs = false; break;
		case 'V': o.subvols = true; break;
		case 'Q': o.quota = true; break;
		case 'T': o.text = true; break;
		case 'G': o.defrag = true; break;
		case 'K': o.reflink = true; break;
		case 'h': return cli_help(&cli_cmd_gen);
		default: return cli_usage_error(&cli_cmd_gen, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc)
		return cli_usage_error(&cli_cmd_gen, "takes no operands");
	struct wl_workload w = { 0 };
	int gr = wl_generate(&o, &w);
	if (gr)
		return cli_fail(&cli_cmd_gen, "%s", gr == -ENOMEM ? "out of memory" : strerror(-gr));
	printf("# btrsim gen-workload --seed %llu --ops %zu%s%s%s%s%s\n", (unsigned long long)o.seed,
	       o.ops, o.subvols ? " --subvols" : "", o.quota ? " --quota" : "",
	       o.text ? " --text" : "", o.defrag ? " --defrag" : "", o.reflink ? " --reflink" : "");
	int r = wl_print(stdout, &w);
	wl_free(&w);
	return r ? cli_fail(&cli_cmd_gen, "writing the workload failed") : 0;
}

const struct cli_cmd cli_cmd_gen = {
	.name = "gen-workload",
	.summary = "print a random workload for differential runs",
	.usage = usage_text,
	.run = cmd_gen,
};
