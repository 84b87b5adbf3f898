/*
 * corrupt_sweep.c - corrupts every tree block of an image in turn and runs
 * the reader and checker over each result, under ASan+UBSan in `make test`.
 *
 * For each tree block (found through the extent tree's metadata items) and a
 * set of byte positions (header fields, first item, middle, last byte):
 *   - the byte flipped in copy 0 only, checksum left wrong: with a second copy
 *     (DUP, RAID1) the file system must read exactly as before, the bad copy
 *     reported; with one copy the damage must be detected (open fails, check
 *     reports errors, or a read fails), never served as data;
 *   - the byte flipped in every copy with the checksum fixed up: anything may
 *     be reported, but nothing may crash, hang or trip a sanitizer.
 * Then the same for bytes of the superblock (geometry, roots, levels, the
 * sys_chunk_array that maps the chunk tree), changed in every copy with the
 * checksum fixed up: nothing may crash, hang or trip a sanitizer.
 * Each case works on an O(1) copy-on-write clone of the image in memory.
 *
 * usage: corrupt-sweep IMG [--positions N]
 * Prints one line per failed expectation and "N passed, N failed".
 */
#include "ref/csum.h"
#include "ref/ref.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct outcome {
	bool opened;
	long check_errors; /* -1: check could not run */
	long read_errors;
	uint64_t repaired;
	uint64_t digest; /* of every file's data and the listing */
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(0x100000001b3);
	return h;
}

struct walk {
	ref_fs *fs;
	struct outcome *o;
	uint8_t *buf;
	int depth;
};

static int visit(void *ctx, const struct ref_dirent *de);

static void walk_dir(struct walk *w, const struct ref_ino *dir)
{
	if (w->depth > 64)
		return;
	w->depth++;
	if (ref_readdir(w->fs, dir, visit, w))
		w->o->read_errors++;
	w->depth--;
}

static int visit(void *ctx, const struct ref_dirent *de)
{
	struct walk *w = ctx;
	w->o->digest = mix(w->o->digest, de->name, de->len);
	struct ref_stat st;
	if (ref_stat(w->fs, &de->ino, &st)) {
		w->o->read_errors++;
		return 0;
	}
	if (S_ISDIR(st.mode)) {
		walk_dir(w, &de->ino);
	} else if (S_ISREG(st.mode) || S_ISLNK(st.mode)) {
		/* At most 16 MiB a file, so a corrupt size cannot make this slow. */
		for (uint64_t off = 0; off < st.size && off < (16u << 20);) {
			ssize_t n = ref_pread(w->fs, &de->ino, w->buf, 1u << 20, off);
			if (n <= 0) {
				w->o->read_errors += n < 0;
				break;
			}
			w->o->digest = mix(w->o->digest, w->buf, (size_t)n);
			off += (uint64_t)n;
		}
	}
	return 0;
}

static struct outcome run(sim_volume *vol, FILE *devnull)
{
	struct outcome o = { .check_errors = -1, .digest = 1469598103934665603u };
	struct ref_open_opts oo = { .super_mirror = -1, .log = devnull };
	ref_fs *fs;
	char err[256];
	if (ref_open(vol, &oo, &fs, err, sizeof(err)))
		return o;
	o.opened = true;
	struct ref_check_opts co = { .out = devnull };
	o.check_errors = ref_check(fs, &co);
	struct walk w = { fs, &o, malloc(1u << 20), 0 };
	struct ref_ino top;
	if (w.buf && ref_subvol_root(fs, 5, &top) == 0)
		walk_dir(&w, &top);
	else
		o.read_errors++;
	free(w.buf);
	uint64_t bad;
	ref_read_stats(fs, &o.repaired, &bad);
	ref_close(fs);
	return o;
}

