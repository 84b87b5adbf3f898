/*
 * raid56_write.c - writing into a RAID5/6 chunk: the new bytes and the P
 * (and Q) of every row they touch.
 *
 * Parity is recomputed from the row's data columns as they will stand: the
 * new bytes, and the rest of each column read from its disk (the kernel's
 * read-modify-write also reads the data, not the old parity, so a stale
 * parity is never carried forward).  Only the span of column offsets the
 * write touches is read and rewritten; a write that covers every data column
 * of that span reads nothing.  The layout is raid56.c's (the kernel's): in
 * row r of a chunk of n stripes with k data columns, data column j is on
 * stripe (r + j) % n, P on (r + k) % n, Q on (r + k + 1) % n.  P is ISA-L's
 * xor_gen and Q its pq_gen (g = 2, polynomial 0x11d, as Linux's raid6).
 *
 * Degraded (a device missing), a column on it that the write does not cover
 * is rebuilt from the row first, and nothing is written to it: the other
 * columns and the new parity hold its bytes.  A column read back that the
 * caller's verify finds wrong (a lost or rotten data write) is rebuilt the
 * same way, from the old parity, before the new parity is made.
 *
 * The data and parity writes of a row are not atomic: a power cut between
 * them leaves parity that disagrees with the data (the RAID5/6 write hole,
 * ref/README.md).
 */
#include "ref/internal.h"

#include <errno.h>
#include <isa-l/raid.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_STRIPES SIM_MAX_DISKS

static int failf(char *err, size_t errlen, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -e;
}

int raid56_parity(int k, bool raid6, size_t len, uint8_t **cols)
{
	if (k == 1) { /* one data column: P is a copy of it, and so is Q (g^0 = 1) */
		memcpy(cols[1], cols[0], len);
		if (raid6)
			memcpy(cols[2], cols[0], len);
		return 0;
	}
	return raid6 ? pq_gen(k + 2, (int)len, (void **)cols) : xor_gen(k + 1, (int)len, (void **)cols);
}

