/*
 * replay.h - a recorded run (traces/store.h) again: re-executed and compared
 * with what was recorded, request by request; or one of its crash states
 * rebuilt from the stored IO log alone, as disk images.
 */
#ifndef BTRSIM_TRACES_REPLAY_H
#define BTRSIM_TRACES_REPLAY_H

#include "traces/store.h"

#include <stdio.h>

/*
 * Runs run `id` again with the options it was recorded with (its fault plan
 * too, parsed from the stored text) and
 * compares, in order: every op's result, every IO request (disk, kind,
 * sector, length, epoch, status, fault, and the XXH3 of its data), and every
 * crash state's point, picks and verdict.  Returns 0 when all are the same
 * (a summary on out), 1 at the first divergence (described in err), or -1
 * when the run cannot be replayed (err says why).  `build` is this build's
 * string as runs record it: when the run's differs (a mutant's run replayed by
 * the real build, say), a line on out says so, and a divergence names both.
 */
int replay_verify(struct store *s, int64_t id, const char *build, FILE *out,
		  char *err, size_t errlen);

/*
 * Rebuilds the disks of crash state k of run `id` from the stored IO log:
 * blank disks, every request before the crash point, then the persisted
 * writes (the state's picks) and power loss on every disk.  Writes
 * DIR/disk0.img .. DIR/diskN-1.img (sparse image files, created or
 * truncated; DIR is created when missing) and lists them on out.
 * Returns 0 or -1 with err.
 */
int replay_crash_state(struct store *s, int64_t id, size_t k, const char *dir, FILE *out,
		       char *err, size_t errlen);

#endif
