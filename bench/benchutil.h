/*
 * benchutil.h - what the write-path benchmarks share (bench_fs.c,
 * bench_snapshot.c): a monotonic clock, dying with a message, and a fresh
 * file system on a memory-backed disk.
 */
#ifndef BTRSIM_BENCH_BENCHUTIL_H
#define BTRSIM_BENCH_BENCHUTIL_H

#include "ref/vfs.h"

#include <stdint.h>

#define MIB (UINT64_C(1) << 20)

/* The program's name in messages ("bench-fs"), set by its main. */
extern const char *bench_prog;

double bench_now(void);
/* Prints "PROG: WHAT: WHY" and exits 1. */
_Noreturn void bench_die(const char *what, const char *why);
/* A one-disk memory volume of `size` bytes (no simulated latency), mkfs'd
 * (seed 1) and mounted; dirty_limit 0 keeps ref's default. */
ref_fs *bench_fresh(sim_volume **vol, uint64_t size, uint64_t dirty_limit);
/* The same on `ndisks` disks of `size` bytes, data and metadata in
 * `profile` (a BTRFS_BLOCK_GROUP_* bit, 0 for single). */
ref_fs *bench_fresh_profile(sim_volume **vol, unsigned ndisks, uint64_t size, uint64_t profile);

#endif
