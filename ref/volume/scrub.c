/*
 * scrub.c - reading every copy of everything allocated, as `btrfs scrub`
 * does: the extent tree names the tree blocks and data extents of each chunk;
 * each copy of each (each RAID5/6 data column) is read from its own device
 * and verified - a tree block by its checksum, its header and the generation
 * its extent item records; a data sector by the csum tree - and a bad copy
 * is written over from a good one (for a RAID5/6 column, the bytes rebuilt
 * from the row's parity).  RAID5/6 rows that hold anything then have their P
 * and Q recomputed from the data and compared; a parity that disagrees is
 * rewritten.  Errors are counted per sector and per device, as the kernel's
 * scrub counts them (read, csum, verify, super; corrected, uncorrectable; a
 * read-only scrub counts what it could correct as corrected, as `btrfs scrub
 * -r` does).
 */
#include "ref/rw.h"
#include "ref/vfs.h"

#include <errno.h>
#include <stdlib.h>

struct scrub {
	ref_fs *fs;
	bool readonly;
	struct ref_scrub_dev *dev; /* one per fs->devs entry */
	size_t ndevs;
	/* RAID5/6 rows of the current chunk with a data column left bad: their
	 * parity is not judged (it would be made to agree with bad data). */
	uint64_t *tainted;
	size_t ntainted, tainted_cap;
};

static int taint(struct scrub *s, const struct ref_chunk *c, uint64_t logical)
{
	bool raid6 = c->type & BTRFS_BLOCK_GROUP_RAID6;
	uint64_t row = (logical - c->logical) / ((uint64_t)(c->num_stripes - (raid6 ? 2 : 1)) * c->stripe_len);
	if (s->ntainted && s->tainted[s->ntainted - 1] == row)
		return 0;
	if (s->ntainted == s->tainted_cap) {
		size_t cap = s->tainted_cap ? s->tainted_cap * 2 : 16;
		void *p = realloc(s->tainted, cap * sizeof(*s->tainted));
		if (!p)
			return ref_fail(s->fs, ENOMEM, "out of memory");
		s->tainted = p;
		s->tainted_cap = cap;
	}
	s->tainted[s->ntainted++] = row;
	return 0;
}

static bool is_tainted(const struct scrub *s, uint64_t row)
{
	for (size_t i = 0; i < s->ntainted; i++)
		if (s->tainted[i] == row)
			return true;
	return false;
}

static struct ref_scrub_dev *dev_of(struct scrub *s, int disk)
{
	for (size_t i = 0; i < s->ndevs; i++)
		if (s->dev[i].disk == disk)
			return &s->dev[i];
	return NULL;
}

static void count_error(struct ref_scrub_dev *d, uint8_t v)
{
	if (v == EXT_BAD_READ)
		d->read_errors++;
	else if (v == EXT_BAD_CSUM)
		d->csum_errors++;
	else if (v == EXT_BAD_VERIFY)
		d->verify_errors++;
}

/* One run of an extent (inside one stripe unit): every copy read and judged
 * sector by sector, bad sectors rewritten from a good copy. */
