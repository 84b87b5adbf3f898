/*
 * test_cov_img.c - the write path on images that mkfs.btrfs makes, which
 * differ from ref's own: one checksum item covering the data of several files
 * (freeing a file cuts its checksums out of the front, the middle or the end
 * of an item), and special files (FIFO, character and block devices, socket)
 * renamed, linked, given xattrs and removed.  Then the mount refusals: each
 * feature the write path does not keep correct makes ref_mount fail with
 * EROFS and the reason (no skinny metadata, no free-space tree, mixed block
 * groups, a log tree, RAID5/6 chunks, a missing device), while the
 * read path still opens them; RAID5 and RAID6 volumes are read with one and
 * two devices missing, their tree blocks rebuilt from parity.
 * Skipped when mkfs.btrfs is not installed.
 */
#include "imgutil.h"
#include "testutil.h"
#include "wrutil.h"
#include "ref/mkfs.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

static char *dir;

static void setup(void)
{
	dir = tu_tmpdir();
}

static void teardown(void)
{
	iu_rmtree(dir);
	dir = NULL;
}

TestSuite(cov_img, .init = setup, .fini = teardown);

/* A volume over image files (writable unless ro); disks listed in order. */
static sim_volume *open_imgs(const char *const *imgs, unsigned n, bool ro)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, n, 0, 0);
	cfg.latency = (struct sim_latency){ 0 };
	for (unsigned i = 0; i < n; i++) {
		cfg.disk[i].image_path = imgs[i];
		cfg.disk[i].size = 0;
		cfg.disk[i].sector_size = 4096;
		cfg.disk[i].read_only = ro;
	}
	sim_volume *vol;
	char err[256] = "";
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	return vol;
}

static ref_fs *mount_img(sim_volume *vol)
{
	ref_fs *fs;
	char err[256] = "";
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "mount: %s", err);
	return fs;
}

/* ref_mount's verdict on an image: its errno, the reason in err. */
static int try_mount(const char *const *imgs, unsigned n, bool degraded, char *err, size_t errlen)
{
	sim_volume *vol = open_imgs(imgs, n, true);
	struct ref_mount_opts mo = { .open = { .super_mirror = -1, .degraded = degraded } };
	ref_fs *fs = NULL;
	err[0] = '\0';
	int r = ref_mount(vol, &mo, &fs, err, errlen);
	if (!r)
		ref_umount(fs);
	sim_volume_close(vol);
	return r;
}

/* Opens read-only (degraded if asked) and runs the checker: its error count. */
static long check_imgs(const char *const *imgs, unsigned n, bool degraded, char **report)
{
	sim_volume *vol = open_imgs(imgs, n, true);
	struct ref_open_opts oo = { .super_mirror = -1, .degraded = degraded };
	ref_fs *fs;
	char err[256] = "";
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "open: %s", err);
	size_t len = 0;
	FILE *out = open_memstream(report, &len);
	struct ref_check_opts co = { .out = out };
	long e = ref_check(fs, &co);
	fclose(out);
	ref_close(fs);
	sim_volume_close(vol);
	return e;
}

/* ---- checksum items shared by several files ---- */

#define NFILES 5

static uint64_t file_len(int i)
{
	return 3 * 4096 * (uint64_t)(i + 1) + 100 * (uint64_t)i;
}

/* The disk_bytenr of the file's first extent. */
static uint64_t extent_of(ref_fs *fs, const char *path)
{
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, path, false, &ino));
	struct ref_root root;
	WU_OK(fs, ref_find_root(fs, 5, &root));
	struct ref_path p;
	struct ref_key k;
	const uint8_t *d;
	uint32_t size;
	WU_OK(fs, ref_find_first(fs, &root, ino.ino, BTRFS_EXTENT_DATA_KEY, &p, &k, &d, &size));
	cr_assert(size >= sizeof(struct btrfs_file_extent_item));
	uint64_t at = le64(d + offsetof(struct btrfs_file_extent_item, disk_bytenr));
	ref_path_release(fs, &p);
	return at;
}

