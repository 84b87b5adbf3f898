/*
 * test_write.c - the write path (ref/vfs.h) on memory volumes: B-trees that
 * split and merge under thousands of random inserts and deletes, directory
 * hash collisions, thousands of hard links (INODE_EXTREF), file data against
 * a model under random writes, truncates, holes and preallocation, ENOSPC on
 * a full file system, and the errnos of bad input.  Every test ends with the
 * image clean for ref_check and `btrfs check --readonly`.
 */
#include "wrutil.h"
#include "testutil.h"
#include "ref/csum.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

TestSuite(write);

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static bool exists(ref_fs *fs, const char *path)
{
	struct ref_ino ino;
	return ref_lookup_path(fs, path, false, &ino) == 0;
}

Test(write, random_names_split_and_merge)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 4096); /* small nodes: deep trees */
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	enum { N = 6000 };
	static char names[N][24];
	uint64_t s = 42;
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "/d/%016llx", (unsigned long long)rnd(&s));
		WU_OK(fs, ref_create(fs, names[i], 0644));
		if (i == N / 2)
			WU_OK(fs, ref_sync(fs));
	}
	for (int i = 0; i < N; i += 2)
		WU_OK(fs, ref_unlink(fs, names[i]));
	for (int i = 0; i < N; i++)
		cr_assert_eq(exists(fs, names[i]), i % 2 == 1, "%s", names[i]);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	/* Delete the rest: leaves and nodes empty out and merge away. */
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	for (int i = 1; i < N; i += 2)
		WU_OK(fs, ref_unlink(fs, names[i]));
	WU_OK(fs, ref_rmdir(fs, "/d"));
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* A name of the form <prefix><4 bytes> whose btrfs name hash is `target`
 * (crc32c is affine in the message bits: solve for the last 32). */
static bool forge(const char *prefix, uint32_t target, char *out)
{
	size_t pl = strlen(prefix);
	memcpy(out, prefix, pl);
	out[pl + 4] = 0;
	uint32_t col[32], base;
	memset(out + pl, 0, 4);
	base = (uint32_t)ref_name_hash(out, pl + 4);
	for (int b = 0; b < 32; b++) {
		memset(out + pl, 0, 4);
		out[pl + b / 8] = (char)(1 << (b % 8));
		col[b] = (uint32_t)ref_name_hash(out, pl + 4) ^ base;
	}
	/* Gaussian elimination over GF(2): find x with sum x_b col[b] = want. */
	uint32_t want = target ^ base, rows[32], sel[32];
	for (int i = 0; i < 32; i++) {
		rows[i] = col[i];
		sel[i] = 1u << i;
	}
	uint32_t x = 0;
	int rank = 0;
	for (int bit = 31; bit >= 0; bit--) {
		int piv = -1;
		for (int i = rank; i < 32; i++)
			if (rows[i] >> bit & 1) {
				piv = i;
				break;
			}
		if (piv < 0)
			continue;
		uint32_t tr = rows[piv], ts = sel[piv];
		rows[piv] = rows[rank];
		sel[piv] = sel[rank];
		rows[rank] = tr;
		sel[rank] = ts;
		for (int i = 0; i < 32; i++)
			if (i != rank && rows[i] >> bit & 1) {
				rows[i] ^= rows[rank];
				sel[i] ^= sel[rank];
			}
		if (want >> bit & 1) {
			want ^= rows[rank];
			x ^= sel[rank];
		}
		rank++;
	}
	if (want)
		return false;
	for (int i = 0; i < 4; i++)
		out[pl + i] = (char)(x >> (8 * i));
	for (int i = 0; i < 4; i++)
		if (out[pl + i] == 0 || out[pl + i] == '/')
			return false;
	return (uint32_t)ref_name_hash(out, pl + 4) == target;
}

