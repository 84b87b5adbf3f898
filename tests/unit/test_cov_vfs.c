/*
 * test_cov_vfs.c - the write path's calls by path, in the corners the
 * workloads rarely reach: path walking ('.', '..', symlinks in the middle and
 * at the end, trailing slashes, loops, over-long names, relative paths), the
 * read API's ref_resolve, readlink's argument checks, xattrs (get with every
 * buffer size, create/replace flags, bad names, flags and sizes, a value too
 * big for a leaf), utimes (NULL, UTIME_NOW, UTIME_OMIT, bad nanoseconds),
 * chown's clearing of set-group-ID, file capabilities removed by writes,
 * truncates, fallocate and chown, ref_next_data's runs of data (and the
 * manifest's digest through it equal to the digest of every byte read), and
 * the dirty-metadata limit forcing commits.  Each case asserts the errno or the data read back, and the file
 * system stays clean.
 */
#include "wrutil.h"
#include "testutil.h"
#include "traces/manifest.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#define ROOT_INO 256

static sim_volume *vol;
static ref_fs *fs;

static void setup(void)
{
	fs = wu_fresh(&vol, 128, 4096);
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

TestSuite(cov_vfs, .init = setup, .fini = teardown);

static uint64_t ino_of(const char *path, bool follow)
{
	struct ref_ino i;
	WU_OK(fs, ref_lookup_path(fs, path, follow, &i));
	return i.ino;
}

static int stat_err(const char *path, bool follow)
{
	struct ref_stat st;
	return ref_stat_path(fs, path, follow, &st);
}

/* /a/b/f holds "hello"; symlinks: /a/lb -> b, /la -> /a, /a/b/up -> ..,
 * /a/dot -> ., /top -> /, /c1 -> c2 -> a/b/f, /l1 <-> /l2, /dang -> nowhere. */
static void make_tree(void)
{
	WU_OK(fs, ref_mkdir(fs, "/a", 0755));
	WU_OK(fs, ref_mkdir(fs, "/a/b", 0755));
	WU_OK(fs, ref_create(fs, "/a/b/f", 0644));
	WU_OK(fs, ref_write(fs, "/a/b/f", "hello", 5, 0));
	WU_OK(fs, ref_symlink(fs, "b", "/a/lb"));
	WU_OK(fs, ref_symlink(fs, "/a", "/la"));
	WU_OK(fs, ref_symlink(fs, "..", "/a/b/up"));
	WU_OK(fs, ref_symlink(fs, ".", "/a/dot"));
	WU_OK(fs, ref_symlink(fs, "/", "/top"));
	WU_OK(fs, ref_symlink(fs, "c2", "/c1"));
	WU_OK(fs, ref_symlink(fs, "a/b/f", "/c2"));
	WU_OK(fs, ref_symlink(fs, "/l2", "/l1"));
	WU_OK(fs, ref_symlink(fs, "/l1", "/l2"));
	WU_OK(fs, ref_symlink(fs, "nowhere", "/dang"));
}

Test(cov_vfs, path_walking)
{
	make_tree();
	uint64_t a = ino_of("/a", false), b = ino_of("/a/b", false), f = ino_of("/a/b/f", false);
	cr_assert(a != b && b != f && a != ROOT_INO);

	/* '.', '..', repeated slashes */
	cr_expect_eq(ino_of("/a/./b/../b//f", false), f);
	cr_expect_eq(ino_of("/a/b/..", false), a);
	cr_expect_eq(ino_of("/a/b/../..", false), ROOT_INO);
	cr_expect_eq(ino_of("/..", false), ROOT_INO, "the root's parent is the root");
	cr_expect_eq(ino_of("/../a/.", false), a);
	cr_expect_eq(ino_of("/", false), ROOT_INO);
	cr_expect_eq(ino_of("//a//", false), a);

	/* symlinks in the middle are always followed, at the end only when asked */
	cr_expect_eq(ino_of("/la/lb/f", false), f);
	cr_expect_eq(ino_of("/a/lb/up/b/f", false), f);
	cr_expect_eq(ino_of("/a/dot/dot/b", false), b);
	cr_expect_eq(ino_of("/top/a", false), a);
	cr_expect_neq(ino_of("/la", false), a, "not followed: the link itself");
	cr_expect_eq(ino_of("/la", true), a);
	cr_expect_eq(ino_of("/la/", false), a, "a trailing slash follows the link");
	cr_expect_eq(ino_of("/a/b/up", true), a, "a link to '..'");
	cr_expect_eq(ino_of("/a/dot", true), a, "a link to '.'");
	cr_expect_eq(ino_of("/top", true), ROOT_INO, "a link to '/'");
	cr_expect_eq(ino_of("/c1", true), f, "a chain of links");

	/* failures */
	cr_expect_eq(stat_err("/a/b/f/", false), -ENOTDIR);
	cr_expect_eq(stat_err("/a/b/f/x", false), -ENOTDIR);
	cr_expect_eq(stat_err("/c1/x", false), -ENOTDIR);
	cr_expect_eq(stat_err("a/b", false), -EINVAL);
	cr_expect_eq(stat_err("", false), -ENOENT);
	cr_expect_eq(stat_err(NULL, false), -ENOENT);
	cr_expect_eq(stat_err("/l1", true), -ELOOP);
	cr_expect(strstr(ref_error(fs), "symbolic links"), "%s", ref_error(fs));
	cr_expect_eq(stat_err("/l1/x", false), -ELOOP);
	cr_expect_eq(stat_err("/l1", false), 0, "the loop itself is a link");
	cr_expect_eq(stat_err("/dang", true), -ENOENT);
	cr_expect(strstr(ref_error(fs), "target not found"), "%s", ref_error(fs));
	cr_expect_eq(stat_err("/dang/x", false), -ENOENT);
	cr_expect_eq(stat_err("/nope/x", false), -ENOENT);
	char longname[300];
	memset(longname, 'n', sizeof(longname));
	longname[0] = '/';
	strcpy(longname + 257, "/x");
	cr_expect_eq(stat_err(longname, false), -ENAMETOOLONG);
	longname[257] = '\0';
	cr_expect_eq(ref_create(fs, longname, 0644), -ENAMETOOLONG);

	/* writing through links in the middle of a path */
	WU_OK(fs, ref_create(fs, "/la/lb/g", 0600));
	WU_OK(fs, ref_write(fs, "/la/lb/up/b/g", "xyz", 3, 2));
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, "/a/b/g", false, &st));
	cr_expect_eq(st.size, 5);
	cr_expect_eq(st.mode & 07777, 0600);
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_stat_path(fs, "/c1", true, &st));
	cr_expect(S_ISREG(st.mode) && st.size == 5);
	WU_OK(fs, ref_stat_path(fs, "/c1", false, &st));
	cr_expect(S_ISLNK(st.mode) && st.size == 2, "the link's size is its target's length");
}

