/*
 * test_log.c - fsync through the log tree (ref/log/log_write.c) and its replay
 * at open (ref/log_replay*.c) on memory volumes: what an fsync made durable
 * comes back after power is lost, whole and checked clean; what was neither
 * fsynced nor committed does not; each full-commit case is counted with its
 * reason; a commit drops the log.  Kernel-made logs and the kernel reading
 * ref's are tests/interop/test_logreplay.sh.
 */
#include "wrutil.h"
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(log);

static ref_fs *mount_log(sim_volume *vol, bool treelog)
{
	struct ref_mount_opts mo = { .open = { .super_mirror = -1 }, .notreelog = !treelog };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), 0, "%s", err);
	return fs;
}

/* A fresh file system mounted with the log on. */
static ref_fs *fresh(sim_volume **vol)
{
	ref_fs *fs = wu_fresh(vol, 256, 0);
	WU_OK(fs, ref_umount(fs));
	return mount_log(*vol, true);
}

/* The volume after a power loss now: what the disks had not flushed is gone. */
static sim_volume *crashed(sim_volume *vol)
{
	sim_volume *c;
	cr_assert_eq(sim_volume_clone(vol, &c), 0);
	struct sim_crash_spec none = { .policy = SIM_CRASH_NONE };
	cr_assert_eq(sim_volume_crash(c, &none, NULL), 0);
	return c;
}

static ref_fs *open_ro(sim_volume *vol, bool nologreplay, struct ref_log_outcome *lo)
{
	struct ref_open_opts oo = { .super_mirror = -1, .nologreplay = nologreplay };
	ref_fs *fs;
	char err[256];
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "%s", err);
	if (lo)
		ref_log_outcome(fs, lo);
	return fs;
}

static void put(ref_fs *fs, const char *path, size_t len, uint64_t tag, uint64_t off)
{
	uint8_t *b = tu_pat(len, tag);
	WU_OK(fs, ref_write(fs, path, b, len, off));
	free(b);
}

/* The file at path holds exactly want[0..len). */
static void expect_file(ref_fs *fs, const char *path, const uint8_t *want, size_t len)
{
	struct ref_ino ino;
	int r = ref_lookup_path(fs, path, false, &ino);
	cr_assert_eq(r, 0, "%s: %s", path, ref_error(fs));
	struct ref_stat st;
	cr_assert_eq(ref_stat(fs, &ino, &st), 0);
	cr_assert_eq(st.size, len, "%s: size %llu, expected %zu", path,
		     (unsigned long long)st.size, len);
	uint8_t *got = malloc(len + 1);
	cr_assert_eq(ref_pread(fs, &ino, got, len + 1, 0), (ssize_t)len, "%s", ref_error(fs));
	cr_assert(!memcmp(got, want, len), "%s: content differs", path);
	free(got);
}

static void expect_absent(ref_fs *fs, const char *path)
{
	struct ref_ino ino;
	cr_assert_eq(ref_lookup_path(fs, path, false, &ino), -ENOENT, "%s is there", path);
}

static void expect_pat(ref_fs *fs, const char *path, size_t len, uint64_t tag)
{
	uint8_t *b = tu_pat(len, tag);
	expect_file(fs, path, b, len);
	free(b);
}