/* Every tree block: the extent tree's METADATA_ITEMs (and tree-block EXTENT_ITEMs). */
static size_t list_blocks(ref_fs *fs, uint64_t **out)
{
	struct ref_root root;
	size_t n = 0, cap = 0;
	*out = NULL;
	if (ref_find_root(fs, 2, &root))
		return 0;
	struct ref_path path;
	struct ref_key key = { 0, 0, 0 };
	int r = ref_search(fs, &root, &key, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		bool tree_block = k.type == BTRFS_METADATA_ITEM_KEY ||
				  (k.type == BTRFS_EXTENT_ITEM_KEY && size >= 24 &&
				   (le64(data + 16) & BTRFS_EXTENT_FLAG_TREE_BLOCK));
		if (tree_block) {
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				uint64_t *p = realloc(*out, cap * sizeof(*p));
				if (!p)
					break;
				*out = p;
			}
			(*out)[n++] = k.objectid;
		}
		r = ref_next(fs, &path);
	}
	ref_path_release(fs, &path);
	return n;
}

struct img {
	unsigned csum_type;
	uint32_t nodesize;
};

/* Flips byte pos of the block in copies [0, ncopies), fixing checksums if asked. */
static int corrupt(sim_volume *vol, const struct ref_phys *copies, int ncopies, const struct img *im,
		   uint32_t pos, bool fixup)
{
	uint8_t *b = malloc(im->nodesize);
	if (!b)
		return -ENOMEM;
	int r = 0;
	for (int c = 0; c < ncopies && !r; c++) {
		if (copies[c].disk < 0)
			continue;
		unsigned d = (unsigned)copies[c].disk;
		r = sim_read(vol, d, copies[c].physical, b, im->nodesize);
		if (r)
			break;
		b[pos] ^= 0x5a;
		if (fixup) {
			uint8_t sum[32];
			ref_csum(im->csum_type, b + 32, im->nodesize - 32, sum);
			memcpy(b, sum, ref_csum_size(im->csum_type));
		}
		r = sim_write(vol, d, copies[c].physical, b, im->nodesize, SIM_FUA);
	}
	free(b);
	return r;
}

