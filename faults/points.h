/*
 * points.h - the names of btrsim's libfiu fault points, defined once, and the
 * test every point makes.  A plain header: sim/ and ref/ include it without
 * depending on anything else of faults/ (faults/README.md is the catalogue:
 * where each point is, what it simulates, what ref does when it fires).
 *
 * A point is tested with FP_FAIL(name): 0 (go on), or the positive errno the
 * armed fault plan gives the point (faults/plan.h).  While no plan is armed
 * the test is one load of fp_armed and a branch; libfiu's fiu_fail (a
 * thread-local counter, a read lock and a hash lookup) runs only while a plan
 * is armed.  Builds define FIU_ENABLE (the Makefile's BASE_CFLAGS) and link
 * -lfiu.
 */
#ifndef BTRSIM_FAULTS_POINTS_H
#define BTRSIM_FAULTS_POINTS_H

#include <fiu-local.h>

/* ---- ref: space (ENOSPC or ENOMEM) ---- */
#define FP_REF_ALLOC_TREE_BLOCK   "ref/alloc/tree-block"   /* alloc.c alloc_tree_block */
#define FP_REF_ALLOC_DATA         "ref/alloc/data"         /* alloc.c alloc_data */
#define FP_REF_ALLOC_CHUNK        "ref/alloc/chunk"        /* chunk_alloc.c alloc_chunk */
#define FP_REF_ALLOC_RESERVE_META "ref/alloc/reserve-meta" /* alloc.c alloc_reserve_meta */
#define FP_REF_ALLOC_RESERVE_DATA "ref/alloc/reserve-data" /* alloc.c alloc_reserve_data */

/* ---- ref: memory on the write path (ENOMEM) ---- */
#define FP_REF_MEM_BLOCK     "ref/mem/block"     /* ctree.c new_block */
#define FP_REF_MEM_DREF      "ref/mem/dref"      /* delayed.c dref_tree, dref_data */
#define FP_REF_MEM_CSUM      "ref/mem/csum"      /* write.c write_aligned */
#define FP_REF_MEM_WRITE_BUF "ref/mem/write-buf" /* write.c file_write */

/* ---- ref: the stages of a commit (commit.c) ---- */
#define FP_REF_COMMIT_SETTLE       "ref/commit/settle"       /* each round of implied changes */
#define FP_REF_COMMIT_WRITE_BLOCKS "ref/commit/write-blocks" /* before each dirty block */
#define FP_REF_COMMIT_FLUSH        "ref/commit/flush"        /* before each device's flush */
#define FP_REF_COMMIT_SUPER        "ref/commit/super"        /* before each superblock copy */

/* ---- ref: device IO (io.c) ---- */
#define FP_REF_IO_READ  "ref/io/read"  /* read_physical */
#define FP_REF_IO_WRITE "ref/io/write" /* ref_write_logical, each copy */

/* ---- sim: requests (request.c), before they are served and at completion ---- */
#define FP_SIM_READ         "sim/read"
#define FP_SIM_WRITE        "sim/write" /* plain and FUA writes */
#define FP_SIM_FLUSH        "sim/flush"
#define FP_SIM_DISCARD      "sim/discard"
#define FP_SIM_READ_DONE    "sim/read-done"
#define FP_SIM_WRITE_DONE   "sim/write-done"
#define FP_SIM_FLUSH_DONE   "sim/flush-done"
#define FP_SIM_DISCARD_DONE "sim/discard-done"
/* The request's disk vanishes (sim_disk_lose) before the request is served. */
#define FP_SIM_DEVICE_VANISH "sim/device-vanish"

/* Nonzero while a fault plan is armed (faults/gate.c; set by faults/plan.c). */
extern int fp_armed;

#ifdef FIU_ENABLE
#define FP_FAIL(name) (__builtin_expect(fp_armed != 0, 0) ? fiu_fail(name) : 0)
#else
#define FP_FAIL(name) ((void)(name), 0)
#endif

#endif
