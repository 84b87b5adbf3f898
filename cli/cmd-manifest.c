/*
 * cmd-manifest.c - `btrsim manifest`: a canonical line-per-object description
 * of a file-system tree, from an image (ref/'s read API, traces/manifest_ref.c)
 * or from a host directory (POSIX calls, traces/manifest_host.c), both formatted by
 * traces/manifest.c so that `diff` of the two shows where the kernel's view
 * and ref's view differ.
 */
#include "cli/image.h"
#include "cli/cli.h"
#include "traces/manifest.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage_text[] =
	"usage: btrsim manifest [options] IMG...\n"
	"       btrsim manifest --host DIR [--ino] [--times]\n"
	"\n"
	"Describe every object of a tree, one line each, in a canonical form: the\n"
	"file system on the images (the disks of one volume, any order) as btrsim\n"
	"reads it, or with --host a directory of the host (such as a kernel-mounted\n"
	"btrfs) as the kernel shows it.  Both come out of the same formatting code,\n"
	"so equal outputs mean equal trees.\n"
	"\n"
	"  -s, --subvol PATH|ID  start at this subvolume (default: the top level, 5)\n"
	"      --host DIR        describe the host directory DIR instead of images\n"
	"      --ino             add each object's inode number\n"
	"      --times           add each object's mtime\n"
	"      --no-times        no mtime (the default)\n"
	"      --degraded        open with devices missing\n"
	"      --usebackuproot   open from a backup root if the root tree is unreadable\n"
	"      --nologreplay     show the last commit, not what the log tree adds\n"
	"  -h, --help            show this help\n"
	"\n"
	"Each line, fields separated by one space:\n"
	"  PATH TYPE PERM UID GID NLINK SIZE CONTENT [i:INO] [m:MTIME] [x:NAME=VALUE]...\n"
	"  PATH     '/' for the root, then '/a', '/a/b', ...: each name escaped (every\n"
	"           byte below 0x21 or above 0x7e, '\\' and '/' as \\xHH)\n"
	"  TYPE     f d l c b p s (regular, directory, symlink, char and block\n"
	"           device, fifo, socket; ? for anything else)\n"
	"  PERM     mode & 07777 in octal\n"
	"  NLINK    the link count as stat reports it (btrfs: 1 for directories)\n"
	"  SIZE     the size as stat reports it (btrfs directories: twice the\n"
	"           length of their names)\n"
	"  CONTENT  f: sha256 (hex) over the file's 4 KiB blocks that are not all\n"
	"           zeros, each after its offset (64-bit little-endian), then the\n"
	"           size: holes and written zeros hash alike; l: '-> TARGET', the target escaped\n"
	"           as names are but for '/'; c, b: MAJOR,MINOR; others: '-'\n"
	"  i:INO    with --ino: the inode number\n"
	"  m:MTIME  with --times: seconds.nanoseconds (9 digits) since the epoch\n"
	"  x:...    every xattr, sorted: its name escaped as names are but with '='\n"
	"           instead of '/', its value in hex (nothing after '=' when empty)\n"
	"Lines are sorted bytewise by escaped PATH (LC_ALL=C sort leaves them as\n"
	"they are).  Hard links appear once per name.  Subvolumes met on the way are\n"
	"directories like any other and are descended into (on the host: where\n"
	"st_dev changes to another subvolume of the same btrfs, by fsid); the mount\n"
	"point of any other file system is listed, but not what is below it.\n"
	"\n"
	"Exit status: 0; 1 when anything could not be read (one line on stderr,\n"
	"nothing on stdout); 2 for bad usage.\n";

const struct cli_cmd cli_cmd_manifest;