Test(write, dir_item_hash_collisions)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	const char *first = "/collide-base";
	uint32_t h = (uint32_t)ref_name_hash(first + 1, strlen(first) - 1);
	char names[6][64];
	int n = 0;
	for (int p = 0; n < 6 && p < 200; p++) {
		char prefix[32];
		snprintf(prefix, sizeof(prefix), "/c%d-", p);
		char name[64];
		if (forge(prefix + 1, h, name + 1)) {
			name[0] = '/';
			strcpy(names[n++], name);
		}
	}
	cr_assert_eq(n, 6, "could not forge colliding names");
	WU_OK(fs, ref_create(fs, first, 0644));
	for (int i = 0; i < n; i++)
		WU_OK(fs, ref_create(fs, names[i], 0600));
	WU_ERR(fs, ref_create(fs, names[3], 0600), EEXIST);
	WU_OK(fs, ref_unlink(fs, names[2]));
	WU_OK(fs, ref_rename(fs, names[4], "/renamed", 0));
	for (int i = 0; i < n; i++)
		cr_assert_eq(exists(fs, names[i]), i != 2 && i != 4);
	cr_assert(exists(fs, first) && exists(fs, "/renamed"));
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

Test(write, thousands_of_hard_links)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	WU_OK(fs, ref_create(fs, "/d/f", 0644));
	WU_OK(fs, ref_write(fs, "/d/f", "content", 7, 0));
	enum { LINKS = 3000 };
	char p[64];
	for (int i = 0; i < LINKS; i++) {
		snprintf(p, sizeof(p), "/d/link-with-a-longish-name-%05d", i);
		WU_OK(fs, ref_link(fs, "/d/f", p));
	}
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, "/d/f", false, &st));
	cr_assert_eq(st.nlink, LINKS + 1);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i < LINKS; i += 2) {
		snprintf(p, sizeof(p), "/d/link-with-a-longish-name-%05d", i);
		WU_OK(fs, ref_unlink(fs, p));
	}
	WU_OK(fs, ref_unlink(fs, "/d/f"));
	WU_OK(fs, ref_stat_path(fs, "/d/link-with-a-longish-name-00001", false, &st));
	cr_assert_eq(st.nlink, LINKS / 2);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* One file against a model under random writes, truncates, holes and
 * preallocation; every read compared. */
Test(write, data_against_model)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	enum { MAX = 1 << 20 };
	uint8_t *model = calloc(1, MAX + 65536), *buf = malloc(MAX + 65536),
		*got = malloc(MAX + 65536);
	uint64_t size = 0, s = 7;
	WU_OK(fs, ref_create(fs, "/f", 0644));
	for (int op = 0; op < 400; op++) {
		uint64_t kind = rnd(&s) % 10, off = rnd(&s) % MAX, len = rnd(&s) % 40000 + 1;
		if (rnd(&s) % 4 == 0)
			len = rnd(&s) % 3000 + 1; /* small: inline sizes and partial sectors */
		if (rnd(&s) % 8 == 0)
			off = rnd(&s) % 4096;
		if (kind < 5) {
			for (uint64_t i = 0; i < len; i++)
				buf[i] = (uint8_t)rnd(&s);
			WU_OK(fs, ref_write(fs, "/f", buf, len, off));
			memcpy(model + off, buf, len);
			if (off + len > size)
				size = off + len;
		} else if (kind < 7) {
			uint64_t ns = rnd(&s) % 3 == 0 ? rnd(&s) % 5000 : off;
			WU_OK(fs, ref_truncate(fs, "/f", ns));
			if (ns < size)
				memset(model + ns, 0, size - ns);
			size = ns;
		} else if (kind < 9) {
			WU_OK(fs, ref_fallocate(fs, "/f", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off,
						len));
			if (off < size)
				memset(model + off, 0, (off + len < size ? off + len : size) - off);
		} else {
			int keep = rnd(&s) % 2 ? FALLOC_FL_KEEP_SIZE : 0;
			WU_OK(fs, ref_fallocate(fs, "/f", keep, off, len));
			if (!keep && off + len > size)
				size = off + len;
		}
		if (op % 50 == 0)
			WU_OK(fs, ref_sync(fs));
		struct ref_stat st;
		WU_OK(fs, ref_stat_path(fs, "/f", false, &st));
		cr_assert_eq(st.size, size, "op %d: size %llu, model %llu", op,
			     (unsigned long long)st.size, (unsigned long long)size);
		struct ref_ino ino;
		WU_OK(fs, ref_lookup_path(fs, "/f", false, &ino));
		ssize_t n = ref_pread(fs, &ino, got, MAX + 65536, 0);
		cr_assert_eq(n, (ssize_t)size, "op %d: read %zd of %llu: %s", op, n,
			     (unsigned long long)size, ref_error(fs));
		for (uint64_t i = 0; i < size; i++)
			if (got[i] != model[i])
				cr_assert_fail("op %d (kind %llu): byte %llu is %u, model %u", op,
					       (unsigned long long)kind, (unsigned long long)i, got[i],
					       model[i]);
	}
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(model);
	free(buf);
	free(got);
	sim_volume_close(vol);
}