Test(cov_vfs, read_api_resolve_and_readlink)
{
	make_tree();
	WU_OK(fs, ref_sync(fs));
	struct ref_ino root, out;
	WU_OK(fs, ref_subvol_root(fs, 5, &root));
	cr_assert_eq(root.ino, ROOT_INO);
	uint64_t f = ino_of("/a/b/f", false), a = ino_of("/a", false);
	WU_OK(fs, ref_resolve(fs, &root, "a/b/../b/./f", &out));
	cr_expect_eq(out.ino, f);
	WU_OK(fs, ref_resolve(fs, &root, "../../a", &out));
	cr_expect_eq(out.ino, a, "'..' of the top stays at the top");
	WU_OK(fs, ref_resolve(fs, &root, "", &out));
	cr_expect_eq(out.ino, ROOT_INO);
	cr_expect_eq(ref_resolve(fs, &root, "a/b/f/x", &out), -ENOTDIR);
	cr_expect_eq(ref_resolve(fs, &root, "a/zz", &out), -ENOENT);
	struct ref_ino b;
	WU_OK(fs, ref_resolve(fs, &root, "a/b", &b));
	WU_OK(fs, ref_resolve(fs, &b, "../..", &out));
	cr_expect_eq(out.ino, ROOT_INO);

	char buf[64];
	struct ref_ino link, file;
	WU_OK(fs, ref_resolve(fs, &root, "a/lb", &link));
	cr_expect_eq(ref_readlink(fs, &link, buf, sizeof(buf)), 1);
	cr_expect_str_eq(buf, "b");
	cr_expect_eq(ref_readlink(fs, &link, buf, 0), -EINVAL);
	WU_OK(fs, ref_resolve(fs, &root, "a/b/f", &file));
	cr_expect_eq(ref_readlink(fs, &file, buf, sizeof(buf)), -EINVAL);
	cr_expect(strstr(ref_error(fs), "not a symlink"), "%s", ref_error(fs));
	struct ref_stat st;
	struct ref_ino bogus = { 5, 99999 };
	cr_expect_eq(ref_stat(fs, &bogus, &st), -ENOENT);
	struct ref_ino sub;
	cr_expect_eq(ref_subvol_root(fs, 2, &sub), -EINVAL, "tree 2 is not a subvolume");
	cr_expect_eq(ref_subvol_root(fs, 300, &sub), -ENOENT, "no subvolume 300");
	struct ref_subvol_info si;
	cr_expect_eq(ref_subvol_info(fs, 300, &si), -ENOENT);
	WU_OK(fs, ref_subvol_info(fs, 5, &si));
	cr_expect_eq(si.id, 5);
	cr_expect(si.generation > 0);
	char d[8];
	cr_expect_eq(ref_pread(fs, &root, d, sizeof(d), 0), -EISDIR);
}

