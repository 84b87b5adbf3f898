/*
 * replace.c - `btrfs replace`: a device's contents rebuilt onto a spare disk
 * (a blank one: ref_open_opts.spares), which then takes the device's place -
 * its devid and its device uuid, as the kernel's btrfs_dev_replace_finishing
 * swaps them - so that no chunk item changes.
 *
 * What is copied is what is allocated: every run of a tree block or data
 * extent that has a copy on the device gets the bytes of a copy that
 * verifies (the device's own unless it is missing, bad, or `avoid_src`
 * asks for the others first, as `btrfs replace -r`); a RAID5/6 row that
 * holds anything gets the device's whole column back, data rebuilt from the
 * rest of the row, P and Q computed from the data.  Bytes that no copy
 * holds correctly are counted; the rest goes on.  Then the spare is flushed,
 * the device's copies are read from the spare, the next commit writes the
 * spare's superblocks, and the old disk's superblocks are wiped (when it is
 * still there), so that it is not taken for the device again.
 *
 * A crash before the commit leaves the spare without a superblock: the
 * file system is as it was, with the old device (or degraded without it).
 */
#include "ref/rw.h"
#include "ref/vfs.h"

#include <errno.h>
#include <stdlib.h>

struct replace {
	ref_fs *fs;
	uint64_t devid;
	int src_disk;    /* -1 when the device is missing */
	int target;      /* the spare's sim disk */
	bool avoid_src;
	struct ref_replace_stats *st;
};

static int put(struct replace *rp, uint64_t physical, const void *buf, size_t len)
{
	int r = sim_write(rp->fs->vol, (unsigned)rp->target, physical, buf, len, 0);
	if (r)
		return ref_fail(rp->fs, -r, "replace: writing the spare at %llu: %s",
				(unsigned long long)physical, sim_volume_error(rp->fs->vol));
	rp->st->bytes_copied += len;
	return 0;
}

/* One run of extent e with a copy on the device: good bytes onto the spare
 * at that copy's place. */
static int copy_run(struct replace *rp, const struct ref_chunk *c, const struct ref_extent *e,
		    uint64_t at, uint64_t len, const uint8_t *csums, const bool *have)
{
	ref_fs *fs = rp->fs;
	struct ref_copy copies[REF_MAX_COPIES];
	uint64_t run;
	int n = chunk_map(c, at, len, copies, &run), mine = -1;
	bool own[REF_MAX_COPIES] = { false }; /* (DUP: both copies are the device's) */
	for (int m = 0; m < n; m++)
		if (copies[m].devid == rp->devid && copies[m].disk != REF_COPY_REBUILT) {
			own[m] = true;
			if (mine < 0)
				mine = m;
		}
	if (mine < 0)
		return 0;
	uint32_t ss = fs->sectorsize;
	size_t nsec = (size_t)(len / ss);
	uint8_t *out = malloc(len), *buf = malloc(len), *verdict = malloc(nsec), *done = calloc(nsec, 1);
	int r = out && buf && verdict && done ? 0 : ref_fail(fs, ENOMEM, "out of memory");
	/* Copies in order of preference: the others first when avoiding the
	 * device, then the device's own. */
	for (int pass = 0; pass < 2 && !r; pass++)
		for (int m = 0; m < n && !r; m++) {
			if (own[m] != (pass == (rp->avoid_src ? 1 : 0)))
				continue;
			if (copies[m].disk < 0)
				continue; /* missing, or a RAID5/6 rebuilt copy (not here) */
			memset(verdict, 0, nsec);
			extent_read_copy(fs, copies[m].disk, copies[m].physical, buf, len, verdict);
			extent_verify(fs, e, at, buf, len, csums, have, verdict);
			for (size_t i = 0; i < nsec; i++)
				if (!done[i] && verdict[i] == EXT_OK) {
					memcpy(out + i * ss, buf + i * ss, ss);
					done[i] = 1;
				}
		}
	for (size_t i = 0; i < nsec && !r; i++)
		if (!done[i]) { /* no copy verifies: the device's bytes if it has them, else zeros */
			rp->st->uncorrectable += ss;
			if (copies[mine].disk < 0 ||
			    sim_read(fs->vol, (unsigned)copies[mine].disk, copies[mine].physical + i * ss,
				     out + i * ss, ss))
				memset(out + i * ss, 0, ss);
		}
	for (int m = 0; m < n && !r; m++)
		if (own[m])
			r = put(rp, copies[m].physical, out, len);
	free(out);
	free(buf);
	free(verdict);
	free(done);
	return r;
}