Test(log, an_fsynced_file_survives_power_loss_and_nothing_else_does)
{
	sim_volume *vol;
	ref_fs *fs = fresh(&vol);
	WU_OK(fs, ref_create(fs, "/a", 0644));
	put(fs, "/a", 10000, 1, 0);
	WU_OK(fs, ref_sync(fs));
	uint64_t commits = ref_commits(fs);
	WU_OK(fs, ref_create(fs, "/b", 0644)); /* neither fsynced nor committed */
	put(fs, "/b", 5000, 2, 0);
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	WU_OK(fs, ref_mkdir(fs, "/d/e", 0700));
	WU_OK(fs, ref_create(fs, "/d/e/f", 0600));
	put(fs, "/d/e/f", 300000, 3, 0);
	WU_OK(fs, ref_setxattr(fs, "/d/e/f", "user.k", "v", 1, 0));
	WU_OK(fs, ref_fsync(fs, "/d/e/f"));
	cr_assert_eq(ref_commits(fs), commits, "the fsync wrote the log, no commit");
	struct ref_log_stats ls;
	ref_log_stats(fs, &ls);
	cr_assert_eq(ls.log_syncs, 1);
	cr_assert_eq(ls.full_commits, 0);

	sim_volume *c = crashed(vol);
	/* As it is on disk: the last commit, and a log that checks clean. */
	struct ref_log_outcome lo;
	ref_fs *rd = open_ro(c, true, &lo);
	cr_assert(lo.present && !lo.replayed);
	expect_absent(rd, "/d");
	cr_assert_eq(ref_check(rd, &(struct ref_check_opts){ .out = stderr }), 0);
	ref_close(rd);
	/* Replayed: the fsynced file with its new directories, nothing else new. */
	rd = open_ro(c, false, &lo);
	cr_assert(lo.present && lo.replayed && lo.trees == 1);
	expect_pat(rd, "/a", 10000, 1);
	expect_pat(rd, "/d/e/f", 300000, 3);
	expect_absent(rd, "/b");
	uint8_t v[4];
	struct ref_ino f;
	cr_assert_eq(ref_lookup_path(rd, "/d/e/f", false, &f), 0);
	cr_assert_eq(ref_getxattr(rd, "/d/e/f", "user.k", v, sizeof(v)), 1);
	struct ref_stat st;
	cr_assert_eq(ref_stat_path(rd, "/d/e", false, &st), 0);
	cr_assert_eq(st.mode & 07777, 0700);
	cr_assert_eq(ref_stat_path(rd, "/d/e/f", false, &st), 0);
	cr_assert_eq(st.mode & 07777, 0600);
	cr_assert_eq(st.nlink, 1);
	ref_close(rd);
	wu_expect_clean(c); /* the replayed image: ref_check and btrfs check */
	sim_volume_close(c);

	/* The mount goes on: a commit drops the log. */
	WU_OK(fs, ref_sync(fs));
	cr_assert_eq(LE64(ref_super(fs)->log_root), 0);
	WU_OK(fs, ref_umount(fs));
	c = crashed(vol);
	rd = open_ro(c, false, &lo);
	cr_assert(!lo.present);
	expect_pat(rd, "/b", 5000, 2);
	ref_close(rd);
	sim_volume_close(c);
	sim_volume_close(vol);
}

Test(log, appends_overwrites_holes_truncates_and_prealloc_are_replayed)
{
	sim_volume *vol;
	ref_fs *fs = fresh(&vol);
	enum { LEN = 1 << 20 };
	uint8_t *want = tu_pat(LEN, 7);
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_write(fs, "/f", want, LEN, 0));
	WU_OK(fs, ref_create(fs, "/g", 0644));
	put(fs, "/g", 200000, 8, 0);
	WU_OK(fs, ref_create(fs, "/p", 0644));
	put(fs, "/p", 8192, 9, 0);
	WU_OK(fs, ref_sync(fs));
	/* Overwrite in the middle, append, punch a hole: one fsync, then more. */
	uint8_t *mid = tu_pat(20000, 10);
	memcpy(want + 100000, mid, 20000);
	WU_OK(fs, ref_write(fs, "/f", mid, 20000, 100000));
	WU_OK(fs, ref_fsync(fs, "/f"));
	WU_OK(fs, ref_fallocate(fs, "/f", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 524288, 65536));
	memset(want + 524288, 0, 65536);
	WU_OK(fs, ref_fsync(fs, "/f"));
	WU_OK(fs, ref_truncate(fs, "/g", 4096));
	WU_OK(fs, ref_fdatasync(fs, "/g"));
	WU_OK(fs, ref_fallocate(fs, "/p", FALLOC_FL_KEEP_SIZE, 8192, 1 << 20));
	WU_OK(fs, ref_fsync(fs, "/p"));
	struct ref_log_stats ls;
	ref_log_stats(fs, &ls);
	cr_assert_eq(ls.log_syncs, 4);

	sim_volume *c = crashed(vol);
	ref_fs *rd = open_ro(c, false, NULL);
	expect_file(rd, "/f", want, LEN);
	expect_pat(rd, "/p", 8192, 9);
	uint8_t *g = tu_pat(200000, 8);
	expect_file(rd, "/g", g, 4096);
	free(g);
	ref_close(rd);
	wu_expect_clean(c);
	sim_volume_close(c);
	free(mid);
	free(want);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
}

