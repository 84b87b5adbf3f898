/*
 * imgutil.c - see imgutil.h.
 */
#include "imgutil.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define HDR_SIZE sizeof(struct btrfs_header_disk)

void iu_require_mkfs(void)
{
	if (system("command -v mkfs.btrfs >/dev/null 2>&1"))
		cr_skip_test("mkfs.btrfs is not installed");
}

void iu_sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

void iu_put(const char *dir, const char *rel, const void *data, size_t len)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0, "create %s", p);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

void iu_rmtree(char *dir)
{
	if (!dir)
		return;
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd)) {
		/* nothing more to do */
	}
	free(dir);
}

void iu_make_src(const char *dir, unsigned nsmall)
{
	char src[1024];
	snprintf(src, sizeof(src), "%s/src", dir);
	iu_sh("mkdir -p %s/d", src);
	uint8_t *big = tu_pat(300000, 7);
	iu_put(src, "d/big", big, 300000);
	free(big);
	iu_put(src, "d/a", "hello\n", 6);
	uint8_t *small = tu_pat(2000, 9);
	for (unsigned i = 0; i < nsmall; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%u", i);
		small[0] = (uint8_t)i;
		iu_put(src, name, small, 2000);
	}
	free(small);
}

void iu_mkfs(const char *dir, const char *img, unsigned mib, const char *opts)
{
	iu_require_mkfs();
	iu_sh("rm -f %s && truncate -s %uM %s && mkfs.btrfs -q -f %s --rootdir %s/src %s "
	      ">/dev/null 2>&1",
	      img, mib, img, opts, dir, img);
}

void iu_make_std(const char *dir, char *img, size_t len)
{
	iu_require_mkfs();
	iu_make_src(dir, 300);
	snprintf(img, len, "%s/fs.img", dir);
	iu_mkfs(dir, img, 200, "-n 4096");
}

static struct iu_opened open_img(const char *img, bool no_item_checks);

struct iu_opened iu_open(const char *img)
{
	return open_img(img, false);
}

struct iu_opened iu_open_check(const char *img)
{
	return open_img(img, true);
}

/* A read-only open of img: with no_item_checks, leaves the tree-checker
 * rejects read all the same (for ref_check, which reports them). */
static struct iu_opened open_img(const char *img, bool no_item_checks)
{
	struct sim_volume_config cfg;
	struct stat st;
	cr_assert_eq(stat(img, &st), 0, "%s", img);
	sim_config_init(&cfg, 1, 0, 0);
	cfg.latency = (struct sim_latency){ 0 };
	cfg.disk[0].image_path = img;
	cfg.disk[0].size = 0;
	cfg.disk[0].sector_size = 4096;
	cfg.disk[0].read_only = true;
	char err[256] = "";
	struct iu_opened o = { 0 };
	cr_assert_eq(sim_volume_open(&cfg, &o.vol, err, sizeof(err)), 0, "%s", err);
	struct ref_open_opts oo = { .super_mirror = -1, .no_item_checks = no_item_checks };
	cr_assert_eq(ref_open(o.vol, &oo, &o.fs, err, sizeof(err)), 0, "%s", err);
	return o;
}

void iu_close(struct iu_opened *o)
{
	ref_close(o->fs);
	sim_volume_close(o->vol);
	o->fs = NULL;
	o->vol = NULL;
}

