/*
 * test_model.c - the oracle's model of the POSIX state (traces/model.c):
 * each operation changes the description as Linux would (exact lines), a
 * failed operation changes nothing, a successful one the model cannot apply
 * is reported, clones are independent, sparse writes far out cost nothing,
 * the content digest equals one computed here from first principles, hard
 * links share data, symlinks are followed where Linux follows them, the
 * digest equals manifest's mf_hash.  The cross-checks run workloads on the
 * host and compare the model with `btrsim manifest --host` ($BTRSIM, default
 * build/debug/btrsim): on a btrfs made and loop-mounted by the test (as
 * root; skipped otherwise) a generated workload and a fixed one of corners,
 * and on a directory under $TMPDIR (as root) a generated one with the
 * directories' NLINK and SIZE left out.  MODEL_XCHECK_SEEDS ("1") and
 * MODEL_XCHECK_OPS (500) make the btrfs cross-check a longer campaign;
 * MODEL_XCHECK_VERBOSE logs every op with the kernel's result.
 */
#include "traces/manifest.h"
#include "traces/model.h"
#include "traces/run.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(model);

/* ---- Helpers --------------------------------------------------------------- */

/* Applies every line of text, each with the result its "= ERRNO" gives (none:
 * success), asserting that the model takes it. */
static void run(struct model *m, const char *text)
{
	struct wl_workload w = { 0 };
	char err[512];
	int r = wl_parse_text("t", text, strlen(text), &w, err, sizeof(err));
	cr_assert_eq(r, 0, "%s: %s", text, err);
	for (size_t i = 0; i < w.n; i++) {
		r = model_apply(m, &w.ops[i], w.ops[i].expect, err, sizeof(err));
		cr_assert_eq(r, 0, "line %zu of\n%s\nmodel_apply: %d %s", i + 1, text, r, err);
	}
	wl_free(&w);
}

/* Applies one line with result `result`; returns model_apply's return. */
static int apply1(struct model *m, const char *line, int result, char *err, size_t errlen)
{
	struct wl_workload w = { 0 };
	char perr[512];
	int r = wl_parse_text("t", line, strlen(line), &w, perr, sizeof(perr));
	cr_assert_eq(r, 0, "%s: %s", line, perr);
	cr_assert_eq(w.n, 1, "%s", line);
	r = model_apply(m, &w.ops[0], result, err, errlen);
	wl_free(&w);
	return r;
}

static char *desc(const struct model *m)
{
	char *d = model_describe(m);
	cr_assert_not_null(d);
	return d;
}

static void expect_desc(const struct model *m, const char *want)
{
	char *d = desc(m);
	cr_assert_str_eq(d, want, "got:\n%s\nwant:\n%s", d, want);
	free(d);
}

/* The line of path in the description (without its "\n"), malloc'd. */
static char *line_of(const struct model *m, const char *path)
{
	char *d = desc(m);
	size_t pl = strlen(path);
	char *p = d, *found = NULL;
	while (*p) {
		char *nl = strchr(p, '\n');
		cr_assert_not_null(nl, "a line without a newline: %s", p);
		if (!strncmp(p, path, pl) && p[pl] == ' ') {
			found = strndup(p, (size_t)(nl - p));
			break;
		}
		p = nl + 1;
	}
	cr_assert_not_null(found, "no line for %s in:\n%s", path, d);
	free(d);
	return found;
}

static void expect_line(const struct model *m, const char *path, const char *want)
{
	char *l = line_of(m, path);
	cr_assert_str_eq(l, want);
	free(l);
}

static bool has_line(const struct model *m, const char *path)
{
	char *d = desc(m);
	char *key = malloc(strlen(path) + 3);
	sprintf(key, "\n%s ", path);
	bool r = strstr(d, key) != NULL;
	free(key);
	free(d);
	return r;
}

/* The expected digest, from first principles: sha256 over (le64 offset,
 * 4096-byte block) for each block given, then le64 size. */
struct dig {
	crypto_hash_sha256_state st;
};

static void dig_init(struct dig *g)
{
	crypto_hash_sha256_init(&g->st);
}