/* One row: bytes [a, b) of the row's logical span (k columns of sl bytes). */
static int write_row(sim_volume *vol, const struct ref_chunk *c, uint64_t row, uint64_t a,
		     uint64_t b, const uint8_t *in, unsigned flags, raid56_verify_fn verify, void *ctx,
		     char *err, size_t errlen)
{
	bool raid6 = c->type & BTRFS_BLOCK_GROUP_RAID6;
	int n = c->num_stripes, k = n - (raid6 ? 2 : 1);
	uint64_t sl = c->stripe_len;
	/* The column offsets touched: one column's part, or all of it when the
	 * write crosses from one column into the next. */
	uint64_t lo = 0, hi = sl;
	if (a / sl == (b - 1) / sl) {
		lo = a % sl;
		hi = (b - 1) % sl + 1;
	}
	size_t len = (size_t)(hi - lo);
	uint8_t *cols[MAX_STRIPES];
	int r = 0, ncols = k + (raid6 ? 2 : 1);
	for (int j = 0; j < ncols; j++)
		if (!(cols[j] = aligned_alloc(64, (len + 63) / 64 * 64))) {
			while (j--)
				free(cols[j]);
			return failf(err, errlen, ENOMEM, "out of memory");
		}
	uint64_t phys_off = row * sl + lo;
	/* Which columns the write covers over the span, and which sit on a
	 * missing device (degraded).  When a column the write does not cover is
	 * missing, its old bytes are rebuilt from the rest of the row and its
	 * parity before the new bytes go in. */
	bool covered[MAX_STRIPES], missing[MAX_STRIPES], rebuild = false;
	for (int j = 0; j < k; j++) {
		uint64_t s = j * sl + lo, e = j * sl + hi;
		covered[j] = a <= s && b >= e;
		missing[j] = raid56_col(c, row, j)->disk < 0;
		rebuild |= missing[j] && !covered[j];
	}
	bool p_known = true, q_known = raid6;
	/* Two rounds at most: the columns read are judged, and one that is
	 * not what the file system holds turns the row into a rebuild. */
	for (int round = 0; round < 2 && !r; round++) {
		for (int j = 0; j < ncols && !r; j++) {
			const struct ref_stripe *st = raid56_col(c, row, j);
			if (j < k ? missing[j] || (!rebuild && covered[j]) : !rebuild)
				continue;
			if (st->disk < 0) { /* P or Q on the missing device */
				p_known &= j != k;
				q_known &= j != k + 1;
			} else if ((r = sim_read(vol, (unsigned)st->disk, st->physical + phys_off, cols[j], len))) {
				failf(err, errlen, -r, "RAID5/6 row %llu: reading its column %d: %s",
				      (unsigned long long)row, j, sim_volume_error(vol));
			}
		}
		if (r || !verify || rebuild)
			break;
		bool bad_col = false;
		bool *bad = calloc(len / 512 + 1, sizeof(*bad));
		if (!bad) {
			r = failf(err, errlen, ENOMEM, "out of memory");
			break;
		}
		for (int j = 0; j < k; j++) {
			if (missing[j] || covered[j])
				continue;
			memset(bad, 0, (len / 512 + 1) * sizeof(*bad));
			uint64_t logical = c->logical + row * (uint64_t)k * sl + (uint64_t)j * sl + lo;
			verify(ctx, logical, cols[j], len, bad);
			for (size_t i = 0; i < len / 512 + 1 && !missing[j]; i++)
				missing[j] = bad[i];
			bad_col |= missing[j];
		}
		free(bad);
		if (!bad_col)
			break;
		rebuild = true; /* read the rest of the row and its parity, then solve */
	}
	if (!r && rebuild &&
	    raid56_solve(k, missing, p_known, q_known, cols, cols[k], raid6 ? cols[k + 1] : NULL, (int)len))
		r = failf(err, errlen, EIO, "RAID5/6 row %llu: too many columns missing to rebuild it",
			  (unsigned long long)row);
	/* The new bytes over the old. */
	for (int j = 0; j < k && !r; j++) {
		uint64_t s = j * sl + lo, e = j * sl + hi;
		uint64_t ns = a > s ? a : s, ne = b < e ? b : e;
		if (ns < ne)
			memcpy(cols[j] + (ns - s), in + (ns - a), (size_t)(ne - ns));
	}
	if (!r && raid56_parity(k, raid6, len, cols))
		r = failf(err, errlen, EIO, "RAID5/6 row %llu: parity of %zu bytes not computed",
			  (unsigned long long)row, len);
	/* The new data, then P and Q. */
	for (int j = 0; j < ncols && !r; j++) {
		const struct ref_stripe *st = raid56_col(c, row, j);
		uint64_t s = j * sl + lo, e = j * sl + hi, from = 0, to = len;
		if (j < k && !(missing[j] && st->disk >= 0)) {
			uint64_t ns = a > s ? a : s, ne = b < e ? b : e;
			if (ns >= ne)
				continue; /* a column the write does not touch */
			from = ns - s;
			to = ne - s;
		} /* (a column found wrong and rebuilt is written back whole: mended) */
		if (st->disk < 0)
			continue; /* degraded: the others and the parity hold it */
		if ((r = sim_write(vol, (unsigned)st->disk, st->physical + phys_off + from,
					cols[j] + from, (size_t)(to - from), flags)))
			failf(err, errlen, -r, "RAID5/6 row %llu: writing its %s: %s",
			      (unsigned long long)row, j < k ? "data" : j == k ? "P" : "Q",
			      sim_volume_error(vol));
	}
	for (int j = 0; j < ncols; j++)
		free(cols[j]);
	return r;
}

int raid56_write(sim_volume *vol, const struct ref_chunk *c, uint64_t logical, const void *buf,
		 uint64_t len, unsigned flags, raid56_verify_fn verify, void *ctx, char *err,
		 size_t errlen)
{
	bool raid6 = c->type & BTRFS_BLOCK_GROUP_RAID6;
	int n = c->num_stripes, k = n - (raid6 ? 2 : 1);
	if (n > MAX_STRIPES || k < 1 || !c->stripe_len)
		return failf(err, errlen, EUCLEAN, "chunk %llu: %d stripes for %s",
			     (unsigned long long)c->logical, n, raid6 ? "RAID6" : "RAID5");
	if (logical < c->logical || len > c->length || logical - c->logical > c->length - len)
		return failf(err, errlen, EINVAL, "writing %llu bytes at %llu: outside chunk %llu",
			     (unsigned long long)len, (unsigned long long)logical,
			     (unsigned long long)c->logical);
	uint64_t rowbytes = (uint64_t)k * c->stripe_len, off = logical - c->logical;
	const uint8_t *in = buf;
	while (len) {
		uint64_t row = off / rowbytes, a = off % rowbytes;
		uint64_t b = rowbytes - a < len ? rowbytes : a + len;
		int r = write_row(vol, c, row, a, b, in, flags, verify, ctx, err, errlen);
		if (r)
			return r;
		in += b - a;
		off += b - a;
		len -= b - a;
	}
	return 0;
}