bool iu_find(const char *img, uint64_t tree, const struct ref_key *from, iu_match_fn match,
	     void *ctx, struct iu_item *out)
{
	struct iu_opened o = iu_open(img);
	struct ref_root root;
	cr_assert_eq(ref_find_root(o.fs, tree, &root), 0, "tree %llu: %s",
		     (unsigned long long)tree, ref_error(o.fs));
	struct ref_path path;
	bool found = false;
	int r = ref_search(o.fs, &root, from, &path);
	while (r == 0) {
		struct ref_key k;
		const uint8_t *data;
		uint32_t size;
		ref_path_item(&path, &k, &data, &size);
		if (!match || match(ctx, &k, data, size)) {
			memset(out, 0, sizeof(*out));
			out->leaf = path.blk[0]->bytenr;
			out->slot = path.slot[0];
			out->key = k;
			out->data_off = (uint32_t)(data - ref_block_data(path.blk[0]));
			out->size = size;
			out->levels = path.levels;
			for (int l = 0; l < path.levels; l++) {
				out->node[l] = path.blk[l]->bytenr;
				out->node_slot[l] = path.slot[l];
			}
			found = true;
			ref_path_release(o.fs, &path);
			break;
		}
		r = ref_next(o.fs, &path);
	}
	cr_assert_geq(r, 0, "tree %llu: %s", (unsigned long long)tree, ref_error(o.fs));
	iu_close(&o);
	return found;
}

struct iu_item iu_item(const char *img, uint64_t tree, uint64_t objectid, uint8_t type,
		       uint64_t offset)
{
	struct ref_key key = { objectid, type, offset };
	struct iu_item it;
	/* The first item >= key is the one, or there is none. */
	bool found = iu_find(img, tree, &key, NULL, NULL, &it);
	cr_assert(found && !ref_key_cmp(&key, &it.key), "tree %llu: no item (%llu %u %llu)",
		  (unsigned long long)tree, (unsigned long long)objectid, type,
		  (unsigned long long)offset);
	return it;
}

static bool match_type(void *ctx, const struct ref_key *k, const uint8_t *data, uint32_t size)
{
	(void)data;
	(void)size;
	return k->type == *(const uint8_t *)ctx;
}

struct iu_item iu_first_of_type(const char *img, uint64_t tree, uint8_t type)
{
	struct ref_key from = { 0, 0, 0 };
	struct iu_item it;
	cr_assert(iu_find(img, tree, &from, match_type, &type, &it), "tree %llu: no item of type %u",
		  (unsigned long long)tree, type);
	return it;
}

/* Where the copies of the tree block at bytenr lie in the image file. */
static int block_copies(const char *img, uint64_t bytenr, uint64_t phys[REF_MAX_COPIES],
			uint32_t *nodesize, unsigned *csum_type)
{
	struct iu_opened o = iu_open(img);
	const struct ref_chunk *c = chunk_find(o.fs, bytenr);
	cr_assert_not_null(c, "block %llu is not mapped", (unsigned long long)bytenr);
	struct ref_copy copies[REF_MAX_COPIES];
	uint64_t run;
	int n = chunk_map(c, bytenr, o.fs->nodesize, copies, &run);
	cr_assert_gt(n, 0);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(copies[i].disk, 0);
		phys[i] = copies[i].physical;
	}
	*nodesize = o.fs->nodesize;
	*csum_type = o.fs->csum_type;
	iu_close(&o);
	return n;
}

uint8_t *iu_read_block(const char *img, uint64_t bytenr, uint32_t *nodesize)
{
	uint64_t phys[REF_MAX_COPIES];
	uint32_t ns;
	unsigned ct;
	block_copies(img, bytenr, phys, &ns, &ct);
	int fd = open(img, O_RDONLY);
	cr_assert_geq(fd, 0);
	uint8_t *blk = malloc(ns);
	cr_assert_not_null(blk);
	cr_assert_eq(pread(fd, blk, ns, (off_t)phys[0]), (ssize_t)ns);
	close(fd);
	if (nodesize)
		*nodesize = ns;
	return blk;
}

