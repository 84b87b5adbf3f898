/*
 * test_cov_fext.c - file extents that only other writers make: compressed
 * regular and inline extents (zlib, lzo, zstd), read back through ref_pread
 * whole and in slices, and judged clean by ref_check and btrfs check; then
 * each way an EXTENT_DATA item can be wrong, as the reader (EUCLEAN,
 * EOPNOTSUPP, EIO and the reason) and the checker (its error line) see it.
 *
 * The images come from mkfs.btrfs --rootdir: a file whose content is an
 * encoded stream (ref_compress, the kernel's layout) becomes a compressed
 * extent once its item says so (compression, ram_bytes, num_bytes) and its
 * inode has the decoded size; the checksums mkfs.btrfs wrote cover the
 * encoded bytes, as the kernel's do.  Skipped without mkfs.btrfs.
 */
#include "imgutil.h"
#include "testutil.h"
#include "ref/compress.h"
#include "ref/vfs.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SS 4096u
#define RAM (128u * 1024)   /* a regular compressed extent's decoded size */
#define INL 3000u           /* an inline one's */
#define FE_RAM 8            /* offsets in btrfs_file_extent_item */
#define FE_COMPRESSION 16
#define FE_ENCRYPTION 17
#define FE_TYPE 20
#define FE_DISK_BYTENR 21
#define FE_DISK_NUM 29
#define FE_OFFSET 37
#define FE_NUM 45
#define II_SIZE 16           /* in btrfs_inode_item */
#define II_NBYTES 24

static char *dir;
static char img[600];

static void setup(void)
{
	dir = tu_tmpdir();
}

static void teardown(void)
{
	iu_rmtree(dir);
	dir = NULL;
}

TestSuite(cov_fext, .init = setup, .fini = teardown);

/* Compressible data: text with a varying number in each line. */
static uint8_t *plain(size_t len, unsigned seed)
{
	uint8_t *p = malloc(len);
	size_t pos = 0;
	for (unsigned i = 0; pos < len; i++) {
		char line[80];
		int n = snprintf(line, sizeof(line), "line %u of seed %u: the quick brown fox %u\n", i,
				 seed, (i * 7919u + seed) % 1000u);
		for (int j = 0; j < n && pos < len; j++)
			p[pos++] = (uint8_t)line[j];
	}
	return p;
}

static const char *const names[] = { NULL, "zlib", "lzo", "zstd" };

static uint64_t ino_of(const char *path)
{
	struct iu_opened o = iu_open(img);
	struct ref_ino ino;
	cr_assert_eq(ref_lookup_path(o.fs, path, false, &ino), 0, "%s: %s", path, ref_error(o.fs));
	iu_close(&o);
	return ino.ino;
}

static void patch_fe64(uint64_t ino, size_t pos, uint64_t v)
{
	struct iu_item it = iu_item(img, 5, ino, BTRFS_EXTENT_DATA_KEY, 0);
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	iu_patch_item(img, &it, pos, le, 8);
}

static void patch_fe8(uint64_t ino, size_t pos, uint8_t v)
{
	struct iu_item it = iu_item(img, 5, ino, BTRFS_EXTENT_DATA_KEY, 0);
	iu_patch_item(img, &it, pos, &v, 1);
}

static void patch_inode(uint64_t ino, uint64_t size, uint64_t nbytes)
{
	struct iu_item it = iu_item(img, 5, ino, BTRFS_INODE_ITEM_KEY, 0);
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(size >> (8 * i));
	iu_patch_item(img, &it, II_SIZE, le, 8);
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(nbytes >> (8 * i));
	iu_patch_item(img, &it, II_NBYTES, le, 8);
}

/* The image: z1..z3 (regular, one type each), i1..i3 (inline), short (a
 * zlib stream of 64 KiB claimed to hold 128), big (plain 300000 bytes in a
 * regular extent), small (plain inline "hello"). */