static size_t csum_items(ref_fs *fs)
{
	struct ref_root root;
	WU_OK(fs, ref_find_root(fs, BTRFS_CSUM_TREE_OBJECTID, &root));
	struct ref_path p;
	struct ref_key k = { 0 };
	size_t n = 0;
	int r = ref_search(fs, &root, &k, &p);
	while (r == 0) {
		n++;
		r = ref_next(fs, &p);
	}
	cr_assert_eq(r, 1, "%s", ref_error(fs));
	return n;
}

static void expect_file(ref_fs *fs, int i)
{
	char path[16];
	snprintf(path, sizeof(path), "/f%d", i);
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, path, false, &ino));
	uint64_t len = file_len(i);
	uint8_t *want = tu_pat(len, 100 + (uint64_t)i), *got = malloc(len + 1);
	cr_assert_eq(ref_pread(fs, &ino, got, len + 1, 0), (ssize_t)len, "%s: %s", path,
		     ref_error(fs));
	cr_expect_eq(memcmp(got, want, len), 0, "%s reads back", path);
	free(want);
	free(got);
}

Test(cov_img, freeing_files_cuts_shared_checksum_items)
{
	iu_require_mkfs();
	char src[600], img[600];
	snprintf(src, sizeof(src), "%s/src", dir);
	iu_sh("mkdir -p %s", src);
	for (int i = 0; i < NFILES; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", i);
		uint8_t *d = tu_pat(file_len(i), 100 + (uint64_t)i);
		iu_put(src, name, d, file_len(i));
		free(d);
	}
	snprintf(img, sizeof(img), "%s/fs.img", dir);
	iu_mkfs(dir, img, 200, "");
	const char *imgs[] = { img };
	sim_volume *vol = open_imgs(imgs, 1, false);
	ref_fs *fs = mount_img(vol);
	cr_assert_eq(csum_items(fs), 1, "mkfs.btrfs makes one item for all the files");

	/* the files in the order of their data */
	int order[NFILES];
	uint64_t at[NFILES];
	for (int i = 0; i < NFILES; i++) {
		char path[16];
		snprintf(path, sizeof(path), "/f%d", i);
		at[i] = extent_of(fs, path);
		order[i] = i;
	}
	for (int i = 0; i < NFILES; i++)
		for (int j = i + 1; j < NFILES; j++)
			if (at[order[j]] < at[order[i]]) {
				int t = order[i];
				order[i] = order[j];
				order[j] = t;
			}
	/* first (the item's front goes), last (its tail goes), middle (it splits in
	 * two), then the rest (whole items) */
	int steps[NFILES] = { order[0], order[4], order[2], order[1], order[3] };
	size_t items_after[NFILES] = { 1, 1, 2, 1, 0 };
	bool gone[NFILES] = { false };
	for (int s = 0; s < NFILES; s++) {
		char path[16];
		snprintf(path, sizeof(path), "/f%d", steps[s]);
		WU_OK(fs, ref_unlink(fs, path));
		WU_OK(fs, ref_sync(fs));
		gone[steps[s]] = true;
		cr_expect_eq(csum_items(fs), items_after[s], "after removing %s: %zu items", path,
			     csum_items(fs));
		for (int i = 0; i < NFILES; i++)
			if (!gone[i])
				expect_file(fs, i);
		cr_assert_eq(ref_umount(fs), 0);
		wu_expect_ref_clean(vol);
		fs = mount_img(vol);
	}
	/* new data goes where the old was, with checksums of its own */
	uint8_t *d = tu_pat(20000, 9);
	WU_OK(fs, ref_create(fs, "/new", 0644));
	WU_OK(fs, ref_write(fs, "/new", d, 20000, 0));
	cr_assert_eq(ref_umount(fs), 0);
	sim_volume_close(vol);
	iu_expect_clean(img);
	cr_expect_eq(iu_btrfs_check(img, NULL, NULL) > 0, false, "btrfs check passes");
	free(d);
}

/* ---- special files ---- */

struct types {
	int n;
	char name[8][16];
	uint8_t type[8];
};

static int collect(void *ctx, const struct ref_dirent *de)
{
	struct types *t = ctx;
	if (t->n < 8) {
		snprintf(t->name[t->n], sizeof(t->name[0]), "%.*s", (int)de->len, de->name);
		t->type[t->n++] = de->type;
	}
	return 0;
}

