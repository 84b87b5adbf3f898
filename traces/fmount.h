/*
 * fmount.h - ref served as a file system through FUSE (libfuse3's low-level
 * API): `btrsim mount`, and the crash states a checker of `btrsim explore
 * --check` runs in.  Every call the kernel's FUSE sends becomes ref's
 * operation on the inode it names (ref_chdir and relative names), with the
 * errnos ref gives, which are the kernel's btrfs'; see traces/README.md,
 * "A FUSE mount of ref", for what a mount shows and where it differs from
 * the kernel's btrfs (one st_dev for every subvolume, ...).
 */
#ifndef BTRSIM_TRACES_FMOUNT_H
#define BTRSIM_TRACES_FMOUNT_H

#include "ref/vfs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The mount options, as `-o` spells them (fmount_parse_opts). */
struct fmount_opts {
	bool ro, degraded, nologreplay, notreelog, usebackuproot;
	uint8_t compress; /* REF_COMPRESS_*; 0 off */
	int8_t compress_level;
	bool compress_force;
	const char *subvol; /* subvol=PATH from the top level (NULL: subvolid or the default) */
	uint64_t subvolid;  /* subvolid=ID (0: subvol or the default) */
	bool allow_other;   /* other users may enter (FUSE's allow_other; needs root
			       or user_allow_other in /etc/fuse.conf) */
	bool debug;         /* FUSE's -d: every request printed */
	char *subvol_buf;   /* owned copy of subvol (fmount_opts_free) */
};

/* Parses one -o argument (comma-separated options) into o; 0, or -EINVAL
 * with the reason in err. */
int fmount_parse_opts(struct fmount_opts *o, const char *arg, char *err, size_t errlen);
void fmount_opts_free(struct fmount_opts *o);
/* The ref_open / ref_mount options the mount options ask for. */
void fmount_mount_opts(const struct fmount_opts *o, struct ref_mount_opts *mo);

typedef struct fmount fmount;

/* Mounts fs (opened by the caller: ref_mount, or ref_open for ro) at
 * mountpoint, showing the subvolume the options name or the default one.
 * Refuses a mount point that is not an empty-or-not directory we can enter
 * (ENOTDIR, ENOENT) or that is a mount point already (EBUSY). */
int fmount_new(ref_fs *fs, const struct fmount_opts *o, const char *mountpoint, fmount **out,
	       char *err, size_t errlen);
/* Serves requests until the file system is unmounted (fusermount3 -u,
 * umount) or a signal ends it (SIGINT, SIGTERM, SIGHUP when handlers are
 * installed: fmount_signals).  Single-threaded: ref is. */
int fmount_loop(fmount *fm);
/* Has SIGINT, SIGTERM and SIGHUP end fmount_loop. */
int fmount_signals(fmount *fm);
/* Unmounts when still mounted and frees (fs stays the caller's). */
void fmount_free(fmount *fm);
/* Requests that failed with an error other than the ordinary answers
 * (EIO, EUCLEAN, ENOMEM, ENOSPC, ...): each printed to stderr as it
 * happened. */
uint64_t fmount_failures(const fmount *fm);

#endif