Test(log, full_commits_are_counted_with_their_reasons)
{
	sim_volume *vol;
	ref_fs *fs = fresh(&vol);
	WU_OK(fs, ref_mkdir(fs, "/a", 0755));
	WU_OK(fs, ref_mkdir(fs, "/b", 0755));
	WU_OK(fs, ref_create(fs, "/a/x", 0644));
	WU_OK(fs, ref_create(fs, "/y", 0644));
	WU_OK(fs, ref_sync(fs));
	/* A name moved out of /a while neither it nor /a was logged: /a can no
	 * longer be logged (the kernel's last_unlink_trans); /b can. */
	WU_OK(fs, ref_rename(fs, "/a/x", "/b/x", 0));
	WU_OK(fs, ref_fsync(fs, "/b"));
	WU_OK(fs, ref_fsync(fs, "/a"));
	/* After that commit: a logged file renamed, the log follows it. */
	put(fs, "/y", 100, 1, 0);
	WU_OK(fs, ref_fsync(fs, "/y"));
	WU_OK(fs, ref_rename(fs, "/y", "/y2", 0));
	WU_OK(fs, ref_fsync(fs, "/y2"));
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_fsync(fs, "/y2")); /* nothing new since the commit: nothing to do */
	/* A file of a read-only snapshot never changes after the snapshot's
	 * commit: its fsync has nothing to do, no IO (skip_inode_logging), also
	 * while other changes wait for the next commit. */
	uint64_t id;
	WU_OK(fs, ref_snapshot(fs, "/", "/ro", true, &id));
	WU_OK(fs, ref_create(fs, "/z", 0644));
	uint64_t commits = ref_commits(fs);
	WU_OK(fs, ref_fsync(fs, "/ro/y2"));
	cr_assert_eq(ref_commits(fs), commits);
	/* Nor does a file logged whole by a sync and unchanged since. */
	put(fs, "/z", 10, 3, 0);
	WU_OK(fs, ref_fsync(fs, "/z"));
	WU_OK(fs, ref_fsync(fs, "/z"));
	WU_OK(fs, ref_fdatasync(fs, "/z"));
	struct ref_log_stats ls;
	ref_log_stats(fs, &ls);
	cr_assert_eq(ls.full_by_reason[REF_LOG_FULL_DIR_UNLINK], 1);
	cr_assert_eq(ls.full_by_reason[REF_LOG_FULL_SUBVOL], 0);
	cr_assert_eq(ls.full_commits, 1);
	cr_assert_eq(ls.log_syncs, 4);
	cr_assert_eq(ls.skipped, 3);
	cr_assert_str_eq(ref_log_full_reason(REF_LOG_FULL_DIR_UNLINK),
			 "a directory to log, or one above, lost a name to a rename or moved");
	WU_OK(fs, ref_umount(fs));

	/* Without the log (the kernel's notreelog), every fsync commits. */
	fs = mount_log(vol, false);
	put(fs, "/y2", 100, 2, 0);
	WU_OK(fs, ref_fsync(fs, "/y2"));
	ref_log_stats(fs, &ls);
	cr_assert_eq(ls.full_by_reason[REF_LOG_FULL_NOTREELOG], 1);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
}

/* A directory fsync logs its names: new entries come back (a new file
 * empty, as the kernel logs it "exists only"; a new directory with its own
 * new names), removed ones stay removed, entries of the commit stay. */
