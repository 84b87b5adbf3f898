/*
 * device_remove.c - `btrfs device remove`: every chunk with a stripe on the
 * device relocated (reloc.c) onto the others, no new chunk going there
 * meanwhile; then its DEV_ITEM and statistics item deleted, the
 * superblock's device count and size shrunk, and, after that commit, its
 * superblocks wiped so that it is no longer taken for part of the volume.
 *
 * As the kernel (btrfs_rm_device): refused when a profile in use would be
 * left with fewer devices than it needs, or when it is the last device.  A
 * missing device is removed the same way, its chunks rebuilt from the
 * other copies.  A crash half-way leaves the device in the volume with some
 * of its chunks moved; removing it again finishes the job.
 */
#include "ref/rw.h"
#include "ref/vfs.h"

#include <errno.h>
#include <stdlib.h>

void rw_wipe_supers(ref_fs *fs, int disk)
{
	uint8_t zero[BTRFS_SUPER_SIZE] = { 0 };
	for (int m = 0; m < BTRFS_SUPER_MIRRORS; m++) {
		uint64_t off = btrfs_super_offset(m);
		if (off + BTRFS_SUPER_SIZE <= sim_disk_size(fs->vol, (unsigned)disk))
			sim_write(fs->vol, (unsigned)disk, off, zero, sizeof(zero), SIM_FUA);
	}
	if (disk < 64)
		fs->spare_disks |= UINT64_C(1) << disk;
}

static const char *const count_word[] = { "zero", "one", "two", "three", "four" };

/* The kernel's btrfs_check_raid_min_devices for `left` devices. */
static int check_min_devices(ref_fs *fs, size_t left)
{
	if (left == 0)
		return ref_fail(fs, EINVAL, "unable to remove the only writeable device");
	char name[16];
	for (size_t i = 0; i < fs->nchunks; i++) {
		uint64_t prof = fs->chunks[i].type & BTRFS_BLOCK_GROUP_PROFILE_MASK;
		int need = chunk_profile_devs_min(prof);
		if (prof && prof != BTRFS_BLOCK_GROUP_DUP && prof != BTRFS_BLOCK_GROUP_RAID0 &&
		    left < (size_t)need)
			return ref_fail(fs, EINVAL, "unable to go below %s devices on %s",
					count_word[need], ref_profile_lower(prof, name));
	}
	return 0;
}

static bool on_device(const struct ref_chunk *c, uint64_t devid)
{
	for (uint16_t s = 0; s < c->num_stripes; s++)
		if (c->stripes[s].devid == devid)
			return true;
	return false;
}

/* Relocates the chunks with a stripe on devid, highest first. */
static int move_chunks(ref_fs *fs, uint64_t devid, struct ref_balance_stats *st)
{
	size_t n;
	uint64_t *at;
	int r = reloc_chunk_order(fs, &at, &n);
	for (size_t i = 0; i < n && !r; i++) {
		const struct ref_chunk *c = chunk_find(fs, at[i]);
		st->considered++;
		if (c && c->logical == at[i] && on_device(c, devid))
			r = reloc_block_group(fs, at[i], st);
	}
	free(at);
	return r;
}

/* The device's items and its place in memory go; the commit follows. */
static int drop_device(ref_fs *fs, size_t di)
{
	struct rw_state *rw = fs->rw;
	uint64_t devid = rw->devs[di].devid, size = rw->devs[di].total_bytes;
	struct rw_tree *ct, *dt;
	struct ref_key k = { BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, devid };
	int r = rw_tree_get(fs, BTRFS_CHUNK_TREE_OBJECTID, &ct);
	if (!r)
		r = bt_delete_key(fs, ct, &k);
	struct ref_key sk = { BTRFS_DEV_STATS_OBJECTID, BTRFS_PERSISTENT_ITEM_KEY, devid };
	if (!r && !(r = rw_tree_get(fs, BTRFS_DEV_TREE_OBJECTID, &dt)) &&
	    (r = bt_delete_key(fs, dt, &sk)) == -ENOENT)
		r = 0; /* never had an error counted */
	if (r)
		return r;
	memmove(&rw->devs[di], &rw->devs[di + 1], (rw->ndevs - di - 1) * sizeof(*rw->devs));
	rw->ndevs--;
	for (size_t i = 0; i < fs->ndevs; i++)
		if (fs->devs[i].devid == devid) {
			memmove(&fs->devs[i], &fs->devs[i + 1], (fs->ndevs - i - 1) * sizeof(*fs->devs));
			fs->ndevs--;
			break;
		}
	fs->sb.num_devices = htole64(LE64(fs->sb.num_devices) - 1);
	fs->sb.total_bytes = htole64(LE64(fs->sb.total_bytes) - size);
	rw->in_txn = true;
	return 0;
}

int ref_device_remove(ref_fs *fs, uint64_t *devidp, struct ref_balance_stats *st)
{
	uint64_t devid = *devidp;
	memset(st, 0, sizeof(*st));
	int r = rw_check_writable(fs);
	if (r)
		return r;
	struct rw_state *rw = fs->rw;
	size_t di = rw->ndevs;
	for (size_t i = 0; i < rw->ndevs && di == rw->ndevs; i++)
		if (devid ? rw->devs[i].devid == devid : rw->devs[i].missing)
			di = i;
	if (di == rw->ndevs && !devid)
		return ref_fail(fs, ENODEV, "no missing devices found to remove");
	if (di == rw->ndevs)
		return ref_fail(fs, ENODEV, "no device with devid %llu", (unsigned long long)devid);
	devid = *devidp = rw->devs[di].devid;
	if ((r = check_min_devices(fs, rw->ndevs - 1)))
		return r;
	int disk = -1;
	for (size_t i = 0; i < fs->ndevs; i++)
		if (fs->devs[i].devid == devid)
			disk = fs->devs[i].disk;
	rw->devs[di].leaving = true;
	if ((r = move_chunks(fs, devid, st))) {
		for (size_t i = 0; i < rw->ndevs; i++)
			rw->devs[i].leaving = false;
		return r;
	}
	for (size_t i = 0; i < rw->ndevs; i++)
		if (rw->devs[i].devid == devid)
			di = i;
	if (rw->devs[di].bytes_used)
		return ref_fail(fs, EUCLEAN, "device %llu still holds %llu bytes after relocation",
				(unsigned long long)devid, (unsigned long long)rw->devs[di].bytes_used);
	if ((r = drop_device(fs, di)) || (r = rw_commit(fs))) {
		rw->failed = true;
		return r;
	}
	if (disk >= 0)
		rw_wipe_supers(fs, disk);
	return 0;
}
