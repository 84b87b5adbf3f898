/*
 * test_standin.c - subvolume corners as Linux 6.18 has them (measured on its
 * btrfs; traces/README.md): what a snapshot's stand-in for a nested
 * subvolume (inode 2) refuses and allows, its owner, renames of subvolumes'
 * roots, rmdir of an empty subvolume, and the errno order of snapshot,
 * subvolume delete and calls in a read-only subvolume.  Every refused call
 * changes nothing: the file system stays writable and clean.  Then the
 * oracle's model of the same rules.
 */
#include "traces/model.h"
#include "traces/workload.h"
#include "wrutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

TestSuite(standin);

/* /S with a nested subvolume /S/N (and /S/N2), a directory, a file, owned
 * by 5:6, snapshotted as /T: /T/N and /T/N2 are stand-ins. */
static ref_fs *setup(sim_volume **vol)
{
	ref_fs *fs = wu_fresh(vol, 256, 0);
	WU_OK(fs, ref_subvol_create(fs, "/S", NULL));
	WU_OK(fs, ref_subvol_create(fs, "/S/N", NULL));
	WU_OK(fs, ref_subvol_create(fs, "/S/N2", NULL));
	WU_OK(fs, ref_mkdir(fs, "/S/d", 0755));
	WU_OK(fs, ref_create(fs, "/S/d/x", 0644));
	WU_OK(fs, ref_create(fs, "/S/f", 0644));
	WU_OK(fs, ref_chown(fs, "/S", 5, 6));
	WU_OK(fs, ref_snapshot(fs, "/S", "/T", false, NULL));
	return fs;
}

/* The file system took no harm: still writable, then clean on disk. */
static void still_fine(ref_fs *fs, sim_volume *vol)
{
	WU_OK(fs, ref_mkdir(fs, "/still-writable", 0755));
	WU_OK(fs, ref_umount(fs));
	wu_expect_clean(vol);
	sim_volume_close(vol);
}

/* Before: ENOENT for most, and renames into a stand-in failed half-way and
 * left the file system read-only. */
Test(standin, takes_no_names_data_or_xattrs)
{
	sim_volume *vol;
	ref_fs *fs = setup(&vol);
	WU_ERR(fs, ref_mkdir(fs, "/T/N/x", 0755), EPERM);
	WU_ERR(fs, ref_symlink(fs, "t", "/T/N/x"), EPERM);
	WU_ERR(fs, ref_link(fs, "/T/f", "/T/N/x"), EPERM);
	WU_ERR(fs, ref_rename(fs, "/T/f", "/T/N/x", 0), EPERM);
	WU_ERR(fs, ref_rename(fs, "/T/d", "/T/N/x", 0), EPERM);
	WU_ERR(fs, ref_create(fs, "/T/N/x", 0644), EACCES);
	WU_ERR(fs, ref_write(fs, "/T/N", "abc", 3, 0), EISDIR);
	WU_ERR(fs, ref_truncate(fs, "/T/N", 0), EISDIR);
	WU_ERR(fs, ref_fallocate(fs, "/T/N", 0, 0, 4096), EISDIR);
	WU_ERR(fs, ref_setxattr(fs, "/T/N", "user.a", "v", 1, 0), EOPNOTSUPP);
	WU_ERR(fs, ref_removexattr(fs, "/T/N", "user.a"), EOPNOTSUPP);
	char v[8];
	WU_ERR(fs, ref_getxattr(fs, "/T/N", "user.a", v, sizeof(v)), EOPNOTSUPP);
	WU_ERR(fs, ref_unlink(fs, "/T/N"), EISDIR);
	WU_ERR(fs, ref_link(fs, "/T/N", "/T/y"), EPERM);
	WU_ERR(fs, ref_unlink(fs, "/T/N/x"), ENOENT);
	WU_OK(fs, ref_fsync(fs, "/T/N"));
	/* the ioctls go to the directory, which has none */
	WU_ERR(fs, ref_subvol_create(fs, "/T/N/x", NULL), ENOTTY);
	WU_ERR(fs, ref_snapshot(fs, "/S", "/T/N/x", false, NULL), ENOTTY);
	WU_ERR(fs, ref_subvol_delete(fs, "/T/N/x"), ENOTTY);
	WU_ERR(fs, ref_snapshot(fs, "/T/N", "/x", false, NULL), EINVAL);
	WU_ERR(fs, ref_subvol_delete(fs, "/T/N"), EINVAL);
	still_fine(fs, vol);
}

/* chmod, chown and utimes succeed and keep nothing; it shows 0755 and its
 * directory's owner (before: ENOENT, and 0:0). */