static void put_le64(unsigned char b[8], uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

static void dig_block(struct dig *g, uint64_t off, const unsigned char *block)
{
	unsigned char b[8];
	put_le64(b, off);
	crypto_hash_sha256_update(&g->st, b, 8);
	crypto_hash_sha256_update(&g->st, block, 4096);
}

static void dig_final(struct dig *g, uint64_t size, char hex[65])
{
	unsigned char b[8], out[32];
	put_le64(b, size);
	crypto_hash_sha256_update(&g->st, b, 8);
	crypto_hash_sha256_final(&g->st, out);
	for (int i = 0; i < 32; i++)
		sprintf(hex + 2 * i, "%02x", out[i]);
}

/* The CONTENT field (8th) of path's line. */
static char *content_of(const struct model *m, const char *path)
{
	char *l = line_of(m, path);
	char *p = l;
	for (int i = 0; i < 7; i++) {
		p = strchr(p, ' ');
		cr_assert_not_null(p, "%s", l);
		p++;
	}
	char *c = strndup(p, strcspn(p, " "));
	free(l);
	return c;
}

static void expect_content(const struct model *m, const char *path, const char *hex)
{
	char *c = content_of(m, path);
	cr_assert_str_eq(c, hex, "%s", path);
	free(c);
}

/* ---- Each operation ----------------------------------------------------------- */

Test(model, empty)
{
	struct model *m = model_new();
	cr_assert_not_null(m);
	expect_desc(m, "/ d 755 0 0 1 0 -\n");
	model_free(m);
	model_free(NULL);
}

Test(model, mkdir_create_symlink)
{
	struct model *m = model_new();
	run(m, "mkdir /a 0750\n"
	       "mkdir /b 07777\n" /* mkdir keeps 0777 and the sticky bit */
	       "mkdir /c/\n"	  /* trailing slashes are fine for mkdir */
	       "create /a/f 04755\n"
	       "create /g\n"
	       "symlink ../x /a/l\n");
	expect_desc(m, "/ d 755 0 0 1 8 -\n"
		       "/a d 750 0 0 1 4 -\n"
		       "/a/f f 4755 0 0 1 0 "
		       "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc\n"
		       "/a/l l 777 0 0 1 4 -> ../x\n"
		       "/b d 1777 0 0 1 0 -\n"
		       "/c d 755 0 0 1 0 -\n"
		       "/g f 644 0 0 1 0 "
		       "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc\n");
	model_free(m);
}

Test(model, empty_file_digest_is_sha256_of_size)
{
	char hex[65];
	struct dig g;
	dig_init(&g);
	dig_final(&g, 0, hex);
	cr_assert_str_eq(hex, "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc");
}

Test(model, owner_and_setgid_parent)
{
	struct model *m = model_new();
	model_set_owner(m, 7, 8);
	run(m, "mkdir /s 0755\n"
	       "chmod /s 02775\n"
	       "chown /s -1 50\n"
	       "mkdir /s/d 0700\n"
	       "create /s/f 02644\n"
	       "symlink t /s/l\n"
	       "create /plain\n"
	       "mkdir /s/d2 04755\n"); /* mkdir drops set-uid */
	expect_line(m, "/s", "/s d 2775 7 50 1 10 -");
	expect_line(m, "/s/d", "/s/d d 2700 7 50 1 0 -");
	expect_line(m, "/s/d2", "/s/d2 d 2755 7 50 1 0 -");
	expect_line(m, "/s/l", "/s/l l 777 7 50 1 1 -> t");
	char *l = line_of(m, "/s/f");
	cr_assert(!strncmp(l, "/s/f f 2644 7 50 1 0 ", 21), "%s", l);
	free(l);
	l = line_of(m, "/plain");
	cr_assert(!strncmp(l, "/plain f 644 7 8 1 0 ", 21), "%s", l);
	free(l);
	model_free(m);
}

Test(model, directory_size_is_twice_the_names)
{
	struct model *m = model_new();
	run(m, "mkdir /dir\ncreate /dir/abc\ncreate /dir/de\nsymlink x /dir/sym\n");
	expect_line(m, "/dir", "/dir d 755 0 0 1 16 -");
	expect_line(m, "/", "/ d 755 0 0 1 6 -");
	run(m, "unlink /dir/abc\n");
	expect_line(m, "/dir", "/dir d 755 0 0 1 10 -");
	model_free(m);
}

Test(model, one_sector_digest)
{
	struct model *m = model_new();
	run(m, "create /f\nwrite /f 0 4096 3\n");
	unsigned char block[4096];
	wl_content(3, 0, block, 4096);
	struct dig g;
	char hex[65], want[200];
	dig_init(&g);
	dig_block(&g, 0, block);
	dig_final(&g, 4096, hex);
	snprintf(want, sizeof(want), "/f f 644 0 0 1 4096 %s", hex);
	expect_line(m, "/f", want);
	model_free(m);
}

Test(model, partial_and_overlapping_writes)
{
	struct model *m = model_new();
	/* 100 bytes at 10: one block, zero-padded, size 110 */
	run(m, "create /f\nwrite /f 10 100 5\n");
	unsigned char b0[4096] = { 0 }, b1[4096] = { 0 }, b2[4096] = { 0 };
	wl_content(5, 10, b0 + 10, 100);
	struct dig g;
	char hex[65];
	dig_init(&g);
	dig_block(&g, 0, b0);
	dig_final(&g, 110, hex);
	expect_content(m, "/f", hex);
	/* seed 1 over [0, 9000), then seed 2 over [4000, 4200) and seed 3 over
	 * [8190, 8200): blocks mix seeds at their exact offsets */
	run(m, "write /f 0 9000 1\nwrite /f 4000 200 2\nwrite /f 8190 10 3\n");
	wl_content(1, 0, b0, 4096);
	wl_content(2, 4000, b0 + 4000, 96);
	wl_content(2, 4096, b1, 104);
	wl_content(1, 4200, b1 + 104, 4096 - 104);
	wl_content(3, 8190, b1 + 4094, 2);
	wl_content(3, 8192, b2, 8);
	wl_content(1, 8200, b2 + 8, 800);
	dig_init(&g);
	dig_block(&g, 0, b0);
	dig_block(&g, 4096, b1);
	dig_block(&g, 8192, b2);
	dig_final(&g, 9000, hex);
	expect_content(m, "/f", hex);
	char *l = line_of(m, "/f");
	cr_assert(strstr(l, " 9000 "), "%s", l);
	free(l);
	/* rewriting with the seed already there changes nothing */
	run(m, "write /f 0 4000 1\n");
	expect_content(m, "/f", hex);
	/* a zero-length write far out does not extend */
	run(m, "write /f 1G 0 9\n");
	expect_content(m, "/f", hex);
	model_free(m);
}

/* The model's digest equals manifest's (traces/manifest_hash.c) fed the
 * whole content, for random writes, truncates and punched holes. */
Test(model, digest_equals_manifest_hash)
{
	enum { MAX = 300000 };
	unsigned char *data = calloc(1, MAX), *tmp = malloc(MAX);
	cr_assert(data && tmp);
	uint64_t x = 12345;
	for (int round = 0; round < 20; round++) {
		struct model *m = model_new();
		run(m, "create /f\n");
		uint64_t size = 0;
		memset(data, 0, MAX);
		for (int k = 0; k < 12; k++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t r = x >> 11;
			uint64_t off = r % (MAX / 2), len = (r >> 20) % (MAX / 2) + 1;
			unsigned kind = (unsigned)(r >> 40) % 4;
			char line[128];
			if (kind <= 1) {
				snprintf(line, sizeof(line), "write /f %llu %llu %u\n",
					 (unsigned long long)off, (unsigned long long)len, k % 3);
				wl_content((uint64_t)(k % 3), off, tmp, (size_t)len);
				memcpy(data + off, tmp, (size_t)len);
				if (size < off + len)
					size = off + len;
			} else if (kind == 2) {
				snprintf(line, sizeof(line), "truncate /f %llu\n", (unsigned long long)off);
				if (off < size)
					memset(data + off, 0, (size_t)(size - off));
				size = off;
			} else {
				snprintf(line, sizeof(line), "fallocate /f %llu %llu punch-hole\n",
					 (unsigned long long)off, (unsigned long long)len);
				uint64_t end = off + len < size ? off + len : size;
				if (off < end)
					memset(data + off, 0, (size_t)(end - off));
			}
			run(m, line);
			struct mf_hash h;
			unsigned char out[32];
			char hex[65];
			mf_hash_init(&h);
			mf_hash_data(&h, data, (size_t)size);
			mf_hash_final(&h, out);
			for (int i = 0; i < 32; i++)
				sprintf(hex + 2 * i, "%02x", out[i]);
			expect_content(m, "/f", hex);
		}
		model_free(m);
	}
	free(data);
	free(tmp);
}

static long maxrss_kib(void)
{
	struct rusage ru;
	cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_maxrss;
}

Test(model, sparse_write_far_out_is_cheap)
{
	struct model *m = model_new();
	long before = maxrss_kib();
	run(m, "create /f\nwrite /f 1G 4096 7\n");
	unsigned char block[4096];
	wl_content(7, UINT64_C(1) << 30, block, 4096);
	struct dig g;
	char hex[65];
	dig_init(&g);
	dig_block(&g, UINT64_C(1) << 30, block);
	dig_final(&g, (UINT64_C(1) << 30) + 4096, hex);
	expect_content(m, "/f", hex);
	/* far beyond anything that could be allocated: 1 PiB and 2^62 */
	run(m, "write /f 0x4000000000000000 100 8\ntruncate /f 0x4000000000001000\n"
	       "create /g\nwrite /g 1024T 10 9\n");
	struct model *c = model_clone(m);
	char *d = desc(c);
	free(d);
	model_free(c);
	unsigned char tail[4096] = { 0 };
	wl_content(8, UINT64_C(1) << 62, tail, 100);
	dig_init(&g);
	dig_block(&g, UINT64_C(1) << 30, block);
	dig_block(&g, UINT64_C(1) << 62, tail);
	dig_final(&g, (UINT64_C(1) << 62) + 4096, hex);
	expect_content(m, "/f", hex);
	long grown = maxrss_kib() - before;
	cr_assert_lt(grown, 64 * 1024, "max RSS grew by %ld KiB", grown);
	model_free(m);
}

Test(model, truncate_drops_and_zero_fills)
{
	struct model *m = model_new();
	run(m, "create /f\nwrite /f 0 8192 1\ntruncate /f 100\ntruncate /f 8192\n");
	unsigned char b0[4096] = { 0 };
	wl_content(1, 0, b0, 100);
	struct dig g;
	char hex[65];
	dig_init(&g);
	dig_block(&g, 0, b0);
	dig_final(&g, 8192, hex);
	expect_content(m, "/f", hex);
	/* growing an empty file: zeros only, the digest of the size alone */
	run(m, "create /z\ntruncate /z 1T\n");
	dig_init(&g);
	dig_final(&g, UINT64_C(1) << 40, hex);
	char want[200];
	snprintf(want, sizeof(want), "/z f 644 0 0 1 1099511627776 %s", hex);
	expect_line(m, "/z", want);
	run(m, "truncate /z 0\n");
	expect_content(m, "/z", "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc");
	model_free(m);
}

Test(model, fallocate_modes)
{
	struct model *m = model_new();
	run(m, "create /f\nwrite /f 0 12288 1\n");
	char *before = content_of(m, "/f");
	run(m, "fallocate /f 0 1M keep-size\n");
	expect_content(m, "/f", before);
	char want[200];
	snprintf(want, sizeof(want), "/f f 644 0 0 1 12288 %s", before);
	expect_line(m, "/f", want);
	/* punch-hole: block 1 goes, and 100 bytes of block 2; clipped to the size */
	run(m, "fallocate /f 4096 4096 punch-hole\nfallocate /f 8292 1G punch-hole\n");
	unsigned char b0[4096], b2[4096] = { 0 };
	wl_content(1, 0, b0, 4096);
	wl_content(1, 8192, b2, 100);
	struct dig g;
	char hex[65];
	dig_init(&g);
	dig_block(&g, 0, b0);
	dig_block(&g, 8192, b2);
	dig_final(&g, 12288, hex);
	expect_content(m, "/f", hex);
	/* plain: the size grows to off + len, the new range reads as zeros */
	run(m, "fallocate /f 1M 4096\n");
	dig_init(&g);
	dig_block(&g, 0, b0);
	dig_block(&g, 8192, b2);
	dig_final(&g, (1 << 20) + 4096, hex);
	expect_content(m, "/f", hex);
	/* plain inside the file: nothing */
	run(m, "fallocate /f 0 4096\n");
	expect_content(m, "/f", hex);
	free(before);
	model_free(m);
}

Test(model, hard_links_share_data)
{
	struct model *m = model_new();
	run(m, "mkdir /d\ncreate /f\nwrite /f 0 5000 4\nlink /f /d/g\n");
	char *a = content_of(m, "/f"), *b = content_of(m, "/d/g");
	cr_assert_str_eq(a, b);
	char *l = line_of(m, "/d/g");
	cr_assert(!strncmp(l, "/d/g f 644 0 0 2 5000 ", 22), "%s", l);
	free(l);
	run(m, "write /d/g 0 10 5\nchmod /f 600\nsetxattr /d/g user.k v\n");
	char *a2 = content_of(m, "/f"), *b2 = content_of(m, "/d/g");
	cr_assert_str_eq(a2, b2);
	cr_assert_str_neq(a2, a);
	l = line_of(m, "/f");
	cr_assert(!strncmp(l, "/f f 600 0 0 2 5000 ", 20), "%s", l);
	cr_assert(strstr(l, " x:user.k=76"), "%s", l);
	free(l);
	run(m, "unlink /f\n");
	cr_assert(!has_line(m, "/f"));
	l = line_of(m, "/d/g");
	cr_assert(!strncmp(l, "/d/g f 600 0 0 1 5000 ", 22), "%s", l);
	free(l);
	/* a hard link to a symlink: the link itself, not its target */
	run(m, "symlink /d/g /s\nlink /s /s2\n");
	expect_line(m, "/s2", "/s2 l 777 0 0 2 4 -> /d/g");
	free(a);
	free(b);
	free(a2);
	free(b2);
	model_free(m);
}

Test(model, symlinks_followed_in_the_middle)
{
	struct model *m = model_new();
	run(m, "mkdir /d\nmkdir /d/e\n"
	       "symlink /d /abs\n"
	       "symlink d /rel\n"
	       "symlink ../d/e /d/up\n"
	       "symlink /../../.. /top\n"  /* ".." above the root is the root */
	       "create /abs/f1\n"
	       "create /rel/f2\n"
	       "create /d/up/f3\n"
	       "create /rel/up/../../d/./e//f4\n"
	       "create /top/top/d/f5\n"
	       "create /../../f6\n"
	       "mkdir /abs/sub/\n");
	cr_assert(has_line(m, "/d/f1"));
	cr_assert(has_line(m, "/d/f2"));
	cr_assert(has_line(m, "/d/e/f3"));
	cr_assert(has_line(m, "/d/e/f4"));
	cr_assert(has_line(m, "/d/f5"));
	cr_assert(has_line(m, "/f6"));
	cr_assert(has_line(m, "/d/sub"));
	cr_assert(!has_line(m, "/abs/f1"));
	/* a chain of symlinks */
	run(m, "symlink rel /r2\nsymlink r2 /r3\ncreate /r3/up/f7\n");
	cr_assert(has_line(m, "/d/e/f7"));
	model_free(m);
}

Test(model, final_symlink_followed_or_not)
{
	struct model *m = model_new();
	run(m, "create /f\nsymlink f /l\n"
	       "write /l 0 100 1\n"
	       "chmod /l 0600\n"
	       "setxattr /l user.a 1\n"
	       "chown /l 5 6\n");
	expect_line(m, "/l", "/l l 777 0 0 1 1 -> f");
	char *l = line_of(m, "/f");
	cr_assert(!strncmp(l, "/f f 600 5 6 1 100 ", 19), "%s", l);
	cr_assert(strstr(l, " x:user.a=31"), "%s", l);
	free(l);
	/* truncate and fallocate follow too; fsync of it is no change */
	run(m, "truncate /l 50\nfallocate /l 0 200\nfsync /l\nfdatasync /l\n");
	l = line_of(m, "/f");
	cr_assert(!strncmp(l, "/f f 600 5 6 1 200 ", 19), "%s", l);
	free(l);
	/* rename and unlink act on the link */
	run(m, "rename /l /l2\n");
	cr_assert(!has_line(m, "/l"));
	expect_line(m, "/l2", "/l2 l 777 0 0 1 1 -> f");
	run(m, "unlink /l2\n");
	cr_assert(!has_line(m, "/l2"));
	cr_assert(has_line(m, "/f"));
	/* a directory through a final symlink with a slash */
	run(m, "mkdir /d\nsymlink d /ld\nsetxattr /ld/ user.z \"\"\n");
	expect_line(m, "/d", "/d d 755 0 0 1 0 - x:user.z=");
	model_free(m);
}

Test(model, rename_plain_and_noreplace)
{
	struct model *m = model_new();
	run(m, "create /a\nwrite /a 0 10 1\ncreate /b\nlink /b /b2\n"
	       "rename /a /b\n");
	cr_assert(!has_line(m, "/a"));
	char *l = line_of(m, "/b");
	cr_assert(!strncmp(l, "/b f 644 0 0 1 10 ", 18), "%s", l);
	free(l);
	/* the replaced file keeps its other name, with one link less */
	l = line_of(m, "/b2");
	cr_assert(!strncmp(l, "/b2 f 644 0 0 1 0 ", 18), "%s", l);
	free(l);
	/* a directory over an empty directory, with what is inside it */
	run(m, "mkdir /d\ncreate /d/in\nmkdir /e\nrename /d /e/\n");
	cr_assert(!has_line(m, "/d"));
	cr_assert(has_line(m, "/e/in"));
	/* noreplace to a new name, and across directories */
	run(m, "mkdir /x\nrename /b /x/c noreplace\nrename /e /x/e2\n");
	cr_assert(has_line(m, "/x/c"));
	cr_assert(has_line(m, "/x/e2/in"));
	expect_line(m, "/x", "/x d 755 0 0 1 6 -");
	/* the moved directory's ".." is its new parent */
	run(m, "create /x/e2/../moved\n");
	cr_assert(has_line(m, "/x/moved"));
	/* two names of one inode: nothing happens, both names stay */
	run(m, "link /x/c /x/c2\nrename /x/c /x/c2\n");
	cr_assert(has_line(m, "/x/c"));
	cr_assert(has_line(m, "/x/c2"));
	l = line_of(m, "/x/c");
	cr_assert(!strncmp(l, "/x/c f 644 0 0 2 ", 17), "%s", l);
	free(l);
	/* a name onto itself */
	char *before = desc(m);
	run(m, "rename /x/c /x/c\nrename /x/c /x/c exchange\nrename /x/c /x/c2 exchange\n");
	expect_desc(m, before);
	free(before);
	model_free(m);
}

Test(model, rename_exchange_dir_and_file)
{
	struct model *m = model_new();
	run(m, "mkdir /a\nmkdir /a/d\ncreate /a/d/inner\nmkdir /b\ncreate /b/f\n"
	       "write /b/f 0 3 1\n"
	       "rename /a/d /b/f exchange\n");
	char *l = line_of(m, "/a/d");
	cr_assert(!strncmp(l, "/a/d f 644 0 0 1 3 ", 19), "%s", l);
	free(l);
	expect_line(m, "/b/f", "/b/f d 755 0 0 1 10 -");
	cr_assert(has_line(m, "/b/f/inner"));
	cr_assert(!has_line(m, "/a/d/inner"));
	/* the directory's ".." follows it */
	run(m, "create /b/f/../x\n");
	cr_assert(has_line(m, "/b/x"));
	/* exchange within one directory, two directories */
	run(m, "mkdir /b/y\ncreate /b/y/in\nrename /b/f /b/y exchange\n");
	cr_assert(has_line(m, "/b/y/inner"));
	cr_assert(has_line(m, "/b/f/in"));
	model_free(m);
}

Test(model, unlink_and_rmdir)
{
	struct model *m = model_new();
	run(m, "mkdir /d\nmkdir /d/e\ncreate /d/f\nsymlink x /d/l\n"
	       "unlink /d/f\nunlink /d/l\nrmdir /d/e/\nrmdir /d\n");
	expect_desc(m, "/ d 755 0 0 1 0 -\n");
	model_free(m);
}

Test(model, xattrs_sorted_and_escaped)
{
	struct model *m = model_new();
	run(m, "create /f\n"
	       "setxattr /f user.b v\n"
	       "setxattr /f user.a \"\"\n"
	       "setxattr /f \"user.x y=z\\\\\" 0x00ff\n"
	       "setxattr /f user.a2 \"\\x00\"\n"
	       "setxattr /f user.b w\n");
	char *l = line_of(m, "/f");
	const char *x = strstr(l, " x:");
	cr_assert_not_null(x, "%s", l);
	cr_assert_str_eq(x, " x:user.a2=00 x:user.a= x:user.b=77 x:user.x\\x20y\\x3dz\\x5c=00ff");
	free(l);
	run(m, "removexattr /f user.a\nremovexattr /f user.b\n");
	l = line_of(m, "/f");
	x = strstr(l, " x:");
	cr_assert_str_eq(x, " x:user.a2=00 x:user.x\\x20y\\x3dz\\x5c=00ff");
	free(l);
	/* on a directory, and the root */
	run(m, "setxattr / user.r 0x01\n");
	expect_line(m, "/", "/ d 755 0 0 1 2 - x:user.r=01");
	model_free(m);
}

Test(model, paths_escaped_and_sorted)
{
	struct model *m = model_new();
	run(m, "create \"/a b\"\n"
	       "create /a!\n"
	       "mkdir /a\n"
	       "create /a/z\n"
	       "create \"/x\\\\y\"\n"
	       "create \"/\\xc3\\xa9\"\n"
	       "symlink \"/t a\\\\rg\\xff\" /s\n");
	expect_desc(m, "/ d 755 0 0 1 24 -\n"
		       "/\\xc3\\xa9 f 644 0 0 1 0 "
		       "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc\n"
		       "/a d 755 0 0 1 2 -\n"
		       "/a! f 644 0 0 1 0 "
		       "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc\n"
		       "/a/z f 644 0 0 1 0 "
		       "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc\n"
		       "/a\\x20b f 644 0 0 1 0 "
		       "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc\n"
		       "/s l 777 0 0 1 8 -> /t\\x20a\\x5crg\\xff\n"
		       "/x\\x5cy f 644 0 0 1 0 "
		       "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc\n");
	model_free(m);
}

Test(model, chmod_and_chown)
{
	struct model *m = model_new();
	run(m, "mkdir /d\ncreate /f\ncreate /g\n"
	       "chmod /d 07777\nchmod /f 06755\nchmod /g 06745\n");
	expect_line(m, "/d", "/d d 7777 0 0 1 0 -");
	char *l = line_of(m, "/f");
	cr_assert(!strncmp(l, "/f f 6755 0 0 1 0 ", 18), "%s", l);
	free(l);
	/* chown of a non-directory drops set-uid, and set-gid with group exec;
	 * -1 leaves an id; a directory keeps its bits */
	run(m, "chown /f -1 -1\nchown /g 1000 -1\nchown /d 3 4\n");
	l = line_of(m, "/f");
	cr_assert(!strncmp(l, "/f f 755 0 0 1 0 ", 17), "%s", l);
	free(l);
	l = line_of(m, "/g");
	cr_assert(!strncmp(l, "/g f 2745 1000 0 1 0 ", 21), "%s", l);
	free(l);
	expect_line(m, "/d", "/d d 7777 3 4 1 0 -");
	/* file capabilities go with chown, write, truncate, fallocate */
	run(m, "setxattr /f security.capability 0x01\nsetxattr /f user.keep 0x02\n"
	       "setxattr /d security.capability 0x01\n"
	       "chown /f 1 1\nchown /d 1 1\n");
	l = line_of(m, "/f");
	cr_assert(strstr(l, " x:user.keep=02") && !strstr(l, "security"), "%s", l);
	free(l);
	l = line_of(m, "/d");
	cr_assert(strstr(l, "x:security.capability=01"), "%s", l);
	free(l);
	run(m, "setxattr /f security.capability 0x01\nwrite /f 0 0\n");
	l = line_of(m, "/f");
	cr_assert(strstr(l, "security.capability"), "a zero-length write keeps it: %s", l);
	free(l);
	run(m, "write /f 0 1\n");
	l = line_of(m, "/f");
	cr_assert(!strstr(l, "security.capability"), "%s", l);
	free(l);
	/* utimes changes nothing the description shows */
	char *before = desc(m);
	run(m, "utimes /f 1.5 -3\nutimes /missing omit omit\n");
	expect_desc(m, before);
	free(before);
	model_free(m);
}

/* ---- Failures and disagreements ------------------------------------------------ */

static const char *const every_kind[] = {
	"mkdir /new", "create /new", "write /f 0 4096 1", "truncate /f 0",
	"fallocate /f 0 1M", "fallocate /f 0 4K punch-hole", "link /f /new",
	"symlink t /new", "rename /f /new", "rename /d /f exchange", "unlink /f", "rmdir /e",
	"setxattr /f user.n v", "removexattr /f user.a", "chmod /f 0", "chown /f 1 1",
	"utimes /f 1 1", "fsync /f", "fdatasync /f", "sync", "mark m", "crash",
	"subvol-create /new", "snapshot / /new", "snapshot / /new ro", "subvol-sync",
	"quota-enable",
};

Test(model, failed_ops_change_nothing)
{
	struct model *m = model_new();
	run(m, "mkdir /d\nmkdir /e\ncreate /f\nwrite /f 0 5000 2\nsetxattr /f user.a x\n");
	char *before = desc(m);
	char err[256];
	for (size_t i = 0; i < sizeof(every_kind) / sizeof(*every_kind); i++) {
		int results[] = { ENOENT, -EIO, EEXIST };
		for (size_t k = 0; k < 3; k++) {
			int r = apply1(m, every_kind[i], results[k], err, sizeof(err));
			cr_assert_eq(r, 0, "%s: %d %s", every_kind[i], r, err);
			expect_desc(m, before);
		}
	}
	free(before);
	model_free(m);
}

Test(model, each_kind_applies_on_success)
{
	/* the same ops with success: every kind but the no-change ones changes
	 * the description */
	for (size_t i = 0; i < sizeof(every_kind) / sizeof(*every_kind); i++) {
		struct model *m = model_new();
		run(m, "mkdir /d\nmkdir /e\ncreate /f\nwrite /f 0 5000 2\nsetxattr /f user.a x\n");
		char *before = desc(m), err[256];
		int r = apply1(m, every_kind[i], 0, err, sizeof(err));
		cr_assert_eq(r, 0, "%s: %d %s", every_kind[i], r, err);
		char *after = desc(m);
		const char *k = every_kind[i];
		bool none = !strncmp(k, "utimes", 6) || !strncmp(k, "fsync", 5) ||
			    !strncmp(k, "fdatasync", 9) || !strcmp(k, "sync") ||
			    !strncmp(k, "mark", 4) || !strcmp(k, "crash") || !strcmp(k, "subvol-sync") ||
			    !strcmp(k, "quota-enable");
		if (none)
			cr_assert_str_eq(after, before, "%s", k);
		else
			cr_assert_str_neq(after, before, "%s", k);
		free(before);
		free(after);
		model_free(m);
	}
}

/* A successful op the model cannot apply: -EINVAL, a message, no change. */
static void expect_disagree(struct model *m, const char *line)
{
	char *before = desc(m), err[256];
	int r = apply1(m, line, 0, err, sizeof(err));
	cr_assert_eq(r, -EINVAL, "%s: %d", line, r);
	cr_assert_neq(err[0], 0, "%s: no message", line);
	expect_desc(m, before);
	free(before);
}

Test(model, disagreements_are_reported)
{
	struct model *m = model_new();
	run(m, "mkdir /d\ncreate /d/f\nmkdir /d/e\nsymlink loop /loop\ncreate /g\n");
	expect_disagree(m, "unlink /missing");
	expect_disagree(m, "unlink /d");
	expect_disagree(m, "mkdir /d");
	expect_disagree(m, "create /d/f");
	expect_disagree(m, "rmdir /d");
	expect_disagree(m, "rmdir /g");
	expect_disagree(m, "write /d 0 1");
	expect_disagree(m, "write /loop 0 1");
	expect_disagree(m, "write /g/x 0 1");
	expect_disagree(m, "truncate /nothing 0");
	expect_disagree(m, "rename /d /d/e/x");
	expect_disagree(m, "rename /d /d/e exchange");
	expect_disagree(m, "rename /g /d noreplace");
	expect_disagree(m, "rename /g /d");
	expect_disagree(m, "rename /d /g");
	expect_disagree(m, "rename /nothing /x");
	expect_disagree(m, "link /d /x");
	expect_disagree(m, "link /g /d/f");
	expect_disagree(m, "removexattr /g user.none");
	expect_disagree(m, "mkdir /");
	expect_disagree(m, "mkdir /d/.");
	expect_disagree(m, "rmdir /d/e/..");
	expect_disagree(m, "fsync /nothing");
	expect_disagree(m, "chmod /nothing 0");
	model_free(m);
}


/* ---- Subvolumes and snapshots ---------------------------------------------- */

static char *subvols(const struct model *m)
{
	char *d = model_describe_subvols(m);
	cr_assert_not_null(d);
	return d;
}

static void expect_subvols(const struct model *m, const char *want)
{
	char *d = subvols(m);
	cr_assert_str_eq(d, want, "got:\n%s\nwant:\n%s", d, want);
	free(d);
}

/* The description's lines below prefix, with prefix cut off, malloc'd. */
static char *below(const struct model *m, const char *prefix)
{
	char *d = desc(m), *out = calloc(1, strlen(d) + 1), *o = out;
	size_t pl = strlen(prefix);
	for (char *p = d; *p;) {
		char *nl = strchr(p, '\n');
		if (!strncmp(p, prefix, pl) && (p[pl] == '/' || p[pl] == ' ')) {
			size_t n = (size_t)(nl - p) + 1 - pl;
			memcpy(o, p + pl, n);
			o += n;
		}
		p = nl + 1;
	}
	free(d);
	return out;
}

Test(model, snapshot_is_the_source_at_that_instant)
{
	struct model *m = model_new();
	run(m, "subvol-create /S\nmkdir /S/A\ncreate /S/A/f 0600\nwrite /S/A/f 0 9000 1\n"
	       "link /S/A/f /S/g\nsetxattr /S/A/f user.a v1\nsymlink A/f /S/l\nchown /S/A 7 8\n"
	       "subvol-create /S/N\ncreate /S/N/x\n");
	expect_line(m, "/S", "/S d 755 0 0 1 8 -");
	expect_subvols(m, "/S subvol rw\n/S/N subvol rw\n");
	char *src = below(m, "/S"), *fline = line_of(m, "/S/A/f");
	run(m, "snapshot /S /T\n");
	/* the same tree but N, which is an empty stand-in (the kernel's inode 2:
	 * 0755, its parent's owner, no xattrs) */
	char *snap = below(m, "/T");
	cr_assert(strstr(src, "/N/x f "), "%s", src);
	cr_assert_null(strstr(snap, "/N/x"), "%s", snap);
	expect_line(m, "/T/N", "/T/N d 755 0 0 1 0 -");
	fline[1] = 'T';
	expect_line(m, "/T/A/f", fline);
	cr_assert(strstr(fline, " f 600 0 0 2 9000 ") && strstr(fline, " x:user.a=7631"), "%s", fline);
	/* the whole tree: the source's but for N, its content gone */
	char *want = strdup(src), *nx = strstr(want, "/N/x f "), *n = strstr(want, "/N d 755 0 0 1 2 -");
	cr_assert(nx && n, "%s", want);
	memmove(nx, strchr(nx, '\n') + 1, strlen(strchr(nx, '\n') + 1) + 1);
	n[15] = '0';
	cr_assert_str_eq(snap, want);
	free(want);
	expect_subvols(m, "/S subvol rw\n/S/N subvol rw\n/T subvol rw\n/T/N stand-in\n");
	/* later changes to either side stay on that side */
	char *fbefore = content_of(m, "/S/A/f");
	run(m, "write /S/A/f 0 10 2\nwrite /T/g 100 10 3\nunlink /S/l\ncreate /T/new\n");
	char *sf = content_of(m, "/S/A/f"), *sg = content_of(m, "/S/g");
	char *tf = content_of(m, "/T/A/f"), *tg = content_of(m, "/T/g");
	cr_assert_str_eq(sf, sg, "hard links in the source share data");
	cr_assert_str_eq(tf, tg, "and in the snapshot");
	cr_assert_str_neq(sf, tf);
	cr_assert_str_neq(sf, fbefore);
	cr_assert_str_neq(tf, fbefore);
	cr_assert(has_line(m, "/T/l") && !has_line(m, "/S/l"));
	cr_assert(has_line(m, "/T/new") && !has_line(m, "/S/new"));
	/* a stand-in shows its directory's owner, now */
	run(m, "chown /T 5 6\n");
	expect_line(m, "/T/N", "/T/N d 755 5 6 1 0 -");
	free(src);
	free(snap);
	free(fline);
	free(fbefore);
	free(sf);
	free(sg);
	free(tf);
	free(tg);
	model_free(m);
}

Test(model, snapshot_inside_its_source_and_of_the_top_level)
{
	struct model *m = model_new();
	run(m, "subvol-create /S\ncreate /S/f\nmkdir /d\n"
	       "snapshot /S /S/in\n"  /* taken before its own name is added */
	       "snapshot / /d/top ro\n");
	cr_assert(has_line(m, "/S/in/f") && !has_line(m, "/S/in/in"));
	cr_assert(has_line(m, "/d/top/d") && !has_line(m, "/d/top/d/top"));
	expect_line(m, "/d/top/S", "/d/top/S d 755 0 0 1 0 -"); /* a stand-in: no /d/top/S/f */
	cr_assert(!has_line(m, "/d/top/S/f"));
	expect_subvols(m, "/S subvol rw\n/S/in subvol rw\n/d/top subvol ro\n/d/top/S stand-in\n");
	model_free(m);
}

Test(model, read_only_snapshots_refuse_every_change)
{
	struct model *m = model_new();
	run(m, "subvol-create /S\nmkdir /S/d\ncreate /S/f\nwrite /S/f 0 100 1\nsetxattr /S/f user.a 1\n"
	       "snapshot /S /R ro\n");
	static const char *const changes[] = {
		"mkdir /R/x", "create /R/x", "symlink t /R/x", "write /R/f 0 1", "truncate /R/f 0",
		"fallocate /R/f 0 1", "setxattr /R/f user.b 1", "removexattr /R/f user.a",
		"chmod /R/f 0", "chown /R/f 1 1", "utimes /R/f 1 1", "unlink /R/f", "rmdir /R/d",
		"rename /R/f /R/g", "link /R/f /R/g", "subvol-create /R/x", "snapshot /S /R/x",
		"chmod /R 0700",
	};
	char *before = desc(m), err[256];
	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		expect_disagree(m, changes[i]);
		cr_assert_eq(apply1(m, changes[i], EROFS, err, sizeof(err)), 0);
	}
	expect_desc(m, before);
	/* what does not change it, and the snapshot itself going */
	run(m, "fsync /R/f\nutimes /R/f omit omit\nsnapshot /R /W\nwrite /W/f 0 1 2\n"
	       "rename /R /R2\nsubvol-delete /R2\n");
	expect_subvols(m, "/S subvol rw\n/W subvol rw\n");
	free(before);
	model_free(m);
}