Test(write, full_file_system_enospc)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 160, 0);
	enum { CHUNK = 1 << 20 };
	uint8_t *buf = malloc(CHUNK);
	memset(buf, 0xab, CHUNK);
	char p[64];
	int files = 0;
	long r = 0;
	for (; files < 1000; files++) {
		snprintf(p, sizeof(p), "/f%d", files);
		WU_OK(fs, ref_create(fs, p, 0644));
		r = ref_write(fs, p, buf, CHUNK, 0);
		if (r < 0)
			break;
	}
	cr_assert_eq(r, -ENOSPC, "expected ENOSPC, got %ld after %d files: %s", r, files,
		     ref_error(fs));
	cr_assert_gt(files, 50);
	/* The failed write left no trace: the file is empty. */
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, p, false, &st));
	cr_assert_eq(st.size, 0);
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	/* Deleting works on the full file system and gives the space back. */
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	for (int i = 0; i <= files; i++) {
		snprintf(p, sizeof(p), "/f%d", i);
		WU_OK(fs, ref_unlink(fs, p));
	}
	WU_OK(fs, ref_sync(fs));
	for (int i = 0; i < files / 2; i++) {
		snprintf(p, sizeof(p), "/g%d", i);
		WU_OK(fs, ref_create(fs, p, 0644));
		WU_OK(fs, ref_write(fs, p, buf, CHUNK, 0));
	}
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	free(buf);
	sim_volume_close(vol);
}