struct xl {
	int n;
	char names[8][32];
	size_t vlen[8];
};

static int collect(void *ctx, const char *name, size_t nlen, const uint8_t *value, size_t vlen)
{
	(void)value;
	struct xl *x = ctx;
	if (x->n < 8) {
		snprintf(x->names[x->n], sizeof(x->names[0]), "%.*s", (int)nlen, name);
		x->vlen[x->n++] = vlen;
	}
	return 0;
}

Test(cov_vfs, xattrs)
{
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	WU_OK(fs, ref_symlink(fs, "f", "/s"));
	WU_OK(fs, ref_setxattr(fs, "/f", "user.a", "value-1", 7, 0));
	WU_OK(fs, ref_setxattr(fs, "/s", "trusted.b", "", 0, XATTR_CREATE));
	WU_OK(fs, ref_setxattr(fs, "/d", "security.c", "dirval", 6, 0));

	char buf[16];
	cr_expect_eq(ref_getxattr(fs, "/f", "user.a", NULL, 0), 7, "size query");
	cr_expect_eq(ref_getxattr(fs, "/f", "user.a", buf, sizeof(buf)), 7);
	cr_expect_eq(memcmp(buf, "value-1", 7), 0);
	cr_expect_eq(ref_getxattr(fs, "/s", "user.a", buf, 7), 7, "through the link");
	cr_expect_eq(ref_getxattr(fs, "/f", "user.a", buf, 3), -ERANGE);
	cr_expect_eq(ref_getxattr(fs, "/f", "trusted.b", buf, sizeof(buf)), 0);
	cr_expect_eq(ref_getxattr(fs, "/f", "user.zz", buf, sizeof(buf)), -ENODATA);
	cr_expect_eq(ref_getxattr(fs, "/nope", "user.a", buf, sizeof(buf)), -ENOENT);
	cr_expect_eq(ref_getxattr(fs, "/d", "security.c", buf, sizeof(buf)), 6);

	/* flags */
	cr_expect_eq(ref_setxattr(fs, "/f", "user.a", "x", 1, XATTR_CREATE), -EEXIST);
	cr_expect_eq(ref_setxattr(fs, "/f", "user.new", "x", 1, XATTR_REPLACE), -ENODATA);
	cr_expect_eq(ref_setxattr(fs, "/f", "user.a", "x", 1, 4), -EINVAL);
	WU_OK(fs, ref_setxattr(fs, "/f", "user.a", "longer value", 12, XATTR_REPLACE));
	cr_expect_eq(ref_getxattr(fs, "/f", "user.a", buf, sizeof(buf)), 12);
	cr_expect_eq(memcmp(buf, "longer value", 12), 0);
	WU_OK(fs, ref_setxattr(fs, "/f", "user.a", "s", 1, 0));
	cr_expect_eq(ref_getxattr(fs, "/f", "user.a", buf, sizeof(buf)), 1);

	/* names */
	cr_expect_eq(ref_setxattr(fs, "/f", "", "x", 1, 0), -ERANGE);
	cr_expect_eq(ref_setxattr(fs, "/f", NULL, "x", 1, 0), -ERANGE);
	cr_expect_eq(ref_setxattr(fs, "/f", "user.", "x", 1, 0), -EOPNOTSUPP);
	cr_expect_eq(ref_setxattr(fs, "/f", "system.posix_acl_access", "x", 1, 0), -EINVAL); /* (acl.c) */
	cr_expect_eq(ref_setxattr(fs, "/f", "system.other", "x", 1, 0), -EOPNOTSUPP);
	cr_expect_eq(ref_getxattr(fs, "/f", "other.x", buf, sizeof(buf)), -EOPNOTSUPP);
	char longname[300];
	memcpy(longname, "user.", 5);
	memset(longname + 5, 'x', 260);
	longname[265] = '\0';
	cr_expect_eq(ref_setxattr(fs, "/f", longname, "x", 1, 0), -ERANGE);

	/* sizes: over XATTR_SIZE_MAX, and over what a 4 KiB leaf holds */
	size_t big = 65537;
	uint8_t *v = tu_pat(big, 3);
	cr_expect_eq(ref_setxattr(fs, "/f", "user.big", v, big, 0), -E2BIG);
	cr_expect_eq(ref_setxattr(fs, "/f", "user.big", v, 4000, 0), -ENOSPC);
	WU_OK(fs, ref_setxattr(fs, "/f", "user.big", v, 3000, 0));
	uint8_t *back = malloc(3000);
	cr_expect_eq(ref_getxattr(fs, "/f", "user.big", back, 3000), 3000);
	cr_expect_eq(memcmp(back, v, 3000), 0);
	free(back);
	free(v);

	/* remove */
	cr_expect_eq(ref_removexattr(fs, "/f", "user.none"), -ENODATA);
	WU_OK(fs, ref_removexattr(fs, "/f", "user.big"));
	cr_expect_eq(ref_getxattr(fs, "/f", "user.big", NULL, 0), -ENODATA);

	/* all of it survives a remount */
	cr_assert_eq(ref_umount(fs), 0);
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	struct ref_ino f;
	WU_OK(fs, ref_lookup_path(fs, "/f", false, &f));
	struct xl x = { 0 };
	WU_OK(fs, ref_listxattr(fs, &f, collect, &x));
	cr_assert_eq(x.n, 2);
	bool sa = false, tb = false;
	for (int i = 0; i < x.n; i++) {
		sa |= !strcmp(x.names[i], "user.a") && x.vlen[i] == 1;
		tb |= !strcmp(x.names[i], "trusted.b") && x.vlen[i] == 0;
	}
	cr_expect(sa && tb, "%s, %s", x.names[0], x.names[1]);
}

