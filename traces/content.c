/*
 * content.c - the data a workload's `write` writes (wl_content): a function
 * of (seed, file offset) alone, 8 bytes per splitmix64 finaliser call, stored
 * little-endian whatever the machine.  The formula is frozen: traces recorded
 * today must replay against the same bytes tomorrow (test_workload.c pins
 * reference values).
 */
#include "workload.h"

#include <endian.h>
#include <string.h>

#define GOLDEN UINT64_C(0x9e3779b97f4a7c15)

static inline uint64_t fmix(uint64_t x)
{
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* The 8 bytes at file offset 8 * idx. */
static inline uint64_t word(uint64_t key, uint64_t idx)
{
	return htole64(fmix((idx * GOLDEN) ^ key));
}

/* Text data: byte o is one of 16 letters, chosen by byte (o % 64) / 8 of
 * word(o / 64) with key mix(seed + G): runs of 8 equal letters. */
void wl_text_content(uint64_t seed, uint64_t off, void *buf, size_t len)
{
	static const char letters[] = "etaoinshrdlucmfw";
	const uint64_t key = fmix(seed + GOLDEN);
	unsigned char *p = buf;
	for (size_t i = 0; i < len; i++) {
		uint64_t o = off + i, w = le64toh(word(key, o / 64));
		p[i] = (unsigned char)letters[(w >> ((o % 64) / 8 * 8)) & 15];
	}
}

void wl_write_content(uint64_t seed, int flags, uint64_t off, void *buf, size_t len)
{
	if (flags & WL_WRITE_TEXT)
		wl_text_content(seed, off, buf, len);
	else
		wl_content(seed, off, buf, len);
}

void wl_content(uint64_t seed, uint64_t off, void *buf, size_t len)
{
	const uint64_t key = fmix(seed + GOLDEN);
	unsigned char *p = buf;
	uint64_t idx = off / 8;
	size_t skip = off % 8;
	if (skip && len) { /* head: the end of a word */
		uint64_t w = word(key, idx++);
		size_t n = len < 8 - skip ? len : 8 - skip;
		memcpy(p, (unsigned char *)&w + skip, n);
		p += n;
		len -= n;
	}
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t w = word(key, idx++);
		memcpy(p, &w, 8);
	}
	if (len) { /* tail: the start of a word */
		uint64_t w = word(key, idx);
		memcpy(p, &w, len);
	}
}
