/*
 * data.c - reading data extents: the csum tree lookup, per-sector checksum
 * verification, and repair from the other copies.  A sector with no good copy
 * fails the read with EIO: never wrong data.
 */
#include "ref/internal.h"

#include <errno.h>
#include <stdlib.h>

int data_csums(ref_fs *fs, uint64_t logical, size_t n, uint8_t *csums, bool *have)
{
	memset(have, 0, n * sizeof(*have));
	struct ref_root root;
	int r = ref_find_root(fs, BTRFS_CSUM_TREE_OBJECTID, &root);
	if (r == -ENOENT)
		return 0;
	if (r)
		return r;
	uint64_t ss = fs->sectorsize, end = logical + n * ss;
	struct ref_path path;
	struct ref_key key = { BTRFS_EXTENT_CSUM_OBJECTID, BTRFS_EXTENT_CSUM_KEY, logical };
	r = ref_search_le(fs, &root, &key, &path);
	if (r == 1) /* nothing at or before: start from the first item */
		r = ref_search(fs, &root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (k.objectid != BTRFS_EXTENT_CSUM_OBJECTID || k.type != BTRFS_EXTENT_CSUM_KEY) {
			if (k.objectid > BTRFS_EXTENT_CSUM_OBJECTID ||
			    (k.objectid == BTRFS_EXTENT_CSUM_OBJECTID && k.type > BTRFS_EXTENT_CSUM_KEY))
				break;
		} else {
			if (k.offset >= end)
				break;
			uint64_t cnt = size / fs->csum_size;
			for (uint64_t i = 0; i < cnt; i++) {
				uint64_t at = k.offset + i * ss;
				if (at < logical || at >= end)
					continue;
				size_t idx = (size_t)((at - logical) / ss);
				memcpy(csums + idx * fs->csum_size, data + i * fs->csum_size,
				       fs->csum_size);
				have[idx] = true;
			}
		}
		r = ref_next(fs, &path);
	}
	ref_path_release(fs, &path);
	return r < 0 ? r : 0;
}

bool data_sector_ok(ref_fs *fs, const uint8_t *p, const uint8_t *want)
{
	uint8_t c[BTRFS_CSUM_BYTES];
	ref_csum(fs->csum_type, p, fs->sectorsize, c);
	return !memcmp(c, want, fs->csum_size);
}

/* Verifies and repairs the sectors of buf (n sectors at logical, sector-aligned). */
static int verify_sectors(ref_fs *fs, uint64_t logical, uint8_t *buf, size_t n)
{
	uint8_t *csums = malloc(n * fs->csum_size + 1);
	bool *have = malloc(n * sizeof(*have) + 1);
	int r = csums && have ? data_csums(fs, logical, n, csums, have)
			      : ref_fail(fs, ENOMEM, "out of memory");
	uint32_t ss = fs->sectorsize;
	for (size_t i = 0; !r && i < n; i++) {
		uint8_t *p = buf + i * ss;
		const uint8_t *want = csums + i * fs->csum_size;
		if (!have[i] || data_sector_ok(fs, p, want))
			continue;
		fs->csum_errors++;
		uint64_t at = logical + i * ss;
		devstats_inc(fs, io_copy_disk(fs, at, 0), BTRFS_DEV_STAT_CORRUPTION_ERRS);
		int copies = ref_num_copies(fs, at), good = -1;
		for (int m = 1; m < copies && good < 0; m++) {
			if (ref_read_logical(fs, at, p, ss, m) != 0)
				continue;
			if (data_sector_ok(fs, p, want))
				good = m;
			else
				devstats_inc(fs, io_copy_disk(fs, at, m), BTRFS_DEV_STAT_CORRUPTION_ERRS);
		}
		if (good < 0) {
			r = ref_fail(fs, EIO, "data at logical %llu: checksum mismatch on %s",
				     (unsigned long long)at,
				     copies > 1 ? "every copy" : "the only copy");
			break;
		}
		fs->repaired++;
		ref_log(fs, "data at logical %llu: copy 0 has a bad checksum, served from copy %d",
			(unsigned long long)at, good);
		/* The copies before the good one were bad: each gets the good bytes. */
		for (int m = 0; m < good; m++)
			io_rewrite_copy(fs, at, p, ss, m);
	}
	free(csums);
	free(have);
	return r;
}

int data_read(ref_fs *fs, uint64_t logical, void *buf, size_t len, bool nodatasum)
{
	uint32_t ss = fs->sectorsize;
	uint64_t start = logical - logical % ss;
	uint64_t end = (logical + len + ss - 1) / ss * ss;
	bool aligned = start == logical && end == logical + len;
	uint8_t *tmp = aligned ? buf : malloc(end - start);
	if (!tmp)
		return ref_fail(fs, ENOMEM, "out of memory");
	/* The first copy whole, then each other copy whole; when none reads
	 * whole, sector by sector, each from the first of the other copies that
	 * reads, the first copy last (a latent sector, a RAID5/6 row whose
	 * rebuild fails elsewhere: the failures stay local). */
	int copies = ref_num_copies(fs, start);
	unsigned failed = 0; /* copies whose read failed (not a missing device) */
	int r = -EIO;
	for (int m = 0; m < copies && r; m++) {
		r = ref_read_logical(fs, start, tmp, end - start, m);
		if (r && r != -ENODEV)
			failed |= 1u << m;
	}
	if (r) {
		r = 0;
		for (uint64_t o = 0; !r && o < end - start; o += ss) {
			r = -EIO;
			for (int i = 1; i <= copies && r; i++) {
				int m = i % copies;
				r = ref_read_logical(fs, start + o, tmp + o, ss, m);
				if (r && r != -ENODEV)
					failed |= 1u << m;
			}
		}
	}
	if (!r && !nodatasum)
		r = verify_sectors(fs, start, tmp, (end - start) / ss);
	/* Copies that failed to read (a latent sector error): the sectors that
	 * fail are rewritten from what was read and verified.  (A
	 * checksum-less read cannot tell good bytes from bad: nothing is
	 * rewritten from it.) */
	uint8_t *probe = failed && !r && !nodatasum && fs->rw ? malloc(ss) : NULL;
	for (int w = 0; probe && w < copies; w++)
		for (uint64_t o = 0; failed >> w & 1 && o < end - start; o += ss)
			if (io_probe_copy(fs, start + o, probe, ss, w))
				io_rewrite_copy(fs, start + o, tmp + o, ss, w);
	free(probe);
	if (!r && !aligned)
		memcpy(buf, tmp + (logical - start), len);
	if (!aligned)
		free(tmp);
	return r;
}

void ref_read_stats(const ref_fs *fs, uint64_t *repaired, uint64_t *csum_errors)
{
	*repaired = fs->repaired;
	*csum_errors = fs->csum_errors;
}

uint64_t ref_read_rewritten(const ref_fs *fs)
{
	return fs->rewritten;
}
