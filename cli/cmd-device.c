/*
 * cmd-device.c - `btrsim device stats`: the per-device error counters kept
 * in the dev tree, in the layout of `btrfs device stats` (btrfs-progs 6.2),
 * with its -z (reset) and -c (exit 64 when any counter is not zero).
 */
#include "cli/fsops.h"
#include "cli/image.h"

#include <getopt.h>
#include <string.h>

static const char usage_text[] =
	"usage: btrsim device stats [-z] [-c] IMG...\n"
	"\n"
	"The error counters of each device of the file system on the images, as\n"
	"'btrfs device stats' prints them: write, read and flush errors of requests,\n"
	"corruption (checksum) and generation errors met by reads and scrubs.  They\n"
	"are kept in the dev tree and survive a remount.\n"
	"\n"
	"  -z, --reset   print the counters, then set them to 0 (commits)\n"
	"  -c, --check   exit 64 when any counter is not 0\n"
	"  -h, --help    show this help\n"
	"\n"
	"(Adding, removing and replacing devices are not implemented yet.)\n"
	"\n"
	"Exit status: 0, 64 with -c when an error was counted, 1 when the file\n"
	"system cannot be opened or the reset fails, 2 bad usage.\n";

const struct cli_cmd cli_cmd_device;

static int stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "reset", no_argument, NULL, 'z' },
		{ "check", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool reset = false, check = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "zch", opts, NULL)) != -1) {
		switch (c) {
		case 'z': reset = true; break;
		case 'c': check = true; break;
		case 'h': return cli_help(&cli_cmd_device);
		default:
			return cli_usage_error(&cli_cmd_device, "stats: unknown option '%s'", argv[optind - 1]);
		}
	}
	char **imgs = argv + optind;
	int nimg = argc - optind;
	if (nimg < 1)
		return cli_usage_error(&cli_cmd_device, "stats: needs at least one image");
	struct cli_mount m = { .cmd = &cli_cmd_device };
	int rc;
	if (reset) {
		rc = cli_mount(&cli_cmd_device, imgs, nimg, &m);
	} else {
		struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
		rc = cli_open_fs(&cli_cmd_device, imgs, nimg, &oo, &m.vol, &m.fs);
	}
	if (rc)
		return rc;
	struct ref_dev_stats st[SIM_MAX_DISKS];
	size_t n;
	ref_dev_stats(m.fs, st, SIM_MAX_DISKS, &n);
	static const char *const names[BTRFS_DEV_STAT_VALUES_MAX] = {
		"write_io_errs   ", "read_io_errs    ", "flush_io_errs   ", "corruption_errs ",
		"generation_errs ",
	};
	bool any = false;
	/* In devid order, as btrfs-progs prints them. */
	for (uint64_t next = 0;;) {
		size_t at = n;
		for (size_t i = 0; i < n; i++)
			if (st[i].devid >= next && (at == n || st[i].devid < st[at].devid))
				at = i;
		if (at == n)
			break;
		const char *name = st[at].disk >= 0 && st[at].disk < nimg ? imgs[st[at].disk] : "?";
		for (int v = 0; v < BTRFS_DEV_STAT_VALUES_MAX; v++) {
			printf("[%s].%s %llu\n", name, names[v], (unsigned long long)st[at].values[v]);
			any |= st[at].values[v] != 0;
		}
		next = st[at].devid + 1;
	}
	if (reset) {
		int r = ref_dev_stats_reset(m.fs);
		if (r)
			return cli_op_fail(&m, "stats", r);
		rc = cli_umount(&m);
	} else {
		ref_close(m.fs);
		sim_volume_close(m.vol);
	}
	return rc ? rc : check && any ? 64 : 0;
}

static int cmd_device(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error(&cli_cmd_device, "needs a COMMAND");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return cli_help(&cli_cmd_device);
	if (!strcmp(argv[1], "stats"))
		return stats(argc - 1, argv + 1);
	return cli_usage_error(&cli_cmd_device, "unknown command '%s'", argv[1]);
}

const struct cli_cmd cli_cmd_device = {
	.name = "device",
	.summary = "per-device error counters (device stats)",
	.usage = usage_text,
	.run = cmd_device,
};
