/*
 * test_at.c - the calls a FUSE server makes of ref (traces/fmount*.c):
 * relative paths from ref_chdir's base and "" for the base itself
 * (AT_EMPTY_PATH), ref_renameat and ref_linkat with two bases; files held
 * open (ref_hold): a last unlink or a rename over one leaving an orphan
 * that the last ref_release deletes, fsync of it doing nothing, link to it
 * refused, and a crash while held leaving what the next mount cleans up;
 * new inodes owned by ref_creds' ids (a set-group-ID directory's group
 * winning); ref_statfs's numbers; the real-time clock.  The file system is
 * checked clean after each case.
 */
#include "wrutil.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static sim_volume *vol;
static ref_fs *fs;

static void setup(void)
{
	fs = wu_fresh(&vol, 256, 0);
}

static void teardown(void)
{
	if (fs)
		cr_assert_eq(ref_umount(fs), 0);
	fs = NULL;
	wu_expect_ref_clean(vol);
	sim_volume_close(vol);
	vol = NULL;
}

TestSuite(at, .init = setup, .fini = teardown);

static struct ref_ino ino_of(const char *path)
{
	struct ref_ino i;
	WU_OK(fs, ref_lookup_path(fs, path, false, &i));
	return i;
}

static struct ref_stat stat_of(const struct ref_ino *i)
{
	struct ref_stat st;
	WU_OK(fs, ref_stat(fs, i, &st));
	return st;
}

/* Whether the top level's tree holds an orphan item for ino. */
static bool orphan_item(uint64_t ino)
{
	struct ref_root root;
	WU_OK(fs, ref_find_root(fs, BTRFS_FS_TREE_OBJECTID, &root));
	struct ref_key k = { BTRFS_ORPHAN_OBJECTID, BTRFS_ORPHAN_ITEM_KEY, ino };
	struct ref_path p;
	int r = ref_search(fs, &root, &k, &p);
	if (r == 0)
		ref_path_release(fs, &p);
	cr_assert(r == 0 || r == -ENOENT || r == 1, "search: %d", r);
	return r == 0;
}

Test(at, relative_paths_and_the_base_itself)
{
	WU_ERR(fs, ref_mkdir(fs, "d", 0755), EINVAL); /* no base: refused, as before */
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	struct ref_ino d = ino_of("/d");
	ref_chdir(fs, &d);
	WU_OK(fs, ref_create(fs, "f", 0644));
	WU_OK(fs, ref_mkdir(fs, "sub", 0700));
	WU_OK(fs, ref_create(fs, "sub/g", 0600));
	WU_OK(fs, ref_symlink(fs, "f", "s"));
	WU_OK(fs, ref_create(fs, "/top", 0644)); /* absolute paths ignore the base */
	ino_of("/d/f"), ino_of("/d/sub/g"), ino_of("/top");
	WU_ERR(fs, ref_create(fs, "f", 0644), EEXIST);
	WU_ERR(fs, ref_unlink(fs, "nothere"), ENOENT);
	/* "" is the base, whatever it is; a symlink is not followed */
	struct ref_ino f = ino_of("/d/f"), s = ino_of("/d/s");
	ref_chdir(fs, &f);
	WU_OK(fs, ref_write(fs, "", "hello", 5, 0));
	WU_OK(fs, ref_truncate(fs, "", 3));
	cr_assert_eq(stat_of(&f).size, 3);
	ref_chdir(fs, &s);
	WU_OK(fs, ref_lchown(fs, "", 5, 6));
	cr_assert_eq(stat_of(&s).uid, 5);
	cr_assert_eq(stat_of(&f).uid, 0);
	WU_ERR(fs, ref_write(fs, "", "x", 1, 0), EINVAL); /* a symlink is no regular file */
	ref_chdir(fs, &d);
	WU_ERR(fs, ref_write(fs, "", "x", 1, 0), EISDIR);
	ref_chdir(fs, NULL);
	WU_ERR(fs, ref_unlink(fs, "f"), EINVAL);
}

