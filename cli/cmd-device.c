/*
 * cmd-device.c - `btrsim device stats`: the per-device error counters kept
 * in the dev tree, in the layout of `btrfs device stats` (btrfs-progs 6.2),
 * with its -z (reset) and -c (exit 64 when any counter is not zero); and
 * `btrsim device replace`: a device rebuilt onto a new image (btrfs replace
 * start -B); `btrsim device add`: a new image joins as a device; `btrsim
 * device remove`: a device's chunks moved to the others and it leaves.
 */
#include "cli/fsops.h"
#include "cli/image.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: btrsim device stats [-z] [-c] IMG...\n"
	"       btrsim device replace [-r] [-f] SRC TARGET IMG...\n"
	"       btrsim device add [-f] NEW IMG...\n"
	"       btrsim device remove DEV IMG...\n"
	"\n"
	"The error counters of each device of the file system on the images, as\n"
	"'btrfs device stats' prints them: write, read and flush errors of requests,\n"
	"corruption (checksum) and generation errors met by reads and scrubs.  They\n"
	"are kept in the dev tree and survive a remount.\n"
	"\n"
	"  -z, --reset   print the counters, then set them to 0 (commits)\n"
	"  -c, --check   exit 64 when any counter is not 0\n"
	"\n"
	"replace rebuilds device SRC (its devid, or its image among IMG...; it may be\n"
	"missing) onto the image TARGET, which takes its place (its devid and device\n"
	"uuid), as 'btrfs replace start -B': every allocated block with a copy on SRC\n"
	"is copied from a copy that verifies, RAID5/6 columns rebuilt from parity.\n"
	"TARGET is created as large as the largest IMG when it does not exist; it\n"
	"must be at least SRC's size, and hold no btrfs file system (-f wipes one).\n"
	"From then on the file system is IMG... with TARGET instead of SRC; SRC's\n"
	"superblocks are wiped.\n"
	"\n"
	"  -r            read SRC only where no other copy is good\n"
	"  -f            overwrite a file system on TARGET (add: on NEW)\n"
	"  -h, --help    show this help\n"
	"\n"
	"add makes the image NEW a new device of the file system on IMG... (the next\n"
	"devid), as 'btrfs device add': NEW is created as large as the largest IMG\n"
	"when it does not exist, and must hold at least 256 MiB and no btrfs file\n"
	"system (-f wipes one).  New chunks may go there from then on; existing ones\n"
	"stay until a balance moves them ('btrsim balance').\n"
	"\n"
	"remove takes device DEV (its devid, its image among IMG..., or 'missing' for\n"
	"the device a degraded volume lacks) out of the file system, as 'btrfs device\n"
	"remove': every chunk with a stripe on it is relocated to the other devices\n"
	"(in the same profile), then its items go and its superblocks are wiped.  The\n"
	"kernel's limits hold: not below a profile's fewest devices, not the last one.\n"
	"\n"
	"Exit status: 0; stats: 64 with -c when an error was counted; replace: 3\n"
	"when bytes no copy held correctly were copied as they were; 1 when the file\n"
	"system cannot be opened or the operation fails, 2 bad usage.\n";

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