Test(write, errnos_of_bad_input)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	char longname[300];
	longname[0] = '/';
	memset(longname + 1, 'x', 256);
	longname[257] = 0;
	WU_OK(fs, ref_mkdir(fs, "/a", 0755));
	WU_OK(fs, ref_mkdir(fs, "/a/b", 0755));
	WU_OK(fs, ref_create(fs, "/a/f", 0644));
	WU_ERR(fs, ref_create(fs, longname, 0644), ENAMETOOLONG);
	longname[256] = 0; /* 255 bytes: fine */
	WU_OK(fs, ref_create(fs, longname, 0644));
	WU_ERR(fs, ref_mkdir(fs, "/a", 0755), EEXIST);
	WU_ERR(fs, ref_mkdir(fs, "/", 0755), EEXIST);
	WU_ERR(fs, ref_mkdir(fs, "/a/.", 0755), EEXIST);
	WU_ERR(fs, ref_mkdir(fs, "/a/..", 0755), EEXIST);
	WU_ERR(fs, ref_mkdir(fs, "/nope/x", 0755), ENOENT);
	WU_ERR(fs, ref_mkdir(fs, "/a/f/x", 0755), ENOTDIR);
	WU_ERR(fs, ref_rmdir(fs, "/a"), ENOTEMPTY);
	WU_ERR(fs, ref_rmdir(fs, "/a/f"), ENOTDIR);
	WU_ERR(fs, ref_rmdir(fs, "/a/."), EINVAL);
	WU_ERR(fs, ref_rmdir(fs, "/a/.."), ENOTEMPTY);
	WU_ERR(fs, ref_rmdir(fs, "/"), EBUSY);
	WU_ERR(fs, ref_unlink(fs, "/a/b"), EISDIR);
	WU_ERR(fs, ref_unlink(fs, "/a/missing"), ENOENT);
	WU_ERR(fs, ref_write(fs, "/a", "x", 1, 0), EISDIR);
	WU_ERR(fs, ref_write(fs, "/a/f", "x", 1, UINT64_MAX - 10), EINVAL);
	WU_ERR(fs, ref_fallocate(fs, "/a/f", 0, INT64_MAX - 10, 100), EFBIG);
	WU_ERR(fs, ref_truncate(fs, "/a", 0), EISDIR);
	WU_ERR(fs, ref_fallocate(fs, "/a/f", FALLOC_FL_PUNCH_HOLE, 0, 10), EOPNOTSUPP);
	WU_ERR(fs, ref_fallocate(fs, "/a/f", 0, 0, 0), EINVAL);
	WU_ERR(fs, ref_rename(fs, "/a", "/a/b/c", 0), EINVAL);
	WU_ERR(fs, ref_rename(fs, "/a", "/a/b", 0), EINVAL); /* onto its own child */
	WU_ERR(fs, ref_rename(fs, "/a/f", "/a/b", 0), EISDIR);
	WU_ERR(fs, ref_rename(fs, "/a/b", "/a/f", 0), ENOTDIR);
	WU_ERR(fs, ref_rename(fs, "/a/f", "/a/b/g", RENAME_EXCHANGE), ENOENT);
	WU_OK(fs, ref_create(fs, "/a/g", 0644));
	WU_ERR(fs, ref_rename(fs, "/a/f", "/a/g", RENAME_NOREPLACE), EEXIST);
	WU_OK(fs, ref_rename(fs, "/a/f", "/a/g", RENAME_EXCHANGE));
	WU_ERR(fs, ref_link(fs, "/a/b", "/a/b2"), EPERM);
	WU_ERR(fs, ref_link(fs, "/a/f", "/a/g"), EEXIST);
	WU_ERR(fs, ref_symlink(fs, "", "/s"), ENOENT);
	/* PATH_MAX with its NUL is the limit with 16 KiB nodes (the kernel's
	 * too); with 4 KiB nodes it is the leaf's room, 3949 bytes
	 * (test_receive.c: received symlinks) */
	char *long_target = malloc(4097);
	memset(long_target, 'x', 4096);
	long_target[4096] = 0;
	WU_ERR(fs, ref_symlink(fs, long_target, "/s"), ENAMETOOLONG);
	long_target[4095] = 0;
	WU_OK(fs, ref_symlink(fs, long_target, "/s4095"));
	free(long_target);
	WU_ERR(fs, ref_setxattr(fs, "/a/f", "bogus.x", "v", 1, 0), EOPNOTSUPP);
	WU_ERR(fs, ref_setxattr(fs, "/a/f", "user.x", "v", 1, XATTR_REPLACE), ENODATA);
	WU_OK(fs, ref_setxattr(fs, "/a/f", "user.x", "v", 1, XATTR_CREATE));
	WU_ERR(fs, ref_setxattr(fs, "/a/f", "user.x", "v", 1, XATTR_CREATE), EEXIST);
	WU_ERR(fs, ref_removexattr(fs, "/a/f", "user.y"), ENODATA);
	WU_OK(fs, ref_symlink(fs, "loop2", "/loop1"));
	WU_OK(fs, ref_symlink(fs, "loop1", "/loop2"));
	WU_ERR(fs, ref_write(fs, "/loop1", "x", 1, 0), ELOOP);
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/*
 * Crash consistency: a workload of many commits runs with every write
 * recorded; then, for cut points all through the log, a copy of the volume
 * as it was before the workload replays the log up to the cut and loses
 * power (unflushed writes kept or dropped at random, some torn).  Every such
 * image must open, check clean, and hold exactly the files of the last
 * commit whose superblocks it has.
 */