Test(cov_vfs, times_and_modes)
{
	WU_OK(fs, ref_create(fs, "/f", 0644));
	struct ref_stat st0, st;
	WU_OK(fs, ref_stat_path(fs, "/f", false, &st0));

	struct timespec ts[2] = { { 1000, 5 }, { 2000, 999999999 } };
	WU_OK(fs, ref_utimes(fs, "/f", ts));
	WU_OK(fs, ref_stat_path(fs, "/f", false, &st));
	cr_expect(st.atime.tv_sec == 1000 && st.atime.tv_nsec == 5);
	cr_expect(st.mtime.tv_sec == 2000 && st.mtime.tv_nsec == 999999999);

	/* one omitted, one now */
	struct timespec t2[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };
	WU_OK(fs, ref_utimes(fs, "/f", t2));
	WU_OK(fs, ref_stat_path(fs, "/f", false, &st));
	cr_expect(st.atime.tv_sec == 1000 && st.atime.tv_nsec == 5, "atime kept");
	cr_expect(st.mtime.tv_sec == st0.mtime.tv_sec && st.mtime.tv_nsec > st0.mtime.tv_nsec,
		  "mtime now (the clock's): %lld.%09ld after %lld.%09ld", (long long)st.mtime.tv_sec,
		  st.mtime.tv_nsec, (long long)st0.mtime.tv_sec, st0.mtime.tv_nsec);

	/* NULL: both now */
	WU_OK(fs, ref_utimes(fs, "/f", NULL));
	WU_OK(fs, ref_stat_path(fs, "/f", false, &st));
	cr_expect(st.atime.tv_sec == st.mtime.tv_sec && st.atime.tv_nsec == st.mtime.tv_nsec);
	cr_expect(st.atime.tv_sec != 1000);

	/* bad nanoseconds change nothing, in either slot */
	WU_OK(fs, ref_utimes(fs, "/f", ts));
	struct timespec bad[2] = { { 5, 0 }, { 6, 1000000000 } };
	cr_expect_eq(ref_utimes(fs, "/f", bad), -EINVAL);
	struct timespec bad2[2] = { { 5, -1 }, { 6, 0 } };
	cr_expect_eq(ref_utimes(fs, "/f", bad2), -EINVAL);
	WU_OK(fs, ref_stat_path(fs, "/f", false, &st));
	cr_expect(st.atime.tv_sec == 1000 && st.mtime.tv_sec == 2000, "unchanged");

	/* both omitted: nothing at all, not even the lookup */
	struct timespec omit[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
	cr_expect_eq(ref_utimes(fs, "/missing", omit), 0);
	cr_expect_eq(ref_utimes(fs, "/missing", NULL), -ENOENT);

	/* chown drops set-user-ID, and set-group-ID with group exec */
	WU_OK(fs, ref_chmod(fs, "/f", 06755));
	WU_OK(fs, ref_chown(fs, "/f", 7, UINT32_MAX));
	WU_OK(fs, ref_stat_path(fs, "/f", false, &st));
	cr_expect_eq(st.mode & 07777, 0755);
	cr_expect_eq(st.uid, 7);
	cr_expect_eq(st.gid, 0, "gid kept");
	WU_OK(fs, ref_chmod(fs, "/f", 06745)); /* set-group-ID without group exec: kept */
	WU_OK(fs, ref_chown(fs, "/f", UINT32_MAX, 9));
	WU_OK(fs, ref_stat_path(fs, "/f", false, &st));
	cr_expect_eq(st.mode & 07777, 02745);
	cr_expect(st.uid == 7 && st.gid == 9);
	/* on a directory nothing is dropped */
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	WU_OK(fs, ref_chmod(fs, "/d", 06775));
	WU_OK(fs, ref_chown(fs, "/d", 1, 1));
	WU_OK(fs, ref_stat_path(fs, "/d", false, &st));
	cr_expect_eq(st.mode & 07777, 06775);
	cr_expect(S_ISDIR(st.mode));
	cr_expect_eq(ref_chmod(fs, "/d/x", 0), -ENOENT);
}

/* File capabilities (security.capability), as Linux's file_remove_privs and
 * ATTR_KILL_PRIV treat them on btrfs (Linux 6.18, as root): a write of at
 * least a byte, a truncate (to any size, the same one too), a fallocate of
 * any mode and a chown of a non-directory (-1 -1 too) remove them; a write of
 * no bytes, chmod, utimes, other xattrs, a failed call and a chown of a
 * directory keep them; set-id bits stay through writes and truncates (root:
 * CAP_FSETID).  Other xattrs always stay. */
static const uint8_t caps_v2[20] = { 0x01, 0x00, 0x00, 0x02, 0x00, 0x20 }; /* cap_net_raw+ep */

static bool has_xattr(const char *path, const char *name)
{
	char buf[64];
	ssize_t n = ref_getxattr(fs, path, name, buf, sizeof(buf));
	cr_assert(n >= 0 || n == -ENODATA, "getxattr %s %s: %zd", path, name, n);
	return n >= 0;
}

static void set_caps(const char *path)
{
	WU_OK(fs, ref_setxattr(fs, path, "security.capability", caps_v2, sizeof(caps_v2), 0));
	cr_assert(has_xattr(path, "security.capability"));
}

Test(cov_vfs, file_capabilities_removed)
{
	WU_OK(fs, ref_create(fs, "/f", 06755));
	WU_OK(fs, ref_write(fs, "/f", "hello", 5, 0));
	WU_OK(fs, ref_setxattr(fs, "/f", "user.keep", "k", 1, 0));
	WU_OK(fs, ref_setxattr(fs, "/f", "security.other", "o", 1, 0));
	WU_OK(fs, ref_symlink(fs, "f", "/s"));
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	struct timespec ts[2] = { { 1000, 0 }, { 2000, 0 } };

	/* what keeps them */
	set_caps("/f");
	WU_OK(fs, ref_write(fs, "/f", "", 0, 3));
	WU_OK(fs, ref_chmod(fs, "/f", 06755));
	WU_OK(fs, ref_utimes(fs, "/f", ts));
	WU_OK(fs, ref_setxattr(fs, "/f", "user.more", "m", 1, 0));
	WU_OK(fs, ref_removexattr(fs, "/f", "user.more"));
	WU_OK(fs, ref_fsync(fs, "/f"));
	cr_expect_eq(ref_write(fs, "/f", "x", 1, UINT64_C(0x7fffffffffffffff)), -EINVAL);
	cr_expect_eq(ref_truncate(fs, "/f", UINT64_C(1) << 63), -EINVAL);
	cr_expect_eq(ref_fallocate(fs, "/f", 0, 0, 0), -EINVAL);
	cr_expect_eq(ref_fallocate(fs, "/f", FALLOC_FL_PUNCH_HOLE, 0, 10), -EOPNOTSUPP);
	cr_expect(has_xattr("/f", "security.capability"), "kept by no-byte writes, chmod, utimes, "
							  "xattrs, fsync and failed calls");

	/* what removes them: each through the file and through the symlink */
	static const char *const paths[2] = { "/f", "/s" };
	for (int i = 0; i < 2; i++) {
		const char *p = paths[i];
		set_caps("/f");
		WU_OK(fs, ref_write(fs, p, "y", 1, 1));
		cr_expect(!has_xattr("/f", "security.capability"), "write through %s", p);
		set_caps("/f");
		WU_OK(fs, ref_truncate(fs, p, 5)); /* the size it has */
		cr_expect(!has_xattr("/f", "security.capability"), "truncate through %s", p);
		set_caps("/f");
		WU_OK(fs, ref_truncate(fs, p, 9000));
		cr_expect(!has_xattr("/f", "security.capability"), "truncate up through %s", p);
		set_caps("/f");
		WU_OK(fs, ref_fallocate(fs, p, 0, 0, 4096));
		cr_expect(!has_xattr("/f", "security.capability"), "fallocate through %s", p);
		set_caps("/f");
		WU_OK(fs, ref_fallocate(fs, p, FALLOC_FL_KEEP_SIZE, 65536, 4096));
		cr_expect(!has_xattr("/f", "security.capability"), "fallocate keep-size through %s", p);
		set_caps("/f");
		WU_OK(fs, ref_fallocate(fs, p, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 10));
		cr_expect(!has_xattr("/f", "security.capability"), "punch-hole through %s", p);
	}
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, "/f", true, &st));
	cr_expect_eq(st.mode & 07777, 06755, "root keeps set-id bits through writes and truncates");
	set_caps("/f");
	WU_OK(fs, ref_chown(fs, "/s", UINT32_MAX, UINT32_MAX));
	cr_expect(!has_xattr("/f", "security.capability"), "chown -1 -1 through the symlink");
	WU_OK(fs, ref_stat_path(fs, "/f", true, &st));
	cr_expect_eq(st.mode & 07777, 0755, "chown drops both set-id bits (group exec)");
	cr_expect(has_xattr("/f", "user.keep") && has_xattr("/f", "security.other"),
		  "other xattrs stay");

	/* a directory keeps them through chown */
	set_caps("/d");
	WU_OK(fs, ref_chown(fs, "/d", 5, 5));
	cr_expect(has_xattr("/d", "security.capability"), "chown of a directory");

	/* the removal is durable */
	set_caps("/f");
	WU_OK(fs, ref_write(fs, "/f", "z", 1, 0));
	cr_assert_eq(ref_umount(fs), 0);
	char err[256];
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	cr_expect(!has_xattr("/f", "security.capability"), "after a remount");
	cr_expect(has_xattr("/f", "user.keep") && has_xattr("/d", "security.capability"));
}

