/*
 * fsops.h - what the commands that change a file system share (cmd-fsops.c,
 * cmd-put.c): the images mounted for writing, failures reported with the
 * errno's name, and the commit at the end.
 */
#ifndef BTRSIM_CLI_FSOPS_H
#define BTRSIM_CLI_FSOPS_H

#include "cli/image.h"
#include "ref/compress.h"
#include "ref/vfs.h"

struct cli_mount {
	const struct cli_cmd *cmd;
	sim_volume *vol;
	ref_fs *fs;
};

/* Opens imgs[0..n) as one volume for writing and mounts the file system on
 * it (timestamps from the current time).  Returns 0, or the exit status after
 * saying why (1; 2 for bad usage). */
int cli_mount(const struct cli_cmd *cmd, char **imgs, int n, struct cli_mount *m);
/* The mount's clock starts at the real time, to the nanosecond. */
void cli_clock_now(struct ref_mount_opts *mo);
/* The same, mounting degraded (devices missing) when asked. */
int cli_mount_degraded(const struct cli_cmd *cmd, char **imgs, int n, bool degraded,
		       struct cli_mount *m);

/* The mount options of the commands that write. */
struct cli_mount_opts {
	bool degraded;
	uint8_t compress; /* compress= / compress-force= (REF_COMPRESS_*; 0: off) */
	int8_t compress_level;
	bool compress_force;
};
int cli_mount_with(const struct cli_cmd *cmd, char **imgs, int n, const struct cli_mount_opts *o,
		   struct cli_mount *m);
/* --compress[=ALG[:LEVEL]] (force false) or --compress-force[=...] into o:
 * 0, or the exit status of a usage error (arg NULL: zlib). */
int cli_compress_arg(const struct cli_cmd *cmd, const char *arg, bool force,
		     struct cli_mount_opts *o);
/* Their lines in a command's help. */
#define CLI_COMPRESS_HELP                                                                     \
	"      --compress[=ALG[:LEVEL]]\n"                                                   \
	"                  compress new data as the kernel's -o compress=: zlib (the\n"     \
	"                  default, levels 1-9), lzo, zstd (levels -15..15), no\n"           \
	"      --compress-force[=ALG[:LEVEL]]\n"                                             \
	"                  the same without the heuristic, as -o compress-force=\n"

/* The subvolume whose root directory PATH is: 0, -EINVAL when PATH is not a
 * subvolume's root, or the lookup's errno. */
int cli_subvol_at(ref_fs *fs, const char *path, uint64_t *id);

/* "ENOENT (No such file or directory)" for err (positive or negative). */
const char *cli_errno_str(int err, char *buf, size_t len);

/* Prints "btrsim CMD: WHAT: ENAME (text): MSG" on stderr, MSG being
 * ref_error() when msg is NULL, and nothing after the errno when msg is "". */
void cli_report(const struct cli_mount *m, const char *what, int err, const char *msg);

/* Commits and unmounts: 0, or 1 after saying why the commit failed. */
int cli_umount(struct cli_mount *m);

/* After a failure already reported: commits the operations that completed
 * (a failed commit reported too), unmounts; returns 1. */
int cli_abort(struct cli_mount *m);

/* After a failed operation: cli_report(), then the commit of the operations
 * that completed (its own failure reported too).  Returns 1. */
int cli_op_fail(struct cli_mount *m, const char *what, int err);

/* The process's umask (read without changing it for good). */
unsigned cli_umask(void);

#endif
