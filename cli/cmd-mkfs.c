/* cmd-mkfs.c - `btrsim mkfs`: make a new file system on one or more image files. */
#include "cli/image.h"
#include "ref/csum.h"
#include "ref/mkfs.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: btrsim mkfs [options] IMG [IMG...]\n"
	"\n"
	"Make a Btrfs file system on the image files IMG (created when missing, which\n"
	"needs --size), with mkfs.btrfs's default features: free-space tree, no-holes,\n"
	"skinny metadata, extended inode refs.  Several images make one multi-device\n"
	"file system, devids 1, 2, ... in the order given.\n"
	"\n"
	"  -d, --data PROFILE      single (default), dup, raid0, raid1, raid1c3, raid1c4,\n"
	"                          raid10, raid5 or raid6\n"
	"  -m, --metadata PROFILE  the same; dup (default on one image) or raid1 (default\n"
	"                          on several); the system chunk follows it\n"
	"      --csum TYPE         crc32c (default), xxhash, sha256 or blake2\n"
	"  -n, --nodesize SIZE     tree block size, 4k to 64k (default 16k)\n"
	"  -s, --sectorsize SIZE   4096 (the only one supported)\n"
	"  -L, --label LABEL       file system label\n"
	"      --size SIZE         bytes of each image to use (K, M, G, T suffixes)\n"
	"      --seed N            seed of the uuids (default: a fresh one, printed)\n"
	"      --time SECONDS      timestamp of the new inodes (default: now)\n"
	"  -f, --force             overwrite an existing file system\n"
	"  -h, --help              show this help\n";

const struct cli_cmd cli_cmd_mkfs;

#define PROFILE_NAMES "single, dup, raid0, raid1, raid1c3, raid1c4, raid10, raid5 or raid6"

static int parse_csum(const char *s, unsigned *out)
{
	static const char *const names[] = { "crc32c", "xxhash", "sha256", "blake2" };
	for (unsigned i = 0; i < 4; i++)
		if (!strcasecmp(s, names[i]) || (i == 1 && !strcasecmp(s, "xxhash64")) ||
		    (i == 3 && !strcasecmp(s, "blake2b"))) {
			*out = i;
			return 0;
		}
	return -1;
}