/* TARGET ready as a spare: created, or wiped with -f. */
static int prepare_target(const char *target, bool force, char **imgs, int nimg)
{
	struct stat st;
	if (stat(target, &st)) {
		off_t size = 0;
		for (int i = 0; i < nimg; i++)
			if (!stat(imgs[i], &st) && st.st_size > size)
				size = st.st_size;
		int fd = open(target, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 || ftruncate(fd, size)) {
			int e = errno;
			if (fd >= 0)
				close(fd);
			return cli_fail(&cli_cmd_device, "replace: %s: %s", target, strerror(e));
		}
		close(fd);
		return 0;
	}
	for (int i = 0; i < nimg; i++)
		if (!strcmp(imgs[i], target))
			return cli_usage_error(&cli_cmd_device, "replace: TARGET %s is one of the images", target);
	/* A btrfs magic at any superblock copy: refused unless -f wipes it. */
	int fd = open(target, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return cli_fail(&cli_cmd_device, "replace: %s: %s", target, strerror(errno));
	int rc = 0;
	for (int m = 0; m < BTRFS_SUPER_MIRRORS && !rc; m++) {
		uint64_t off = btrfs_super_offset(m) + offsetof(struct btrfs_super_disk, magic), magic = 0;
		if (pread(fd, &magic, sizeof(magic), (off_t)off) != (ssize_t)sizeof(magic) ||
		    le64toh(magic) != BTRFS_MAGIC_VALUE)
			continue;
		if (!force) {
			rc = cli_fail(&cli_cmd_device, "replace: %s holds a btrfs file system; -f to overwrite it",
				      target);
			break;
		}
		uint8_t zero[BTRFS_SUPER_SIZE] = { 0 };
		if (pwrite(fd, zero, sizeof(zero), (off_t)btrfs_super_offset(m)) != (ssize_t)sizeof(zero))
			rc = cli_fail(&cli_cmd_device, "replace: %s: %s", target, strerror(errno));
	}
	close(fd);
	return rc;
}

/* The volume of imgs[0..nimg) and `extra` (a spare), mounted degraded with
 * spares, for replace and add. */
static int mount_with_spare(char **imgs, int nimg, const char *extra, struct cli_mount *m)
{
	char *all[SIM_MAX_DISKS];
	for (int i = 0; i < nimg; i++)
		all[i] = imgs[i];
	all[nimg] = (char *)extra;
	*m = (struct cli_mount){ .cmd = &cli_cmd_device };
	int rc = cli_open_volume(&cli_cmd_device, all, nimg + 1, true, &m->vol);
	if (rc)
		return rc;
	struct ref_mount_opts mo = { .open = { .super_mirror = -1, .log = stderr, .degraded = true,
					       .spares = true } };
	cli_clock_now(&mo);
	char err[256], es[96];
	int r = ref_mount(m->vol, &mo, &m->fs, err, sizeof(err));
	if (r) {
		sim_volume_close(m->vol);
		char msg[400];
		snprintf(msg, sizeof(msg), "%s: %s", cli_errno_str(r, es, sizeof(es)), err);
		return cli_fail_images(&cli_cmd_device, all, nimg + 1, msg);
	}
	return 0;
}

static int add(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool force = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': force = true; break;
		case 'h': return cli_help(&cli_cmd_device);
		default:
			return cli_usage_error(&cli_cmd_device, "add: unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind < 2)
		return cli_usage_error(&cli_cmd_device, "add: needs NEW and at least one image");
	const char *newimg = argv[optind];
	char **imgs = argv + optind + 1;
	int nimg = argc - optind - 1;
	if (nimg >= SIM_MAX_DISKS)
		return cli_usage_error(&cli_cmd_device, "add: at most %d images", SIM_MAX_DISKS - 1);
	int rc = prepare_target(newimg, force, imgs, nimg);
	struct cli_mount m;
	if (rc || (rc = mount_with_spare(imgs, nimg, newimg, &m)))
		return rc;
	uint64_t devid;
	int r = ref_device_add(m.fs, nimg, &devid);
	if (r)
		return cli_op_fail(&m, "add", r);
	printf("added %s as devid %llu\n", newimg, (unsigned long long)devid);
	return cli_umount(&m);
}

static int replace(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool avoid = false, force = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "rfh", opts, NULL)) != -1) {
		switch (c) {
		case 'r': avoid = true; break;
		case 'f': force = true; break;
		case 'h': return cli_help(&cli_cmd_device);
		default:
			return cli_usage_error(&cli_cmd_device, "replace: unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind < 3)
		return cli_usage_error(&cli_cmd_device, "replace: needs SRC, TARGET and at least one image");
	const char *src = argv[optind], *target = argv[optind + 1];
	char **imgs = argv + optind + 2;
	int nimg = argc - optind - 2;
	if (nimg >= SIM_MAX_DISKS)
		return cli_usage_error(&cli_cmd_device, "replace: at most %d images", SIM_MAX_DISKS - 1);
	int src_disk = -1;
	uint64_t devid = 0;
	for (int i = 0; i < nimg; i++)
		if (!strcmp(imgs[i], src))
			src_disk = i;
	if (src_disk < 0 && cli_parse_u64(src, &devid, 0))
		return cli_usage_error(&cli_cmd_device, "replace: SRC '%s' is neither a devid nor one of the images",
				       src);
	int rc = prepare_target(target, force, imgs, nimg);
	if (rc)
		return rc;
	struct cli_mount m;
	if ((rc = mount_with_spare(imgs, nimg, target, &m)))
		return rc;
	int r;
	if (src_disk >= 0) { /* the devid of SRC's image */
		struct ref_dev_stats st[SIM_MAX_DISKS];
		size_t n;
		ref_dev_stats(m.fs, st, SIM_MAX_DISKS, &n);
		for (size_t i = 0; i < n; i++)
			if (st[i].disk == src_disk)
				devid = st[i].devid;
		if (!devid) {
			cli_report(&m, "replace", EINVAL, "SRC's image is not a device of the file system");
			return cli_abort(&m);
		}
	}
	struct ref_replace_stats rs;
	if ((r = ref_device_replace(m.fs, devid, nimg, avoid, &rs)))
		return cli_op_fail(&m, "replace", r);
	printf("replaced devid %llu with %s: %llu bytes copied (%llu tree extents, %llu data extents)",
	       (unsigned long long)devid, target, (unsigned long long)rs.bytes_copied,
	       (unsigned long long)rs.tree_extents, (unsigned long long)rs.data_extents);
	if (rs.uncorrectable)
		printf(", %llu bytes uncorrectable", (unsigned long long)rs.uncorrectable);
	printf("\n");
	rc = cli_umount(&m);
	return rc ? rc : rs.uncorrectable ? 3 : 0;
}

static int remove_dev(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 'h')
			return cli_help(&cli_cmd_device);
		return cli_usage_error(&cli_cmd_device, "remove: unknown option '%s'", argv[optind - 1]);
	}
	if (argc - optind < 2)
		return cli_usage_error(&cli_cmd_device, "remove: needs DEV and at least one image");
	const char *dev = argv[optind];
	char **imgs = argv + optind + 1;
	int nimg = argc - optind - 1, disk = -1;
	uint64_t devid = 0;
	bool missing = !strcmp(dev, "missing");
	for (int i = 0; i < nimg; i++)
		if (!strcmp(imgs[i], dev))
			disk = i;
	if (!missing && disk < 0 && cli_parse_u64(dev, &devid, 0))
		return cli_usage_error(&cli_cmd_device,
				       "remove: DEV '%s' is neither a devid, one of the images, nor 'missing'", dev);
	struct cli_mount m;
	int rc = cli_mount_degraded(&cli_cmd_device, imgs, nimg, true, &m);
	if (rc)
		return rc;
	struct ref_dev_stats st[SIM_MAX_DISKS];
	size_t n;
	ref_dev_stats(m.fs, st, SIM_MAX_DISKS, &n);
	for (size_t i = 0; i < n && disk >= 0; i++)
		if (st[i].disk == disk)
			devid = st[i].devid;
	if (!devid && !missing) {
		cli_report(&m, "remove", EINVAL, "DEV's image is not a device of the file system");
		return cli_abort(&m);
	}
	struct ref_balance_stats bs;
	int r = ref_device_remove(m.fs, &devid, &bs);
	if (r)
		return cli_op_fail(&m, "remove", r);
	printf("removed devid %llu: %llu chunks relocated\n", (unsigned long long)devid,
	       (unsigned long long)bs.relocated);
	return cli_umount(&m);
}

static int cmd_device(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error(&cli_cmd_device, "needs a COMMAND");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return cli_help(&cli_cmd_device);
	if (!strcmp(argv[1], "stats"))
		return stats(argc - 1, argv + 1);
	if (!strcmp(argv[1], "replace"))
		return replace(argc - 1, argv + 1);
	if (!strcmp(argv[1], "add"))
		return add(argc - 1, argv + 1);
	if (!strcmp(argv[1], "remove"))
		return remove_dev(argc - 1, argv + 1);
	return cli_usage_error(&cli_cmd_device, "unknown command '%s'", argv[1]);
}

const struct cli_cmd cli_cmd_device = {
	.name = "device",
	.summary = "per-device error counters; add, remove and replace devices",
	.usage = usage_text,
	.run = cmd_device,
};
