/*
 * test_print_garbage.c - the dump-tree/dump-super printers on random bytes:
 * every item type on random data of every small size, whole tree blocks with
 * random headers and item tables, random superblocks.  None may read outside
 * what it is given (ASan watches), and each prints something.  The read path
 * never hands them unvalidated blocks, but dump tools are where people look at
 * broken images.  Seeded: the same bytes every run.
 */
#include "ref/print.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x6a09e667f3bcc908u;

static uint64_t next(void)
{
	uint64_t x = rng_state += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)next();
}

/* A memory stream that counts what was printed. */
static FILE *sink(char **buf, size_t *len)
{
	FILE *f = open_memstream(buf, len);
	cr_assert(f);
	return f;
}

static const struct ref_print_ctx ctx = { .csum_type = 0, .sectorsize = 4096, .nodesize = 16384 };

Test(print_garbage, every_item_type_on_random_data, .init = cr_redirect_stderr)
{
	/* Each item gets its own exactly-sized heap buffer, so ASan sees any overread. */
	for (unsigned type = 0; type < 256; type++) {
		for (uint32_t size = 0; size <= 600; size += (size < 64 ? 1 : 37)) {
			uint8_t *data = malloc(size ? size : 1);
			cr_assert(data);
			fill(data, size);
			struct ref_key key = { next() % 1024, (uint8_t)type, next() };
			char *buf = NULL;
			size_t len = 0;
			FILE *f = sink(&buf, &len);
			ref_print_item_body(f, &ctx, &key, data, size);
			fclose(f);
			free(buf);
			free(data);
		}
	}
}

Test(print_garbage, random_tree_blocks, .init = cr_redirect_stderr)
{
	uint8_t *blk = malloc(ctx.nodesize);
	cr_assert(blk);
	for (int round = 0; round < 3000; round++) {
		fill(blk, ctx.nodesize);
		struct btrfs_header_disk *h = (void *)blk;
		h->level = (uint8_t)(next() % 3 == 0 ? next() % 8 : 0);
		/* Item counts from plausible to absurd. */
		uint32_t n = (uint32_t)(round % 3 == 0 ? next() : next() % 700);
		h->nritems = htole32(n);
		if (round % 2 == 0 && h->level == 0) {
			/* Plausible offsets but random sizes: items that run past the block. */
			uint32_t cap = n < 600 ? n : 600;
			for (uint32_t i = 0; i < cap; i++) {
				struct btrfs_item_disk *it =
					(void *)(blk + sizeof(*h) + (size_t)i * sizeof(*it));
				it->offset = htole32((uint32_t)(next() % ctx.nodesize));
				it->size = htole32((uint32_t)(next() % 2048));
			}
		}
		char *buf = NULL;
		size_t len = 0;
		FILE *f = sink(&buf, &len);
		ref_print_block(f, &ctx, blk);
		fclose(f);
		cr_assert_gt(len, 0, "round %d printed nothing", round);
		free(buf);
	}
	free(blk);
}

Test(print_garbage, random_superblocks, .init = cr_redirect_stderr)
{
	struct btrfs_super_disk *sb = malloc(sizeof(*sb));
	cr_assert(sb);
	for (int round = 0; round < 2000; round++) {
		fill((uint8_t *)sb, sizeof(*sb));
		if (round % 2)
			sb->magic = htole64(BTRFS_MAGIC_VALUE);
		if (round % 3 == 0) /* a sys_chunk_array size within or past its bounds */
			sb->sys_chunk_array_size = htole32((uint32_t)(next() % 4096));
		char *buf = NULL;
		size_t len = 0;
		FILE *f = sink(&buf, &len);
		ref_print_super(f, sb, 65536, "random.img", true);
		fclose(f);
		cr_assert_gt(len, 0);
		free(buf);
	}
	free(sb);
}