void iu_patch_block(const char *img, uint64_t bytenr, size_t pos, const void *bytes, size_t n,
		    bool fix_csum)
{
	uint64_t phys[REF_MAX_COPIES];
	uint32_t ns;
	unsigned ct;
	int ncopies = block_copies(img, bytenr, phys, &ns, &ct);
	cr_assert_leq(pos + n, ns);
	int fd = open(img, O_RDWR);
	cr_assert_geq(fd, 0);
	uint8_t *blk = malloc(ns);
	cr_assert_not_null(blk);
	for (int i = 0; i < ncopies; i++) {
		cr_assert_eq(pread(fd, blk, ns, (off_t)phys[i]), (ssize_t)ns);
		memcpy(blk + pos, bytes, n);
		if (fix_csum) {
			uint8_t sum[32];
			cr_assert_eq(ref_csum(ct, blk + BTRFS_CSUM_BYTES, ns - BTRFS_CSUM_BYTES, sum), 0);
			memcpy(blk, sum, BTRFS_CSUM_BYTES);
		}
		cr_assert_eq(pwrite(fd, blk, ns, (off_t)phys[i]), (ssize_t)ns);
	}
	free(blk);
	close(fd);
}

void iu_patch_le64(const char *img, uint64_t bytenr, size_t pos, uint64_t v)
{
	uint64_t le = htole64(v);
	iu_patch_block(img, bytenr, pos, &le, sizeof(le), true);
}

void iu_patch_le32(const char *img, uint64_t bytenr, size_t pos, uint32_t v)
{
	uint32_t le = htole32(v);
	iu_patch_block(img, bytenr, pos, &le, sizeof(le), true);
}

void iu_patch_item(const char *img, const struct iu_item *it, size_t pos, const void *bytes,
		   size_t n)
{
	cr_assert_leq(pos + n, it->size);
	iu_patch_block(img, it->leaf, it->data_off + pos, bytes, n, true);
}

size_t iu_item_hdr_off(int i)
{
	return HDR_SIZE + (size_t)i * sizeof(struct btrfs_item_disk);
}

size_t iu_key_ptr_off(int i)
{
	return HDR_SIZE + (size_t)i * sizeof(struct btrfs_key_ptr_disk);
}

void iu_set_key(const char *img, const struct iu_item *it, const struct ref_key *key)
{
	struct btrfs_disk_key dk = { htole64(key->objectid), key->type, htole64(key->offset) };
	iu_patch_block(img, it->leaf, iu_item_hdr_off(it->slot), &dk, sizeof(dk), true);
	for (int l = 1; l < it->levels && it->node_slot[l - 1] == 0; l++)
		iu_patch_block(img, it->node[l], iu_key_ptr_off(it->node_slot[l]), &dk, sizeof(dk),
			       true);
}

void iu_patch_super(const char *img, size_t pos, const void *bytes, size_t n)
{
	cr_assert_leq(pos + n, BTRFS_SUPER_SIZE);
	cr_assert_geq(pos, BTRFS_CSUM_BYTES);
	struct stat st;
	cr_assert_eq(stat(img, &st), 0);
	int fd = open(img, O_RDWR);
	cr_assert_geq(fd, 0);
	struct btrfs_super_disk sb;
	int patched = 0;
	for (int m = 0; m < BTRFS_SUPER_MIRRORS; m++) {
		uint64_t off = btrfs_super_offset(m);
		if (off + BTRFS_SUPER_SIZE > (uint64_t)st.st_size)
			break;
		cr_assert_eq(pread(fd, &sb, sizeof(sb), (off_t)off), (ssize_t)sizeof(sb));
		if (LE64(sb.magic) != BTRFS_MAGIC_VALUE)
			continue;
		memcpy((uint8_t *)&sb + pos, bytes, n);
		uint8_t sum[32];
		cr_assert_eq(ref_csum(LE16(sb.csum_type), (uint8_t *)&sb + BTRFS_CSUM_BYTES,
				      BTRFS_SUPER_SIZE - BTRFS_CSUM_BYTES, sum),
			     0);
		memcpy(sb.csum, sum, BTRFS_CSUM_BYTES);
		cr_assert_eq(pwrite(fd, &sb, sizeof(sb), (off_t)off), (ssize_t)sizeof(sb));
		patched++;
	}
	close(fd);
	cr_assert_gt(patched, 0, "no superblock in %s", img);
}