static uint8_t type_of(const struct types *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->name[i], name))
			return t->type[i];
	return 0xff;
}

Test(cov_img, special_files)
{
	iu_require_mkfs();
	if (geteuid() != 0)
		cr_skip_test("mknod needs root");
	char src[600], img[600];
	snprintf(src, sizeof(src), "%s/src", dir);
	iu_sh("mkdir -p %s && cd %s && mkfifo fifo && mknod cdev c 1 3 && mknod bdev b 7 0", src, src);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	cr_assert_lt(strlen(src) + 6, sizeof(sa.sun_path));
	memcpy(sa.sun_path, src, strlen(src));
	memcpy(sa.sun_path + strlen(src), "/sock", 6);
	int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert(sfd >= 0);
	cr_assert_eq(bind(sfd, (struct sockaddr *)&sa, sizeof(sa)), 0, "bind %s", sa.sun_path);
	close(sfd);
	snprintf(img, sizeof(img), "%s/fs.img", dir);
	iu_mkfs(dir, img, 200, "");
	const char *imgs[] = { img };
	sim_volume *vol = open_imgs(imgs, 1, false);
	ref_fs *fs = mount_img(vol);

	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, "/cdev", false, &st));
	cr_expect(S_ISCHR(st.mode));
	/* renamed and linked: new entries get their type from the mode */
	WU_OK(fs, ref_rename(fs, "/fifo", "/fifo2", 0));
	WU_OK(fs, ref_rename(fs, "/cdev", "/cdev2", 0));
	WU_OK(fs, ref_link(fs, "/bdev", "/bdev2"));
	WU_OK(fs, ref_rename(fs, "/sock", "/sock2", 0));
	/* user xattrs only on files and directories; trusted ones anywhere */
	cr_expect_eq(ref_setxattr(fs, "/fifo2", "user.x", "1", 1, 0), -EPERM);
	WU_OK(fs, ref_setxattr(fs, "/fifo2", "trusted.x", "1", 1, 0));
	char v[4];
	cr_expect_eq(ref_getxattr(fs, "/fifo2", "trusted.x", v, sizeof(v)), 1);
	cr_expect_eq(ref_getxattr(fs, "/sock2", "user.x", v, sizeof(v)), -EPERM);
	/* writing to a device node is not writing a file */
	cr_expect_lt(ref_write(fs, "/cdev2", "x", 1, 0), 0);
	WU_OK(fs, ref_sync(fs));

	struct ref_ino root;
	WU_OK(fs, ref_subvol_root(fs, 5, &root));
	struct types t = { 0 };
	WU_OK(fs, ref_readdir(fs, &root, collect, &t));
	cr_expect_eq(type_of(&t, "fifo2"), BTRFS_FT_FIFO);
	cr_expect_eq(type_of(&t, "cdev2"), BTRFS_FT_CHRDEV);
	cr_expect_eq(type_of(&t, "bdev"), BTRFS_FT_BLKDEV);
	cr_expect_eq(type_of(&t, "bdev2"), BTRFS_FT_BLKDEV);
	cr_expect_eq(type_of(&t, "sock2"), BTRFS_FT_SOCK);
	cr_expect_eq(type_of(&t, "fifo"), 0xff);
	WU_OK(fs, ref_stat_path(fs, "/bdev2", false, &st));
	cr_expect_eq(st.nlink, 2);
	cr_assert_eq(ref_umount(fs), 0);
	wu_expect_ref_clean(vol);

	fs = mount_img(vol);
	WU_OK(fs, ref_unlink(fs, "/fifo2"));
	WU_OK(fs, ref_unlink(fs, "/cdev2"));
	WU_OK(fs, ref_unlink(fs, "/bdev"));
	WU_OK(fs, ref_unlink(fs, "/bdev2"));
	WU_OK(fs, ref_unlink(fs, "/sock2"));
	cr_assert_eq(ref_umount(fs), 0);
	sim_volume_close(vol);
	iu_expect_clean(img);
	cr_expect_eq(iu_btrfs_check(img, NULL, NULL) > 0, false, "btrfs check passes");
}