static int scrub_run(struct scrub *s, const struct ref_chunk *c, const struct ref_extent *e,
		     uint64_t at, uint64_t len, const uint8_t *csums, const bool *have)
{
	ref_fs *fs = s->fs;
	uint32_t ss = fs->sectorsize;
	size_t nsec = (size_t)(len / ss);
	struct ref_copy copies[REF_MAX_COPIES];
	uint64_t run;
	int n = chunk_map(c, at, len, copies, &run);
	bool raid56 = c->type & BTRFS_BLOCK_GROUP_RAID56_MASK;
	int real = raid56 ? 1 : n; /* RAID5/6: one real copy, the others rebuilt */
	uint8_t *buf[REF_MAX_COPIES] = { NULL }, *verdict[REF_MAX_COPIES] = { NULL };
	int r = 0;
	for (int m = 0; m < real && !r; m++) {
		buf[m] = malloc(len);
		verdict[m] = calloc(nsec, 1);
		if (!buf[m] || !verdict[m])
			r = ref_fail(fs, ENOMEM, "out of memory");
	}
	/* Read and judge each copy on a present device. */
	for (int m = 0; m < real && !r; m++) {
		struct ref_scrub_dev *d = copies[m].disk >= 0 ? dev_of(s, copies[m].disk) : NULL;
		if (!d) {
			memset(verdict[m], 0xff, nsec); /* missing: no verdict */
			continue;
		}
		extent_read_copy(fs, copies[m].disk, copies[m].physical, buf[m], len, verdict[m]);
		extent_verify(s->fs, e, at, buf[m], len, csums, have, verdict[m]);
		/* As the kernel counts: an extent once per 64 KiB stripe of the
		 * device it is read from; last_physical the end of that stripe. */
		uint64_t sl = BTRFS_STRIPE_LEN_DEFAULT, p0 = copies[m].physical;
		uint64_t windows = (p0 + len - 1) / sl - p0 / sl + 1, end = (p0 + len + sl - 1) / sl * sl;
		if (e->tree) {
			d->tree_extents_scrubbed += windows;
			d->tree_bytes_scrubbed += len;
		} else {
			d->data_extents_scrubbed += windows;
			d->data_bytes_scrubbed += len;
		}
		if (end > d->last_physical)
			d->last_physical = end;
		for (size_t i = 0; !e->tree && i < nsec; i++)
			if (!have[(size_t)((at - e->start) / ss) + i])
				d->no_csum++;
	}
	/* Sector by sector (a tree block: as a whole), the good bytes and the
	 * copies to mend. */
	size_t step = e->tree ? nsec : 1;
	uint8_t *good = malloc(step * ss);
	if (!r && !good)
		r = ref_fail(fs, ENOMEM, "out of memory");
	for (size_t i = 0; !r && i < nsec; i += step) {
		int from = -1;
		bool any_bad = false;
		for (int m = 0; m < real; m++) {
			if (verdict[m][i] == EXT_OK && from < 0)
				from = m;
			any_bad |= verdict[m][i] != EXT_OK && verdict[m][i] != 0xff;
		}
		if (!any_bad)
			continue;
		if (from >= 0) {
			memcpy(good, buf[from] + i * ss, step * ss);
		} else if (raid56) { /* the column rebuilt from P, then from Q */
			for (int mirror = 1; mirror < n && from < 0; mirror++) {
				uint8_t v[16] = { 0 };
				if (raid56_rebuild(fs, c, at + i * ss, good, step * ss, mirror))
					continue;
				extent_verify(s->fs, e, at + i * ss, good, step * ss, csums, have, v);
				if (v[0] == EXT_OK)
					from = mirror;
			}
		}
		if (raid56 && (from < 0 || s->readonly) && (r = taint(s, c, at + i * ss)))
			break;
		for (int m = 0; m < real; m++) {
			uint8_t v = verdict[m][i];
			if (v == EXT_OK || v == 0xff)
				continue;
			struct ref_scrub_dev *d = dev_of(s, copies[m].disk);
			for (size_t j = 0; j < step; j++) {
				count_error(d, v);
				devstats_inc(fs, copies[m].disk, v == EXT_BAD_READ ? BTRFS_DEV_STAT_READ_ERRS
									 : BTRFS_DEV_STAT_CORRUPTION_ERRS);
			}
			if (from < 0) {
				d->uncorrectable_errors += step;
				continue;
			}
			if (s->readonly) { /* correctable: counted so, as the kernel's -r does */
				d->corrected_errors += step;
				continue;
			}
			if (sim_write(fs->vol, (unsigned)copies[m].disk, copies[m].physical + i * ss, good,
				      step * ss, 0)) {
				ref_log(fs, "scrub: rewriting logical %llu on devid %llu failed: %s",
					(unsigned long long)(at + i * ss), (unsigned long long)d->devid,
					sim_volume_error(fs->vol));
				d->uncorrectable_errors += step;
			} else {
				d->corrected_errors += step;
			}
		}
	}
	free(good);
	for (int m = 0; m < real; m++) {
		free(buf[m]);
		free(verdict[m]);
	}
	return r;
}

static int scrub_extent(struct scrub *s, const struct ref_chunk *c, const struct ref_extent *e)
{
	ref_fs *fs = s->fs;
	uint32_t ss = fs->sectorsize;
	if (e->start % ss || e->len % ss)
		return ref_fail(fs, EUCLEAN, "extent %llu (%llu bytes) is not sector-aligned",
				(unsigned long long)e->start, (unsigned long long)e->len);
	size_t nsec = (size_t)(e->len / ss);
	uint8_t *csums = NULL;
	bool *have = NULL;
	int r = 0;
	if (!e->tree) {
		csums = malloc(nsec * fs->csum_size);
		have = malloc(nsec * sizeof(*have));
		r = csums && have ? data_csums(fs, e->start, nsec, csums, have)
				  : ref_fail(fs, ENOMEM, "out of memory");
	}
	for (uint64_t at = e->start; !r && at < e->start + e->len;) {
		struct ref_copy copies[REF_MAX_COPIES];
		uint64_t run;
		if (chunk_map(c, at, e->start + e->len - at, copies, &run) <= 0) {
			r = ref_fail(fs, EUCLEAN, "logical %llu: unsupported chunk profile",
				     (unsigned long long)at);
			break;
		}
		r = scrub_run(s, c, e, at, run, csums, have);
		at += run;
	}
	free(csums);
	free(have);
	return r;
}

/* RAID5/6: rows holding any extent get P (and Q) recomputed from their data
 * columns and compared; a row with a column unread is left unverified. */