long iu_check(const char *img, char **text)
{
	struct iu_opened o = open_img(img, true);
	size_t len;
	FILE *out = open_memstream(text, &len);
	cr_assert_not_null(out);
	struct ref_check_opts opts = { .out = out };
	long n = ref_check(o.fs, &opts);
	fclose(out);
	cr_assert_geq(n, 0, "check stopped: %s\n%s", ref_error(o.fs), *text);
	if (getenv("IU_SHOW"))
		fprintf(stderr, "---- ref_check %s\n%s", img, *text);
	iu_close(&o);
	return n;
}

void iu_expect_clean(const char *img)
{
	char *text;
	long n = iu_check(img, &text);
	cr_assert_eq(n, 0, "%ld errors on a clean image:\n%s", n, text);
	cr_assert_not_null(strstr(text, "no error found"), "%s", text);
	free(text);
}

/* Whether some "ERROR: " line of text contains want. */
static bool error_line_has(const char *text, const char *want)
{
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (!strncmp(line, "ERROR: ", 7)) {
			const char *hit = strstr(line, want);
			if (hit && hit + strlen(want) <= line + len)
				return true;
		}
		line = end ? end + 1 : NULL;
	}
	return false;
}

void iu_expect_errors(const char *img, ...)
{
	char *text;
	long n = iu_check(img, &text);
	cr_assert_gt(n, 0, "no error found:\n%s", text);
	cr_assert_null(strstr(text, "no error found"), "%s", text);
	va_list ap;
	va_start(ap, img);
	for (const char *want; (want = va_arg(ap, const char *));)
		cr_expect(error_line_has(text, want), "no error line with '%s' in:\n%s", want, text);
	va_end(ap);
	free(text);
}

int iu_btrfs_check(const char *img, const char *opts, char **text)
{
	if (system("command -v btrfs >/dev/null 2>&1"))
		return -1;
	char out[1024];
	snprintf(out, sizeof(out), "%s.btrfs-check", img);
	char cmd[2600];
	snprintf(cmd, sizeof(cmd), "btrfs check --readonly %s %s >%s 2>&1", opts ? opts : "", img,
		 out);
	int st = system(cmd);
	cr_assert(st != -1 && WIFEXITED(st), "%s", cmd);
	if (text) {
		FILE *f = fopen(out, "r");
		cr_assert_not_null(f);
		size_t cap = 1 << 16, len = 0;
		char *buf = malloc(cap + 1);
		cr_assert_not_null(buf);
		size_t got;
		while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
			len += got;
			if (len == cap) {
				cap *= 2;
				buf = realloc(buf, cap + 1);
				cr_assert_not_null(buf);
			}
		}
		buf[len] = 0;
		fclose(f);
		*text = buf;
	}
	unlink(out);
	return WEXITSTATUS(st);
}

static void btrfs_check_expect(const char *img, const char *opts, const char *want,
			       bool must_fail)
{
	char *text = NULL;
	int st = iu_btrfs_check(img, opts, &text);
	if (st < 0)
		return; /* btrfs-progs is not installed */
	if (getenv("IU_SHOW"))
		fprintf(stderr, "---- btrfs check %s(exit %d)\n%s", opts ? opts : "", st, text);
	if (must_fail)
		cr_expect_neq(st, 0, "btrfs check found nothing wrong:\n%s", text);
	if (want)
		cr_expect_not_null(strstr(text, want), "btrfs check did not say '%s':\n%s", want, text);
	free(text);
}

void iu_expect_btrfs_check_fails(const char *img, const char *opts, const char *want)
{
	btrfs_check_expect(img, opts, want, true);
}

void iu_expect_btrfs_check_says(const char *img, const char *opts, const char *want)
{
	btrfs_check_expect(img, opts, want, false);
}
