/*
 * cmd-map.c - `btrsim map`: where a logical address lives on the disks, as
 * btrfs-progs' btrfs-map-logical tells: one line per copy.
 */
#include "cli/image.h"

#include <getopt.h>


static const char usage_text[] =
	"usage: btrsim map [options] IMG... LOGICAL\n"
	"\n"
	"Print where the logical address LOGICAL lives: for each copy, the image it\n"
	"is on (or that its device is missing, or that it is rebuilt from RAID5/6\n"
	"parity) and the physical offset there, and how many bytes stay contiguous.\n"
	"\n"
	"      --degraded      open with devices missing\n"
	"      --usebackuproot open from a backup root if the root tree is unreadable\n"
	"      --nologreplay   show the last commit, not what the log tree adds\n"
	"  -h, --help          show this help\n";

const struct cli_cmd cli_cmd_map;

static int cmd_map(int argc, char **argv)
{
	struct ref_open_opts oo;
	int rc = cli_parse_open_opts(&cli_cmd_map, argc, argv, &oo);
	if (rc)
		return rc < 0 ? 0 : rc;
	uint64_t logical;
	if (argc - optind < 2)
		return cli_usage_error(&cli_cmd_map, "needs at least one image and a logical address");
	if (cli_parse_u64(argv[argc - 1], &logical, 0))
		return cli_usage_error(&cli_cmd_map, "bad logical address '%s'", argv[argc - 1]);
	sim_volume *vol;
	ref_fs *fs;
	char **imgs = argv + optind;
	rc = cli_open_fs(&cli_cmd_map, imgs, argc - optind - 1, &oo, &vol, &fs);
	if (rc)
		return rc;
	struct ref_phys copies[8];
	uint64_t run;
	int n = ref_map(fs, logical, copies, 8, &run);
	if (n < 0)
		rc = cli_fail(&cli_cmd_map, "%s", ref_error(fs));
	for (int i = 0; i < n; i++) {
		if (copies[i].disk >= 0)
			printf("copy %d: %s physical %llu\n", i, imgs[copies[i].disk],
			       (unsigned long long)copies[i].physical);
		else if (copies[i].disk == -1)
			printf("copy %d: missing device\n", i);
		else
			printf("copy %d: rebuilt from parity\n", i);
	}
	if (n > 0)
		printf("contiguous for %llu bytes\n", (unsigned long long)run);
	ref_close(fs);
	sim_volume_close(vol);
	return rc;
}

const struct cli_cmd cli_cmd_map = {
	.name = "map",
	.summary = "where a logical address lives on the disks",
	.usage = usage_text,
	.run = cmd_map,
};