Test(log, a_directory_fsync_persists_its_names_added_and_removed)
{
	sim_volume *vol;
	ref_fs *fs = fresh(&vol);
	WU_OK(fs, ref_mkdir(fs, "/d", 0755));
	WU_OK(fs, ref_create(fs, "/d/old", 0644));
	put(fs, "/d/old", 5000, 1, 0);
	WU_OK(fs, ref_create(fs, "/d/gone", 0644));
	WU_OK(fs, ref_mkdir(fs, "/d/olddir", 0755));
	WU_OK(fs, ref_create(fs, "/d/olddir/in", 0644));
	WU_OK(fs, ref_create(fs, "/d/keep", 0644));
	WU_OK(fs, ref_sync(fs));
	uint64_t c0 = ref_commits(fs);
	WU_OK(fs, ref_create(fs, "/d/new", 0644));
	put(fs, "/d/new", 7000, 2, 0);
	WU_OK(fs, ref_mkdir(fs, "/d/sub", 0700));
	WU_OK(fs, ref_create(fs, "/d/sub/f", 0644));
	WU_OK(fs, ref_symlink(fs, "target-of-l", "/d/l"));
	WU_OK(fs, ref_unlink(fs, "/d/gone"));
	WU_OK(fs, ref_unlink(fs, "/d/olddir/in"));
	WU_OK(fs, ref_rmdir(fs, "/d/olddir"));
	WU_OK(fs, ref_rename(fs, "/d/keep", "/d/kept", 0)); /* within /d */
	WU_OK(fs, ref_create(fs, "/elsewhere", 0644));   /* not in /d: not logged */
	WU_OK(fs, ref_fsync(fs, "/d"));
	cr_assert_eq(ref_commits(fs), c0, "the directory fsync wrote the log");
	struct ref_log_stats ls;
	ref_log_stats(fs, &ls);
	cr_assert_eq(ls.log_syncs, 1);

	sim_volume *c = crashed(vol);
	ref_fs *rd = open_ro(c, false, NULL);
	expect_pat(rd, "/d/old", 5000, 1);
	expect_file(rd, "/d/new", (const uint8_t *)"", 0); /* "exists only": its data was not fsynced */
	expect_file(rd, "/d/sub/f", (const uint8_t *)"", 0);
	expect_file(rd, "/d/kept", (const uint8_t *)"", 0);
	expect_absent(rd, "/d/keep");
	expect_absent(rd, "/d/gone");
	expect_absent(rd, "/d/olddir");
	expect_absent(rd, "/elsewhere");
	struct ref_stat st;
	cr_assert_eq(ref_stat_path(rd, "/d/sub", false, &st), 0);
	cr_assert_eq(st.mode & 07777, 0700);
	char t[32];
	struct ref_ino l;
	cr_assert_eq(ref_lookup_path(rd, "/d/l", false, &l), 0);
	cr_assert_eq(ref_readlink(rd, &l, t, sizeof(t)), 11);
	cr_assert(!memcmp(t, "target-of-l", 11));
	ref_close(rd);
	wu_expect_clean(c);
	sim_volume_close(c);

	/* A file fsynced after the directory keeps its data. */
	WU_OK(fs, ref_fsync(fs, "/d/new"));
	c = crashed(vol);
	rd = open_ro(c, false, NULL);
	expect_pat(rd, "/d/new", 7000, 2);
	expect_absent(rd, "/d/gone");
	ref_close(rd);
	wu_expect_clean(c);
	sim_volume_close(c);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
}

/* generic/039, generic/107: a file that lost a name since the commit is
 * fsynced; its directories of the commit are logged whole, so the removed
 * name stays removed and the directory can be emptied after replay. */
