/* cmd-check.c - `btrsim check`: the read-only checker, with btrfs check's exit codes. */
#include "cli/image.h"

#include <getopt.h>

static const char usage_text[] =
	"usage: btrsim check [options] IMG...\n"
	"\n"
	"Check the file system on the images without changing them, as 'btrfs check'\n"
	"(read-only) does: tree structure (checksums, headers, key order, levels,\n"
	"references between blocks), chunks, block groups and device extents, every\n"
	"subvolume (inode items, refs, directory items and indexes, link counts,\n"
	"sizes), the extent tree's references and counts, and csum coverage.\n"
	"Each error is one line naming the tree, the key and what is wrong.\n"
	"\n"
	"  -s, --super N       use superblock copy N (0, 1, 2) instead of the newest\n"
	"      --degraded      check with devices missing\n"
	"  -b, --backup        when the root tree is unreadable, use the newest backup\n"
	"                      root that reads (--usebackuproot too; 'btrfs check\n"
	"                      --backup' goes to a backup root at once)\n"
	"      --replay        check the file system after replaying its log tree (in\n"
	"                      memory; the images stay unchanged) instead of as it is\n"
	"                      on disk with its log, which is what 'btrfs check' does\n"
	"  -v, --verbose       also report repaired reads as they happen\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0 clean, 1 errors found (or the file system cannot be opened),\n"
	"2 bad usage.\n";

const struct cli_cmd cli_cmd_check;

static int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "super", required_argument, NULL, 's' }, { "degraded", no_argument, NULL, 'D' },
		{ "verbose", no_argument, NULL, 'v' },     { "help", no_argument, NULL, 'h' },
		{ "backup", no_argument, NULL, 'b' },      { "usebackuproot", no_argument, NULL, 'b' },
		{ "replay", no_argument, NULL, 'R' },      { NULL, 0, NULL, 0 },
	};
	/* As btrfs check: a log tree is checked where it is, not replayed. */
	/* (leaves the kernel's tree-checker rejects are read and reported, as
	 * btrfs check goes on past them) */
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr, .nologreplay = true,
				    .no_item_checks = true };
	struct ref_check_opts co = { .out = stdout };
	uint64_t v;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "s:bvh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (cli_parse_u64(optarg, &v, 0) || v > 2)
				return cli_usage_error(&cli_cmd_check, "--super takes 0, 1 or 2, not '%s'",
						       optarg);
			oo.super_mirror = (int)v;
			break;
		case 'D': oo.degraded = true; break;
		case 'b': oo.usebackuproot = true; break;
		case 'R': oo.nologreplay = false; break;
		case 'v': co.verbose = true; break;
		case 'h': return cli_help(&cli_cmd_check);
		default: return cli_usage_error(&cli_cmd_check, "unknown option '%s'", argv[optind - 1]);
		}
	}
	sim_volume *vol;
	ref_fs *fs;
	int rc = cli_open_fs(&cli_cmd_check, argv + optind, argc - optind, &oo, &vol, &fs);
	if (rc)
		return rc;
	printf("Opened file system on %d image%s (superblock copy %d, generation %llu)\n",
	       argc - optind, argc - optind > 1 ? "s" : "", ref_super_mirror(fs),
	       (unsigned long long)LE64(ref_super(fs)->generation));
	long errors = ref_check(fs, &co);
	if (errors < 0)
		rc = cli_fail(&cli_cmd_check, "%s", ref_error(fs));
	else
		rc = errors ? 1 : 0;
	uint64_t repaired, bad;
	ref_read_stats(fs, &repaired, &bad);
	if (bad)
		printf("checksum errors met while reading: %llu (%llu served from another copy)\n",
		       (unsigned long long)bad, (unsigned long long)repaired);
	ref_close(fs);
	sim_volume_close(vol);
	return rc;
}

const struct cli_cmd cli_cmd_check = {
	.name = "check",
	.summary = "check a file system read-only, as btrfs check",
	.usage = usage_text,
	.run = cmd_check,
};
