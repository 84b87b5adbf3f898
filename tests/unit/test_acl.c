/*
 * test_acl.c - POSIX ACLs and special files through the write API, as Linux
 * 6.18 keeps them (the same cases were run on the kernel's btrfs to fix the
 * expected modes and values: tests/interop/test_acl.sh compares the two):
 * invalid values refused with the kernel's errno and nothing changed; an ACL
 * no more than the mode not stored and the mode set from it; a stored ACL
 * normalised; default ACLs on directories only; chmod rewriting the access
 * ACL; default ACLs inherited by new files, directories and device nodes
 * (the mode masked by the ACL instead of the umask; symlinks untouched);
 * mknod of every type, its errnos and the device number as btrfs stores it.
 * Each test ends with both checkers clean.
 */
#include "wrutil.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

static sim_volume *vol;
static ref_fs *fs;

static void setup(void)
{
	fs = wu_fresh(&vol, 128, 4096);
}

static void teardown(void)
{
	if (fs)
		cr_assert_eq(ref_umount(fs), 0, "%s", ref_error(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

TestSuite(acl, .init = setup, .fini = teardown);

#define ACCESS "system.posix_acl_access"
#define DEFAULT "system.posix_acl_default"
#define NOID 0xffffffffu

/* An ACL value from (tag, perm, id) triples. */
struct val {
	uint8_t b[4 + 8 * 16];
	size_t len;
};

static struct val acl(int n, const uint32_t (*e)[3])
{
	struct val v = { .len = 4 + 8 * (size_t)n };
	v.b[0] = 2;
	for (int i = 0; i < n; i++) {
		uint8_t *p = v.b + 4 + 8 * i;
		p[0] = (uint8_t)e[i][0];
		p[1] = (uint8_t)(e[i][0] >> 8);
		p[2] = (uint8_t)e[i][1];
		p[3] = (uint8_t)(e[i][1] >> 8);
		memcpy(p + 4, &e[i][2], 4);
	}
	return v;
}

static uint32_t mode_of(const char *path)
{
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, path, false, &st));
	return st.mode;
}

static bool has(const char *path, const char *name)
{
	uint8_t buf[256];
	ssize_t r = ref_getxattr(fs, path, name, buf, sizeof(buf));
	cr_assert(r >= 0 || r == -ENODATA, "getxattr %s %s: %zd", path, name, r);
	return r >= 0;
}

/* u::rw-, u:1000:rwx, g::r--, g:50:r--, m::r-x, o::r-- */
static const uint32_t named[][3] = { { 1, 6, 7 }, { 2, 7, 1000 }, { 4, 4, 9 }, { 8, 4, 50 },
				     { 0x10, 5, 3 }, { 0x20, 4, 1 } };

Test(acl, invalid_values_change_nothing)
{
	WU_OK(fs, ref_create(fs, "/f", 0644));
	static const uint32_t no_other[][3] = { { 1, 6, 0 }, { 4, 4, 0 } };
	static const uint32_t no_mask[][3] = { { 1, 6, 0 }, { 2, 7, 1000 }, { 4, 4, 0 }, { 0x20, 4, 0 } };
	static const uint32_t order[][3] = { { 4, 4, 0 }, { 1, 6, 0 }, { 0x20, 4, 0 } };
	static const uint32_t perm[][3] = { { 1, 8, 0 }, { 4, 4, 0 }, { 0x20, 4, 0 } };
	static const uint32_t tag[][3] = { { 1, 6, 0 }, { 4, 4, 0 }, { 0x40, 4, 0 } };
	static const uint32_t noid[][3] = { { 1, 6, 0 }, { 2, 7, NOID }, { 4, 4, 0 }, { 0x10, 7, 0 },
					    { 0x20, 4, 0 } };
	static const uint32_t after[][3] = { { 1, 6, 0 }, { 4, 4, 0 }, { 0x20, 4, 0 }, { 0x20, 4, 0 } };
	struct val bad[] = { acl(2, no_other), acl(4, no_mask), acl(3, order), acl(3, perm),
			     acl(3, tag), acl(5, noid), acl(4, after) };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		WU_ERR(fs, ref_setxattr(fs, "/f", ACCESS, bad[i].b, bad[i].len, 0), EINVAL);
	struct val v = acl(6, named);
	WU_ERR(fs, ref_setxattr(fs, "/f", ACCESS, v.b, 3, 0), EINVAL);      /* short */
	WU_ERR(fs, ref_setxattr(fs, "/f", ACCESS, v.b, v.len - 3, 0), EINVAL); /* ragged */
	v.b[0] = 3;
	WU_ERR(fs, ref_setxattr(fs, "/f", ACCESS, v.b, v.len, 0), EOPNOTSUPP); /* version */
	WU_ERR(fs, ref_setxattr(fs, "/f", "system.other", "x", 1, 0), EOPNOTSUPP);
	cr_assert_eq(mode_of("/f"), S_IFREG | 0644);
	cr_assert(!has("/f", ACCESS));
}

Test(acl, access_acl_sets_the_mode)
{
	WU_OK(fs, ref_create(fs, "/f", 0644));
	/* No more than the mode: not stored, the mode taken from it. */
	static const uint32_t base[][3] = { { 1, 7, 5 }, { 4, 1, 7 }, { 0x20, 0, 9 } };
	struct val v = acl(3, base);
	WU_OK(fs, ref_setxattr(fs, "/f", ACCESS, v.b, v.len, 0));
	cr_assert_eq(mode_of("/f"), S_IFREG | 0710);
	cr_assert(!has("/f", ACCESS));
	/* Named entries: stored, the base entries' ids -1, group bits from the mask. */
	v = acl(6, named);
	WU_OK(fs, ref_setxattr(fs, "/f", ACCESS, v.b, v.len, XATTR_REPLACE)); /* (flags play no part) */
	cr_assert_eq(mode_of("/f"), S_IFREG | 0654);
	uint8_t got[64];
	cr_assert_eq(ref_getxattr(fs, "/f", ACCESS, got, sizeof(got)), (ssize_t)v.len);
	static const uint32_t norm[][3] = { { 1, 6, NOID }, { 2, 7, 1000 }, { 4, 4, NOID },
					    { 8, 4, 50 }, { 0x10, 5, NOID }, { 0x20, 4, NOID } };
	struct val w = acl(6, norm);
	cr_assert(!memcmp(got, w.b, w.len), "the stored ACL is not normalised");
	/* chmod: owner, mask and other follow; the named entries stay. */
	WU_OK(fs, ref_chmod(fs, "/f", 0751));
	static const uint32_t chmodded[][3] = { { 1, 7, NOID }, { 2, 7, 1000 }, { 4, 4, NOID },
						{ 8, 4, 50 }, { 0x10, 5, NOID }, { 0x20, 1, NOID } };
	w = acl(6, chmodded);
	cr_assert_eq(ref_getxattr(fs, "/f", ACCESS, got, sizeof(got)), (ssize_t)w.len);
	cr_assert(!memcmp(got, w.b, w.len), "chmod did not rewrite the ACL");
	/* An empty value removes it; so does removexattr, which is no error
	 * when there is none (vfs_remove_acl). */
	WU_OK(fs, ref_setxattr(fs, "/f", ACCESS, NULL, 0, 0));
	cr_assert(!has("/f", ACCESS));
	cr_assert_eq(mode_of("/f"), S_IFREG | 0751);
	WU_OK(fs, ref_removexattr(fs, "/f", ACCESS));
	WU_OK(fs, ref_removexattr(fs, "/f", DEFAULT));
}

Test(acl, default_acls_on_directories_only)
{
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_symlink(fs, "f", "/l"));
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	struct val v = acl(6, named);
	WU_ERR(fs, ref_setxattr(fs, "/f", DEFAULT, v.b, v.len, 0), EACCES);
	WU_OK(fs, ref_setxattr(fs, "/f", DEFAULT, NULL, 0, 0)); /* none: nothing to refuse */
	WU_OK(fs, ref_setxattr(fs, "/d", DEFAULT, v.b, v.len, 0));
	cr_assert_eq(mode_of("/d"), S_IFDIR | 0755, "a default ACL leaves the mode");
	cr_assert(has("/d", DEFAULT));
	cr_assert_eq(mode_of("/l"), S_IFLNK | 0777);
}

