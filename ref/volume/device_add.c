/*
 * device_add.c - `btrfs device add`: a blank disk of the volume (a spare,
 * ref_open_opts.spares) joins the file system as a new device: the next
 * devid, a new device uuid, its DEV_ITEM in the chunk tree, the
 * superblock's num_devices and total_bytes grown.  The commit writes its
 * superblocks; new chunks may go there from then on (existing chunks stay
 * where they are until a balance moves them, as with the kernel).
 */
#include "ref/rw.h"
#include "ref/vfs.h"

#include <errno.h>
#include <stdlib.h>

#define MIB (UINT64_C(1) << 20)

int ref_device_add(ref_fs *fs, int disk, uint64_t *devid_out)
{
	int r = rw_check_writable(fs);
	if (r)
		return r;
	struct rw_state *rw = fs->rw;
	if (disk < 0 || disk >= 64 || !(fs->spare_disks >> disk & 1))
		return ref_fail(fs, EINVAL, "disk %d is not a spare (a disk with no btrfs superblock)", disk);
	uint64_t size = sim_disk_size(fs->vol, (unsigned)disk);
	if (size < 256 * MIB) /* mkfs.btrfs's smallest device */
		return ref_fail(fs, EINVAL, "the disk holds %llu bytes; a device needs at least 256 MiB",
				(unsigned long long)size);
	if (!rw->ndevs)
		return ref_fail(fs, EUCLEAN, "the file system has no device items");
	uint64_t devid = 0;
	for (size_t i = 0; i < rw->ndevs; i++)
		if (rw->devs[i].devid > devid)
			devid = rw->devs[i].devid;
	devid++;
	/* The item: as the others (type, alignment, fsid), with its own id,
	 * size, uuid and nothing used. */
	struct btrfs_dev_item item = rw->devs[0].item;
	item.devid = htole64(devid);
	item.total_bytes = htole64(size);
	item.bytes_used = 0;
	item.generation = 0;
	item.start_offset = 0;
	rw_new_uuid(fs, devid ^ UINT64_C(0x6465766963650000), item.uuid);
	struct rw_tree *ct;
	struct ref_key k = { BTRFS_DEV_ITEMS_OBJECTID, BTRFS_DEV_ITEM_KEY, devid };
	if ((r = rw_tree_get(fs, BTRFS_CHUNK_TREE_OBJECTID, &ct)) ||
	    (r = bt_insert_data(fs, ct, &k, &item, sizeof(item))))
		return r;
	struct rw_dev *nd = realloc(rw->devs, (rw->ndevs + 1) * sizeof(*rw->devs));
	if (!nd) {
		rw->failed = true; /* the item is in the tree already */
		return ref_fail(fs, ENOMEM, "out of memory; the file system is read-only now");
	}
	rw->devs = nd;
	rw->devs[rw->ndevs++] = (struct rw_dev){ devid, size, 0, false, item, false };
	struct ref_dev *fd = realloc(fs->devs, (fs->ndevs + 1) * sizeof(*fs->devs));
	if (!fd) {
		rw->failed = true;
		return ref_fail(fs, ENOMEM, "out of memory; the file system is read-only now");
	}
	fs->devs = fd;
	fd = &fs->devs[fs->ndevs++];
	memset(fd, 0, sizeof(*fd));
	fd->devid = devid;
	fd->disk = disk;
	memcpy(fd->uuid, item.uuid, BTRFS_UUID_SIZE);
	fs->spare_disks &= ~(UINT64_C(1) << disk);
	fs->sb.num_devices = htole64(LE64(fs->sb.num_devices) + 1);
	fs->sb.total_bytes = htole64(LE64(fs->sb.total_bytes) + size);
	rw->in_txn = true;
	if (devid_out)
		*devid_out = devid;
	return rw_commit(fs);
}