/* RAID5/6: the device's column of every row that holds an extent. */
static int copy_rows(struct replace *rp, const struct ref_chunk *c, const struct ref_extent *ex,
		     size_t nex)
{
	ref_fs *fs = rp->fs;
	bool raid6 = c->type & BTRFS_BLOCK_GROUP_RAID6;
	int n = c->num_stripes, np = raid6 ? 2 : 1, k = n - np;
	uint64_t sl = c->stripe_len, rowbytes = (uint64_t)k * sl, *rows;
	size_t nrows;
	uint8_t *col[SIM_MAX_DISKS + 2];
	int r = chunk_rows(fs, c, ex, nex, &rows, &nrows), ncol = 0;
	for (; !r && ncol < k + np; ncol++)
		if (!(col[ncol] = aligned_alloc(64, sl)))
			r = ref_fail(fs, ENOMEM, "out of memory");
	for (size_t i = 0; i < nrows && !r; i++) {
		uint64_t row = rows[i];
		int mine = -1;
		for (int j = 0; j < n; j++)
			if (raid56_col(c, row, j)->devid == rp->devid)
				mine = j;
		if (mine < 0)
			continue;
		uint64_t phys = raid56_col(c, row, mine)->physical + row * sl;
		if (mine < k) { /* a data column: rebuilt from the rest of its row */
			uint64_t logical = c->logical + row * rowbytes + (uint64_t)mine * sl;
			r = raid56_rebuild(fs, c, logical, col[0], sl, 1);
			if (r && raid6)
				r = raid56_rebuild(fs, c, logical, col[0], sl, 2);
			if (r) {
				rp->st->uncorrectable += sl;
				memset(col[0], 0, sl);
			}
			r = put(rp, phys, col[0], sl);
			continue;
		}
		/* P or Q: computed from the row's data columns. */
		for (int j = 0; j < k && !r; j++) {
			const struct ref_stripe *dj = raid56_col(c, row, j);
			uint64_t logical = c->logical + row * rowbytes + (uint64_t)j * sl;
			if (dj->disk < 0 ||
			    sim_read(fs->vol, (unsigned)dj->disk, dj->physical + row * sl, col[j], sl))
				r = raid56_rebuild(fs, c, logical, col[j], sl, 1);
		}
		if (r) {
			rp->st->uncorrectable += sl;
			r = 0;
			continue;
		}
		if (raid56_parity(k, raid6, sl, col))
			r = ref_fail(fs, EIO, "replace: parity of row %llu not computed",
				     (unsigned long long)row);
		else
			r = put(rp, phys, col[mine], sl);
	}
	while (ncol--)
		free(col[ncol]);
	free(rows);
	return r;
}

static int copy_chunk(struct replace *rp, const struct ref_chunk *c)
{
	ref_fs *fs = rp->fs;
	struct ref_extent *ex;
	size_t nex;
	int r = chunk_extents(fs, c, &ex, &nex);
	if (r)
		return r;
	if (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK) {
		r = copy_rows(rp, c, ex, nex);
		free(ex);
		return r;
	}
	uint32_t ss = fs->sectorsize;
	for (size_t i = 0; i < nex && !r; i++) {
		const struct ref_extent *e = &ex[i];
		size_t nsec = (size_t)(e->len / ss);
		uint8_t *csums = NULL;
		bool *have = NULL;
		if (!e->tree) {
			csums = malloc(nsec * fs->csum_size + 1);
			have = malloc(nsec * sizeof(*have) + 1);
			r = csums && have ? data_csums(fs, e->start, nsec, csums, have)
					  : ref_fail(fs, ENOMEM, "out of memory");
		}
		for (uint64_t at = e->start; !r && at < e->start + e->len;) {
			struct ref_copy copies[REF_MAX_COPIES];
			uint64_t run;
			chunk_map(c, at, e->start + e->len - at, copies, &run);
			r = copy_run(rp, c, e, at, run, csums, have);
			at += run;
		}
		if (e->tree)
			rp->st->tree_extents++;
		else
			rp->st->data_extents++;
		free(csums);
		free(have);
	}
	free(ex);
	return r;
}