Test(acl, inherited_by_new_inodes)
{
	/* d: default u::rwx u:1001:r-x g::r-x m::rwx o::--- */
	static const uint32_t dflt[][3] = { { 1, 7, 0 }, { 2, 5, 1001 }, { 4, 5, 0 }, { 0x10, 7, 0 },
					    { 0x20, 0, 0 } };
	struct val v = acl(5, dflt);
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	WU_OK(fs, ref_setxattr(fs, "/d", DEFAULT, v.b, v.len, 0));
	ref_umask(fs, 077); /* plays no part under a default ACL */
	WU_OK(fs, ref_mkdir(fs, "/d/sub", 0777));
	WU_OK(fs, ref_create(fs, "/d/file", 0666));
	WU_OK(fs, ref_mknod(fs, "/d/fifo", S_IFIFO | 0666, 0));
	WU_OK(fs, ref_mknod(fs, "/d/dev", S_IFCHR | 0600, makedev(4, 64)));
	WU_OK(fs, ref_symlink(fs, "file", "/d/link"));
	WU_OK(fs, ref_create(fs, "/plain", 0666)); /* the umask, outside */
	cr_assert_eq(mode_of("/d/sub"), S_IFDIR | 0770);
	cr_assert_eq(mode_of("/d/file"), S_IFREG | 0660);
	cr_assert_eq(mode_of("/d/fifo"), S_IFIFO | 0660);
	cr_assert_eq(mode_of("/d/dev"), S_IFCHR | 0600);
	cr_assert_eq(mode_of("/d/link"), S_IFLNK | 0777);
	cr_assert_eq(mode_of("/plain"), S_IFREG | 0600);
	cr_assert(has("/d/sub", DEFAULT) && has("/d/sub", ACCESS));
	cr_assert(!has("/d/file", DEFAULT) && has("/d/file", ACCESS));
	cr_assert(!has("/plain", ACCESS));
	/* The file's access ACL: the mask cut to what the mode allows. */
	uint8_t got[64];
	static const uint32_t want[][3] = { { 1, 6, NOID }, { 2, 5, 1001 }, { 4, 5, NOID },
					    { 0x10, 6, NOID }, { 0x20, 0, NOID } };
	struct val w = acl(5, want);
	cr_assert_eq(ref_getxattr(fs, "/d/file", ACCESS, got, sizeof(got)), (ssize_t)w.len);
	cr_assert(!memcmp(got, w.b, w.len), "inherited access ACL");
	/* A default ACL with no more than the mode gives no access ACL. */
	static const uint32_t plain[][3] = { { 1, 7, 0 }, { 4, 5, 0 }, { 0x20, 1, 0 } };
	v = acl(3, plain);
	WU_OK(fs, ref_setxattr(fs, "/d/sub", DEFAULT, v.b, v.len, 0));
	WU_OK(fs, ref_create(fs, "/d/sub/g", 0777));
	cr_assert_eq(mode_of("/d/sub/g"), S_IFREG | 0751);
	cr_assert(!has("/d/sub/g", ACCESS));
}