static void make_image(void)
{
	iu_require_mkfs();
	char src[600];
	snprintf(src, sizeof(src), "%s/src", dir);
	iu_sh("mkdir -p %s", src);
	uint8_t *enc = calloc(1, 2 * RAM);
	for (unsigned t = 1; t <= 3; t++) {
		uint8_t *p = plain(RAM, t);
		ssize_t n = ref_compress(t, 0, p, RAM, enc, 2 * RAM, SS);
		cr_assert_gt(n, 0, "%s: %zd", names[t], n);
		size_t padded = (size_t)(n + SS - 1) / SS * SS;
		memset(enc + n, 0, padded - (size_t)n);
		char name[8];
		snprintf(name, sizeof(name), "z%u", t);
		iu_put(src, name, enc, padded);
		free(p);
		p = plain(INL, 10 + t);
		n = ref_compress_inline(t, 0, p, INL, enc, 2 * RAM, SS);
		cr_assert_gt(n, 0, "%s inline: %zd", names[t], n);
		snprintf(name, sizeof(name), "i%u", t);
		iu_put(src, name, enc, (size_t)n);
		free(p);
	}
	uint8_t *p = plain(RAM / 2, 99);
	ssize_t n = ref_compress(1, 0, p, RAM / 2, enc, 2 * RAM, SS);
	cr_assert_gt(n, 0);
	size_t padded = (size_t)(n + SS - 1) / SS * SS;
	memset(enc + n, 0, padded - (size_t)n);
	iu_put(src, "short", enc, padded);
	free(p);
	free(enc);
	p = tu_pat(300000, 5);
	iu_put(src, "big", p, 300000);
	free(p);
	iu_put(src, "small", "hello", 5);
	snprintf(img, sizeof(img), "%s/fs.img", dir);
	iu_mkfs(dir, img, 200, "");

	/* the items say what the data is */
	for (unsigned t = 1; t <= 3; t++) {
		char path[8];
		snprintf(path, sizeof(path), "/z%u", t);
		uint64_t ino = ino_of(path);
		patch_fe8(ino, FE_COMPRESSION, (uint8_t)t);
		patch_fe64(ino, FE_RAM, RAM);
		patch_fe64(ino, FE_NUM, RAM);
		patch_inode(ino, RAM, RAM);
		snprintf(path, sizeof(path), "/i%u", t);
		ino = ino_of(path);
		patch_fe8(ino, FE_COMPRESSION, (uint8_t)t);
		patch_fe64(ino, FE_RAM, INL);
		patch_inode(ino, INL, INL);
	}
	uint64_t ino = ino_of("/short");
	patch_fe8(ino, FE_COMPRESSION, 1);
	patch_fe64(ino, FE_RAM, RAM);
	patch_fe64(ino, FE_NUM, RAM);
	patch_inode(ino, RAM, RAM);
}

/* ref_pread of a whole file, or its errno. */
static ssize_t read_file(const char *path, uint8_t *buf, size_t len, uint64_t off, char *why,
			 size_t whylen)
{
	struct iu_opened o = iu_open(img);
	struct ref_ino ino;
	/* (a leaf the tree-checker rejects may hold the name too: the lookup
	 * fails then, as in the kernel) */
	ssize_t n = ref_lookup_path(o.fs, path, false, &ino);
	if (n == 0)
		n = ref_pread(o.fs, &ino, buf, len, off);
	if (why)
		snprintf(why, whylen, "%s", n < 0 ? ref_error(o.fs) : "");
	iu_close(&o);
	return n;
}

Test(cov_fext, compressed_extents_read_back)
{
	make_image();
	uint8_t *buf = malloc(RAM + 10);
	for (unsigned t = 1; t <= 3; t++) {
		char path[8];
		snprintf(path, sizeof(path), "/z%u", t);
		uint8_t *want = plain(RAM, t);
		cr_assert_eq(read_file(path, buf, RAM + 10, 0, NULL, 0), RAM, "%s", names[t]);
		cr_expect_eq(memcmp(buf, want, RAM), 0, "%s: regular extent decodes", names[t]);
		/* slices that start and end inside sectors */
		const uint64_t offs[] = { 1, 4095, 4096, 70000, RAM - 10 };
		for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
			size_t len = 5000;
			size_t exp = offs[i] + len > RAM ? RAM - offs[i] : len;
			cr_assert_eq(read_file(path, buf, len, offs[i], NULL, 0), (ssize_t)exp);
			cr_expect_eq(memcmp(buf, want + offs[i], exp), 0, "%s at %llu", names[t],
				     (unsigned long long)offs[i]);
		}
		free(want);

		snprintf(path, sizeof(path), "/i%u", t);
		want = plain(INL, 10 + t);
		cr_assert_eq(read_file(path, buf, RAM, 0, NULL, 0), INL, "%s inline", names[t]);
		cr_expect_eq(memcmp(buf, want, INL), 0, "%s: inline extent decodes", names[t]);
		cr_assert_eq(read_file(path, buf, 100, 2950, NULL, 0), 50);
		cr_expect_eq(memcmp(buf, want + 2950, 50), 0);
		free(want);
	}
	free(buf);
}

Test(cov_fext, compressed_image_is_clean)
{
	make_image();
	/* the stream claimed longer than it is: a reader's error, not a checker's */
	char *text = NULL;
	long e = iu_check(img, &text);
	cr_expect_eq(e, 0, "%s", text);
	free(text);
	cr_expect_eq(iu_btrfs_check(img, NULL, &text) > 0, false, "btrfs check:\n%s", text);
	free(text);
}