Test(model, subvolume_boundaries)
{
	struct model *m = model_new();
	run(m, "subvol-create /S\nsubvol-create /U\ncreate /S/f\nmkdir /S/d\nmkdir /e\n"
	       "subvol-create /S/N\nsnapshot /S /T\nsubvol-create /E\n");
	/* links and renames stay in a subvolume; a subvolume's root moves anywhere */
	expect_disagree(m, "link /S/f /U/f");
	expect_disagree(m, "rename /S/f /U/f");
	expect_disagree(m, "rename /S/d /e/d");
	expect_disagree(m, "rename /S/d /U exchange");
	expect_disagree(m, "rename /e /U");          /* over a subvolume: ENOTEMPTY */
	expect_disagree(m, "rename /S/N /T/d exchange");
	run(m, "rename /S/N /e/N\nrename /U /S/d/U\nrename /S/d/U /E exchange\n");
	expect_subvols(m, "/E subvol rw\n/S subvol rw\n/S/d/U subvol rw\n/T subvol rw\n"
			  "/T/N stand-in\n/e/N subvol rw\n");
	/* a stand-in takes no names and no xattrs, does not move, and keeps no
	 * attribute change; rmdir removes it */
	expect_disagree(m, "create /T/N/x");
	expect_disagree(m, "mkdir /T/N/x");
	expect_disagree(m, "rename /S/f /T/N/f");
	expect_disagree(m, "link /T/f /T/N/f");
	expect_disagree(m, "setxattr /T/N user.a 1");
	expect_disagree(m, "rename /T/N /T/N2");
	expect_disagree(m, "rename /T/N /T/f exchange");
	char *before = desc(m);
	run(m, "chmod /T/N 0700\nchown /T/N 1 1\nutimes /T/N 1 1\nfsync /T/N\n");
	expect_desc(m, before);
	run(m, "mkdir /T/e\nrename /T/e /T/N\n"); /* a directory over a stand-in */
	expect_subvols(m, "/E subvol rw\n/S subvol rw\n/S/d/U subvol rw\n/T subvol rw\n"
			  "/e/N subvol rw\n");
	free(before);
	model_free(m);
}

