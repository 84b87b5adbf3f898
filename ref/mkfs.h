/* mkfs.h - making a new Btrfs on a sim volume (see mkfs.c). */
#ifndef BTRSIM_REF_MKFS_H
#define BTRSIM_REF_MKFS_H

#include "sim/sim.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ref_mkfs_opts {
	uint64_t data_profile; /* 0 (single) or BTRFS_BLOCK_GROUP_DUP */
	uint64_t meta_profile; /* 0 (single) or BTRFS_BLOCK_GROUP_DUP (the default) */
	unsigned csum_type;    /* REF_CSUM_* */
	uint32_t nodesize;     /* 4096..65536, a power of two, >= sectorsize; 16384 by default */
	uint32_t sectorsize;   /* 4096 (the only size the kernel mounts on 4 KiB pages) */
	const char *label;     /* up to 255 bytes, or NULL */
	uint64_t size;         /* bytes of the disk to use; 0: all of it */
	uint64_t seed;         /* the uuids derive from it */
	uint64_t time;         /* seconds since the epoch for every timestamp */
};

/* Fills opts with mkfs.btrfs's defaults (seed and time left 0). */
void ref_mkfs_defaults(struct ref_mkfs_opts *o);
/* Makes the file system on disk 0 of vol (a one-disk volume); the fsid is
 * written to fsid when not NULL.  Returns 0 or a negative errno with a
 * one-line reason in err. */
int ref_mkfs(sim_volume *vol, const struct ref_mkfs_opts *o, uint8_t fsid[16], char *err,
	     size_t errlen);

#endif