/* Flips byte pos of every superblock copy on every disk, checksums fixed up. */
static int corrupt_super(sim_volume *vol, uint32_t pos)
{
	struct btrfs_super_disk sb;
	for (unsigned d = 0; d < sim_volume_ndisks(vol); d++) {
		for (int m = 0; m < BTRFS_SUPER_MIRRORS; m++) {
			uint64_t off = btrfs_super_offset(m);
			if (off + sizeof(sb) > sim_disk_size(vol, d))
				continue;
			int r = sim_read(vol, d, off, &sb, sizeof(sb));
			if (r)
				return r;
			((uint8_t *)&sb)[pos] ^= 0x5a;
			unsigned type = LE16(sb.csum_type);
			if (ref_csum_size(type))
				ref_csum(type, (uint8_t *)&sb + 32, sizeof(sb) - 32, sb.csum);
			if ((r = sim_write(vol, d, off, &sb, sizeof(sb), SIM_FUA)))
				return r;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: corrupt-sweep IMG...\n");
		return 2;
	}
	struct sim_volume_config cfg;
	sim_config_init(&cfg, (unsigned)(argc - 1), 0, 0);
	for (int i = 1; i < argc; i++) {
		cfg.disk[i - 1].image_path = argv[i];
		cfg.disk[i - 1].size = 0;
		cfg.disk[i - 1].read_only = true;
	}
	char err[256];
	sim_volume *file, *base;
	if (sim_volume_open(&cfg, &file, err, sizeof(err)) || sim_volume_clone(file, &base)) {
		fprintf(stderr, "corrupt-sweep: %s\n", err);
		return 1;
	}
	sim_volume_close(file);
	FILE *devnull = fopen("/dev/null", "w");
	struct ref_open_opts oo = { .super_mirror = -1, .log = devnull };
	ref_fs *fs;
	if (!devnull || ref_open(base, &oo, &fs, err, sizeof(err))) {
		fprintf(stderr, "corrupt-sweep: %s\n", err);
		return 1;
	}
	struct img im = { LE16(ref_super(fs)->csum_type), LE32(ref_super(fs)->nodesize) };
	uint64_t *blocks;
	size_t nblocks = list_blocks(fs, &blocks);
	struct ref_phys (*maps)[4] = calloc(nblocks + 1, sizeof(*maps));
	int *ncopies = calloc(nblocks + 1, sizeof(*ncopies));
	for (size_t i = 0; maps && ncopies && i < nblocks; i++) {
		uint64_t run_len;
		ncopies[i] = ref_map(fs, blocks[i], maps[i], 4, &run_len);
	}
	ref_close(fs);
	struct outcome clean = run(base, devnull);
	unsigned passed = 0, failed = 0;
	if (!clean.opened || clean.check_errors != 0 || clean.read_errors) {
		printf("FAIL the image itself is not clean (check errors %ld, read errors %ld)\n",
		       clean.check_errors, clean.read_errors);
		failed++;
	}
	/* Header: csum, fsid, bytenr, flags, generation, owner, nritems, level; then items. */
	const uint32_t positions[] = { 0, 33, 48, 60, 80, 88, 96, 100, 101, 118, 122, 2000,
				       im.nodesize / 2, im.nodesize - 1 };
	for (size_t i = 0; i < nblocks && maps && ncopies; i++) {
		for (size_t p = 0; p < sizeof(positions) / sizeof(positions[0]); p++) {
			for (int fixup = 0; fixup < 2; fixup++) {
				sim_volume *c;
				if (sim_volume_clone(base, &c))
					return 1;
				int n = fixup ? ncopies[i] : 1;
				if (corrupt(c, maps[i], n, &im, positions[p], fixup)) {
					printf("FAIL block %llu: cannot corrupt: %s\n",
					       (unsigned long long)blocks[i], sim_volume_error(c));
					failed++;
					sim_volume_close(c);
					continue;
				}
				struct outcome o = run(c, devnull);
				sim_volume_close(c);
				bool ok = true;
				const char *want = "";
				if (!fixup && ncopies[i] > 1) {
					ok = o.opened && o.check_errors == 0 && o.read_errors == 0 &&
					     o.digest == clean.digest && o.repaired > 0;
					want = "served from the good copy, reported";
				} else if (!fixup) {
					ok = !o.opened || o.check_errors != 0 || o.read_errors != 0;
					want = "detected";
				}
				if (ok) {
					passed++;
				} else {
					failed++;
					printf("FAIL block %llu byte %u %s: expected %s (opened %d, check errors %ld, read errors %ld, repaired %llu)\n",
					       (unsigned long long)blocks[i], positions[p],
					       fixup ? "checksum fixed" : "checksum left bad", want, o.opened,
					       o.check_errors, o.read_errors, (unsigned long long)o.repaired);
				}
			}
		}
	}
	/* Superblock: bytenr, flags, generation, roots, sizes, device count, geometry,
	 * sys_chunk_array_size, csum type, levels, dev_item, and the sys_chunk_array
	 * (key, length, stripe_len, type, num_stripes, sub_stripes, stripe devid and offset). */
	const uint32_t super_pos[] = { 0x30, 0x38, 0x48, 0x50, 0x58, 0x70, 0x88, 0x90, 0x94, 0x9c,
				       0xa0, 0xc4, 0xc6, 0xc7, 0xc9, 0x32b, 0x333, 0x334, 0x33c,
				       0x344, 0x34c, 0x354, 0x368, 0x36a, 0x36c, 0x374, 0x37c };
	unsigned super_cases = 0;
	for (size_t p = 0; p < sizeof(super_pos) / sizeof(super_pos[0]); p++) {
		sim_volume *c;
		if (sim_volume_clone(base, &c))
			return 1;
		if (corrupt_super(c, super_pos[p])) {
			printf("FAIL superblock byte %#x: cannot corrupt: %s\n", super_pos[p],
			       sim_volume_error(c));
			failed++;
		} else {
			run(c, devnull); /* whatever it finds, it must not crash */
			passed++;
			super_cases++;
		}
		sim_volume_close(c);
	}
	printf("corrupt-sweep: %zu tree blocks, %u superblock bytes\n%u passed, %u failed\n", nblocks,
	       super_cases, passed, failed);
	free(blocks);
	free(maps);
	free(ncopies);
	fclose(devnull);
	sim_volume_close(base);
	return failed ? 1 : 0;
}