Test(model, subvolume_deletion)
{
	struct model *m = model_new();
	run(m, "subvol-create /S\nmkdir /S/d\ncreate /S/d/f\nlink /S/d/f /S/g\nwrite /S/g 0 5 1\n"
	       "subvol-create /S/N\nsnapshot /S /T\nsubvol-create /E\n");
	expect_disagree(m, "subvol-delete /S");   /* /S/N is in it: ENOTEMPTY */
	expect_disagree(m, "subvol-delete /S/d"); /* not a subvolume: EINVAL */
	expect_disagree(m, "subvol-delete /S/g");
	expect_disagree(m, "subvol-delete /T/N"); /* a stand-in is no subvolume */
	expect_disagree(m, "subvol-delete /nothing");
	expect_disagree(m, "rmdir /T");           /* not empty */
	run(m, "subvol-delete /T\nsubvol-delete /S/N\nsubvol-delete /S\n"
	       "rmdir /E\n" /* an empty subvolume: rmdir deletes it (Linux 4.18 on) */
	       "subvol-sync\n");
	expect_desc(m, "/ d 755 0 0 1 0 -\n");
	expect_subvols(m, "");
	/* its inode numbers are free again */
	run(m, "subvol-create /S\ncreate /S/f\n");
	expect_subvols(m, "/S subvol rw\n");
	model_free(m);
}

