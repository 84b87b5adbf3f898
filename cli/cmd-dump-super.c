/*
 * cmd-dump-super.c - `btrsim dump-super`: print superblock copies as
 * `btrfs inspect-internal dump-super` does.  Reads the raw copies without
 * opening the file system, so it works on damaged images.
 */
#include "cli/image.h"
#include "ref/print.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>

static const char usage_text[] =
	"usage: btrsim dump-super [options] IMG...\n"
	"\n"
	"Print the superblock of each image, as 'btrfs inspect-internal dump-super'.\n"
	"\n"
	"  -f, --full          also the sys_chunk_array and the backup roots\n"
	"  -a, --all           every copy (64 KiB, 64 MiB, 256 GiB) that fits on the disk\n"
	"  -s, --super N       only copy N (0, 1 or 2; default 0)\n"
	"  -F, --force         print a copy even when its magic is wrong\n"
	"  -h, --help          show this help\n"
	"\n"
	"Exit status: 0, or 1 when a copy could not be read or has a bad magic.\n";

const struct cli_cmd cli_cmd_dump_super;

static int cmd_dump_super(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "full", no_argument, NULL, 'f' },   { "all", no_argument, NULL, 'a' },
		{ "super", required_argument, NULL, 's' }, { "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },   { NULL, 0, NULL, 0 },
	};
	bool full = false, all = false, force = false;
	int copy = 0, c;
	uint64_t v;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "fas:Fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': full = true; break;
		case 'a': all = true; break;
		case 'F': force = true; break;
		case 's':
			if (cli_parse_u64(optarg, &v, 0) || v > 2)
				return cli_usage_error(&cli_cmd_dump_super, "--super takes 0, 1 or 2, not '%s'",
						       optarg);
			copy = (int)v;
			break;
		case 'h': return cli_help(&cli_cmd_dump_super);
		default:
			return cli_usage_error(&cli_cmd_dump_super, "unknown option '%s'", argv[optind - 1]);
		}
	}
	int n = argc - optind;
	sim_volume *vol;
	int rc = cli_open_volume(&cli_cmd_dump_super, argv + optind, n, false, &vol);
	if (rc)
		return rc;
	for (int d = 0; d < n; d++) {
		const char *dev = argv[optind + d];
		for (int m = all ? 0 : copy; m <= (all ? 2 : copy); m++) {
			struct btrfs_super_disk sb;
			bool valid;
			int r = ref_read_super(vol, (unsigned)d, m, &sb, &valid);
			if (r == -ENOENT) {
				if (!all)
					rc = cli_fail(&cli_cmd_dump_super, "%s: copy %d at %llu lies past the end of the disk",
						      dev, m, (unsigned long long)btrfs_super_offset(m));
				continue;
			}
			if (r) {
				rc = cli_fail(&cli_cmd_dump_super, "%s: %s", dev, sim_volume_error(vol));
				continue;
			}
			if (LE64(sb.magic) != BTRFS_MAGIC_VALUE && !force) {
				/* As progs: the copy's heading, then the complaint. */
				printf("superblock: bytenr=%llu, device=%s\n"
				       "---------------------------------------------------------\n",
				       (unsigned long long)btrfs_super_offset(m), dev);
				rc = cli_fail(&cli_cmd_dump_super,
					      "%s: bad magic on superblock at %llu (use --force to dump it anyway)",
					      dev, (unsigned long long)btrfs_super_offset(m));
				continue;
			}
			ref_print_super(stdout, &sb, btrfs_super_offset(m), dev, full);
			putchar('\n');
		}
		if (all)
			putchar('\n'); /* progs ends each device's copies with one more */
	}
	sim_volume_close(vol);
	return rc;
}

const struct cli_cmd cli_cmd_dump_super = {
	.name = "dump-super",
	.summary = "print superblocks, as btrfs inspect-internal dump-super",
	.usage = usage_text,
	.run = cmd_dump_super,
};