Test(log, a_name_removed_since_the_commit_stays_removed_after_fsync)
{
	sim_volume *vol;
	ref_fs *fs = fresh(&vol);
	WU_OK(fs, ref_mkdir(fs, "/t", 0755));
	WU_OK(fs, ref_create(fs, "/foo", 0644));
	put(fs, "/foo", 3000, 4, 0);
	WU_OK(fs, ref_link(fs, "/foo", "/t/foo2"));
	WU_OK(fs, ref_link(fs, "/foo", "/t/foo3"));
	WU_OK(fs, ref_sync(fs));
	uint64_t c0 = ref_commits(fs);
	WU_OK(fs, ref_unlink(fs, "/t/foo3"));
	put(fs, "/foo", 100, 5, 3000);
	WU_OK(fs, ref_fsync(fs, "/foo"));
	cr_assert_eq(ref_commits(fs), c0);

	sim_volume *c = crashed(vol);
	ref_fs *rd = open_ro(c, false, NULL);
	expect_absent(rd, "/t/foo3");
	struct ref_stat st;
	cr_assert_eq(ref_stat_path(rd, "/foo", false, &st), 0);
	cr_assert_eq(st.nlink, 2);
	cr_assert_eq(st.size, 3100);
	cr_assert_eq(ref_stat_path(rd, "/t/foo2", false, &st), 0);
	ref_close(rd);
	wu_expect_clean(c);
	sim_volume_close(c);

	/* The same, renamed within a directory (generic/321, 376): the old
	 * name is gone, the new one there. */
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_rename(fs, "/t/foo2", "/t/bar", 0));
	WU_OK(fs, ref_create(fs, "/t/foo2", 0644));
	WU_OK(fs, ref_fsync(fs, "/t/bar"));
	c = crashed(vol);
	rd = open_ro(c, false, NULL);
	cr_assert_eq(ref_stat_path(rd, "/t/bar", false, &st), 0);
	cr_assert_eq(st.nlink, 2);
	cr_assert_eq(ref_stat_path(rd, "/t/foo2", false, &st), 0); /* new in the logged /t */
	cr_assert_eq(st.size, 0);
	ref_close(rd);
	wu_expect_clean(c);
	sim_volume_close(c);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
}

/* Two directories of the commit swapped (RENAME_EXCHANGE), one fsynced:
 * its new name is the other's name at the commit, so replay would unlink
 * the other to make room; the other is logged too (log_conflicts.c), and
 * both come back under their new names with what they hold. */
Test(log, a_name_the_commit_gave_to_another_inode_logs_that_inode_too)
{
	sim_volume *vol;
	ref_fs *fs = fresh(&vol);
	WU_OK(fs, ref_mkdir(fs, "/a", 0755));
	WU_OK(fs, ref_create(fs, "/a/kept", 0644));
	put(fs, "/a/kept", 5000, 6, 0);
	WU_OK(fs, ref_mkdir(fs, "/b", 0700));
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_rename(fs, "/a", "/b", RENAME_EXCHANGE));
	WU_OK(fs, ref_fsync(fs, "/b")); /* the old /a, with kept */
	struct ref_log_stats ls;
	ref_log_stats(fs, &ls);
	cr_assert_eq(ls.log_syncs, 1, "logged, not committed");
	sim_volume *c = crashed(vol);
	ref_fs *rd = open_ro(c, false, NULL);
	expect_pat(rd, "/b/kept", 5000, 6);
	struct ref_stat st;
	cr_assert_eq(ref_stat_path(rd, "/a", false, &st), 0, "the other directory was lost");
	cr_assert_eq(st.mode & 07777, 0700);
	cr_assert_eq(ref_stat_path(rd, "/b", false, &st), 0);
	cr_assert_eq(st.mode & 07777, 0755);
	ref_close(rd);
	wu_expect_clean(c);
	sim_volume_close(c);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
}

/* A directory the log holds, moved to another parent, then any log sync:
 * replay gives it the new name only (its old parent is logged whole, as
 * btrfs_log_all_parents does), never two names. */
