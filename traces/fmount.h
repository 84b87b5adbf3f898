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
#include "traces/workload.h"

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
	/* btrsim record: each change appended here as a workload op (the
	 * mount must show the top level: paths are from it). */
	struct wl_workload *record;
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
/* A program to run in a mount (fmount_run): argv, or with shell a command
 * line for sh -c in argv[0]; its output (stdout and stderr) to out_fd (-1:
 * ours); a time limit in milliseconds (0: none). */
struct fmount_prog {
	char *const *argv;
	bool shell;
	int out_fd;
	unsigned timeout_ms;
};
struct fmount_exit {
	int status;         /* as waitpid gives it */
	bool timed_out;     /* killed at the time limit (with its process group) */
	uint64_t failures;  /* requests that failed with a file system's error */
	int gaps;           /* recording: fmount_record_gaps' answer, gap its line */
	char gap[160];
};
/* Mounts fs at mountpoint, serves it from a thread while the program runs
 * there (its working directory; stdin /dev/null; its own process group,
 * killed whole at the time limit and when it exits), then unmounts.  0
 * with *ex filled; -errno when the mount or the program could not start
 * (err says why: "cannot run CMD: No such file or directory"). */
int fmount_run(ref_fs *fs, const struct fmount_opts *o, const char *mountpoint,
	       const struct fmount_prog *prog, struct fmount_exit *ex, char *err, size_t errlen);

/* What recording left out: 0 nothing; 1 calls the language cannot say, or
 * -ENOMEM changes lost, with a line in buf. */
int fmount_record_gaps(const fmount *fm, char *buf, size_t len);

/* `btrsim record` (fmount_app.c): the program run in a FUSE mount of a
 * fresh file system made as explore makes its own (disk_size, nodesize,
 * seed: explore's), every change recorded into w; setup_dir (may be NULL)
 * copied in first with cp -a through the mount, then `sync` and `mark
 * setup`; then w replayed on another fresh file system, each op wanting the
 * result it gave.  0 with *res filled (the program may have failed: its
 * status), or -errno when the recording could not be made. */
struct app_record_opts {
	uint64_t disk_size;
	uint32_t nodesize;
	uint64_t seed;
	const char *setup_dir;
	char *const *argv;
	unsigned timeout_ms;
	const char *mountpoint; /* an empty directory for the mount */
};
struct app_record_result {
	int status;           /* the program's, as waitpid gives it */
	bool timed_out;
	size_t setup_ops;     /* ops of the setup, its sync and mark included */
	uint64_t failures;    /* requests that failed with a file system's error */
	int gaps;             /* fmount_record_gaps' answer, gap its line */
	char gap[160];
	size_t mismatches;    /* replayed ops whose result was not the recorded one */
	char mismatch[512];   /* the first */
};
int app_record(const struct app_record_opts *o, struct wl_workload *w,
	       struct app_record_result *res, char *err, size_t errlen);

#endif
