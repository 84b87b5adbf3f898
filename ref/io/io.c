/* io.c - logical reads and writes through the chunk map onto the sim disks,
 * and the rewriting of a bad copy from a good one (read repair). */
#include "faults/points.h"
#include "ref/rw.h"

#include <errno.h>
#include <stdlib.h>

/* Reads physical bytes, bouncing through a sector-aligned buffer when needed. */
static int read_physical(ref_fs *fs, int disk, uint64_t physical, uint8_t *buf, size_t len)
{
	int e = FP_FAIL(FP_REF_IO_READ);
	if (e)
		return ref_fail(fs, e, "reading %zu bytes at %llu of disk %d (fault point %s)", len,
				(unsigned long long)physical, disk, FP_REF_IO_READ);
	uint32_t ss = sim_disk_sector_size(fs->vol, (unsigned)disk);
	if (physical % ss == 0 && len % ss == 0) {
		int r = sim_read(fs->vol, (unsigned)disk, physical, buf, len);
		if (r)
			devstats_inc(fs, disk, BTRFS_DEV_STAT_READ_ERRS);
		return r ? ref_fail(fs, -r, "%s", sim_volume_error(fs->vol)) : 0;
	}
	uint64_t start = physical - physical % ss;
	uint64_t end = (physical + len + ss - 1) / ss * ss;
	uint8_t *tmp = malloc(end - start);
	if (!tmp)
		return ref_fail(fs, ENOMEM, "out of memory");
	int r = sim_read(fs->vol, (unsigned)disk, start, tmp, end - start);
	if (r) {
		devstats_inc(fs, disk, BTRFS_DEV_STAT_READ_ERRS);
		r = ref_fail(fs, -r, "%s", sim_volume_error(fs->vol));
	}
	else
		memcpy(buf, tmp + (physical - start), len);
	free(tmp);
	return r;
}

/* The chunk holding logical and the copies of the run of bytes from there
 * that stay contiguous: the number of copies, or -EUCLEAN. */
static int map_run(ref_fs *fs, uint64_t logical, uint64_t len, const struct ref_chunk **chunk,
		   struct ref_copy *copies, uint64_t *run)
{
	const struct ref_chunk *c = chunk_find(fs, logical);
	if (!c)
		return ref_fail(fs, EUCLEAN, "logical %llu is not mapped by any chunk",
				(unsigned long long)logical);
	int n = chunk_map(c, logical, len, copies, run);
	if (n <= 0)
		return ref_fail(fs, EUCLEAN, "logical %llu: unsupported chunk profile",
				(unsigned long long)logical);
	*chunk = c;
	return n;
}

int ref_read_logical(ref_fs *fs, uint64_t logical, void *buf, size_t len, int mirror)
{
	uint8_t *out = buf;
	while (len) {
		const struct ref_chunk *c;
		struct ref_copy copies[REF_MAX_COPIES];
		uint64_t run;
		int n = map_run(fs, logical, len, &c, copies, &run);
		if (n < 0)
			return n;
		const struct ref_copy *cp = &copies[mirror % n];
		int r, rebuild = cp->disk == REF_COPY_REBUILT ? mirror % n : 0;
		/* RAID5/6 with the stripe's device missing: degraded reads rebuild it. */
		if (cp->disk == -1 && n > 1 && copies[1].disk == REF_COPY_REBUILT)
			rebuild = 1;
		if (rebuild) {
			if ((r = raid56_rebuild(fs, c, logical, out, run, rebuild)))
				return r;
			out += run;
			logical += run;
			len -= run;
			continue;
		}
		if (cp->disk < 0)
			return ref_fail(fs, ENODEV, "logical %llu: copy %d is on missing device %llu",
					(unsigned long long)logical, mirror % n,
					(unsigned long long)cp->devid);
		r = read_physical(fs, cp->disk, cp->physical, out, run);
		if (r)
			return r;
		out += run;
		logical += run;
		len -= run;
	}
	return 0;
}

/* raid56_write's judge of a data column read back during a read-modify-write:
 * its sectors against the csum tree (a sector with no checksum passes). */
static void rmw_verify(void *ctx, uint64_t logical, const uint8_t *buf, size_t len, bool *bad)
{
	ref_fs *fs = ctx;
	const struct ref_chunk *c = chunk_find(fs, logical);
	uint32_t ss = fs->sectorsize;
	size_t n = len / ss;
	if (!c || !(c->type & BTRFS_BLOCK_GROUP_DATA) || !n)
		return;
	uint8_t *csums = malloc(n * fs->csum_size);
	bool *have = malloc(n * sizeof(*have));
	if (csums && have && !data_csums(fs, logical, n, csums, have))
		for (size_t i = 0; i < n; i++)
			if (have[i] && !data_sector_ok(fs, buf + i * ss, csums + i * fs->csum_size)) {
				bad[i] = true;
				fs->csum_errors++;
				devstats_inc(fs, io_copy_disk(fs, logical + i * ss, 0), BTRFS_DEV_STAT_CORRUPTION_ERRS);
			}
	free(csums);
	free(have);
}