Test(write, crash_at_any_write_leaves_a_commit)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 4096);
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_umount(fs));
	sim_volume *base;
	cr_assert_eq(sim_volume_clone(vol, &base), 0);
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	uint64_t gen0 = LE64(ref_super(fs)->generation);
	sim_volume_log_clear(vol);
	sim_volume_set_recording(vol, true);
	/* Commit k holds files f0..f(10k+9); files[g - gen0] = how many. */
	enum { COMMITS = 12 };
	int files_at[COMMITS + 2] = { 0 };
	char p[64];
	uint8_t data[9000];
	memset(data, 0x5a, sizeof(data));
	for (int c = 0; c < COMMITS; c++) {
		for (int i = 0; i < 10; i++) {
			snprintf(p, sizeof(p), "/f%d", c * 10 + i);
			WU_OK(fs, ref_create(fs, p, 0644));
			WU_OK(fs, ref_write(fs, p, data, (size_t)(c * 10 + i) * 71 % sizeof(data) + 1, 0));
		}
		WU_OK(fs, ref_sync(fs));
		files_at[c + 1] = (c + 1) * 10;
	}
	WU_OK(fs, ref_umount(fs));
	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	cr_assert_gt(n, 100);
	bool seen[COMMITS + 1] = { false };
	for (size_t cut = 0; cut <= n; cut += (n / 150) + 1) {
		sim_volume *v = wu_crashed_copy(base, log, cut);
		ref_fs *r;
		struct ref_open_opts oo = { .super_mirror = -1 };
		cr_assert_eq(ref_open(v, &oo, &r, err, sizeof(err)), 0, "cut %zu: %s", cut, err);
		uint64_t g = LE64(ref_super(r)->generation) - gen0;
		cr_assert_leq(g, COMMITS, "cut %zu: generation %llu", cut, (unsigned long long)g);
		int want = files_at[g];
		seen[g] = true;
		for (int i = 0; i < COMMITS * 10; i++) {
			snprintf(p, sizeof(p), "/f%d", i);
			struct ref_ino root, ino;
			cr_assert_eq(ref_subvol_root(r, BTRFS_FS_TREE_OBJECTID, &root), 0);
			int e = ref_resolve(r, &root, p, &ino);
			cr_assert_eq(e == 0, i < want, "cut %zu, gen +%llu: %s %s", cut,
				     (unsigned long long)g, p, e ? "missing" : "present");
			if (e == 0) {
				uint8_t got[9000];
				size_t len = (size_t)i * 71 % sizeof(data) + 1;
				cr_assert_eq(ref_pread(r, &ino, got, sizeof(got), 0), (ssize_t)len);
				cr_assert(!memcmp(got, data, len));
			}
		}
		ref_close(r);
		sim_volume_close(v);
	}
	int distinct = 0;
	for (int g = 0; g <= COMMITS; g++)
		distinct += seen[g];
	cr_assert_geq(distinct, COMMITS / 2, "the cuts reached only %d commits", distinct);
	sim_volume_close(base);
	sim_volume_close(vol);
}

/* What the write path cannot keep correct it refuses, with the reason. */
Test(write, read_only_and_unsupported_features)
{
	sim_volume *vol;
	ref_fs *fs = wu_fresh(&vol, 256, 0);
	WU_OK(fs, ref_umount(fs));
	struct ref_open_opts oo = { .super_mirror = -1 };
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "%s", err);
	WU_ERR(fs, ref_mkdir(fs, "/x", 0755), EROFS);
	WU_ERR(fs, ref_sync(fs), EROFS);
	ref_close(fs);
	/* An incompat feature ref does not know (zoned): no open at all.  (Every
	 * feature ref reads it also writes.) */
	struct btrfs_super_disk sb;
	cr_assert_eq(sim_read(vol, 0, BTRFS_SUPER_OFFSET, &sb, sizeof(sb)), 0);
	sb.incompat_flags = htole64(LE64(sb.incompat_flags) | BTRFS_FEATURE_INCOMPAT_ZONED);
	ref_csum(LE16(sb.csum_type), (uint8_t *)&sb + BTRFS_CSUM_BYTES, BTRFS_SUPER_SIZE - BTRFS_CSUM_BYTES,
		 sb.csum);
	cr_assert_eq(sim_write(vol, 0, BTRFS_SUPER_OFFSET, &sb, sizeof(sb), SIM_FUA), 0);
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), -EOPNOTSUPP);
	cr_assert(strstr(err, "incompat"), "%s", err);
	sim_volume_close(vol);
}