Test(model, clones_and_snapshots)
{
	struct model *m = model_new();
	run(m, "subvol-create /S\ncreate /S/f\nwrite /S/f 0 100 1\n");
	struct model *c = model_clone(m);
	char *orig = desc(c);
	run(m, "snapshot /S /T\nwrite /T/f 0 1 2\nwrite /S/f 5 1 3\nsubvol-delete /S\n");
	expect_desc(c, orig);
	expect_subvols(c, "/S subvol rw\n");
	expect_subvols(m, "/T subvol rw\n");
	free(orig);
	model_free(c);
	model_free(m);
}

/* ---- Clones ------------------------------------------------------------------------ */

Test(model, clones_are_independent)
{
	struct model *m = model_new();
	run(m, "mkdir /d\ncreate /d/f\nwrite /d/f 0 10000 1\nlink /d/f /h\n"
	       "setxattr /d/f user.a 1\nsymlink d /l\nmkdir /e\n");
	char *orig = desc(m);
	struct model *c = model_clone(m);
	cr_assert_not_null(c);
	expect_desc(c, orig);
	run(c, "write /h 5 5 9\ntruncate /d/f 3\nsetxattr /h user.a 2\nchmod /d 0700\n"
	       "rename /d /e/d2\nunlink /h\ncreate /l2\nrmdir /e/d2/.. = ENOTEMPTY\n");
	expect_desc(m, orig);
	char *cd = desc(c);
	cr_assert_str_neq(cd, orig);
	/* and the other way: changing the original leaves the clone */
	struct model *c2 = model_clone(c);
	run(m, "write /d/f 0 4 3\nunlink /d/f\nrmdir /e\n");
	expect_desc(c, cd);
	/* freeing the original first leaves clones whole */
	model_free(m);
	expect_desc(c, cd);
	expect_desc(c2, cd);
	model_free(c);
	expect_desc(c2, cd);
	run(c2, "write /e/d2/f 0 1 1\n");
	model_free(c2);
	free(orig);
	free(cd);
}

