/*
 * cmd-mount.c - `btrsim mount`: the file system on images served through
 * FUSE (traces/fmount.h), so that ordinary programs run on ref; unmounting
 * (fusermount3 -u, umount, or a signal) commits and closes the images.
 */
#include "cli/fsops.h"
#include "cli/image.h"
#include "traces/fmount.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: btrsim mount [-f] [-d] [-o OPTIONS] IMG... MOUNTPOINT\n"
	"\n"
	"Mount the Btrfs on the images (one per device) at MOUNTPOINT through FUSE,\n"
	"as the kernel's btrfs would show it: every operation of ref (create, mkdir,\n"
	"mknod, symlink, link, unlink, rmdir, rename with its flags, read, write,\n"
	"truncate, fallocate, fsync and fdatasync through the fsync log tree,\n"
	"statfs, xattrs and ACLs, chmod, chown, utimens, readdir with btrfs's\n"
	"offsets, SEEK_DATA and SEEK_HOLE) with the kernel's errnos.  Unmount with\n"
	"'fusermount3 -u MOUNTPOINT' or 'umount MOUNTPOINT' (or SIGINT / SIGTERM):\n"
	"the transaction is committed and the images closed when btrsim exits;\n"
	"what fsync returned for is durable in the images at once.\n"
	"\n"
	"Without -f, btrsim goes to the background once the mount is ready; a\n"
	"script that reads the images after the unmount waits for that process\n"
	"(run it with -f and wait for it).\n"
	"\n"
	"  -o OPTIONS     comma-separated mount options, as the kernel's btrfs:\n"
	"                 ro, rw, degraded, nologreplay (with ro), notreelog,\n"
	"                 usebackuproot, compress[=ALG[:LEVEL]], compress-force[=...],\n"
	"                 subvol=PATH, subvolid=ID; and FUSE's allow_other\n"
	"  -f             stay in the foreground\n"
	"  -d             print every FUSE request (implies -f)\n"
	"  -h, --help     show this help\n"
	"\n"
	"Differences from the kernel's btrfs: FUSE gives the mount one st_dev, so\n"
	"inodes of subvolumes other than the mounted one show their subvolume's\n"
	"id above bit 40 in st_ino; a directory removed while open is gone at once.\n"
	"\n"
	"Exit status: 0 after a clean unmount, 1 when the mount failed or the\n"
	"final commit did, 2 for bad usage.\n";

const struct cli_cmd cli_cmd_mount;

/* One btrsim mount per image: an exclusive lock (shared when ro). */
static int lock_images(char **imgs, int n, bool ro, int *fds)
{
	for (int i = 0; i < n; i++) {
		fds[i] = open(imgs[i], O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0)
			return cli_fail(&cli_cmd_mount, "%s: %s", imgs[i], strerror(errno));
		if (flock(fds[i], (ro ? LOCK_SH : LOCK_EX) | LOCK_NB))
			return cli_fail(&cli_cmd_mount, "%s: in use by another btrsim mount", imgs[i]);
	}
	return 0;
}

static int serve(char **imgs, int nimg, const char *mnt, const struct fmount_opts *o, bool fg)
{
	sim_volume *vol;
	ref_fs *fs;
	int rc = cli_open_volume(&cli_cmd_mount, imgs, nimg, !o->ro, &vol);
	if (rc)
		return rc;
	struct ref_mount_opts mo = { .open = { .super_mirror = -1, .log = stderr } };
	fmount_mount_opts(o, &mo);
	char err[512], es[96], msg[700];
	int r;
	if (o->ro) {
		mo.open.replay_in_memory = true; /* the images stay as they are */
		r = ref_open(vol, &mo.open, &fs, err, sizeof(err));
	} else {
		cli_clock_now(&mo);
		r = ref_mount(vol, &mo, &fs, err, sizeof(err));
	}
	if (r) {
		sim_volume_close(vol);
		snprintf(msg, sizeof(msg), "%s: %s", cli_errno_str(r, es, sizeof(es)), err);
		return cli_fail_images(&cli_cmd_mount, imgs, nimg, msg);
	}
	fmount *fm;
	if ((r = fmount_new(fs, o, mnt, &fm, err, sizeof(err)))) {
		ref_close(fs);
		sim_volume_close(vol);
		return cli_fail(&cli_cmd_mount, "%s", err);
	}
	if (!fg) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0) {
			fmount_free(fm);
			ref_close(fs);
			sim_volume_close(vol);
			return cli_fail(&cli_cmd_mount, "fork: %s", strerror(errno));
		}
		if (pid > 0)
			_exit(0); /* mounted; the child serves */
		setsid();
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1); /* stderr stays: failures are reported there */
			close(null);
		}
	}
	fmount_signals(fm);
	r = fmount_loop(fm);
	uint64_t failures = fmount_failures(fm);
	fmount_free(fm);
	int ur = o->ro ? (ref_close(fs), 0) : ref_umount(fs);
	sim_volume_close(vol);
	if (ur)
		return cli_fail(&cli_cmd_mount, "the commit at unmount failed: %s; what fsync or an "
				"earlier commit made durable is in the images, nothing after",
				cli_errno_str(ur, es, sizeof(es)));
	if (r)
		return cli_fail(&cli_cmd_mount, "serving FUSE requests: %s", strerror(-r));
	if (failures)
		fprintf(stderr, "btrsim mount: %llu requests failed with errors (above)\n",
			(unsigned long long)failures);
	return 0;
}

static int cmd_mount(int argc, char **argv)
{
	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	struct fmount_opts o = { 0 };
	bool fg = false;
	char err[512];
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:fdh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (fmount_parse_opts(&o, optarg, err, sizeof(err))) {
				fmount_opts_free(&o);
				return cli_usage_error(&cli_cmd_mount, "%s", err);
			}
			break;
		case 'f':
			fg = true;
			break;
		case 'd':
			o.debug = fg = true;
			break;
		case 'h':
			fmount_opts_free(&o);
			return cli_help(&cli_cmd_mount);
		default:
			fmount_opts_free(&o);
			return cli_usage_error(&cli_cmd_mount, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind < 2) {
		fmount_opts_free(&o);
		return cli_usage_error(&cli_cmd_mount, "needs at least one image and a mount point");
	}
	int nimg = argc - optind - 1;
	int fds[64];
	if (nimg > 64) {
		fmount_opts_free(&o);
		return cli_usage_error(&cli_cmd_mount, "too many images");
	}
	for (int i = 0; i < nimg; i++)
		fds[i] = -1;
	int rc = lock_images(argv + optind, nimg, o.ro, fds);
	if (!rc)
		rc = serve(argv + optind, nimg, argv[argc - 1], &o, fg);
	for (int i = 0; i < nimg; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	fmount_opts_free(&o);
	return rc;
}

const struct cli_cmd cli_cmd_mount = {
	.name = "mount",
	.summary = "serve the file system on images through FUSE, for any program",
	.usage = usage_text,
	.run = cmd_mount,
};