Test(acl, mknod_types_and_errnos)
{
	WU_OK(fs, ref_mknod(fs, "/fifo", S_IFIFO | 0640, makedev(9, 9)));
	WU_OK(fs, ref_mknod(fs, "/sock", S_IFSOCK | 0755, 0));
	WU_OK(fs, ref_mknod(fs, "/chr", S_IFCHR | 0600, makedev(4, 64)));
	WU_OK(fs, ref_mknod(fs, "/blk", S_IFBLK | 0600, makedev(511, 300000)));
	WU_OK(fs, ref_mknod(fs, "/reg", 0644, 0)); /* type 0: a regular file */
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, "/chr", false, &st));
	cr_assert_eq(st.rdev, 4ULL << 20 | 64, "btrfs keeps the kernel's MKDEV");
	WU_OK(fs, ref_stat_path(fs, "/blk", false, &st));
	cr_assert_eq(st.rdev, 511ULL << 20 | 300000);
	WU_OK(fs, ref_stat_path(fs, "/fifo", false, &st));
	cr_assert_eq(st.rdev, 0, "a fifo has no device number");
	cr_assert_eq(mode_of("/reg"), S_IFREG | 0644);
	cr_assert_eq(mode_of("/sock"), S_IFSOCK | 0755);
	WU_ERR(fs, ref_mknod(fs, "/dir", S_IFDIR | 0755, 0), EPERM);
	WU_ERR(fs, ref_mknod(fs, "/bad", 0170000 | 0644, 0), EINVAL);
	WU_ERR(fs, ref_mknod(fs, "/big", S_IFCHR | 0600, 1ULL << 40), EINVAL);
	WU_ERR(fs, ref_mknod(fs, "/fifo", S_IFIFO | 0600, 0), EEXIST);
	/* user xattrs stay on files and directories (EPERM), ACLs go anywhere */
	WU_ERR(fs, ref_setxattr(fs, "/fifo", "user.x", "1", 1, 0), EPERM);
	struct val v = acl(6, named);
	WU_OK(fs, ref_setxattr(fs, "/chr", ACCESS, v.b, v.len, 0));
	cr_assert_eq(mode_of("/chr"), S_IFCHR | 0654);
}