int ref_write_logical(ref_fs *fs, uint64_t logical, const void *buf, size_t len)
{
	const uint8_t *in = buf;
	while (len) {
		const struct ref_chunk *c;
		struct ref_copy copies[REF_MAX_COPIES];
		uint64_t run;
		int n = map_run(fs, logical, len, &c, copies, &run);
		if (n < 0)
			return n;
		if (c->type & BTRFS_BLOCK_GROUP_RAID56_MASK) { /* data and parity, row by row */
			run = c->logical + c->length - logical < len ? c->logical + c->length - logical : len;
			char err[256];
			int e = FP_FAIL(FP_REF_IO_WRITE), r;
			if (e)
				return ref_fail(fs, e, "writing %llu (fault point %s)",
						(unsigned long long)logical, FP_REF_IO_WRITE);
			if ((r = raid56_write(fs->vol, c, logical, in, run, 0, rmw_verify, fs, err, sizeof(err))))
				return ref_fail(fs, -r, "writing %llu: %s", (unsigned long long)logical, err);
			in += run;
			logical += run;
			len -= run;
			continue;
		}
		int present = 0;
		for (int i = 0; i < n; i++)
			present += copies[i].disk >= 0;
		if (!present)
			return ref_fail(fs, EIO, "writing %llu: every copy is on a missing device",
					(unsigned long long)logical);
		for (int i = 0; i < n; i++) { /* every copy on a present device */
			if (copies[i].disk < 0)
				continue; /* degraded (the mount checked the chunk tolerates it) */
			int e = FP_FAIL(FP_REF_IO_WRITE);
			if (e)
				return ref_fail(fs, e, "writing %llu to disk %d (fault point %s)",
						(unsigned long long)logical, copies[i].disk,
						FP_REF_IO_WRITE);
			int r = sim_write(fs->vol, (unsigned)copies[i].disk, copies[i].physical, in, run, 0);
			if (r) {
				devstats_inc(fs, copies[i].disk, BTRFS_DEV_STAT_WRITE_ERRS);
				return ref_fail(fs, -r, "writing %llu: %s", (unsigned long long)logical,
						sim_volume_error(fs->vol));
			}
		}
		in += run;
		logical += run;
		len -= run;
	}
	return 0;
}

int io_rewrite_copy(ref_fs *fs, uint64_t logical, const void *buf, size_t len, int mirror)
{
	if (!fs->rw || fs->rw->failed)
		return 0; /* read-only: the kernel repairs only what it may write */
	const uint8_t *in = buf;
	while (len) {
		const struct ref_chunk *c;
		struct ref_copy copies[REF_MAX_COPIES];
		uint64_t run;
		int n = map_run(fs, logical, len, &c, copies, &run);
		if (n < 0)
			return n;
		/* RAID5/6: only the data column itself is ever rewritten (its
		 * parity already agrees with the bytes rebuilt from it). */
		const struct ref_copy *cp = &copies[c->type & BTRFS_BLOCK_GROUP_RAID56_MASK ? 0 : mirror % n];
		if (cp->disk >= 0) {
			int r = sim_write(fs->vol, (unsigned)cp->disk, cp->physical, in, run, 0);
			if (r) {
				ref_log(fs, "repairing logical %llu on disk %d failed: %s",
					(unsigned long long)logical, cp->disk, sim_volume_error(fs->vol));
				return 0; /* the read itself succeeded: not its error */
			}
			fs->rewritten += run / fs->sectorsize;
		}
		in += run;
		logical += run;
		len -= run;
	}
	return 0;
}

int io_probe_copy(ref_fs *fs, uint64_t logical, void *buf, size_t len, int mirror)
{
	const struct ref_chunk *c = chunk_find(fs, logical);
	struct ref_copy copies[REF_MAX_COPIES];
	uint64_t run;
	int n = c ? chunk_map(c, logical, len, copies, &run) : 0;
	if (n <= 0 || run < len)
		return -EINVAL;
	const struct ref_copy *cp = &copies[mirror % n];
	return cp->disk < 0 ? -ENODEV : sim_read(fs->vol, (unsigned)cp->disk, cp->physical, buf, len);
}

int io_copy_disk(ref_fs *fs, uint64_t logical, int mirror)
{
	const struct ref_chunk *c = chunk_find(fs, logical);
	struct ref_copy copies[REF_MAX_COPIES];
	uint64_t run;
	int n = c ? chunk_map(c, logical, 1, copies, &run) : 0;
	return n > 0 && copies[mirror % n].disk >= 0 ? copies[mirror % n].disk : -1;
}

int ref_num_copies(ref_fs *fs, uint64_t logical)
{
	const struct ref_chunk *c = chunk_find(fs, logical);
	if (!c)
		return 0;
	struct ref_copy copies[REF_MAX_COPIES];
	uint64_t run;
	return chunk_map(c, logical, 1, copies, &run);
}

int ref_map(ref_fs *fs, uint64_t logical, struct ref_phys *out, int max, uint64_t *run)
{
	const struct ref_chunk *c = chunk_find(fs, logical);
	if (!c)
		return ref_fail(fs, ENOENT, "logical %llu is not mapped by any chunk",
				(unsigned long long)logical);
	struct ref_copy copies[REF_MAX_COPIES];
	int n = chunk_map(c, logical, UINT64_MAX, copies, run);
	for (int i = 0; i < n && i < max; i++)
		out[i] = (struct ref_phys){ copies[i].disk, copies[i].physical };
	return n < max ? n : max;
}