/* ---- what the write path refuses ---- */

static void expect_refused(const char *opts, const char *why)
{
	char img[600], err[256];
	snprintf(img, sizeof(img), "%s/fs.img", dir);
	iu_sh("rm -f %s", img);
	iu_mkfs(dir, img, 200, opts);
	const char *imgs[] = { img };
	int r = try_mount(imgs, 1, false, err, sizeof(err));
	cr_expect_eq(r, -EROFS, "mkfs.btrfs %s: %d (%s)", opts, r, err);
	cr_expect(strstr(err, why), "mkfs.btrfs %s: '%s' lacks '%s'", opts, err, why);
	iu_expect_clean(img); /* the read path takes it */
}

Test(cov_img, mount_refusals)
{
	iu_require_mkfs();
	iu_sh("mkdir -p %s/src && echo hello >%s/src/a", dir, dir);
	expect_refused("-R ^free-space-tree", "free-space tree");
}

/* Layouts other than mkfs.btrfs's default are written too: metadata without
 * skinny items and mixed block groups (tests/interop/test_layouts.sh takes
 * them through far more, against the kernel). */
Test(cov_img, other_layouts_written)
{
	iu_require_mkfs();
	iu_sh("mkdir -p %s/src && echo hello >%s/src/a", dir, dir);
	static const char *const opts[] = { "-O ^skinny-metadata", "-M" };
	for (size_t i = 0; i < 2; i++) {
		char img[600];
		snprintf(img, sizeof(img), "%s/fs.img", dir);
		iu_sh("rm -f %s", img);
		iu_mkfs(dir, img, 200, opts[i]);
		const char *imgs[] = { img };
		sim_volume *vol = open_imgs(imgs, 1, false);
		ref_fs *fs = mount_img(vol);
		uint8_t *data = tu_pat(300000, i + 1);
		WU_OK(fs, ref_mkdir(fs, "/d", 0755));
		WU_OK(fs, ref_create(fs, "/d/f", 0644));
		WU_OK(fs, ref_write(fs, "/d/f", data, 300000, 0));
		WU_OK(fs, ref_unlink(fs, "/a"));
		free(data);
		cr_assert_eq(ref_umount(fs), 0, "mkfs.btrfs %s: %s", opts[i], ref_error(fs));
		sim_volume_close(vol);
		iu_expect_clean(img);
		cr_expect_eq(iu_btrfs_check(img, NULL, NULL) > 0, false,
			     "mkfs.btrfs %s: btrfs check passes", opts[i]);
	}
}

/* A superblock whose log root is no log tree (here the root tree's block):
 * the replay at mount fails with the reason, as the kernel's mount does; with
 * nologreplay the open reads the last commit but writing is refused. */
Test(cov_img, log_root_that_is_no_log_fails_the_mount)
{
	iu_require_mkfs();
	iu_sh("mkdir -p %s/src && echo hello >%s/src/a", dir, dir);
	char img[600], err[256];
	snprintf(img, sizeof(img), "%s/fs.img", dir);
	iu_mkfs(dir, img, 200, "");
	struct iu_opened o = iu_open(img);
	uint64_t root = LE64(ref_super(o.fs)->root);
	iu_close(&o);
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(root >> (8 * i));
	iu_patch_super(img, offsetof(struct btrfs_super_disk, log_root), le, 8);
	const char *imgs[] = { img };
	int r = try_mount(imgs, 1, false, err, sizeof(err));
	cr_expect(r == -EUCLEAN || r == -EIO, "%d %s", r, err);
	cr_expect(strstr(err, "log replay"), "%s", err);
	sim_volume *vol = open_imgs(imgs, 1, true);
	struct ref_mount_opts mo = { .open = { .super_mirror = -1, .nologreplay = true } };
	ref_fs *fs;
	cr_expect_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), -EROFS);
	cr_expect(strstr(err, "nologreplay"), "%s", err);
	struct ref_open_opts oo = { .super_mirror = -1, .nologreplay = true };
	cr_assert_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), 0, "%s", err);
	struct ref_log_outcome lo;
	ref_log_outcome(fs, &lo);
	cr_expect(lo.present && !lo.replayed);
	ref_close(fs);
	sim_volume_close(vol);
}