static void print_uuid(const uint8_t *u)
{
	printf("%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n", u[0], u[1], u[2],
	       u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* A failed mkfs leaves no image it created behind; returns rc. */
static int remove_created(char **imgs, int n, const bool *created, int rc)
{
	for (int i = 0; rc && i < n; i++)
		if (created[i] && unlink(imgs[i]))
			fprintf(stderr, "btrsim mkfs: cannot remove %s: %s\n", imgs[i], strerror(errno));
	return rc;
}

static int cmd_mkfs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' },     { "metadata", required_argument, NULL, 'm' },
		{ "csum", required_argument, NULL, 'C' },     { "nodesize", required_argument, NULL, 'n' },
		{ "sectorsize", required_argument, NULL, 's' }, { "label", required_argument, NULL, 'L' },
		{ "size", required_argument, NULL, 'S' },     { "seed", required_argument, NULL, 'E' },
		{ "time", required_argument, NULL, 'T' },     { "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },           { NULL, 0, NULL, 0 },
	};
	struct ref_mkfs_opts o;
	ref_mkfs_defaults(&o);
	bool force = false, have_seed = false, have_time = false, have_meta = false;
	uint64_t v;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "d:m:n:s:L:fh", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (ref_profile_parse(optarg, &o.data_profile))
				return cli_usage_error(&cli_cmd_mkfs, "data profile '%s': " PROFILE_NAMES,
						       optarg);
			break;
		case 'm':
			if (ref_profile_parse(optarg, &o.meta_profile))
				return cli_usage_error(&cli_cmd_mkfs, "metadata profile '%s': " PROFILE_NAMES,
						       optarg);
			have_meta = true;
			break;
		case 'C':
			if (parse_csum(optarg, &o.csum_type))
				return cli_usage_error(&cli_cmd_mkfs, "checksum '%s': crc32c, xxhash, sha256 or blake2",
						       optarg);
			break;
		case 'n':
		case 's':
			if (cli_parse_u64(optarg, &v, 1) || v > 65536)
				return cli_usage_error(&cli_cmd_mkfs, "bad size '%s'", optarg);
			*(c == 'n' ? &o.nodesize : &o.sectorsize) = (uint32_t)v;
			break;
		case 'L': o.label = optarg; break;
		case 'S':
			if (cli_parse_u64(optarg, &o.size, 1) || !o.size)
				return cli_usage_error(&cli_cmd_mkfs, "bad size '%s'", optarg);
			break;
		case 'E':
			if (cli_parse_u64(optarg, &o.seed, 0))
				return cli_usage_error(&cli_cmd_mkfs, "bad seed '%s'", optarg);
			have_seed = true;
			break;
		case 'T':
			if (cli_parse_u64(optarg, &o.time, 0))
				return cli_usage_error(&cli_cmd_mkfs, "bad time '%s'", optarg);
			have_time = true;
			break;
		case 'f': force = true; break;
		case 'h': return cli_help(&cli_cmd_mkfs);
		default: return cli_usage_error(&cli_cmd_mkfs, "unknown option '%s'", argv[optind - 1]);
		}
	}
	int nimg = argc - optind;
	if (nimg < 1)
		return cli_usage_error(&cli_cmd_mkfs, "needs an image");
	if (nimg > SIM_MAX_DISKS)
		return cli_usage_error(&cli_cmd_mkfs, "at most %d images, not %d", SIM_MAX_DISKS, nimg);
	char **imgs = argv + optind;
	for (int i = 0; i < nimg; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(imgs[i], imgs[j]))
				return cli_usage_error(&cli_cmd_mkfs, "%s is given twice", imgs[i]);
	if (nimg > 1 && !have_meta)
		o.meta_profile = BTRFS_BLOCK_GROUP_RAID1; /* mkfs.btrfs's default on several devices */
	bool created[SIM_MAX_DISKS] = { false };
	int rc = 0;
	for (int i = 0; i < nimg && !rc; i++) {
		struct stat st;
		if (!stat(imgs[i], &st))
			continue;
		if (errno != ENOENT) {
			rc = cli_fail(&cli_cmd_mkfs, "%s: %s", imgs[i], strerror(errno));
			break;
		}
		if (!o.size) {
			rc = cli_fail(&cli_cmd_mkfs, "%s does not exist: give --size to create it", imgs[i]);
			break;
		}
		int fd = open(imgs[i], O_WRONLY | O_CREAT | O_EXCL, 0644);
		created[i] = fd >= 0;
		if (fd < 0 || ftruncate(fd, (off_t)o.size) || close(fd))
			rc = cli_fail(&cli_cmd_mkfs, "cannot create %s: %s", imgs[i], strerror(errno));
	}
	if (rc)
		return remove_created(imgs, nimg, created, rc);
	if (!have_seed && getrandom(&o.seed, sizeof(o.seed), 0) != sizeof(o.seed))
		o.seed = (uint64_t)time(NULL);
	if (!have_time)
		o.time = (uint64_t)time(NULL);
	sim_volume *vol;
	rc = cli_open_volume(&cli_cmd_mkfs, imgs, nimg, true, &vol);
	if (rc)
		return remove_created(imgs, nimg, created, rc);
	for (int i = 0; i < nimg; i++) {
		struct btrfs_super_disk sb;
		bool valid;
		if (!force && ref_read_super(vol, (unsigned)i, 0, &sb, &valid) == 0 && valid) {
			sim_volume_close(vol);
			rc = cli_fail(&cli_cmd_mkfs,
				      "%s holds a btrfs file system already (use -f to overwrite)", imgs[i]);
			return remove_created(imgs, nimg, created, rc);
		}
	}
	uint8_t fsid[16];
	char err[256];
	if (ref_mkfs(vol, &o, fsid, err, sizeof(err))) {
		rc = nimg == 1 ? cli_fail(&cli_cmd_mkfs, "%s: %s", imgs[0], err)
			       : cli_fail(&cli_cmd_mkfs, "%s", err);
	} else {
		uint64_t total = 0;
		for (int i = 0; i < nimg; i++)
			total += o.size ? o.size : sim_disk_size(vol, (unsigned)i);
		printf("Label:              %s\nUUID:               ", o.label ? o.label : "(null)");
		print_uuid(fsid);
		printf("Node size:          %u\nSector size:        %u\n", o.nodesize, o.sectorsize);
		printf("Filesystem size:    %llu\n", (unsigned long long)total);
		const char *data = ref_profile_name(o.data_profile), *meta = ref_profile_name(o.meta_profile);
		printf("Block group profiles:\n  Data:             %s\n  Metadata:         %s\n"
		       "  System:           %s\n",
		       data, meta, meta);
		printf("Features:           extref, skinny-metadata, no-holes, free-space-tree%s\n",
		       (o.data_profile | o.meta_profile) &
				       (BTRFS_BLOCK_GROUP_RAID1C3 | BTRFS_BLOCK_GROUP_RAID1C4)
			       ? ", raid1c34"
			       : "");
		printf("Checksum:           %s\nSeed:               %llu (rerun with --seed %llu --time %llu)\n",
		       ref_csum_name(o.csum_type), (unsigned long long)o.seed,
		       (unsigned long long)o.seed, (unsigned long long)o.time);
		if (nimg > 1) {
			printf("Number of devices:  %d\nDevices:\n   ID  SIZE          PATH\n", nimg);
			for (int i = 0; i < nimg; i++)
				printf("  %3d  %-12llu  %s\n", i + 1,
				       (unsigned long long)(o.size ? o.size : sim_disk_size(vol, (unsigned)i)),
				       imgs[i]);
		}
	}
	sim_volume_close(vol);
	return remove_created(imgs, nimg, created, rc);
}

const struct cli_cmd cli_cmd_mkfs = {
	.name = "mkfs",
	.summary = "make a new file system on one or more image files",
	.usage = usage_text,
	.run = cmd_mkfs,
};
