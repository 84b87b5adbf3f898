/*
 * snapmix.h - the subvolume harnesses shared by test_snapshot.c and
 * test_qgroup.c:
 *
 * - a seeded random mix of writes, truncates, snapshots (read-write and
 *   read-only), deletions, cleaner runs and remounts over many subvolumes
 *   sharing deep trees, against a model of every file's bytes (sm_start,
 *   sm_step, sm_verify, sm_finish), with hooks around its commits;
 * - the crash states of snapshots, a deletion and every cleaner step
 *   (sm_crash_states), with hooks before the recorded part and on every
 *   crash state.
 *
 * The helpers assert with Criterion, so a failing helper fails its test.
 */
#ifndef BTRSIM_TESTS_UNIT_SNAPMIX_H
#define BTRSIM_TESTS_UNIT_SNAPMIX_H

#include "ref/vfs.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SM_NF 24              /* files per subvolume */
#define SM_MAXSV 40           /* subvolumes made in a run */
#define SM_FMAX (96 * 1024)   /* a file's largest size */

struct sm_file {
	uint8_t *data;
	size_t size;
};

struct sm_sub {
	bool live, ro;
	char path[32];
	struct sm_file f[SM_NF];
};

/* What one step did. */
enum sm_kind {
	SM_SKIPPED,  /* a dead subvolume drawn, or a write or truncate refused (read-only) */
	SM_NOTHING,  /* nothing drawn that applies */
	SM_WRITE,
	SM_TRUNCATE,
	SM_SNAPSHOT, /* these four commit before they return */
	SM_DELETE,
	SM_CLEANER,
	SM_REMOUNT,
};

struct sm_mix;
/* Called after every call that commits: the kind of step (SM_SNAPSHOT,
 * SM_DELETE, SM_CLEANER, SM_REMOUNT: the new mount). */
typedef void (*sm_commit_fn)(struct sm_mix *m, enum sm_kind kind);
/* Called before every unmount (the fs still mounted). */
typedef void (*sm_umount_fn)(struct sm_mix *m);

struct sm_mix {
	sim_volume *vol;
	ref_fs *fs;
	uint64_t seed;   /* the generator's state */
	int n;           /* subvolumes made so far (subs[0] is the top level) */
	struct sm_sub subs[SM_MAXSV];
	uint8_t *chunk;
	int last_sub;    /* the subvolume the last step drew */
	sm_commit_fn on_commit;
	sm_umount_fn before_umount;
	void *ctx;
	FILE *trace;     /* when set, each step is written there, one line */
};

/* xorshift64 */
uint64_t sm_rnd(uint64_t *s);
/* The path of file f of a subvolume. */
void sm_file_path(char *buf, size_t len, const struct sm_sub *m, int f);
/* Every live subvolume's files against the model. */
void sm_verify(ref_fs *fs, const struct sm_sub *subs, int n);

/* A fresh file system (512 MiB, 4 KiB nodes) with SM_NF empty files in the
 * top level; free with sm_free. */
struct sm_mix *sm_start(uint64_t seed);
/* One random operation. */
enum sm_kind sm_step(struct sm_mix *m);
/* Unmounts (before_umount first), checks with ref_check, mounts again
 * (on_commit(SM_REMOUNT) after). */
void sm_remount(struct sm_mix *m);
/* The end of a run: verified, remounted, verified, the cleaner run to the
 * end (on_commit(SM_CLEANER)), verified, unmounted (before_umount first),
 * checked by ref_check and btrfs check; then freed. */
void sm_finish(struct sm_mix *m);
/* Frees the model and closes the volume (the fs must be unmounted). */
void sm_free(struct sm_mix *m);

/*
 * Crash states: /sv (150 files of 3000 bytes) snapshotted, rewritten,
 * snapshotted read-only, rewritten and /snap1 deleted, then the cleaner run
 * to the end, with every write recorded; for cut points all through the log
 * a copy of the volume replays the log up to the cut and loses power.  Every
 * crash state opens, checks clean, and shows exactly the state of its last
 * commit; mounted again, the cleaner finishes and the result checks clean.
 */
struct sm_crash_hooks {
	/* Called once recording has started, before the first snapshot; may
	 * commit. */
	void (*first)(ref_fs *fs);
	/* Called on each crash state mounted (cleaned false), and again after
	 * its cleaner finished (cleaned true). */
	void (*state)(ref_fs *fs, size_t cut, bool cleaned);
};
void sm_crash_states(const struct sm_crash_hooks *hooks);

#endif