Test(at, renameat_and_linkat)
{
	WU_OK(fs, ref_mkdir(fs, "/a", 0755));
	WU_OK(fs, ref_mkdir(fs, "/b", 0755));
	WU_OK(fs, ref_create(fs, "/a/x", 0644));
	struct ref_ino a = ino_of("/a"), b = ino_of("/b"), x = ino_of("/a/x");
	WU_OK(fs, ref_renameat(fs, &a, "x", &b, "y", 0));
	cr_assert_eq(ino_of("/b/y").ino, x.ino);
	WU_OK(fs, ref_create(fs, "/a/z", 0644));
	WU_OK(fs, ref_renameat(fs, &a, "z", &b, "y", RENAME_EXCHANGE));
	cr_assert_eq(ino_of("/a/z").ino, x.ino);
	WU_ERR(fs, ref_renameat(fs, &a, "z", &b, "y", RENAME_NOREPLACE), EEXIST);
	WU_ERR(fs, ref_renameat(fs, &a, "z", NULL, "y", 0), EINVAL); /* NULL: no base set */
	/* link from the inode itself ("" with it as the base) */
	WU_OK(fs, ref_linkat(fs, &x, "", &b, "x2"));
	cr_assert_eq(stat_of(&x).nlink, 2);
	WU_ERR(fs, ref_linkat(fs, &a, "", &b, "dirlink"), EPERM);
	WU_ERR(fs, ref_linkat(fs, &x, "", &b, "x2"), EEXIST);
}

Test(at, unlinked_while_open)
{
	WU_OK(fs, ref_create(fs, "/held", 0644));
	WU_OK(fs, ref_create(fs, "/keep", 0644));
	struct ref_ino h = ino_of("/held"), root = ino_of("/");
	uint8_t *pat = tu_pat(100000, 1);
	WU_OK(fs, ref_write(fs, "/held", pat, 100000, 0));
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_hold(fs, &h));
	WU_OK(fs, ref_hold(fs, &h)); /* opened twice */
	WU_OK(fs, ref_unlink(fs, "/held"));
	cr_assert_eq(stat_of(&h).nlink, 0);
	cr_assert(orphan_item(h.ino));
	/* still a file through its inode */
	ref_chdir(fs, &h);
	WU_OK(fs, ref_write(fs, "", "abc", 3, 200000));
	uint8_t buf[8];
	cr_assert_eq(ref_pread(fs, &h, buf, 3, 200000), 3);
	cr_assert(!memcmp(buf, "abc", 3));
	struct ref_log_stats before, after;
	ref_log_stats(fs, &before);
	WU_OK(fs, ref_fsync(fs, "")); /* nothing to log: it has no name */
	ref_log_stats(fs, &after);
	cr_assert_eq(after.skipped, before.skipped + 1);
	cr_assert_eq(after.log_syncs + after.full_commits, before.log_syncs + before.full_commits);
	WU_ERR(fs, ref_linkat(fs, &h, "", &root, "back"), ENOENT);
	WU_OK(fs, ref_sync(fs));
	wu_expect_ref_clean(vol); /* an orphan with its item is no error */
	WU_OK(fs, ref_release(fs, &h));
	cr_assert_eq(stat_of(&h).nlink, 0); /* one open left */
	WU_OK(fs, ref_release(fs, &h));
	struct ref_stat st;
	WU_ERR(fs, ref_stat(fs, &h, &st), ENOENT);
	cr_assert(!orphan_item(h.ino));
	/* a rename over a held file leaves it the same way */
	WU_OK(fs, ref_create(fs, "/over", 0644));
	struct ref_ino k = ino_of("/keep");
	WU_OK(fs, ref_hold(fs, &k));
	WU_OK(fs, ref_rename(fs, "/over", "/keep", 0));
	cr_assert(orphan_item(k.ino));
	WU_OK(fs, ref_release(fs, &k));
	cr_assert(!orphan_item(k.ino));
	/* a file with other links loses only the name */
	WU_OK(fs, ref_link(fs, "/keep", "/keep2"));
	struct ref_ino k2 = ino_of("/keep");
	WU_OK(fs, ref_hold(fs, &k2));
	WU_OK(fs, ref_unlink(fs, "/keep"));
	cr_assert_eq(stat_of(&k2).nlink, 1);
	cr_assert(!orphan_item(k2.ino));
	WU_OK(fs, ref_release(fs, &k2));
	ino_of("/keep2");
	free(pat);
}