static int scrub_parity(struct scrub *s, const struct ref_chunk *c, const struct ref_extent *ex,
			size_t nex)
{
	ref_fs *fs = s->fs;
	bool raid6 = c->type & BTRFS_BLOCK_GROUP_RAID6;
	int n = c->num_stripes, np = raid6 ? 2 : 1, k = n - np;
	uint64_t sl = c->stripe_len, *rows;
	uint32_t ss = fs->sectorsize;
	size_t nrows;
	uint8_t *col[SIM_MAX_DISKS + 2];
	int r = chunk_rows(fs, c, ex, nex, &rows, &nrows), ncol = 0;
	for (; !r && ncol < n + np; ncol++)
		if (!(col[ncol] = aligned_alloc(64, sl)))
			r = ref_fail(fs, ENOMEM, "out of memory");
	for (size_t i = 0; i < nrows && !r; i++) {
		uint64_t row = rows[i];
		if (is_tainted(s, row))
			continue;
		bool whole = true;
		for (int j = 0; j < n && whole; j++) {
			const struct ref_stripe *st = raid56_col(c, row, j);
			whole = st->disk >= 0 &&
				sim_read(fs->vol, (unsigned)st->disk, st->physical + row * sl, col[j], sl) == 0;
		}
		if (!whole) {
			for (int j = k; j < n; j++) {
				struct ref_scrub_dev *d =
					dev_of(s, raid56_col(c, row, j)->disk);
				if (d)
					d->unverified_errors++;
			}
			continue;
		}
		uint8_t *calc[SIM_MAX_DISKS + 2];
		for (int j = 0; j < k; j++)
			calc[j] = col[j];
		for (int j = 0; j < np; j++)
			calc[k + j] = col[n + j];
		if (raid56_parity(k, raid6, sl, calc)) {
			r = ref_fail(fs, EIO, "chunk %llu row %llu: parity not computed",
				     (unsigned long long)c->logical, (unsigned long long)row);
			break;
		}
		for (int j = 0; j < np; j++) {
			const struct ref_stripe *st = raid56_col(c, row, k + j);
			struct ref_scrub_dev *d = dev_of(s, st->disk);
			uint64_t bad = 0;
			for (uint64_t o = 0; o < sl; o += ss)
				bad += memcmp(col[k + j] + o, col[n + j] + o, ss) != 0;
			if (!bad || !d)
				continue;
			d->parity_errors += bad;
			if (s->readonly) {
				d->corrected_errors += bad;
				continue;
			}
			if (sim_write(fs->vol, (unsigned)st->disk, st->physical + row * sl, col[n + j], sl, 0))
				d->uncorrectable_errors += bad;
			else
				d->corrected_errors += bad;
		}
	}
	while (ncol--)
		free(col[ncol]);
	free(rows);
	return r;
}

/* Every superblock copy of every present device: valid, of this file system
 * and of the last commit (the next commit rewrites them all). */
static void scrub_supers(struct scrub *s)
{
	ref_fs *fs = s->fs;
	for (size_t i = 0; i < s->ndevs; i++) {
		struct ref_scrub_dev *d = &s->dev[i];
		if (d->disk < 0)
			continue;
		for (int m = 0; m < BTRFS_SUPER_MIRRORS; m++) {
			struct btrfs_super_disk sb;
			bool valid;
			int r = ref_read_super(fs->vol, (unsigned)d->disk, m, &sb, &valid);
			if (r == -ENOENT)
				continue;
			if (r || !valid || memcmp(sb.fsid, fs->sb.fsid, BTRFS_FSID_SIZE) ||
			    LE64(sb.generation) != LE64(fs->sb.generation))
				d->super_errors++;
		}
	}
}

int ref_scrub(ref_fs *fs, bool readonly, struct ref_scrub_dev *devs, size_t *ndevs)
{
	*ndevs = 0;
	if (fs->rw && !fs->rw->failed) {
		int r = ref_sync(fs); /* the extent tree on disk is the one walked */
		if (r)
			return r;
	}
	struct scrub s = { .fs = fs, .readonly = readonly || !fs->rw || fs->rw->failed, .dev = devs,
			   .ndevs = fs->ndevs };
	if (fs->ndevs > SIM_MAX_DISKS)
		return ref_fail(fs, EINVAL, "%zu devices", fs->ndevs);
	for (size_t i = 0; i < fs->ndevs; i++)
		devs[i] = (struct ref_scrub_dev){ .devid = fs->devs[i].devid, .disk = fs->devs[i].disk,
						  .missing = fs->devs[i].disk < 0 };
	*ndevs = fs->ndevs;
	int r = 0;
	for (size_t i = 0; i < fs->nchunks && !r; i++) {
		const struct ref_chunk *c = &fs->chunks[i];
		struct ref_extent *ex;
		size_t nex;
		if ((r = chunk_extents(fs, c, &ex, &nex)))
			break;
		s.ntainted = 0;
		for (size_t j = 0; j < nex && !r; j++)
			r = scrub_extent(&s, c, &ex[j]);
		if (!r && c->type & BTRFS_BLOCK_GROUP_RAID56_MASK)
			r = scrub_parity(&s, c, ex, nex);
		free(ex);
	}
	if (!r)
		scrub_supers(&s);
	/* What was mended is made durable before the report says so. */
	for (size_t i = 0; !r && !s.readonly && i < s.ndevs; i++)
		if (devs[i].corrected_errors && devs[i].disk >= 0 &&
		    (r = sim_flush(fs->vol, (unsigned)devs[i].disk)))
			r = ref_fail(fs, -r, "scrub: flushing devid %llu: %s",
				     (unsigned long long)devs[i].devid, sim_volume_error(fs->vol));
	free(s.tainted);
	return r;
}
