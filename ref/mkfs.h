/* mkfs.h - making a new Btrfs on a sim volume (see mkfs.c). */
#ifndef BTRSIM_REF_MKFS_H
#define BTRSIM_REF_MKFS_H

#include "sim/sim.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Profiles are 0 (single) or one of BTRFS_BLOCK_GROUP_DUP, _RAID0, _RAID1,
 * _RAID1C3, _RAID1C4, _RAID10; a profile needing more devices than the volume
 * has (RAID1 and RAID10 2, RAID1C3 3, RAID1C4 4) is EINVAL, RAID5/6
 * EOPNOTSUPP.  The SYSTEM chunk takes the metadata profile.
 */
struct ref_mkfs_opts {
	uint64_t data_profile; /* single by default */
	uint64_t meta_profile; /* DUP by default (mkfs.btrfs's RAID1 on several devices is the caller's choice) */
	unsigned csum_type;    /* REF_CSUM_* */
	uint32_t nodesize;     /* 4096..65536, a power of two, >= sectorsize; 16384 by default */
	uint32_t sectorsize;   /* 4096 (the only size the kernel mounts on 4 KiB pages) */
	const char *label;     /* up to 255 bytes, or NULL */
	uint64_t size;         /* bytes of each disk to use; 0: all of it */
	uint64_t seed;         /* the uuids derive from it */
	uint64_t time;         /* seconds since the epoch for every timestamp */
};

/* Fills opts with mkfs.btrfs's one-device defaults (seed and time left 0). */
void ref_mkfs_defaults(struct ref_mkfs_opts *o);
/* Makes one file system across every disk of vol, disk i being devid i + 1
 * (each disk gets its own superblocks and device item); the fsid is written
 * to fsid when not NULL.  Returns 0 or a negative errno with a one-line
 * reason in err. */
int ref_mkfs(sim_volume *vol, const struct ref_mkfs_opts *o, uint8_t fsid[16], char *err,
	     size_t errlen);

#endif
