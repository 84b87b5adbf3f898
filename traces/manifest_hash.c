/*
 * manifest-hash.c - the content digest of `btrsim manifest`: sha256 over the
 * file's 4 KiB blocks that are not all zeros, each preceded by its offset
 * (64-bit little-endian), then the size.  Holes, preallocated ranges and
 * written zeros read alike, so they hash alike; and a walker that knows where
 * the holes are (SEEK_DATA) need not read them: a 1 GiB sparse file costs
 * what its data costs.
 *
 * Crash exploration describes every crash state, and the states of one
 * workload hold the same files again and again: the stream sha256 is to
 * take is kept (up to KEEP_MAX bytes) and looked up by its XXH3-128, some
 * twenty times cheaper, in a table of digests already computed; only a
 * stream not seen before is given to sha256.
 */
#include "traces/manifest.h"

#include <endian.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define KEEP_MAX (2u << 20)
#define SEEN_BITS 14 /* digests remembered: direct-mapped by key */

static struct seen {
	XXH128_hash_t key;
	unsigned char digest[DG_SHA256_BYTES];
	bool used;
} seen[1u << SEEN_BITS];
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

/* The stream's next bytes: kept, or given to sha256 once it is too large. */
static void emit(struct mf_hash *h, const unsigned char *p, size_t n)
{
	if (!h->streaming && h->len + n > h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 65536;
		while (cap < h->len + n)
			cap *= 2;
		unsigned char *b = cap <= KEEP_MAX ? realloc(h->buf, cap) : NULL;
		if (!b) { /* too large (or no memory): sha256 from here on */
			dg_sha256_update(&h->st, h->buf, h->len);
			free(h->buf);
			h->buf = NULL;
			h->len = h->cap = 0;
			h->streaming = true;
		} else {
			h->buf = b;
			h->cap = cap;
		}
	}
	if (h->streaming) {
		dg_sha256_update(&h->st, p, n);
		return;
	}
	memcpy(h->buf + h->len, p, n);
	h->len += n;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && !memcmp(p, p + 1, n - 1));
}

static void block_done(struct mf_hash *h)
{
	if (!all_zero(h->block, MF_BLOCK)) {
		uint64_t at = htole64(h->pos - MF_BLOCK);
		emit(h, (const unsigned char *)&at, sizeof(at));
		emit(h, h->block, MF_BLOCK);
	}
}

void mf_hash_init(struct mf_hash *h)
{
	dg_sha256_init(&h->st);
	h->pos = 0;
	memset(h->block, 0, MF_BLOCK);
	h->buf = NULL;
	h->len = h->cap = 0;
	h->streaming = false;
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
	emit(h, (const unsigned char *)&le, sizeof(le));
	if (h->streaming) {
		dg_sha256_final(&h->st, out);
		return;
	}
	XXH128_hash_t key = XXH3_128bits(h->buf, h->len);
	struct seen *e = &seen[key.low64 & ((1u << SEEN_BITS) - 1)];
	pthread_mutex_lock(&seen_lock);
	bool hit = e->used && e->key.low64 == key.low64 && e->key.high64 == key.high64;
	if (hit)
		memcpy(out, e->digest, DG_SHA256_BYTES);
	pthread_mutex_unlock(&seen_lock);
	if (!hit) {
		dg_sha256_update(&h->st, h->buf, h->len);
		dg_sha256_final(&h->st, out);
		pthread_mutex_lock(&seen_lock);
		e->key = key;
		memcpy(e->digest, out, DG_SHA256_BYTES);
		e->used = true;
		pthread_mutex_unlock(&seen_lock);
	}
	mf_hash_drop(h);
}

void mf_hash_drop(struct mf_hash *h)
{
	free(h->buf);
	h->buf = NULL;
	h->len = h->cap = 0;
}