Test(at, crash_while_held)
{
	WU_OK(fs, ref_create(fs, "/held", 0644));
	uint8_t *pat = tu_pat(300000, 2);
	WU_OK(fs, ref_write(fs, "/held", pat, 300000, 0));
	struct ref_ino h = ino_of("/held");
	WU_OK(fs, ref_hold(fs, &h));
	WU_OK(fs, ref_unlink(fs, "/held"));
	WU_OK(fs, ref_sync(fs));
	ref_close(fs); /* power lost with the file open: no release, no commit */
	fs = NULL;
	wu_expect_ref_clean(vol);
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	cr_assert(orphan_item(h.ino));
	WU_OK(fs, ref_mkdir(fs, "/after", 0755)); /* the first change cleans up */
	cr_assert(!orphan_item(h.ino));
	struct ref_stat st;
	WU_ERR(fs, ref_stat(fs, &h, &st), ENOENT);
	/* and its number is not given again, as in the kernel, which knew its
	 * highest inode before its cleanup */
	cr_assert_eq(ino_of("/after").ino, h.ino + 1);
	free(pat);
}

Test(at, owner_of_new_inodes)
{
	ref_creds(fs, 1000, 2000);
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_mkdir(fs, "/d", 02775));
	WU_OK(fs, ref_symlink(fs, "f", "/s"));
	struct ref_ino f = ino_of("/f"), d = ino_of("/d"), s = ino_of("/s");
	cr_assert_eq(stat_of(&f).uid, 1000);
	cr_assert_eq(stat_of(&f).gid, 2000);
	cr_assert_eq(stat_of(&s).uid, 1000);
	WU_OK(fs, ref_chown(fs, "/d", 1000, 3000));
	WU_OK(fs, ref_chmod(fs, "/d", 02775));
	ref_creds(fs, 1001, 2001);
	WU_OK(fs, ref_create(fs, "/d/g", 0644));
	WU_OK(fs, ref_mkdir(fs, "/d/e", 0755));
	struct ref_ino g = ino_of("/d/g"), e = ino_of("/d/e");
	cr_assert_eq(stat_of(&g).uid, 1001);
	cr_assert_eq(stat_of(&g).gid, 3000); /* the set-group-ID directory's group */
	cr_assert_eq(stat_of(&e).gid, 3000);
	cr_assert(stat_of(&e).mode & S_ISGID);
	(void)d;
}

Test(at, statfs_counts)
{
	struct ref_statfs a, b;
	WU_OK(fs, ref_statfs(fs, &a));
	cr_assert_eq(a.bsize, 4096);
	cr_assert_eq(a.namelen, 255);
	cr_assert_eq(a.blocks, (256u << 20) / 4096); /* single data: the whole disk */
	cr_assert(a.bfree < a.blocks && a.bavail <= a.bfree, "%llu %llu %llu",
		  (unsigned long long)a.blocks, (unsigned long long)a.bfree,
		  (unsigned long long)a.bavail);
	uint8_t *pat = tu_pat(8 << 20, 3);
	WU_OK(fs, ref_create(fs, "/big", 0644));
	WU_OK(fs, ref_write(fs, "/big", pat, 8 << 20, 0));
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_statfs(fs, &b));
	cr_assert(a.bfree - b.bfree >= (8u << 20) / 4096, "%llu -> %llu",
		  (unsigned long long)a.bfree, (unsigned long long)b.bfree);
	cr_assert(a.bavail - b.bavail >= (8u << 20) / 4096);
	/* read-only, from the block group items: the same numbers */
	WU_OK(fs, ref_umount(fs));
	fs = NULL;
	ref_fs *ro;
	char err[256];
	struct ref_open_opts oo = { .super_mirror = -1 };
	cr_assert_eq(ref_open(vol, &oo, &ro, err, sizeof(err)), 0, "%s", err);
	struct ref_statfs c;
	WU_OK(ro, ref_statfs(ro, &c));
	cr_assert_eq(c.blocks, b.blocks);
	cr_assert_eq(c.bfree, b.bfree);
	cr_assert_eq(c.bavail, b.bavail);
	ref_close(ro);
	free(pat);
}

Test(at, real_time_clock)
{
	WU_OK(fs, ref_umount(fs));
	struct ref_mount_opts mo = { .open = { .super_mirror = -1 }, .realtime = true };
	char err[256];
	cr_assert_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), 0, "%s", err);
	struct timespec t0, t1;
	clock_gettime(CLOCK_REALTIME, &t0);
	WU_OK(fs, ref_create(fs, "/now", 0644));
	clock_gettime(CLOCK_REALTIME, &t1);
	struct ref_ino n = ino_of("/now");
	struct ref_stat st = stat_of(&n);
	cr_assert(st.ctime.tv_sec >= t0.tv_sec && st.ctime.tv_sec <= t1.tv_sec, "%lld not in [%lld, %lld]",
		  (long long)st.ctime.tv_sec, (long long)t0.tv_sec, (long long)t1.tv_sec);
}