Test(cov_fext, compressed_read_errors)
{
	make_image();
	uint8_t *buf = malloc(RAM);
	char why[512];
	/* decodes to 64 KiB where 128 are claimed: the rest reads as zeros, as
	 * the kernel's zero_fill_bio gives it (the kernel writes such extents
	 * when the file ends inside a piece) */
	uint8_t *want = plain(RAM / 2, 99);
	cr_expect_eq(read_file("/short", buf, RAM, 0, why, sizeof(why)), RAM, "%s", why);
	cr_expect_eq(memcmp(buf, want, RAM / 2), 0);
	bool zeros = true;
	for (size_t i = RAM / 2; i < RAM; i++)
		zeros &= buf[i] == 0;
	cr_expect(zeros, "the part past the stream reads as zeros");
	cr_expect_eq(read_file("/short", buf, 1000, 1000, NULL, 0), 1000);
	cr_expect_eq(memcmp(buf, want + 1000, 1000), 0);
	free(want);
	/* a zlib stream read as lzo or zstd; an lzo one as zlib */
	patch_fe8(ino_of("/z1"), FE_COMPRESSION, 2);
	cr_expect_eq(read_file("/z1", buf, RAM, 0, why, sizeof(why)), -EIO);
	cr_expect(strstr(why, "(lzo)"), "%s", why);
	patch_fe8(ino_of("/z1"), FE_COMPRESSION, 3);
	cr_expect_eq(read_file("/z1", buf, RAM, 0, why, sizeof(why)), -EIO);
	cr_expect(strstr(why, "(zstd)"), "%s", why);
	patch_fe8(ino_of("/z2"), FE_COMPRESSION, 1);
	cr_expect_eq(read_file("/z2", buf, RAM, 0, why, sizeof(why)), -EIO);
	cr_expect(strstr(why, "(zlib)"), "%s", why);
	/* inline: a zstd frame read as zlib */
	patch_fe8(ino_of("/i3"), FE_COMPRESSION, 1);
	cr_expect_eq(read_file("/i3", buf, RAM, 0, why, sizeof(why)), -EIO);
	cr_expect(strstr(why, "inline"), "%s", why);
	free(buf);
}

/* One corruption of the first EXTENT_DATA item of `path`: the reader's
 * errno and the checker's error line. */
struct fe_case {
	const char *path;
	size_t pos;
	int width; /* 1 or 8 */
	uint64_t value;
	int read_err;
	const char *check_says; /* NULL: the checker finds nothing */
};

static void run_case(const struct fe_case *c)
{
	char saved[700];
	snprintf(saved, sizeof(saved), "%s/saved.img", dir);
	iu_sh("cp --sparse=always %s %s", img, saved);
	uint64_t ino = ino_of(c->path);
	if (c->width == 1)
		patch_fe8(ino, c->pos, (uint8_t)c->value);
	else
		patch_fe64(ino, c->pos, c->value);
	uint8_t buf[64];
	char why[512];
	ssize_t n = read_file(c->path, buf, sizeof(buf), 0, why, sizeof(why));
	if (c->read_err)
		cr_expect_eq(n, -c->read_err, "%s byte %zu = %llu: read %zd (%s)", c->path, c->pos,
			     (unsigned long long)c->value, n, why);
	cr_log_info("case %s byte %zu = %llu", c->path, c->pos, (unsigned long long)c->value);
	if (c->check_says)
		iu_expect_errors(img, c->check_says, NULL);
	else
		iu_expect_clean(img); /* a limit of the reader's own */
	iu_sh("mv %s %s", saved, img);
}

Test(cov_fext, bad_extent_items)
{
	make_image();
	const struct fe_case cases[] = {
		{ "/big", FE_COMPRESSION, 1, 9, EUCLEAN, "unknown file extent compression 9" },
		{ "/big", FE_ENCRYPTION, 1, 1, EUCLEAN, "encryption 1" }, /* (the tree-checker's) */
		{ "/big", FE_TYPE, 1, 7, EUCLEAN, "type" },
		{ "/big", FE_OFFSET, 8, 100, EUCLEAN, "not aligned to the sector size" },
		{ "/big", FE_NUM, 8, 0, EUCLEAN, "num_bytes is 0" },
		{ "/big", FE_OFFSET, 8, 1 << 20, EUCLEAN, "of an extent of ram_bytes" },
		{ "/big", FE_DISK_NUM, 8, 0, EUCLEAN, "disk_num_bytes 0" },
		{ "/big", FE_DISK_NUM, 8, 4096, 0, "of a disk extent of 4096 bytes" },
		{ "/z1", FE_TYPE, 1, BTRFS_FILE_EXTENT_PREALLOC, 0, "prealloc file extent is compressed" },
		{ "/z1", FE_RAM, 8, 1 << 20, EUCLEAN, NULL },
		{ "/big", 0, 8, 1ull << 40, 0, "generation" },
		{ "/small", FE_RAM, 8, 10, 0, "ram_bytes 10 but 5 bytes of data" },
		{ "/small", FE_RAM, 8, 0, 0, "empty inline file extent" },
		{ "/i1", FE_RAM, 8, 5000, EUCLEAN, "more than the sector size" },
		{ "/small", FE_COMPRESSION, 1, 4, EUCLEAN, "unknown file extent compression 4" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
}
