/*
 * raid56.c - rebuilding a RAID5/6 data stripe from the rest of its row, for
 * degraded reads and for reads whose checksum failed.  Parity follows the
 * kernel's layout: in row r of a chunk with k data stripes over n devices, data
 * stripe j is on device (r + j) % n, P on (r + k) % n, Q on (r + k + 1) % n;
 * P is the XOR of the data, Q = sum of g^j * D_j in GF(2^8) (polynomial 0x11d,
 * g = 2), as Linux's raid6 library computes it.  The arithmetic is ISA-L's.
 *
 * Mirror numbers, as the kernel counts copies: 1 rebuilds the stripe from the
 * others and P; 2 (RAID6) rebuilds it without P, from Q.
 */
#include "ref/internal.h"

#include <errno.h>
#include <isa-l/erasure_code.h>
#include <stdlib.h>

#define MAX_STRIPES 32

int raid56_solve(int k, const bool *data_unknown, bool p_known, bool q_known, uint8_t **data,
		 uint8_t *p, uint8_t *q, int len)
{
	/* Rows of the code: e_j for data j, all ones for P, g^j for Q. */
	unsigned char rows[MAX_STRIPES][MAX_STRIPES], pick[MAX_STRIPES * MAX_STRIPES];
	unsigned char inv[MAX_STRIPES * MAX_STRIPES];
	uint8_t *src[MAX_STRIPES];
	int nrows = 0;
	for (int j = 0; j < k && nrows < k; j++) {
		if (data_unknown[j])
			continue;
		memset(rows[nrows], 0, (size_t)k);
		rows[nrows][j] = 1;
		src[nrows++] = data[j];
	}
	if (p_known && nrows < k) {
		memset(rows[nrows], 1, (size_t)k);
		src[nrows++] = p;
	}
	if (q_known && nrows < k) {
		unsigned char g = 1;
		for (int j = 0; j < k; j++) {
			rows[nrows][j] = g;
			g = gf_mul(g, 2);
		}
		src[nrows++] = q;
	}
	if (nrows < k)
		return -EIO;
	for (int i = 0; i < k; i++)
		memcpy(pick + i * k, rows[i], (size_t)k);
	if (gf_invert_matrix(pick, inv, k))
		return -EIO;
	/* Each unknown data stripe is one row of the inverse applied to the sources. */
	unsigned char coef[MAX_STRIPES * MAX_STRIPES];
	uint8_t *dst[MAX_STRIPES];
	int nout = 0;
	for (int j = 0; j < k; j++) {
		if (!data_unknown[j])
			continue;
		memcpy(coef + nout * k, inv + j * k, (size_t)k);
		dst[nout++] = data[j];
	}
	unsigned char *tbls = malloc((size_t)32 * k * nout);
	if (!tbls)
		return -ENOMEM;
	ec_init_tables(k, nout, coef, tbls);
	ec_encode_data(len, k, nout, tbls, src, dst);
	free(tbls);
	return 0;
}

int raid56_rebuild(ref_fs *fs, const struct ref_chunk *c, uint64_t logical, uint8_t *out,
		   uint64_t len, int mirror)
{
	bool raid6 = c->type & BTRFS_BLOCK_GROUP_RAID6;
	int n = c->num_stripes, k = n - (raid6 ? 2 : 1);
	if (n > MAX_STRIPES || mirror < 1 || mirror > (raid6 ? 2 : 1))
		return ref_fail(fs, EIO, "logical %llu: no copy %d", (unsigned long long)logical, mirror);
	uint64_t off = logical - c->logical, sl = c->stripe_len;
	uint64_t stripe_nr = off / sl, row = stripe_nr / (uint64_t)k;
	int target = (int)(stripe_nr % (uint64_t)k);
	uint64_t phys_off = row * sl + off % sl;
	uint8_t *bufs[MAX_STRIPES + 2];
	bool unknown[MAX_STRIPES] = { false };
	int r = 0, nunknown = 0;
	/* Data stripes 0..k-1, then P, then Q. */
	for (int j = 0; j < n && !r; j++) {
		bufs[j] = aligned_alloc(64, (len + 63) / 64 * 64);
		if (!bufs[j]) {
			while (j--)
				free(bufs[j]);
			return ref_fail(fs, ENOMEM, "out of memory");
		}
	}
	bool p_known = true, q_known = raid6;
	for (int j = 0; j < n; j++) {
		int dev = (int)((row + (uint64_t)j) % (uint64_t)n);
		const struct ref_stripe *st = &c->stripes[dev];
		bool skip = j == target || (j == k && mirror == 2);
		bool ok = !skip && st->disk >= 0 &&
			  sim_read(fs->vol, (unsigned)st->disk, st->physical + phys_off, bufs[j], len) == 0;
		if (ok)
			continue;
		if (j < k) {
			unknown[j] = true;
			nunknown++;
		} else if (j == k) {
			p_known = false;
		} else {
			q_known = false;
		}
	}
	int known_parity = p_known + q_known;
	if (nunknown > known_parity)
		r = ref_fail(fs, EIO, "logical %llu: %d stripes of its row are lost, parity covers %d",
			     (unsigned long long)logical, nunknown, known_parity);
	else if (raid56_solve(k, unknown, p_known, q_known, bufs, bufs[k], raid6 ? bufs[k + 1] : NULL,
		       (int)len))
		r = ref_fail(fs, EIO, "logical %llu: parity equations have no solution",
			     (unsigned long long)logical);
	else
		memcpy(out, bufs[target], len);
	for (int j = 0; j < n; j++)
		free(bufs[j]);
	return r;
}