Test(model, many_clones_share)
{
	/* a snapshot at every op boundary of a generated workload, all kept */
	struct wl_gen_opts o = { .seed = 3, .ops = 300 };
	wl_gen_defaults(&o);
	struct wl_workload w = { 0 };
	cr_assert_eq(wl_generate(&o, &w), 0);
	struct model **snap = calloc(w.n + 1, sizeof(*snap));
	char **seen = calloc(w.n + 1, sizeof(*seen));
	cr_assert(snap && seen);
	struct model *m = model_new();
	char err[256];
	size_t applied = 0;
	for (size_t i = 0; i < w.n; i++) {
		snap[i] = model_clone(m);
		cr_assert_not_null(snap[i]);
		if (i % 25 == 0)
			seen[i] = desc(m);
		/* every op taken as a success: where the model cannot follow (a
		 * deliberately bad op), it says so and stays as it was */
		int r = model_apply(m, &w.ops[i], 0, err, sizeof(err));
		cr_assert(r == 0 || r == -EINVAL, "%d", r);
		applied += r == 0;
	}
	cr_assert_gt(applied, w.n / 2);
	/* each snapshot still describes the state it was taken at */
	model_free(m);
	for (size_t i = 0; i < w.n; i++) {
		if (seen[i])
			expect_desc(snap[i], seen[i]);
		free(seen[i]);
		model_free(snap[i]);
	}
	free(snap);
	free(seen);
	wl_free(&w);
}

/* ---- Cross-checks with the kernel ---------------------------------------------------- */

static const char *btrsim_bin(void)
{
	const char *b = getenv("BTRSIM");
	return b && b[0] ? b : "build/debug/btrsim";
}

/* `btrsim manifest --host dir`, malloc'd. */
static char *host_manifest(const char *dir)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "'%s' manifest --host '%s'", btrsim_bin(), dir);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p, "popen %s", cmd);
	char *buf = NULL;
	size_t len = 0, cap = 0;
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0) {
		if (len + n + 1 > cap) {
			cap = (len + n + 1) * 2;
			buf = realloc(buf, cap);
			cr_assert_not_null(buf);
		}
		memcpy(buf + len, chunk, n);
		len += n;
	}
	int st = pclose(p);
	cr_assert_eq(st, 0, "%s: exit status %d", cmd, st);
	cr_assert_not_null(buf, "%s: no output", cmd);
	buf[len] = 0;
	return buf;
}