/* ref_next_data: the runs of data extents, holes and preallocated extents
 * skipped, clipped to the offset asked and to the size. */
static void expect_run(const char *path, uint64_t off, uint64_t start, uint64_t end)
{
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, path, true, &ino));
	uint64_t a = 1, b = 1;
	WU_OK(fs, ref_next_data(fs, &ino, off, &a, &b));
	cr_expect(a == start && b == end, "%s from %llu: [%llu, %llu), expected [%llu, %llu)", path,
		  (unsigned long long)off, (unsigned long long)a, (unsigned long long)b,
		  (unsigned long long)start, (unsigned long long)end);
}

/* The manifest's digest of path (mf_walk_ref, which skips what is not
 * data), and the digest of every byte read. */
static void expect_same_digest(const char *path, uint64_t size)
{
	struct ref_ino root, ino;
	WU_OK(fs, ref_lookup_path(fs, "/", true, &root));
	WU_OK(fs, ref_lookup_path(fs, path, true, &ino));
	struct manifest m = { 0 };
	char err[256];
	cr_assert_eq(mf_walk_ref(&m, fs, &root, err, sizeof(err)), 0, "%s", err);
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	cr_assert(f && mf_print(&m, f) == 0);
	fclose(f);
	mf_free(&m);

	struct mf_hash h;
	mf_hash_init(&h);
	uint8_t *buf = malloc(1 << 20);
	cr_assert(buf);
	for (uint64_t off = 0; off < size;) {
		ssize_t n = ref_pread(fs, &ino, buf, 1 << 20, off);
		cr_assert(n > 0, "%zd", n);
		mf_hash_data(&h, buf, (size_t)n);
		off += (uint64_t)n;
	}
	free(buf);
	unsigned char d[crypto_hash_sha256_BYTES];
	mf_hash_final(&h, d);
	char line[512];
	int o = snprintf(line, sizeof(line), "%s f 644 0 0 1 %llu ", path, (unsigned long long)size);
	for (size_t i = 0; i < sizeof(d); i++)
		o += snprintf(line + o, sizeof(line) - (size_t)o, "%02x", d[i]);
	cr_expect(strstr(text, line), "%s not in:\n%s", line, text);
	free(text);
}