/* RAID5 on 3 images or RAID6 on 4, made by mkfs.btrfs: ref writes on top
 * (its tree blocks and their parity in the RAID5/6 metadata chunk), then
 * reads with each device (RAID6: each pair) missing, every tree block rebuilt
 * from parity. */
static void raid56(const char *profile, unsigned n, unsigned missing)
{
	iu_require_mkfs();
	char imgs_s[4][600];
	const char *imgs[4];
	for (unsigned i = 0; i < n; i++) {
		snprintf(imgs_s[i], sizeof(imgs_s[i]), "%s/d%u.img", dir, i);
		imgs[i] = imgs_s[i];
		iu_sh("truncate -s 300M %s", imgs[i]);
	}
	iu_sh("mkfs.btrfs -q -f -d %s -m %s %s %s %s %s >/dev/null 2>&1", profile, profile, imgs[0],
	      imgs[1], imgs[2], n > 3 ? imgs[3] : "");
	char err[256];
	sim_volume *wvol = open_imgs(imgs, n, false);
	ref_fs *wfs = mount_img(wvol);
	uint8_t *data = tu_pat(300000, n);
	WU_OK(wfs, ref_mkdir(wfs, "/from-ref", 0755));
	for (int i = 0; i < 40; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/from-ref/f%d", i);
		WU_OK(wfs, ref_create(wfs, path, 0644));
		WU_OK(wfs, ref_write(wfs, path, data, 3000 + (size_t)i * 7000, (uint64_t)i * 333));
	}
	free(data);
	WU_OK(wfs, ref_umount(wfs));
	sim_volume_close(wvol);
	char *report = NULL;
	cr_expect_eq(check_imgs(imgs, n, false, &report), 0, "%s", report);
	free(report);
	for (unsigned a = 0; a < n; a++)
		for (unsigned b = missing > 1 ? a + 1 : a; b < (missing > 1 ? n : a + 1); b++) {
			const char *some[4];
			unsigned m = 0;
			for (unsigned i = 0; i < n; i++)
				if (i != a && i != b)
					some[m++] = imgs[i];
			/* without degraded the volume does not open */
			sim_volume *vol = open_imgs(some, m, true);
			struct ref_open_opts oo = { .super_mirror = -1 };
			ref_fs *fs;
			cr_expect_eq(ref_open(vol, &oo, &fs, err, sizeof(err)), -ENODEV,
				     "%s without %u %u: %s", profile, a, b, err);
			sim_volume_close(vol);
			report = NULL;
			long e = check_imgs(some, m, true, &report);
			cr_expect_eq(e, 0, "%s without disks %u and %u:\n%s", profile, a, b, report);
			free(report);
		}
}

Test(cov_img, raid5_degraded_reads)
{
	raid56("raid5", 3, 1);
}

Test(cov_img, raid6_degraded_reads)
{
	raid56("raid6", 4, 2);
}

/* RAID1 with a disk gone: no mount without degraded; degraded, it mounts
 * for writing, and what was there and what it wrote read back. */