/* Replaces NLINK and SIZE of every directory line by "-" (for file systems
 * that count them otherwise than btrfs). */
static char *mask_dirs(const char *text)
{
	char *out = malloc(strlen(text) + 1), *q = out;
	cr_assert_not_null(out);
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) + 1 : strlen(p);
		const char *f = strchr(p, ' ');
		if (f && f < p + l && f[1] == 'd' && f[2] == ' ') {
			/* PATH d PERM UID GID NLINK SIZE REST */
			const char *s = f;
			for (int i = 0; i < 4; i++)
				s = strchr(s + 1, ' ');
			const char *after = strchr(strchr(s + 1, ' ') + 1, ' ');
			memcpy(q, p, (size_t)(s - p));
			q += s - p;
			memcpy(q, " - -", 4);
			q += 4;
			memcpy(q, after, (size_t)(p + l - after));
			q += p + l - after;
		} else {
			memcpy(q, p, l);
			q += l;
		}
		p += l;
	}
	*q = 0;
	return out;
}

/* The first line that differs, for the failure message. */
static void first_diff(const char *a, const char *b, char *msg, size_t len)
{
	size_t line = 1;
	while (*a && *b) {
		size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
		if (la != lb || memcmp(a, b, la)) {
			snprintf(msg, len, "line %zu:\n  model: %.*s\n  host:  %.*s", line,
				 (int)(la > 400 ? 400 : la), a, (int)(lb > 400 ? 400 : lb), b);
			return;
		}
		a += la + (a[la] ? 1 : 0);
		b += lb + (b[lb] ? 1 : 0);
		line++;
	}
	snprintf(msg, len, "line %zu: one side ends: model \"%.200s\", host \"%.200s\"", line,
		 a, b);
}

/* Runs w on the host directory dir, the model following with the host's
 * results; compares every `every` ops and at the end. */
static void crosscheck_w(const char *dir, const struct wl_workload *wp, const char *label,
			 size_t every, bool mask)
{
	const struct wl_workload w = *wp;
	struct wl_host h;
	char err[512];
	cr_assert_eq(wl_host_open(dir, &h, err, sizeof(err)), 0, "%s", err);
	struct model *m = model_new();
	model_set_owner(m, (uint32_t)geteuid(), (uint32_t)getegid());
	size_t ok = 0, compared = 0;
	bool verbose = getenv("MODEL_XCHECK_VERBOSE") != NULL;
	for (size_t i = 0; i < w.n; i++) {
		int r = wl_exec_host(&h, &w.ops[i], err, sizeof(err));
		ok += r == 0;
		char line[512];
		wl_format(&w.ops[i], line, sizeof(line));
		if (verbose)
			cr_log_info("%s %zu: %s -> %s", label, i + 1, line,
				    r ? wl_errno_name(-r) : "0");
		int a = model_apply(m, &w.ops[i], -r, err, sizeof(err));
		cr_assert_eq(a, 0, "%s op %zu \"%s\" (host: %d): model_apply %d: %s", label, i + 1,
			     line, r, a, err);
		if ((i + 1) % every == 0 || i + 1 == w.n) {
			char *md = desc(m), *hd = host_manifest(dir);
			if (mask) {
				char *x = mask_dirs(md), *y = mask_dirs(hd);
				free(md);
				free(hd);
				md = x;
				hd = y;
			}
			if (strcmp(md, hd)) {
				char msg[1200];
				first_diff(md, hd, msg, sizeof(msg));
				cr_assert_fail("%s after op %zu \"%s\": the model and %s differ at %s",
					       label, i + 1, line, dir, msg);
			}
			compared++;
			free(md);
			free(hd);
		}
	}
	cr_log_info("%s: %zu of %zu ops succeeded on %s, %zu comparisons", label, ok, w.n, dir,
		    compared);
	model_free(m);
	wl_host_close(&h);
}

/* The generated workload (seed, ops) through crosscheck_w. */
static void crosscheck_gen(const char *dir, uint64_t seed, size_t ops, size_t every, bool mask,
			   bool subvols)
{
	struct wl_gen_opts o = { .seed = seed, .ops = ops };
	wl_gen_defaults(&o);
	o.subvols = subvols;
	struct wl_workload w = { 0 };
	cr_assert_eq(wl_generate(&o, &w), 0);
	char label[64];
	snprintf(label, sizeof(label), "seed %llu%s", (unsigned long long)seed,
		 subvols ? " (subvols)" : "");
	crosscheck_w(dir, &w, label, every, mask);
	wl_free(&w);
}

static void crosscheck(const char *dir, uint64_t seed, size_t ops, size_t every, bool mask)
{
	crosscheck_gen(dir, seed, ops, every, mask, false);
}

/* Subvolumes as Linux makes them: snapshots at an instant, stand-ins (with
 * their parent's owner; chmod without effect), read-only snapshots, a
 * snapshot inside its source and of the top level, links and renames at the
 * boundaries, rmdir of an empty subvolume, deletion.  (No exchange with a
 * stand-in: Linux 6.18 aborts the transaction.) */
static const char subvol_edge_workload[] =
	"subvol-create /S\nmkdir /S/A\ncreate /S/A/f 0600\nwrite /S/A/f 0 9000 1\n"
	"link /S/A/f /S/g\nsetxattr /S/A/f user.a v1\nsymlink A/f /S/l\nchown /S/A 7 8\n"
	"subvol-create /S/N\ncreate /S/N/x\nchown /S 5 6\n"
	"snapshot /S /T\nsnapshot /S /R ro\n"
	"write /S/A/f 0 10 2\nwrite /T/g 100 10 3\nwrite /R/g 0 1\nmkdir /R/x\nmkdir /R/A\n"
	"chmod /T/N 0700\nchown /T/N 1 1\nsetxattr /T/N user.a 1\ncreate /T/N/y\nmkdir /T/N/y\n"
	"rename /T/N /T/N9\n"
	"snapshot /S /S/in\nsnapshot / /top ro\nsnapshot /S/A /x\n"
	"subvol-create /E\nrmdir /E\nsubvol-create /E2\ncreate /E2/f\nrmdir /E2\n"
	"rename /S/N /N2\nrename /N2 /T/A/N3\nrename /T/A/N3 /S/N\n"
	"mkdir /T/e\nrename /T/e /T/N\n"
	"link /S/g /T/g2\nrename /S/g /T/g2\nrename /S/A /T/A2\nmkdir /d\nrename /d /S/in\n"
	"subvol-delete /top\nsubvol-delete /S/A\nsubvol-delete /S/in\nsubvol-delete /R\n"
	"subvol-sync\nsubvol-delete /S\nsubvol-delete /S/N\nsubvol-delete /S\nsubvol-sync\n";

/* Corners the generator seldom or never reaches; whatever fails on the
 * kernel is not applied, so expectations are not needed. */