Test(cov_vfs, next_data_skips_holes)
{
	uint8_t *data = tu_pat(16384, 7);
	WU_OK(fs, ref_create(fs, "/i", 0644));
	WU_OK(fs, ref_write(fs, "/i", data, 100, 0)); /* inline */
	expect_run("/i", 0, 0, 100);
	expect_run("/i", 40, 40, 100);
	expect_run("/i", 100, 100, 100);
	expect_run("/i", 1000, 100, 100);

	WU_OK(fs, ref_create(fs, "/t", 0644));
	WU_OK(fs, ref_write(fs, "/t", data, 8192, 0));
	WU_OK(fs, ref_truncate(fs, "/t", 5000));
	expect_run("/t", 0, 0, 5000);

	const uint64_t M = 1 << 20;
	WU_OK(fs, ref_create(fs, "/s", 0644));
	WU_OK(fs, ref_truncate(fs, "/s", 10 * M));
	WU_OK(fs, ref_write(fs, "/s", data, 10, 3 * M));
	WU_OK(fs, ref_fallocate(fs, "/s", 0, 5 * M, M));
	WU_OK(fs, ref_write(fs, "/s", data, 8192, 7 * M));
	WU_OK(fs, ref_write(fs, "/s", data, 8192, 7 * M + 8192)); /* its own extent, adjacent */
	WU_OK(fs, ref_fallocate(fs, "/s", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 7 * M + 4096,
				4096));
	WU_OK(fs, ref_write(fs, "/s", data, 100, 5 * M + 4096)); /* into the preallocation */
	WU_OK(fs, ref_fallocate(fs, "/s", FALLOC_FL_KEEP_SIZE, 9 * M, 2 * M)); /* past the end */
	expect_run("/s", 0, 3 * M, 3 * M + 4096);
	expect_run("/s", 3 * M + 100, 3 * M + 100, 3 * M + 4096);
	expect_run("/s", 3 * M + 4096, 5 * M + 4096, 5 * M + 8192);
	expect_run("/s", 5 * M + 8192, 7 * M, 7 * M + 4096);
	expect_run("/s", 7 * M + 4096, 7 * M + 8192, 7 * M + 16384);
	expect_run("/s", 7 * M + 16384, 10 * M, 10 * M);
	expect_run("/s", 10 * M, 10 * M, 10 * M);

	WU_OK(fs, ref_create(fs, "/huge", 0644));
	WU_OK(fs, ref_write(fs, "/huge", data, 1, UINT64_C(0x7fffffffffffff00)));
	expect_run("/huge", 0, UINT64_C(0x7ffffffffffff000), UINT64_C(0x7fffffffffffff01)); /* its sector */

	struct ref_ino root;
	WU_OK(fs, ref_lookup_path(fs, "/", true, &root));
	uint64_t a, b;
	cr_expect_eq(ref_next_data(fs, &root, 0, &a, &b), -EISDIR);

	/* the manifest skips what is not data and gives the digest of every byte */
	expect_same_digest("/s", 10 * M);
	expect_same_digest("/t", 5000);
	expect_same_digest("/i", 100);
	free(data);
}

Test(cov_vfs, dirty_limit_forces_commits)
{
	cr_assert_eq(ref_umount(fs), 0);
	char err[256];
	struct ref_mount_opts mo = { .open = { .super_mirror = -1 }, .dirty_limit = 64 << 10 };
	cr_assert_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(ref_commits(fs), 0);
	char p[32];
	uint8_t *data = tu_pat(8192, 5);
	for (int i = 0; i < 300; i++) {
		snprintf(p, sizeof(p), "/f%03d", i);
		WU_OK(fs, ref_create(fs, p, 0644));
		memcpy(data, p, 5);
		WU_OK(fs, ref_write(fs, p, data, 8192, 0));
	}
	free(data);
	uint64_t c = ref_commits(fs);
	cr_expect(c >= 2, "%llu commits with a dirty limit of 64 KiB", (unsigned long long)c);
	/* every file is there after the commits */
	char buf[16];
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, "/f123", false, &ino));
	cr_expect_eq(ref_pread(fs, &ino, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	cr_expect_eq(memcmp(buf, "/f123", 5), 0);
}
