/* image.c - opening image files as a read-only sim volume, and the file system on it. */
#include "cli/image.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int cli_open_volume(const struct cli_cmd *cmd, char **paths, int n, bool writable,
		    sim_volume **vol)
{
	return cli_open_volume_seeded(cmd, paths, n, writable, 0, vol);
}

int cli_open_volume_seeded(const struct cli_cmd *cmd, char **paths, int n, bool writable,
			   uint64_t seed, sim_volume **vol)
{
	struct sim_volume_config cfg;
	if (n < 1)
		return cli_usage_error(cmd, "no image given");
	if (n > SIM_MAX_DISKS)
		return cli_usage_error(cmd, "at most %d images, not %d", SIM_MAX_DISKS, n);
	sim_config_init(&cfg, (unsigned)n, 0, seed);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	for (int i = 0; i < n; i++) {
		struct stat st;
		if (stat(paths[i], &st))
			return cli_fail(cmd, "%s: %s", paths[i], strerror(errno));
		cfg.disk[i].image_path = paths[i];
		cfg.disk[i].size = 0; /* the file's size */
		/* The largest sector that divides the image. */
		cfg.disk[i].sector_size = st.st_size % 4096 ? 512 : 4096;
		cfg.disk[i].read_only = !writable;
	}
	char err[256];
	if (sim_volume_open(&cfg, vol, err, sizeof(err)))
		return cli_fail(cmd, "%s", err);
	return 0;
}

int cli_open_fs(const struct cli_cmd *cmd, char **paths, int n, const struct ref_open_opts *opts,
		sim_volume **vol, ref_fs **fs)
{
	int rc = cli_open_volume(cmd, paths, n, false, vol);
	if (rc)
		return rc;
	/* A log tree is replayed as the kernel's mount would, in memory: the
	 * images stay as they are. */
	struct ref_open_opts o = opts ? *opts : (struct ref_open_opts){ .super_mirror = -1 };
	o.replay_in_memory = true;
	if (!o.clock_ns) { /* what a replay stamps "now" is now, as the kernel's */
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		o.clock_ns = (uint64_t)now.tv_sec * UINT64_C(1000000000) + (uint64_t)now.tv_nsec;
	}
	char err[256];
	if (ref_open(*vol, &o, fs, err, sizeof(err))) {
		sim_volume_close(*vol);
		*vol = NULL;
		return cli_fail_images(cmd, paths, n, err);
	}
	struct ref_log_outcome lo;
	ref_log_outcome(*fs, &lo);
	if (lo.present && !lo.replayed && cmd != &cli_cmd_dump_tree)
		fprintf(stderr,
			"btrsim %s: the log tree (fsyncs of generation %llu) was not replayed: %s generation %llu, the last commit%s\n",
			cmd->name, (unsigned long long)lo.log_generation,
			cmd == &cli_cmd_check ? "checked as it is on disk, with" : "showing",
			(unsigned long long)lo.log_generation - 1,
			cmd == &cli_cmd_check ? " (--replay checks the replayed state)" : "");
	return 0;
}

int cli_fail_images(const struct cli_cmd *cmd, char **paths, int n, const char *msg)
{
	if (n == 1)
		return cli_fail(cmd, "%s: %s", paths[0], msg);
	char list[1024] = "";
	size_t len = 0;
	for (int i = 0; i < n && len < sizeof(list) - 1; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%sdisk %d is %s",
					i ? ", " : "", i, paths[i]);
	return cli_fail(cmd, "%s (%s)", msg, list);
}

int cli_parse_open_opts(const struct cli_cmd *cmd, int argc, char **argv, struct ref_open_opts *oo)
{
	static const struct option opts[] = {
		{ "degraded", no_argument, NULL, 'D' },
		{ "usebackuproot", no_argument, NULL, 'U' },
		{ "nologreplay", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	*oo = (struct ref_open_opts){ .super_mirror = -1, .log = stderr };
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'D': oo->degraded = true; break;
		case 'U': oo->usebackuproot = true; break;
		case 'N': oo->nologreplay = true; break;
		case 'h': return cli_help(cmd), -1;
		default: return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	return 0;
}

int cli_resolve(const struct cli_cmd *cmd, ref_fs *fs, const char *path, struct ref_ino *ino,
		struct ref_stat *st)
{
	struct ref_ino top;
	if (ref_subvol_root(fs, BTRFS_FS_TREE_OBJECTID, &top) || ref_resolve(fs, &top, path, ino) ||
	    ref_stat(fs, ino, st))
		return cli_fail(cmd, "%s: %s", path, ref_error(fs));
	return 0;
}

/* How many devices the file system on `img` has (its superblock's count),
 * or 0 when no copy of the superblock is valid.  -1 after failing to open. */
int cli_volume_devices(const struct cli_cmd *cmd, char *img, int *rc)
{
	sim_volume *vol;
	if ((*rc = cli_open_volume(cmd, &img, 1, false, &vol)))
		return -1;
	struct btrfs_super_disk sb;
	bool valid = false;
	int n = 0;
	for (int mirror = 0; mirror < 3 && !valid; mirror++)
		if (ref_read_super(vol, 0, mirror, &sb, &valid) == 0 && valid) {
			uint64_t d = le64toh(sb.num_devices);
			n = d >= 1 && d <= SIM_MAX_DISKS ? (int)d : 0;
		}
	sim_volume_close(vol);
	return n;
}