Test(standin, attributes_are_a_no_op_owner_is_the_directorys)
{
	sim_volume *vol;
	ref_fs *fs = setup(&vol);
	WU_OK(fs, ref_chmod(fs, "/T/N", 0700));
	WU_OK(fs, ref_chown(fs, "/T/N", 1, 1));
	struct timespec ts[2] = { { 1, 0 }, { 1, 0 } };
	WU_OK(fs, ref_utimes(fs, "/T/N", ts));
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, "/T/N", true, &st));
	cr_assert_eq(st.mode, S_IFDIR | 0755);
	cr_assert_eq(st.nlink, 1);
	cr_assert_eq(st.uid, 5);
	cr_assert_eq(st.gid, 6);
	WU_OK(fs, ref_chown(fs, "/T", 7, 8));
	WU_OK(fs, ref_stat_path(fs, "/T/N", true, &st));
	cr_assert_eq(st.uid, 7);
	cr_assert_eq(st.gid, 8);
	struct ref_ino t, n;
	WU_OK(fs, ref_lookup_path(fs, "/T", false, &t));
	WU_OK(fs, ref_lookup_path(fs, "/T/N", false, &n));
	cr_assert_eq(n.ino, 2);
	WU_OK(fs, ref_stat_in(fs, &t, &n, &st));
	cr_assert_eq(st.uid, 7);
	still_fine(fs, vol);
}

/* It does not move (ENOTEMPTY) or swap (ENOENT: Linux 6.18 also aborts its
 * transaction there); a directory goes over it, rmdir removes it; a rename
 * onto itself does nothing (each stand-in is its own inode, though all are
 * inode 2). */
Test(standin, renames_and_rmdir)
{
	sim_volume *vol;
	ref_fs *fs = setup(&vol);
	WU_ERR(fs, ref_rename(fs, "/T/N", "/T/M", 0), ENOTEMPTY);
	WU_ERR(fs, ref_rename(fs, "/T/N", "/T/d/N", 0), ENOTEMPTY);
	WU_ERR(fs, ref_rename(fs, "/T/N", "/T/N2", 0), ENOTEMPTY);
	WU_ERR(fs, ref_rename(fs, "/T/N", "/T/M", RENAME_NOREPLACE), ENOTEMPTY);
	WU_ERR(fs, ref_rename(fs, "/T/d", "/T/N", RENAME_NOREPLACE), EEXIST);
	WU_ERR(fs, ref_rename(fs, "/T/f", "/T/N", 0), EISDIR);
	WU_ERR(fs, ref_rename(fs, "/T/d", "/T/N", RENAME_EXCHANGE), ENOENT);
	WU_ERR(fs, ref_rename(fs, "/T/N", "/T/N/d", 0), EINVAL);
	WU_OK(fs, ref_rename(fs, "/T/N", "/T/N", 0));
	WU_OK(fs, ref_mkdir(fs, "/T/e", 0755));
	WU_OK(fs, ref_rename(fs, "/T/e", "/T/N", 0));
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, "/T/N", false, &st));
	struct ref_ino n;
	WU_OK(fs, ref_lookup_path(fs, "/T/N", false, &n));
	cr_assert_neq(n.ino, 2, "a plain directory now");
	WU_OK(fs, ref_rmdir(fs, "/T/N2"));
	WU_ERR(fs, ref_stat_path(fs, "/T/N2", false, &st), ENOENT);
	/* the subvolumes they stood for are /S's still */
	WU_OK(fs, ref_stat_path(fs, "/S/N", false, &st));
	WU_OK(fs, ref_stat_path(fs, "/S/N2", false, &st));
	still_fine(fs, vol);
}

/* A subvolume's root moves (before: EPERM): in its directory, to another
 * directory, into another subvolume, over a stand-in; not below itself
 * (EINVAL), not over a subvolume or a non-empty directory (ENOTEMPTY);
 * a read-only one only within its directory (EROFS: its ".." would change);
 * only a subvolume's root crosses a subvolume boundary (EXDEV, after the
 * VFS's EISDIR). */
