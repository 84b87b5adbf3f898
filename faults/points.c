/*
 * points.c - the catalogue of fault points (faults/points.h names them,
 * faults/README.md explains them) and errno names for plans.
 */
#include "faults/plan.h"
#include "faults/points.h"

#include <errno.h>
#include <string.h>

static const struct fault_point catalogue[] = {
	{ FP_REF_ALLOC_TREE_BLOCK,
	  "ref/txn/alloc.c alloc_tree_block",
	  "no space for a tree block in the middle of a B-tree change; the operation fails "
	  "half-way and the file system turns read-only (the last commit stays)",
	  { ENOSPC, ENOMEM } },
	{ FP_REF_ALLOC_DATA,
	  "ref/txn/alloc.c alloc_data",
	  "no data space for a write or preallocation after its reservation; the call fails, "
	  "read-only when it had changed a tree already",
	  { ENOSPC, ENOMEM } },
	{ FP_REF_ALLOC_CHUNK,
	  "ref/txn/chunk_alloc.c alloc_chunk",
	  "no device space for a new chunk; a reservation commits to free pinned space and "
	  "fails with ENOSPC, an allocation in the middle of a change turns read-only",
	  { ENOSPC, ENOMEM } },
	{ FP_REF_ALLOC_RESERVE_META,
	  "ref/txn/alloc.c alloc_reserve_meta",
	  "the up-front metadata reservation of an operation fails; the call fails and "
	  "nothing changes",
	  { ENOSPC, ENOMEM } },
	{ FP_REF_ALLOC_RESERVE_DATA,
	  "ref/txn/alloc.c alloc_reserve_data",
	  "the data reservation of a write, truncate or fallocate fails; the call fails and "
	  "nothing changes",
	  { ENOSPC, ENOMEM } },
	{ FP_REF_MEM_BLOCK,
	  "ref/tree/ctree.c new_block",
	  "out of memory for a new tree block (COW); the operation or commit fails and the "
	  "file system turns read-only",
	  { ENOMEM } },
	{ FP_REF_MEM_DREF,
	  "ref/txn/delayed.c dref_tree, dref_data",
	  "out of memory recording a delayed reference; the operation or commit fails, "
	  "read-only when a tree had changed",
	  { ENOMEM } },
	{ FP_REF_MEM_CSUM,
	  "ref/vfs/write.c write_aligned",
	  "out of memory for a data write's checksums; the extent is given back and the "
	  "write fails, read-only when a tree had changed",
	  { ENOMEM } },
	{ FP_REF_MEM_WRITE_BUF,
	  "ref/vfs/write.c file_write",
	  "out of memory for the bounce buffer of an unaligned write; the write fails and "
	  "nothing changes",
	  { ENOMEM } },
	{ FP_REF_COMMIT_SETTLE,
	  "ref/txn/commit.c settle_round",
	  "a commit fails while bringing delayed references, block groups and root items "
	  "into the trees; the commit fails, read-only, the last commit stays",
	  { EIO, ENOMEM, ENOSPC } },
	{ FP_REF_COMMIT_WRITE_BLOCKS,
	  "ref/txn/commit.c write_blocks",
	  "a commit fails before writing one of its dirty blocks; the commit fails, read-only, "
	  "the last commit stays",
	  { EIO, ENOMEM, ENOSPC } },
	{ FP_REF_COMMIT_FLUSH,
	  "ref/txn/commit.c rw_commit",
	  "a device's flush fails before the superblocks; the commit fails, read-only, the "
	  "last commit stays",
	  { EIO } },
	{ FP_REF_COMMIT_SUPER,
	  "ref/txn/commit.c write_supers",
	  "a superblock copy fails to be written (each copy of each device is a hit); the "
	  "commit fails, read-only; copies written before it already name the new commit, "
	  "whose blocks are flushed",
	  { EIO } },
	{ FP_REF_IO_READ,
	  "ref/io/io.c read_physical",
	  "a device read fails; a tree block is read from its other copy (DUP, RAID1*), data "
	  "without another copy fails with EIO",
	  { EIO, ENOMEM } },
	{ FP_REF_IO_WRITE,
	  "ref/io/io.c ref_write_logical",
	  "a device write of data or of a tree block fails; a data write fails and gives its "
	  "extent back, a commit fails and turns read-only",
	  { EIO, ENOSPC, ENOMEM } },
	{ FP_SIM_READ,
	  "sim/request.c io_gate",
	  "a read request fails before it is served (logged as flaky)",
	  { EIO } },
	{ FP_SIM_WRITE,
	  "sim/request.c io_gate",
	  "a write or FUA write fails before it is served, nothing stored (logged as flaky)",
	  { EIO, ENOSPC } },
	{ FP_SIM_FLUSH,
	  "sim/request.c io_gate",
	  "a flush fails before it is served; the disk's writes stay volatile (logged as flaky)",
	  { EIO } },
	{ FP_SIM_DISCARD,
	  "sim/request.c io_gate",
	  "a discard fails before it is served (logged as flaky); ref never discards",
	  { EIO } },
	{ FP_SIM_READ_DONE,
	  "sim/request.c io_done",
	  "a read is served but completes with an error",
	  { EIO } },
	{ FP_SIM_WRITE_DONE,
	  "sim/request.c io_done",
	  "a write is stored (volatile, or durable with FUA) but completes with an error",
	  { EIO } },
	{ FP_SIM_FLUSH_DONE,
	  "sim/request.c io_done",
	  "a flush makes the writes durable but completes with an error",
	  { EIO } },
	{ FP_SIM_DISCARD_DONE,
	  "sim/request.c io_done",
	  "a discard is done but completes with an error; ref never discards",
	  { EIO } },
	{ FP_SIM_DEVICE_VANISH,
	  "sim/request.c io_gate",
	  "the request's disk vanishes before it is served (sim_disk_lose: its volatile writes "
	  "are gone, every later request fails with EIO); mid-commit, the commit fails and ref "
	  "turns read-only",
	  { EIO } },
};

#define NPOINTS (sizeof(catalogue) / sizeof(catalogue[0]))

const struct fault_point *fault_points(size_t *n)
{
	*n = NPOINTS;
	return catalogue;
}

const struct fault_point *fault_point_find(const char *name)
{
	for (size_t i = 0; name && i < NPOINTS; i++)
		if (!strcmp(catalogue[i].name, name))
			return &catalogue[i];
	return NULL;
}

/* errno names, from glibc (strerrorname_np knows every errno of Linux). */
const char *fault_errno_name(int err)
{
	return err > 0 ? strerrorname_np(err) : NULL;
}

int fault_errno_parse(const char *name)
{
	if (!name || name[0] != 'E')
		return 0;
	for (int e = 1; e < 256; e++) {
		const char *n = strerrorname_np(e);
		if (n && !strcmp(n, name))
			return e;
	}
	return 0;
}
