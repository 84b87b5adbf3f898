/*
 * log_replay.h - what the files of the log replay share (ref/ only):
 * log_replay.c finds the log trees and commits the result;
 * log_replay_items.c replays one log tree into its subvolume.
 */
#ifndef BTRSIM_REF_LOG_REPLAY_H
#define BTRSIM_REF_LOG_REPLAY_H

#include "ref/vfs/vfs_int.h"

/* Replays the log tree `log` into subvolume `subvol`: 0, 1 when the
 * subvolume no longer exists (the log is skipped, as the kernel does), or
 * -errno with the reason (a log that cannot be replayed). */
int log_replay_tree(ref_fs *fs, uint64_t subvol, const struct ref_root *log);

#endif