/* The root of the subvolume named by PATH or ID. */
static int find_start(ref_fs *fs, const char *subvol, struct ref_ino *start)
{
	struct ref_ino top;
	uint64_t id;
	if (ref_subvol_root(fs, BTRFS_FS_TREE_OBJECTID, &top))
		return cli_fail(&cli_cmd_manifest, "%s", ref_error(fs));
	if (!subvol) {
		*start = top;
		return 0;
	}
	if (subvol[0] != '/' && cli_parse_u64(subvol, &id, 0) == 0) {
		if (ref_subvol_root(fs, id, start) || ref_stat(fs, start, &(struct ref_stat){ 0 }))
			return cli_fail(&cli_cmd_manifest, "subvolume %s: %s", subvol, ref_error(fs));
		return 0;
	}
	if (ref_resolve(fs, &top, subvol, start))
		return cli_fail(&cli_cmd_manifest, "subvolume %s: %s", subvol, ref_error(fs));
	if (start->ino != BTRFS_FIRST_FREE_OBJECTID)
		return cli_fail(&cli_cmd_manifest, "%s is not a subvolume", subvol);
	return 0;
}

static int walk_images(struct manifest *m, char **images, int n, const struct ref_open_opts *oo,
		       const char *subvol)
{
	sim_volume *vol;
	ref_fs *fs;
	int rc = cli_open_fs(&cli_cmd_manifest, images, n, oo, &vol, &fs);
	if (rc)
		return rc;
	struct ref_ino start;
	char err[1024];
	if (!(rc = find_start(fs, subvol, &start)) && mf_walk_ref(m, fs, &start, err, sizeof(err)))
		rc = cli_fail(&cli_cmd_manifest, "%s", err);
	ref_close(fs);
	sim_volume_close(vol);
	return rc;
}

static int cmd_manifest(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "subvol", required_argument, NULL, 's' }, { "host", required_argument, NULL, 'H' },
		{ "ino", no_argument, NULL, 'i' },          { "times", no_argument, NULL, 't' },
		{ "no-times", no_argument, NULL, 'T' },     { "degraded", no_argument, NULL, 'D' },
		{ "usebackuproot", no_argument, NULL, 'U' },
		{ "nologreplay", no_argument, NULL, 'N' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ref_open_opts oo = { .super_mirror = -1, .log = stderr };
	struct manifest m = { 0 };
	const char *subvol = NULL, *host = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': subvol = optarg; break;
		case 'H': host = optarg; break;
		case 'i': m.ino = true; break;
		case 't': m.times = true; break;
		case 'T': m.times = false; break;
		case 'D': oo.degraded = true; break;
		case 'U': oo.usebackuproot = true; break;
		case 'N': oo.nologreplay = true; break;
		case 'h': return cli_help(&cli_cmd_manifest);
		case ':':
			return cli_usage_error(&cli_cmd_manifest, "option '%s' needs a value",
					       argv[optind - 1]);
		default:
			return cli_usage_error(&cli_cmd_manifest, "unknown option '%s'",
					       argv[optind - 1]);
		}
	}
	int rc;
	if (host) {
		if (optind < argc)
			return cli_usage_error(&cli_cmd_manifest,
					       "--host takes no image, not '%s'", argv[optind]);
		if (subvol || oo.degraded || oo.usebackuproot || oo.nologreplay)
			return cli_usage_error(&cli_cmd_manifest, "--%s is for images, not --host",
					       subvol		 ? "subvol"
					       : oo.degraded	 ? "degraded"
					       : oo.usebackuproot ? "usebackuproot"
								 : "nologreplay");
		if (!*host)
			return cli_usage_error(&cli_cmd_manifest, "--host needs a directory");
		char err[4200];
		rc = mf_walk_host(&m, host, NULL, err, sizeof(err))
			     ? cli_fail(&cli_cmd_manifest, "%s", err) : 0;
	} else {
		if (optind >= argc)
			return cli_usage_error(&cli_cmd_manifest, "needs at least one image, or --host DIR");
		rc = walk_images(&m, argv + optind, argc - optind, &oo, subvol);
	}
	if (!rc) {
		int r = mf_print(&m, stdout);
		if (r)
			rc = cli_fail(&cli_cmd_manifest, "writing the manifest: %s", strerror(-r));
	}
	mf_free(&m);
	return rc;
}

const struct cli_cmd cli_cmd_manifest = {
	.name = "manifest",
	.summary = "a canonical listing of a tree (image or host directory), for diff",
	.usage = usage_text,
	.run = cmd_manifest,
};
