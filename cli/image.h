/* image.h - image files on the command line, opened as a sim volume and a file system. */
#ifndef BTRSIM_CLI_IMAGE_H
#define BTRSIM_CLI_IMAGE_H

#include "cli/cli.h"
#include "ref/ref.h"

/* Opens paths[0..n) as the disks of one volume (read-only unless writable).
 * Returns 0, or the exit status after printing why (1, or 2 for usage). */
int cli_open_volume(const struct cli_cmd *cmd, char **paths, int n, bool writable,
		    sim_volume **vol);
/* The same with the volume's seed (its power-loss and fault choices). */
int cli_open_volume_seeded(const struct cli_cmd *cmd, char **paths, int n, bool writable,
			   uint64_t seed, sim_volume **vol);
/* The same, then ref_open on it. */
int cli_open_fs(const struct cli_cmd *cmd, char **paths, int n, const struct ref_open_opts *opts,
		sim_volume **vol, ref_fs **fs);
/* A failure to open the file system on paths[0..n): msg with the image named
 * (one image) or each disk index's image listed; returns 1. */
int cli_fail_images(const struct cli_cmd *cmd, char **paths, int n, const char *msg);
/* How many devices the file system on `img` has (its superblock's count),
 * or 0 when no copy of the superblock is valid; -1 after failing to open
 * (*rc the exit status).  Commands with several operands after the images
 * count them with it. */
int cli_volume_devices(const struct cli_cmd *cmd, char *img, int *rc);

/* Parses the options of commands that take only --degraded, --usebackuproot
 * (ref_open_opts.usebackuproot, the kernel's -o usebackuproot) and --help: 0 to go
 * on (optind at the first operand), -1 after printing the help, or the exit
 * status of a usage error. */
int cli_parse_open_opts(const struct cli_cmd *cmd, int argc, char **argv, struct ref_open_opts *oo);
/* PATH from the top-level subvolume, and its inode; 0, or 1 after saying why. */
int cli_resolve(const struct cli_cmd *cmd, ref_fs *fs, const char *path, struct ref_ino *ino,
		struct ref_stat *st);

#endif
