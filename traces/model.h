/*
 * model.h - the crash-consistency oracle's model of the POSIX state: a file
 * system namespace (directories, regular files, symlinks, hard links, modes,
 * owners, xattrs, file data) advanced by workload operations
 * (traces/workload.h) as Linux applies them on a local btrfs, and described
 * in the canonical form of `btrsim manifest` (cli/README.md,
 * traces/manifest.c), so that the oracle can compare what the model says with
 * what a file system shows after recovering from a crash.
 *
 * The model is independent of ref/ (its own code; it calls nothing of ref
 * but the send-stream decoder of ref/send.h, which a `receive` reads its
 * commands with, and shares only the manifest's line formatter,
 * traces/manifest.c, with the walker of ref's images): it stands for what POSIX and Linux promise, not
 * for how ref implements them.  Its content digest is computed on its own
 * (the tests compare it with the manifest's).  It
 * assumes the workload runs as root (CAP_CHOWN, CAP_FOWNER, CAP_FSETID),
 * with umask 0 and no ACLs, as wl_exec_host runs it (traces/README.md, "The
 * oracle's model", lists what is modelled and what is not).
 *
 * File data is never stored: a `write` is kept as an extent (offset, length,
 * seed), since its bytes are wl_content(seed, offset) and can be recomputed;
 * a write at 1 TiB costs what a write at 0 costs.  A `receive` writes the
 * bytes of its stream, which the model points into: a receive op must
 * outlive the models (and clones) it was applied to.
 *
 * Threads: one model must not be used by two threads at once; distinct
 * models (clones of one another included, which share inodes behind
 * atomic reference counts) may be used and freed concurrently.
 */
#ifndef BTRSIM_TRACES_MODEL_H
#define BTRSIM_TRACES_MODEL_H

#include "traces/workload.h"

#include <stddef.h>
#include <stdint.h>

struct model; /* opaque */

/* An empty file system: "/" a directory, mode 0755, uid 0, gid 0 (what
 * mkfs.btrfs makes).  NULL when out of memory. */
struct model *model_new(void);
/* Frees m and everything only it holds; NULL is allowed. */
void model_free(struct model *m);
/* A deep copy as far as anyone can tell (changing either leaves the other
 * as it was); cheap: inodes are shared copy-on-write, O(number of inodes).
 * NULL when out of memory. */
struct model *model_clone(const struct model *m);

/* The owner new objects get (the fsuid and fsgid of the process running the
 * workload); default 0, 0.  A set-gid parent directory still gives its gid. */
void model_set_owner(struct model *m, uint32_t uid, uint32_t gid);

/*
 * Applies op as Linux applies it on a local btrfs where the op gave `result`
 * on the real target: 0 for success, else the errno (positive or negative).
 * An op that failed changes nothing (and 0 is returned).  Returns
 *   0        applied (or nothing to apply);
 *   -EINVAL  the model cannot apply a successful op: the model and the target
 *            disagree (a path the model does not have, a name that exists,
 *            rmdir of a non-empty directory, ...); a one-line message in err
 *            (when errlen > 0), and the model is unchanged;
 *   -ENOMEM  out of memory; the model may be half changed: free it.
 */
int model_apply(struct model *m, const struct wl_op *op, int result, char *err, size_t errlen);

/* The subvolumes a `receive` op makes: DIR/NAME of each of its streams, in
 * order (unescaped absolute paths, malloc'd, as is the array).  0, -EINVAL
 * when op is no receive of well-formed streams, or -ENOMEM. */
int model_receive_subvols(const struct wl_op *op, char ***paths, size_t *n);

/*
 * The canonical description, in the format of `btrsim manifest` without
 * options (traces/manifest.c, mf_add): one line per name,
 *   PATH TYPE PERM UID GID NLINK SIZE CONTENT [x:NAME=HEX]...
 * sorted bytewise (strcmp) as manifest sorts them, each ending in '\n'.
 * Directories have NLINK 1 and SIZE twice the total length of their names
 * (btrfs); regular files the sha256 content digest of manifest_hash.c;
 * symlinks "-> TARGET".  Escapes as manifest's.  A malloc'd NUL-terminated
 * text, or NULL when out of memory.
 */
char *model_describe(const struct model *m);

/*
 * What the description above cannot show: which directories are the roots
 * of subvolumes, and which are a snapshot's stand-ins for the subvolumes
 * nested in its source (the kernel's inode 2).  One line each,
 *   PATH subvol rw|ro[ received]     PATH stand-in
 * (PATH escaped as in the description; the top level is not listed), sorted
 * bytewise, each ending in '\n'; "" when there is none.  The crash oracle
 * compares it with what the recovered file system shows (explore_judge.c).
 * A malloc'd text, or NULL when out of memory.
 */
char *model_describe_subvols(const struct model *m);

/* Sorts n lines (each ending in '\n') bytewise and joins them into one
 * malloc'd text (NULL when out of memory); the lines stay the caller's.  The
 * order of model_describe_subvols, for whoever builds the other side. */
char *model_lines_join(char **v, size_t n);

/* Every name of the object PATH leads to (a final symlink followed, as
 * open(2) does), as escaped manifest paths one per line, sorted: what an
 * fsync of PATH logs the names of.  NULL when PATH leads nowhere or out of
 * memory. */
char *model_names_of(const struct model *m, const char *path);

/*
 * Identities: every path of the description (escaped as there) with the
 * number of the object it names, sorted by strcmp of the path.  A number is
 * never reused within a model and its clones, so it tells whether two
 * states' paths name one object (the log oracle: the names an fsynced file
 * lost since the commit).  0 or -ENOMEM; free with model_inos_free.
 */
struct model_ino {
	char *path;
	uint32_t ino;
};
int model_inos(const struct model *m, struct model_ino **out, size_t *n);
void model_inos_free(struct model_ino *v, size_t n);
#define MODEL_NO_INO UINT32_MAX
/* The number path has in v (model_inos' array of n), or MODEL_NO_INO. */
uint32_t model_ino_find(const struct model_ino *v, size_t n, const char *path);
/* The number of the object PATH leads to (a final symlink followed, as
 * model_names_of), or MODEL_NO_INO when it leads nowhere. */
uint32_t model_ino_of(const struct model *m, const char *path);

#endif
