/*
 * manifest-hash.c - the content digest of `btrsim manifest`: sha256 over the
 * file's 4 KiB blocks that are not all zeros, each preceded by its offset
 * (64-bit little-endian), then the size.  Holes, preallocated ranges and
 * written zeros read alike, so they hash alike; and a walker that knows where
 * the holes are (SEEK_DATA) need not read them: a 1 GiB sparse file costs
 * what its data costs.
 */
#include "traces/manifest.h"

#include <endian.h>
#include <string.h>

static bool all_zero(const unsigned char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && !memcmp(p, p + 1, n - 1));
}

static void block_done(struct mf_hash *h)
{
	if (!all_zero(h->block, MF_BLOCK)) {
		uint64_t at = htole64(h->pos - MF_BLOCK);
		crypto_hash_sha256_update(&h->st, (const unsigned char *)&at, sizeof(at));
		crypto_hash_sha256_update(&h->st, h->block, MF_BLOCK);
	}
}

void mf_hash_init(struct mf_hash *h)
{
	crypto_hash_sha256_init(&h->st);
	h->pos = 0;
	memset(h->block, 0, MF_BLOCK);
}

/* Adds n bytes (NULL: n zero bytes) at the current position. */
static void feed(struct mf_hash *h, const unsigned char *p, uint64_t n)
{
	while (n) {
		size_t in = (size_t)(h->pos % MF_BLOCK);
		size_t take = MF_BLOCK - in < n ? MF_BLOCK - in : (size_t)n;
		if (in == 0 && take == MF_BLOCK && (!p || all_zero(p, MF_BLOCK))) {
			h->pos += MF_BLOCK; /* a whole zero block adds nothing */
		} else {
			if (p)
				memcpy(h->block + in, p, take);
			else
				memset(h->block + in, 0, take);
			h->pos += take;
			if (h->pos % MF_BLOCK == 0) {
				block_done(h);
				memset(h->block, 0, MF_BLOCK);
			}
		}
		if (p)
			p += take;
		n -= take;
		if (!p && n >= MF_BLOCK && h->pos % MF_BLOCK == 0) { /* skip zero blocks wholesale */
			uint64_t blocks = n / MF_BLOCK;
			h->pos += blocks * MF_BLOCK;
			n -= blocks * MF_BLOCK;
		}
	}
}

void mf_hash_data(struct mf_hash *h, const unsigned char *p, size_t n)
{
	feed(h, p, n);
}

void mf_hash_zeros(struct mf_hash *h, uint64_t n)
{
	feed(h, NULL, n);
}

void mf_hash_final(struct mf_hash *h, unsigned char out[crypto_hash_sha256_BYTES])
{
	uint64_t size = h->pos;
	if (size % MF_BLOCK) { /* the last partial block, zero-padded */
		uint64_t pad = MF_BLOCK - size % MF_BLOCK;
		h->pos += pad;
		block_done(h);
	}
	uint64_t le = htole64(size);
	crypto_hash_sha256_update(&h->st, (const unsigned char *)&le, sizeof(le));
	crypto_hash_sha256_final(&h->st, out);
}
