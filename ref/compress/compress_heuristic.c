/*
 * compress_heuristic.c - whether a range is worth trying to compress, decided
 * as the kernel's btrfs_compress_heuristic (fs/btrfs/compression.c) decides
 * it, so that ref compresses the same ranges as Linux 6.18 does with
 * compress=ALG (compress-force, a defrag with -c and never-compressed inodes
 * do not ask).  A "no" here leaves the range uncompressed without marking
 * the inode NOCOMPRESS; only a compression that fails to save a sector does
 * that (compress_write.c).
 *
 * The kernel samples 16 bytes every 256 bytes of the first 128 KiB and says
 * yes when the sample's two halves are equal, when fewer than 64 byte values
 * occur, when the 90% core of the sample needs at most 64 values, or when an
 * integer estimate of the Shannon entropy stays under 80% of 8 bits per
 * byte; no when the core needs 200 values or more, or the entropy is higher.
 * Everything is integer arithmetic, mirrored here step by step, quirks
 * included (a sample whose every byte value occurs at most once is left
 * unsorted by the kernel's radix sort, and its core and entropy are counted
 * in byte-value order).
 */
#include "ref/compress/compress_int.h"

#include <stdlib.h>
#include <string.h>

#define SAMPLING_READ_SIZE 16
#define SAMPLING_INTERVAL 256
#define MAX_SAMPLE_SIZE (REF_COMPRESS_MAX_RAM * SAMPLING_READ_SIZE / SAMPLING_INTERVAL)
#define BUCKET_SIZE 256
#define BYTE_SET_THRESHOLD 64
#define BYTE_CORE_SET_LOW 64
#define BYTE_CORE_SET_HIGH 200
#define ENTROPY_LVL_ACCEPTABLE 65
#define ENTROPY_LVL_HIGH 80
#define PAGE 4096u

static unsigned ilog2_u64(uint64_t v)
{
	unsigned r = 0;
	while (v >>= 1)
		r++;
	return r;
}

/* The kernel's ilog2_w: log2 of n^4, so that the logarithms keep two more
 * bits of precision in integers. */
static unsigned ilog2_w(uint64_t n)
{
	return ilog2_u64(n * n * n * n);
}

static int by_count_desc(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* heuristic_collect_sample over [0, len) of data, which starts at a sector
 * boundary: 16 bytes at every multiple of 256 whose 16 bytes end at least
 * one byte before the range's last byte (the kernel's `start > end - 16`,
 * end inclusive, clipped to 128 KiB). */
static size_t collect(const uint8_t *data, uint64_t len, uint8_t *sample)
{
	uint64_t end = len - 1;
	if (end > REF_COMPRESS_MAX_RAM)
		end = REF_COMPRESS_MAX_RAM;
	uint64_t pages = end / PAGE + (end % PAGE ? 1 : 0);
	size_t n = 0;
	for (uint64_t pg = 0; pg < pages; pg++)
		for (uint64_t i = 0; i < PAGE - SAMPLING_READ_SIZE; i += SAMPLING_INTERVAL) {
			uint64_t at = pg * PAGE + i;
			if (at + SAMPLING_READ_SIZE > end)
				break;
			memcpy(sample + n, data + at, SAMPLING_READ_SIZE);
			n += SAMPLING_READ_SIZE;
		}
	return n;
}

bool cw_heuristic(const uint8_t *data, uint64_t len)
{
	if (len == 0)
		return true;
	uint8_t *sample = malloc(MAX_SAMPLE_SIZE);
	if (!sample) /* the kernel's workspace never fails; trying costs only time */
		return true;
	size_t size = collect(data, len, sample);
	/* sample_repeated_patterns (an empty sample counts as repeated) */
	if (memcmp(sample, sample + size / 2, size / 2) == 0) {
		free(sample);
		return true;
	}
	uint32_t bucket[BUCKET_SIZE] = { 0 };
	for (size_t i = 0; i < size; i++)
		bucket[sample[i]]++;
	free(sample);
	/* byte_set_size */
	unsigned set = 0;
	uint32_t max = 0;
	for (unsigned i = 0; i < BUCKET_SIZE; i++) {
		set += bucket[i] > 0;
		if (bucket[i] > max)
			max = bucket[i];
	}
	if (set < BYTE_SET_THRESHOLD)
		return true;
	/* byte_core_set_size, after the kernel's radix sort into descending
	 * counts (which sorts nothing when no count exceeds 1) */
	if (max > 1)
		qsort(bucket, BUCKET_SIZE, sizeof(bucket[0]), by_count_desc);
	uint32_t threshold = (uint32_t)(size * 90 / 100), sum = 0;
	unsigned i;
	for (i = 0; i < BYTE_CORE_SET_LOW; i++)
		sum += bucket[i];
	if (sum <= threshold)
		for (; i < BYTE_CORE_SET_HIGH && bucket[i] > 0; i++) {
			sum += bucket[i];
			if (sum > threshold)
				break;
		}
	if (i <= BYTE_CORE_SET_LOW)
		return true;
	if (i >= BYTE_CORE_SET_HIGH)
		return false;
	/* shannon_entropy, in the kernel's u32 arithmetic */
	uint32_t sz_base = ilog2_w(size), entropy = 0;
	for (unsigned b = 0; b < BUCKET_SIZE && bucket[b] > 0; b++)
		entropy += bucket[b] * (sz_base - ilog2_w(bucket[b]));
	entropy /= (uint32_t)size;
	uint32_t level = entropy * 100 / (8 * ilog2_w(2));
	return level <= ENTROPY_LVL_ACCEPTABLE || level < ENTROPY_LVL_HIGH;
}