Test(cov_img, degraded_writing)
{
	sim_volume *vol = tu_open(2, 256ull << 20, 4096, 3);
	struct ref_mkfs_opts o;
	ref_mkfs_defaults(&o);
	o.data_profile = BTRFS_BLOCK_GROUP_RAID1;
	o.meta_profile = BTRFS_BLOCK_GROUP_RAID1;
	o.seed = 5;
	o.time = 1700000000;
	char err[256];
	cr_assert_eq(ref_mkfs(vol, &o, NULL, err, sizeof(err)), 0, "%s", err);
	ref_fs *fs;
	cr_assert_eq(ref_mount(vol, NULL, &fs, err, sizeof(err)), 0, "%s", err);
	uint8_t *d = tu_pat(100000, 4);
	WU_OK(fs, ref_create(fs, "/f", 0644));
	WU_OK(fs, ref_write(fs, "/f", d, 100000, 0));
	cr_assert_eq(ref_umount(fs), 0);
	/* disk 0 alone */
	char img[600];
	snprintf(img, sizeof(img), "%s/d0.img", dir);
	cr_assert_eq(sim_disk_save_image(vol, 0, img), 0);
	sim_volume_close(vol);
	const char *imgs[] = { img };
	vol = open_imgs(imgs, 1, false);
	struct ref_mount_opts mo = { .open = { .super_mirror = -1, .degraded = false } };
	cr_expect_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), -ENODEV);
	cr_expect(strstr(err, "devid 2"), "%s", err);
	mo.open.degraded = true;
	cr_assert_eq(ref_mount(vol, &mo, &fs, err, sizeof(err)), 0, "%s", err);
	WU_OK(fs, ref_create(fs, "/g", 0644));
	WU_OK(fs, ref_write(fs, "/g", d, 5000, 0));
	WU_OK(fs, ref_umount(fs));
	/* the read path takes it degraded, and the data is all there */
	cr_assert_eq(ref_open(vol, &mo.open, &fs, err, sizeof(err)), 0, "%s", err);
	struct ref_ino ino;
	WU_OK(fs, ref_lookup_path(fs, "/f", false, &ino));
	uint8_t *got = malloc(100000);
	cr_expect_eq(ref_pread(fs, &ino, got, 100000, 0), 100000);
	cr_expect_eq(memcmp(got, d, 100000), 0);
	WU_OK(fs, ref_lookup_path(fs, "/g", false, &ino));
	cr_expect_eq(ref_pread(fs, &ino, got, 100000, 0), 5000);
	cr_expect_eq(memcmp(got, d, 5000), 0);
	ref_close(fs);
	free(got);
	free(d);
	sim_volume_close(vol);
}

/* Hard links in one directory with long names: without the extref feature
 * the INODE_REF item fills and link fails with EMLINK (as the kernel's);
 * with it the names go on in INODE_EXTREF items.  Both images end clean after
 * every link is removed again. */
static unsigned link_until_full(const char *opts, unsigned max, int *err)
{
	char src[600], img[600];
	snprintf(src, sizeof(src), "%s/src", dir);
	iu_sh("rm -rf %s %s/fs.img && mkdir -p %s/d && echo x >%s/d/f", src, dir, src, src);
	snprintf(img, sizeof(img), "%s/fs.img", dir);
	iu_mkfs(dir, img, 200, opts);
	const char *imgs[] = { img };
	sim_volume *vol = open_imgs(imgs, 1, false);
	ref_fs *fs = mount_img(vol);
	char name[300];
	unsigned n = 0;
	*err = 0;
	while (n < max) {
		int len = snprintf(name, sizeof(name), "/d/%04u", n);
		memset(name + len, 'l', 200);
		name[len + 200] = '\0';
		int r = ref_link(fs, "/d/f", name);
		if (r) {
			*err = r;
			break;
		}
		n++;
	}
	struct ref_stat st;
	WU_OK(fs, ref_stat_path(fs, "/d/f", false, &st));
	cr_expect_eq(st.nlink, n + 1);
	WU_OK(fs, ref_sync(fs));
	for (unsigned i = 0; i < n; i++) {
		int len = snprintf(name, sizeof(name), "/d/%04u", i);
		memset(name + len, 'l', 200);
		name[len + 200] = '\0';
		WU_OK(fs, ref_unlink(fs, name));
	}
	WU_OK(fs, ref_stat_path(fs, "/d/f", false, &st));
	cr_expect_eq(st.nlink, 1);
	cr_assert_eq(ref_umount(fs), 0);
	sim_volume_close(vol);
	iu_expect_clean(img);
	cr_expect_eq(iu_btrfs_check(img, NULL, NULL) > 0, false, "btrfs check passes");
	return n;
}

Test(cov_img, links_without_and_with_extref)
{
	iu_require_mkfs();
	int err;
	unsigned n = link_until_full("-n 4096 -O ^extref", 200, &err);
	cr_expect_eq(err, -EMLINK, "without extref: %u links, then %d", n, err);
	cr_expect(n > 5 && n < 40, "%u links fit in one INODE_REF item", n);
	unsigned m = link_until_full("-n 4096", 60, &err);
	cr_expect_eq(err, 0);
	cr_expect_eq(m, 60, "with extref the links go on");
}
