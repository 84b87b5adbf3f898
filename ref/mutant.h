/*
 * mutant.h - deliberately broken builds of ref, to prove that the crash
 * explorer and its oracle catch real bugs (`make mutants` builds each as
 * build/mutants/NAME/btrsim with -DBTRSIM_MUTANT=NAME's number; the tests
 * run every one of them against the explorer).  In every other build
 * MUTANT(x) is false and the compiler removes the broken branches.
 *
 *   skip-flush     the disks are not flushed before the superblocks
 *   cow-in-place   a live tree block is changed in place, not copied
 *   super-first    the superblocks are written before the tree blocks
 *   drop-dirty     one dirty tree block is left out of each commit
 *   early-reuse    freed space is reused before the freeing commit is durable
 *   snap-rw        a read-only snapshot's ROOT_ITEM lacks the RDONLY flag (it is
 *                  read-only until the next mount only)
 *   snap-no-commit a snapshot copies its source's root without committing the
 *                  running transaction first, so that blocks the source
 *                  changed in it are shared and then changed in place
 *   qgroup-no-inherit  a snapshot does not inherit its source's quota numbers
 *                  (the new group keeps rfer 0, the source its excl)
 */
#ifndef BTRSIM_REF_MUTANT_H
#define BTRSIM_REF_MUTANT_H

#define MUTANT_SKIP_FLUSH 1
#define MUTANT_COW_IN_PLACE 2
#define MUTANT_SUPER_FIRST 3
#define MUTANT_DROP_DIRTY 4
#define MUTANT_EARLY_REUSE 5
#define MUTANT_SNAP_RW 6
#define MUTANT_SNAP_NO_COMMIT 7
#define MUTANT_QGROUP_NO_INHERIT 8
/* The fsync log (ref/log/log_write.c): the superblock naming the log written
 * before the log blocks are flushed; the logged extents' checksums left
 * out; a file's names (INODE_REF) not logged; the holes of a NO_HOLES file
 * not logged (a hole punched since the commit comes back as old data); a
 * logged directory's DIR_LOG_INDEX ranges left out (log_dir.c: a name
 * removed since the commit comes back); replay that only adds names,
 * never unlinking those the log dropped (log_replay_items.c: neither an
 * inode's names that its logged names lack nor a logged directory's
 * entries inside its DIR_LOG_INDEX ranges: a hard link removed before the
 * file's fsync comes back). */
#define MUTANT_LOG_SUPER_FIRST 9
#define MUTANT_LOG_NO_CSUM 10
#define MUTANT_LOG_NO_NAMES 11
#define MUTANT_LOG_NO_HOLES 12
#define MUTANT_LOG_NO_DIR_RANGES 13
#define MUTANT_LOG_NO_UNLINK 14
/* receive (ref/send/send_receive.c): the new subvolume gets its received
 * uuid as soon as it is made, not after the stream's last command (a crash
 * part-way leaves a subvolume that shows as received, half filled). */
#define MUTANT_RECEIVE_EARLY 15
/* dedupe (ref/reflink/reflink_dedupe.c): the ranges are shared without
 * comparing their bytes (a destination's differing bytes become the
 * source's). */
#define MUTANT_DEDUPE_NO_COMPARE 16

#ifdef BTRSIM_MUTANT
#define MUTANT(x) (BTRSIM_MUTANT == MUTANT_##x)
#else
#define MUTANT(x) 0
#endif

#endif