int ref_device_replace(ref_fs *fs, uint64_t devid, int target, bool avoid_src,
		       struct ref_replace_stats *st)
{
	memset(st, 0, sizeof(*st));
	int r = rw_check_writable(fs);
	if (r)
		return r;
	struct rw_state *rw = fs->rw;
	struct rw_dev *dev = NULL;
	for (size_t i = 0; i < rw->ndevs; i++)
		if (rw->devs[i].devid == devid)
			dev = &rw->devs[i];
	if (!dev)
		return ref_fail(fs, ENOENT, "no device with devid %llu", (unsigned long long)devid);
	if (target < 0 || target >= 64 || !(fs->spare_disks >> target & 1))
		return ref_fail(fs, EINVAL, "disk %d is not a spare (a disk with no btrfs superblock)", target);
	if (sim_disk_size(fs->vol, (unsigned)target) < dev->total_bytes)
		return ref_fail(fs, EINVAL, "the spare holds %llu bytes, devid %llu needs %llu",
				(unsigned long long)sim_disk_size(fs->vol, (unsigned)target),
				(unsigned long long)devid, (unsigned long long)dev->total_bytes);
	/* The extent tree on disk is the one walked, and nothing moves while the
	 * copy runs (ref is single-threaded: no write comes between). */
	if ((r = ref_sync(fs)))
		return r;
	struct replace rp = { fs, devid, -1, target, avoid_src, st };
	struct ref_dev *fd = NULL;
	for (size_t i = 0; i < fs->ndevs; i++)
		if (fs->devs[i].devid == devid)
			fd = &fs->devs[i];
	if (fd)
		rp.src_disk = fd->disk;
	for (size_t i = 0; i < fs->nchunks && !r; i++) {
		const struct ref_chunk *c = &fs->chunks[i];
		bool on = false;
		for (unsigned s = 0; s < c->num_stripes; s++)
			on |= c->stripes[s].devid == devid;
		if (on)
			r = copy_chunk(&rp, c);
	}
	if (!r && (r = sim_flush(fs->vol, (unsigned)target)))
		r = ref_fail(fs, -r, "replace: flushing the spare: %s", sim_volume_error(fs->vol));
	if (r)
		return r;
	/* The spare is the device now: its copies are read there, its
	 * superblocks written by the commit (the device item's uuid kept). */
	for (size_t i = 0; i < fs->nchunks; i++)
		for (unsigned s = 0; s < fs->chunks[i].num_stripes; s++)
			if (fs->chunks[i].stripes[s].devid == devid)
				fs->chunks[i].stripes[s].disk = target;
	if (fd) {
		fd->disk = target;
	} else { /* the device was missing: it is present again */
		struct ref_dev *nd = realloc(fs->devs, (fs->ndevs + 1) * sizeof(*fs->devs));
		if (!nd)
			return ref_fail(fs, ENOMEM, "out of memory");
		fs->devs = nd;
		fd = &fs->devs[fs->ndevs++];
		memset(fd, 0, sizeof(*fd));
		fd->devid = devid;
		fd->disk = target;
		memcpy(fd->uuid, dev->item.uuid, BTRFS_UUID_SIZE);
	}
	fs->spare_disks &= ~(UINT64_C(1) << target);
	dev->missing = false;
	/* A new disk: its error counters start at 0. */
	memset(fd->stats, 0, sizeof(fd->stats));
	fd->stats_dirty = true;
	rw->in_txn = true;
	if ((r = rw_commit(fs)))
		return r;
	if (rp.src_disk >= 0) /* the old disk is no longer the device */
		rw_wipe_supers(fs, rp.src_disk);
	return 0;
}