Test(standin, subvolumes_move)
{
	sim_volume *vol;
	ref_fs *fs = setup(&vol);
	WU_OK(fs, ref_rename(fs, "/S/N", "/S/M", 0));
	WU_OK(fs, ref_rename(fs, "/S/M", "/S/d/M", 0));
	WU_OK(fs, ref_mkdir(fs, "/p", 0755));
	WU_OK(fs, ref_rename(fs, "/S/d/M", "/p/M", 0));
	WU_OK(fs, ref_rename(fs, "/p/M", "/T/N", 0)); /* over the stand-in */
	struct ref_ino n;
	WU_OK(fs, ref_lookup_path(fs, "/T/N", false, &n));
	cr_assert_eq(n.ino, BTRFS_FIRST_FREE_OBJECTID, "the subvolume itself now");
	WU_OK(fs, ref_rename(fs, "/S", "/S2", 0));
	WU_ERR(fs, ref_rename(fs, "/S2", "/S2/d/S", 0), EINVAL);
	WU_ERR(fs, ref_rename(fs, "/p", "/T", 0), ENOTEMPTY);
	WU_ERR(fs, ref_rename(fs, "/T/N", "/S2/d", 0), ENOTEMPTY);
	WU_ERR(fs, ref_rename(fs, "/S2/f", "/T", 0), EISDIR);
	WU_ERR(fs, ref_rename(fs, "/S2/d", "/p/d", 0), EXDEV);
	WU_ERR(fs, ref_rename(fs, "/S2/f", "/T/f", RENAME_EXCHANGE), EXDEV);
	WU_OK(fs, ref_rename(fs, "/S2", "/T", RENAME_EXCHANGE)); /* two subvolumes swap */
	WU_OK(fs, ref_snapshot(fs, "/S2", "/R", true, NULL));
	WU_ERR(fs, ref_rename(fs, "/R", "/p/R", 0), EROFS);
	WU_OK(fs, ref_rename(fs, "/R", "/R2", 0));
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, "/R2/f", false, &st));
	still_fine(fs, vol);
}

/* rmdir of an empty subvolume deletes it, a read-only one too (before: EPERM);
 * not a non-empty one (ENOTEMPTY) nor the default (EPERM). */
Test(standin, rmdir_of_an_empty_subvolume)
{
	sim_volume *vol;
	ref_fs *fs = setup(&vol);
	WU_ERR(fs, ref_rmdir(fs, "/S"), ENOTEMPTY);
	WU_OK(fs, ref_rmdir(fs, "/S/N2"));
	struct ref_stat st;
	WU_ERR(fs, ref_stat_path(fs, "/S/N2", false, &st), ENOENT);
	WU_OK(fs, ref_subvol_create(fs, "/E", NULL));
	WU_OK(fs, ref_snapshot(fs, "/E", "/Ero", true, NULL));
	WU_OK(fs, ref_rmdir(fs, "/Ero"));
	uint64_t id;
	WU_OK(fs, ref_subvol_create(fs, "/D", &id));
	WU_OK(fs, ref_subvol_set_default(fs, id));
	WU_ERR(fs, ref_rmdir(fs, "/D"), EPERM);
	WU_OK(fs, ref_subvol_set_default(fs, 0));
	WU_OK(fs, ref_rmdir(fs, "/D"));
	WU_OK(fs, ref_subvol_sync(fs));
	still_fine(fs, vol);
}

/* snapshot checks SRC first; subvolume delete: ENOENT, EROFS, ENOTDIR,
 * EINVAL, EPERM, ENOTEMPTY; "." is EACCES. */
Test(standin, snapshot_and_delete_errno_order)
{
	sim_volume *vol;
	ref_fs *fs = setup(&vol);
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_snapshot(fs, "/S", "/R", true, NULL));
	WU_ERR(fs, ref_snapshot(fs, "/missing", "/d", false, NULL), ENOENT);
	WU_ERR(fs, ref_snapshot(fs, "/d", "/S", false, NULL), EINVAL);
	WU_ERR(fs, ref_snapshot(fs, "/f", "/S", false, NULL), EINVAL);
	WU_ERR(fs, ref_snapshot(fs, "/missing", "/f/x", false, NULL), ENOENT);
	WU_ERR(fs, ref_snapshot(fs, "/d", "/f/x", false, NULL), ENOTDIR);
	WU_ERR(fs, ref_snapshot(fs, "/d", "/R/x", false, NULL), EINVAL);
	WU_ERR(fs, ref_snapshot(fs, "/S", "/R/x", false, NULL), EROFS);
	WU_ERR(fs, ref_snapshot(fs, "/S", "/d", false, NULL), EEXIST);
	WU_ERR(fs, ref_subvol_delete(fs, "/f"), ENOTDIR);
	WU_ERR(fs, ref_subvol_delete(fs, "/d"), EINVAL);
	WU_ERR(fs, ref_subvol_delete(fs, "/R/N"), EROFS);
	WU_ERR(fs, ref_subvol_delete(fs, "/R/missing"), ENOENT);
	WU_ERR(fs, ref_subvol_delete(fs, "/S/."), EACCES);
	WU_ERR(fs, ref_subvol_delete(fs, "/S/N/.."), EINVAL);
	WU_ERR(fs, ref_subvol_delete(fs, "/S"), ENOTEMPTY);
	still_fine(fs, vol);
}