static const char edge_workload[] =
	"mkdir /s 0755\nchmod /s 02775\nchown /s 7 50\nmkdir /s/d 04777\ncreate /s/f 06755\n"
	"symlink ../s /s/up\nmkdir /s/up/up/d/deep/\n"
	"create /s/g\nchmod /s/g 06745\nchown /s/f -1 -1\nchown /s/g -1 -1\nchmod /s/d 07777\n"
	"chown /s/d -1 -1\n"
	"create /cap\nsetxattr /cap security.capability 0x0100000200200000000000000000000000000000\n"
	"write /cap 0 0\nsetxattr /cap user.keep 1\nwrite /cap 10 1\n"
	"setxattr /cap security.capability 0x0100000200200000000000000000000000000000\n"
	"truncate /cap 10\n"
	"setxattr /cap security.capability 0x0100000200200000000000000000000000000000\n"
	"fallocate /cap 0 4K keep-size\n"
	"setxattr /cap security.capability 0x0100000200200000000000000000000000000000\n"
	"chown /cap -1 -1\n"
	"create \"/odd name\\\\\\xff\\t\"\nsetxattr \"/odd name\\\\\\xff\\t\" \"user.x y=z\\\\\" 0x00\n"
	"create /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n" /* 255 */
	"create /f\nwrite /f 100 9000 1\nwrite /f 1G 100 2\ntruncate /f 5000\ntruncate /f 20000\n"
	"fallocate /f 10 100 punch-hole\nfallocate /f 4000 200 punch-hole\nfallocate /f 30000 10\n"
	"fallocate /f 0 1M keep-size\nwrite /f 0x7fffffffffffff00 4096 = EINVAL\n"
	"link /f /f2\nrename /f /f2\nrename /f /f2 exchange\nrename /f /f2 noreplace\n"
	"symlink /f2 /lf\nlink /lf /lf2\nwrite /lf2 0 10 3\n"
	"mkdir /a\nmkdir /a/d\ncreate /a/d/in\nmkdir /b\ncreate /b/x\nrename /a/d /b/x exchange\n"
	"create /b/x/../y\nmkdir /e\nrename /b/x/ /e/\nrename /e/ /a/d/\nrename /a/d /a/d/in\n"
	"mkdir /t\nmkdir /t/u\nrename /t /t/u/v\nrename /t/u /t exchange\nrename /a /t/u exchange\n"
	"symlink /../../b /abs\ncreate /abs/z\nsymlink abs/../abs /rel\ncreate /rel/z2\n"
	"rmdir /a/d/..\nunlink /abs/\nunlink /abs\nrmdir /b/\nunlink /b/y\nunlink /b/z\n"
	"unlink /b/z2\nrmdir /b//\n";

static bool btrsim_present(void)
{
	return access(btrsim_bin(), X_OK) == 0;
}

/* The loop-mounted btrfs of the cross-check, undone in xc_cleanup. */
static char xc_dir[256], xc_img[300], xc_mnt[300], xc_loop[64];
static bool xc_mounted;

static void xc_unmount(void)
{
	char cmd[800];
	if (xc_mounted) {
		snprintf(cmd, sizeof(cmd), "umount '%s' 2>/dev/null || umount -l '%s'", xc_mnt,
			 xc_mnt);
		if (system(cmd) != 0)
			cr_log_warn("could not unmount %s", xc_mnt);
		xc_mounted = false;
	}
	if (xc_loop[0]) {
		snprintf(cmd, sizeof(cmd), "losetup -d '%s'", xc_loop);
		if (system(cmd) != 0)
			cr_log_warn("could not detach %s", xc_loop);
		xc_loop[0] = 0;
	}
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void xc_cleanup(void)
{
	xc_unmount();
	if (xc_dir[0] && !xc_mounted)
		nftw(xc_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	xc_dir[0] = 0;
}

static void xc_tmpdir(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(xc_dir, sizeof(xc_dir), "%s/btrsim-model-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	cr_assert_not_null(mkdtemp(xc_dir), "mkdtemp: %s", strerror(errno));
}

/* A fresh 1 GiB btrfs mounted at xc_mnt; false (with why) when this machine
 * cannot. */
static bool xc_mount(char *why, size_t len)
{
	char cmd[1200];
	snprintf(xc_img, sizeof(xc_img), "%s/img", xc_dir);
	snprintf(xc_mnt, sizeof(xc_mnt), "%s/mnt", xc_dir);
	unlink(xc_img);
	mkdir(xc_mnt, 0755);
	snprintf(cmd, sizeof(cmd), "truncate -s 1G '%s' && mkfs.btrfs -q -f '%s' >/dev/null 2>&1",
		 xc_img, xc_img);
	if (system(cmd) != 0) {
		snprintf(why, len, "mkfs.btrfs failed or is not installed");
		return false;
	}
	snprintf(cmd, sizeof(cmd), "losetup -f --show '%s' 2>/dev/null", xc_img);
	FILE *p = popen(cmd, "r");
	if (!p || !fgets(xc_loop, sizeof(xc_loop), p)) {
		xc_loop[0] = 0;
		if (p)
			pclose(p);
		snprintf(why, len, "no loop device (losetup -f failed)");
		return false;
	}
	pclose(p);
	xc_loop[strcspn(xc_loop, "\n")] = 0;
	snprintf(cmd, sizeof(cmd), "mount -t btrfs '%s' '%s' 2>/dev/null", xc_loop, xc_mnt);
	if (system(cmd) != 0) {
		snprintf(why, len, "mount of %s failed", xc_loop);
		return false;
	}
	xc_mounted = true;
	return true;
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	return s && s[0] ? strtoull(s, NULL, 0) : def;
}

Test(model, crosscheck_btrfs, .fini = xc_cleanup, .timeout = 600)
{
	if (geteuid() != 0)
		cr_skip_test("not root: no loop mount of a btrfs");
	if (!btrsim_present())
		cr_skip_test("%s not found (set BTRSIM)", btrsim_bin());
	xc_tmpdir();
	char why[200];
	const char *seeds = getenv("MODEL_XCHECK_SEEDS");
	size_t ops = (size_t)env_u64("MODEL_XCHECK_OPS", 500);
	char *list = strdup(seeds && seeds[0] ? seeds : "1"), *save = NULL;
	cr_assert_not_null(list);
	for (char *t = strtok_r(list, " ,", &save); t; t = strtok_r(NULL, " ,", &save)) {
		if (!xc_mount(why, sizeof(why))) {
			free(list);
			xc_cleanup();
			cr_skip_test("%s", why);
		}
		crosscheck(xc_mnt, strtoull(t, NULL, 0), ops, 50, false);
		xc_unmount();
	}
	free(list);
	if (!xc_mount(why, sizeof(why))) {
		xc_cleanup();
		cr_skip_test("%s", why);
	}
	struct wl_workload w = { 0 };
	char err[512];
	int r = wl_parse_text("edge", edge_workload, strlen(edge_workload), &w, err, sizeof(err));
	cr_assert_eq(r, 0, "%s", err);
	crosscheck_w(xc_mnt, &w, "edge", 1, false);
	wl_free(&w);
}

Test(model, crosscheck_btrfs_subvols, .fini = xc_cleanup, .timeout = 600)
{
	if (geteuid() != 0)
		cr_skip_test("not root: no loop mount of a btrfs");
	if (!btrsim_present())
		cr_skip_test("%s not found (set BTRSIM)", btrsim_bin());
	xc_tmpdir();
	char why[200];
	const char *seeds = getenv("MODEL_XCHECK_SEEDS");
	size_t ops = (size_t)env_u64("MODEL_XCHECK_OPS", 500);
	char *list = strdup(seeds && seeds[0] ? seeds : "1"), *save = NULL;
	cr_assert_not_null(list);
	for (char *t = strtok_r(list, " ,", &save); t; t = strtok_r(NULL, " ,", &save)) {
		if (!xc_mount(why, sizeof(why))) {
			free(list);
			xc_cleanup();
			cr_skip_test("%s", why);
		}
		crosscheck_gen(xc_mnt, strtoull(t, NULL, 0), ops, 25, false, true);
		xc_unmount();
	}
	free(list);
	if (!xc_mount(why, sizeof(why))) {
		xc_cleanup();
		cr_skip_test("%s", why);
	}
	struct wl_workload w = { 0 };
	char err[512];
	int r = wl_parse_text("subvol-edge", subvol_edge_workload, strlen(subvol_edge_workload), &w,
			      err, sizeof(err));
	cr_assert_eq(r, 0, "%s", err);
	crosscheck_w(xc_mnt, &w, "subvol-edge", 1, false);
	wl_free(&w);
}

Test(model, crosscheck_host_dir, .fini = xc_cleanup, .timeout = 600)
{
	/* the model assumes root's capabilities (CAP_FSETID keeps set-id bits
	 * through writes) */
	if (geteuid() != 0)
		cr_skip_test("not root: the model assumes root's capabilities");
	if (!btrsim_present())
		cr_skip_test("%s not found (set BTRSIM)", btrsim_bin());
	xc_tmpdir();
	char root[300];
	snprintf(root, sizeof(root), "%s/root", xc_dir);
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(chmod(root, 0755), 0);
	cr_assert_eq(chown(root, 0, 0), 0);
	crosscheck(root, 2, 500, 100, true);
}