Test(log, a_logged_directory_moved_elsewhere_has_one_name_after_replay)
{
	sim_volume *vol;
	ref_fs *fs = fresh(&vol);
	WU_OK(fs, ref_mkdir(fs, "/a", 0755));
	WU_OK(fs, ref_mkdir(fs, "/b", 0755));
	WU_OK(fs, ref_mkdir(fs, "/a/d", 0755));
	WU_OK(fs, ref_create(fs, "/a/d/f", 0644));
	put(fs, "/a/d/f", 2000, 7, 0);
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_create(fs, "/a/d/g", 0644));
	WU_OK(fs, ref_fsync(fs, "/a/d"));
	WU_OK(fs, ref_rename(fs, "/a/d", "/b/d2", 0));
	WU_OK(fs, ref_create(fs, "/x", 0644));
	WU_OK(fs, ref_fsync(fs, "/x"));
	struct ref_log_stats ls;
	ref_log_stats(fs, &ls);
	cr_assert_eq(ls.full_commits, 0, "logged, not committed");
	sim_volume *c = crashed(vol);
	ref_fs *rd = open_ro(c, false, NULL);
	expect_pat(rd, "/b/d2/f", 2000, 7);
	expect_absent(rd, "/a/d");
	ref_close(rd);
	wu_expect_clean(c);
	sim_volume_close(c);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
}

Test(log, a_hard_link_made_now_is_replayed_with_the_file)
{
	sim_volume *vol;
	ref_fs *fs = fresh(&vol);
	WU_OK(fs, ref_mkdir(fs, "/old", 0755));
	WU_OK(fs, ref_create(fs, "/old/f", 0644));
	put(fs, "/old/f", 3000, 4, 0);
	WU_OK(fs, ref_sync(fs));
	WU_OK(fs, ref_mkdir(fs, "/new", 0755));
	WU_OK(fs, ref_link(fs, "/old/f", "/new/link"));
	WU_OK(fs, ref_link(fs, "/old/f", "/old/second"));
	put(fs, "/old/f", 100, 5, 3000);
	WU_OK(fs, ref_fsync(fs, "/old/f"));
	sim_volume *c = crashed(vol);
	ref_fs *rd = open_ro(c, false, NULL);
	uint8_t want[3100];
	uint8_t *a = tu_pat(3000, 4), *b = tu_pat(100, 5);
	memcpy(want, a, 3000);
	memcpy(want + 3000, b, 100);
	expect_file(rd, "/old/f", want, sizeof(want));
	expect_file(rd, "/new/link", want, sizeof(want));
	expect_file(rd, "/old/second", want, sizeof(want));
	struct ref_stat st;
	cr_assert_eq(ref_stat_path(rd, "/old/f", false, &st), 0);
	cr_assert_eq(st.nlink, 3);
	ref_close(rd);
	wu_expect_clean(c);
	sim_volume_close(c);
	free(a);
	free(b);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
}

Test(log, a_read_only_volume_with_a_log_is_refused_unless_replayed_in_memory)
{
	sim_volume *vol;
	ref_fs *fs = fresh(&vol);
	WU_OK(fs, ref_create(fs, "/f", 0644));
	put(fs, "/f", 5000, 6, 0);
	WU_OK(fs, ref_fsync(fs, "/f"));
	sim_volume *c = crashed(vol);
	char *path;
	char *dir = wu_save_images(c, 1, &path);
	sim_volume_close(c);
	sim_volume *ro = wu_open_images(&path, 1, 1, true);
	struct ref_open_opts oo = { .super_mirror = -1 };
	ref_fs *rd;
	char err[256];
	cr_assert_eq(ref_open(ro, &oo, &rd, err, sizeof(err)), -EIO);
	cr_assert(strstr(err, "log replay required on RO media"), "%s", err);
	oo.replay_in_memory = true;
	cr_assert_eq(ref_open(ro, &oo, &rd, err, sizeof(err)), 0, "%s", err);
	struct ref_log_outcome lo;
	ref_log_outcome(rd, &lo);
	cr_assert(lo.replayed && lo.in_memory);
	expect_pat(rd, "/f", 5000, 6);
	ref_close(rd);
	sim_volume_close(ro);
	/* The image itself still holds the log. */
	ro = wu_open_images(&path, 1, 1, true);
	rd = open_ro(ro, true, &lo);
	cr_assert(lo.present && !lo.replayed);
	expect_absent(rd, "/f");
	ref_close(rd);
	sim_volume_close(ro);
	free(path);
	tu_rmdir(dir);
	WU_OK(fs, ref_umount(fs));
	sim_volume_close(vol);
}