/* In a read-only subvolume EROFS comes before EISDIR, ENOTDIR, ENODATA,
 * EXDEV and the checks of the call's arguments (before: after them). */
Test(standin, read_only_first)
{
	sim_volume *vol;
	ref_fs *fs = setup(&vol);
	WU_OK(fs, ref_setxattr(fs, "/S/f", "user.a", "v", 1, 0));
	WU_OK(fs, ref_snapshot(fs, "/S", "/R", true, NULL));
	WU_ERR(fs, ref_unlink(fs, "/R/d"), EROFS);
	WU_ERR(fs, ref_unlink(fs, "/R/N"), EROFS);
	WU_ERR(fs, ref_rmdir(fs, "/R/f"), EROFS);
	WU_ERR(fs, ref_rmdir(fs, "/R/d"), EROFS);
	WU_ERR(fs, ref_rename(fs, "/R/f", "/R/d", 0), EROFS);
	WU_ERR(fs, ref_rename(fs, "/R/d", "/R/f", 0), EROFS);
	WU_ERR(fs, ref_removexattr(fs, "/R/f", "user.b"), EROFS);
	WU_ERR(fs, ref_link(fs, "/S/f", "/R/x"), EROFS);
	WU_ERR(fs, ref_link(fs, "/R/d", "/R/x"), EROFS);
	WU_ERR(fs, ref_rename(fs, "/S/f", "/R/x", 0), EROFS);
	WU_ERR(fs, ref_rename(fs, "/R/f", "/S/x", 0), EROFS);
	WU_ERR(fs, ref_fallocate(fs, "/R/f", 0, 0, 0), EROFS);
	WU_ERR(fs, ref_write(fs, "/R/f", "a", 1, UINT64_C(0x7fffffffffffffff)), EROFS);
	/* what Linux checks first stays first */
	WU_ERR(fs, ref_write(fs, "/R/d", "a", 1, 0), EISDIR);
	WU_ERR(fs, ref_link(fs, "/R/f", "/S/x"), EXDEV);
	WU_ERR(fs, ref_rename(fs, "/R/d", "/R/d/x", 0), EINVAL);
	WU_ERR(fs, ref_rename(fs, "/R/d/x", "/R/d", 0), ENOTEMPTY);
	/* a stand-in in it has no btrfs permission check */
	WU_ERR(fs, ref_mkdir(fs, "/R/N/x", 0755), EPERM);
	WU_ERR(fs, ref_setxattr(fs, "/R/N", "user.a", "v", 1, 0), EOPNOTSUPP);
	WU_OK(fs, ref_chmod(fs, "/R/N", 0700));
	still_fine(fs, vol);
}

/* ---- the oracle's model ---- */

/* Applies one op line with the target's result; model_apply's return. */
static int apply(struct model *m, const char *line, int result)
{
	struct wl_workload w = { 0 };
	char err[256];
	cr_assert_eq(wl_parse_text("t", line, strlen(line), &w, err, sizeof(err)), 0, "%s", err);
	int r = model_apply(m, &w.ops[0], result, err, sizeof(err));
	wl_free(&w);
	return r;
}

static void apply_all(struct model *m, const char *const *lines)
{
	for (size_t i = 0; lines[i]; i++)
		cr_assert_eq(apply(m, lines[i], 0), 0, "%s", lines[i]);
}

/* A stand-in in a read-only snapshot takes chmod (no btrfs permission
 * check); a read-only subvolume's root moves only within its directory. */
Test(standin, model_follows_linux)
{
	struct model *m = model_new();
	cr_assert_not_null(m);
	static const char *const setup_ops[] = {
		"subvol-create /S", "subvol-create /S/N", "mkdir /p", "snapshot /S /R ro",
		"chmod /R/N 0700", "rename /R /R2", NULL,
	};
	apply_all(m, setup_ops);
	cr_assert_eq(apply(m, "rename /R2 /p/R", 0), -EINVAL, "EROFS in Linux: not applied");
	cr_assert_eq(apply(m, "rename /R2 /p/R", EROFS), 0);
	char *sv = model_describe_subvols(m);
	cr_assert_not_null(sv);
	cr_assert_str_eq(sv, "/R2 subvol ro\n/R2/N stand-in\n/S subvol rw\n/S/N subvol rw\n");
	free(sv);
	static const char *const more[] = { "rename /S /p/S", "rmdir /p/S/N", NULL };
	apply_all(m, more);
	sv = model_describe_subvols(m);
	cr_assert_not_null(sv);
	cr_assert_str_eq(sv, "/R2 subvol ro\n/R2/N stand-in\n/p/S subvol rw\n");
	free(sv);
	model_free(m);
}
