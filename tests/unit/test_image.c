/*
 * test_image.c - file-backed disks (sparse image files), saving a disk's
 * durable media as an image, read-only images, clones of file-backed disks,
 * comparing and hashing durable media.
 */
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SS 4096u

static char *dir;

static void setup(void)
{
	dir = tu_tmpdir();
}

static void teardown(void)
{
	tu_rmdir(dir);
	dir = NULL;
}

TestSuite(image, .init = setup, .fini = teardown);

static sim_volume *open_image_ok(const char *path, uint64_t size, uint32_t ss, bool create,
				 bool ro)
{
	char err[256] = "";
	sim_volume *vol = NULL;
	int r = tu_open_image(path, size, ss, create, ro, &vol, err, sizeof(err));
	cr_assert_eq(r, 0, "open %s: %d %s", path, r, err);
	return vol;
}

static struct stat stat_of(const char *path)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "stat %s", path);
	return st;
}

/* The file's bytes at off..off+len equal pattern tag. */
static bool file_is(const char *path, uint64_t off, size_t len, uint64_t tag)
{
	int fd = open(path, O_RDONLY);
	cr_assert(fd >= 0);
	uint8_t *got = malloc(len), *want = tu_pat(len, tag);
	cr_assert_eq(pread(fd, got, len, (off_t)off), (ssize_t)len);
	close(fd);
	bool eq = !memcmp(got, want, len);
	free(got);
	free(want);
	return eq;
}

Test(image, write_flush_close_reopen)
{
	char *path = tu_path(dir, "a.img");
	const uint64_t size = UINT64_C(64) << 20;
	sim_volume *vol = open_image_ok(path, size, SS, true, false);
	cr_assert_eq(sim_disk_size(vol, 0), size);
	cr_assert_eq(stat_of(path).st_size, (off_t)size, "the image is sized at once");
	tu_write_ok(vol, 0, 0, 2 * SS, 1, 0);
	tu_write_ok(vol, 0, size - SS, SS, 2, 0);
	tu_write_ok(vol, 0, 1000 * SS, SS, 3, SIM_FUA);
	cr_assert(file_is(path, 1000 * SS, SS, 3), "FUA reaches the file at once");
	cr_assert(file_is(path, 0, 2 * SS, 0), "volatile writes do not");
	cr_assert(tu_read_is(vol, 0, 0, 2 * SS, 1), "reads see the cache over the file");
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert(file_is(path, 0, 2 * SS, 1));
	cr_assert(file_is(path, size - SS, SS, 2));
	tu_write_ok(vol, 0, 500 * SS, SS, 4, 0); /* never flushed */
	sim_volume_close(vol);

	vol = open_image_ok(path, 0, SS, false, false);
	cr_assert_eq(sim_disk_size(vol, 0), size, "the size comes from the file");
	cr_assert(tu_read_is(vol, 0, 0, 2 * SS, 1));
	cr_assert(tu_read_is(vol, 0, size - SS, SS, 2));
	cr_assert(tu_read_is(vol, 0, 1000 * SS, SS, 3));
	cr_assert(tu_read_is(vol, 0, 500 * SS, SS, 0), "the unflushed write was lost");
	sim_volume_close(vol);
	free(path);
}

Test(image, a_large_image_stays_sparse)
{
	char *path = tu_path(dir, "big.img");
	const uint64_t size = UINT64_C(1) << 30;
	sim_volume *vol = open_image_ok(path, size, SS, true, false);
	for (unsigned i = 0; i < 4; i++)
		tu_write_ok(vol, 0, (uint64_t)i * (size / 4), 4 * SS, 10 + i, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	struct sim_disk_stats st;
	cr_assert_eq(sim_disk_stats(vol, 0, &st), 0);
	cr_assert(st.durable_bytes < (UINT64_C(4) << 20), "durable_bytes %llu",
		  (unsigned long long)st.durable_bytes);
	cr_assert(st.durable_bytes >= 16 * SS);
	sim_volume_close(vol);
	struct stat sb = stat_of(path);
	cr_assert_eq(sb.st_size, (off_t)size);
	cr_assert((uint64_t)sb.st_blocks * 512 < (UINT64_C(4) << 20), "%lld bytes allocated",
		  (long long)sb.st_blocks * 512);
	for (unsigned i = 0; i < 4; i++)
		cr_assert(file_is(path, (uint64_t)i * (size / 4), 4 * SS, 10 + i));
	free(path);
}

static void t_crash_of_a_file_backed_disk(void)
{
	char *path = tu_path(dir, "c.img");
	sim_volume *vol = open_image_ok(path, UINT64_C(8) << 20, 512, true, false);
	tu_write_ok(vol, 0, 0, 8 * 512, 1, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	tu_write_ok(vol, 0, 0, 8 * 512, 2, 0);
	tu_write_ok(vol, 0, 64 * 512, 512, 3, 0);
	size_t n;
	const struct sim_pending *p = sim_disk_pending(vol, 0, &n);
	cr_assert_eq(n, 2);
	struct sim_crash_pick pick = { .seq = p[0].seq, .first = 2, .count = 2 };
	struct sim_crash_spec spec = { .policy = SIM_CRASH_EXPLICIT, .picks = &pick, .npicks = 1 };
	cr_assert_eq(sim_disk_crash(vol, 0, &spec, NULL), 0);
	uint8_t *want = tu_pat(8 * 512, 1), *torn = tu_pat(8 * 512, 2);
	memcpy(want + 2 * 512, torn + 2 * 512, 2 * 512);
	uint8_t *got = tu_get(vol, 0, 0, 8 * 512);
	cr_assert_eq(memcmp(got, want, 8 * 512), 0);
	free(got);
	sim_volume_close(vol);
	int fd = open(path, O_RDONLY);
	got = malloc(8 * 512);
	cr_assert_eq(pread(fd, got, 8 * 512, 0), 8 * 512);
	close(fd);
	cr_assert_eq(memcmp(got, want, 8 * 512), 0, "the file holds the torn state");
	cr_assert(file_is(path, 64 * 512, 512, 0));
	free(got);
	free(want);
	free(torn);
	free(path);
}

Test(image, save_image_of_a_memory_disk)
{
	const uint64_t size = UINT64_C(64) << 20;
	sim_volume *vol = tu_open(2, size, SS, 3);
	tu_write_ok(vol, 0, 0, 3 * SS, 1, 0);
	tu_write_ok(vol, 0, 4000 * SS, SS, 2, 0);
	tu_write_ok(vol, 0, size - 2 * SS, 2 * SS, 3, SIM_FUA);
	cr_assert_eq(sim_flush(vol, 0), 0);
	tu_write_ok(vol, 0, 9000 * SS, SS, 4, 0); /* unflushed */
	tu_write_ok(vol, 0, 0, SS, 5, 0);         /* unflushed, over durable data */
	tu_write_ok(vol, 1, 0, SS, 6, SIM_FUA);   /* another disk */
	cr_assert_eq(sim_discard(vol, 0, SS, SS), 0);
	cr_assert_eq(sim_disk_flip_bit(vol, 0, 4000, 7), 0); /* bit rot is durable */

	char *path = tu_path(dir, "saved.img");
	cr_assert_eq(sim_disk_save_image(vol, 0, path), 0, "%s", sim_volume_error(vol));
	struct stat sb = stat_of(path);
	cr_assert_eq(sb.st_size, (off_t)size);
	cr_assert((uint64_t)sb.st_blocks * 512 < (UINT64_C(1) << 20), "sparse: %lld bytes",
		  (long long)sb.st_blocks * 512);

	/* Byte for byte the durable media, read back in 1 MiB pieces. */
	int fd = open(path, O_RDONLY);
	cr_assert(fd >= 0);
	const size_t chunk = 1 << 20;
	uint8_t *a = malloc(chunk), *b = malloc(chunk);
	for (uint64_t off = 0; off < size; off += chunk) {
		cr_assert_eq(pread(fd, a, chunk, (off_t)off), (ssize_t)chunk);
		cr_assert_eq(sim_read_durable(vol, 0, off, b, chunk), 0);
		cr_assert_eq(memcmp(a, b, chunk), 0, "at %llu", (unsigned long long)off);
	}
	close(fd);
	free(a);
	free(b);
	cr_assert(file_is(path, 0, 3 * SS, 1),
		  "the flushed data, not the later volatile write and discard");
	cr_assert(file_is(path, 9000 * SS, SS, 0), "the unflushed write is not in it");
	cr_assert(file_is(path, size - 2 * SS, 2 * SS, 3));

	/* Open the saved image: the same durable media, and the same hash. */
	sim_volume *img = open_image_ok(path, 0, SS, false, true);
	cr_assert_eq(sim_disk_durable_cmp(vol, 0, img, 0), 0);
	uint64_t h1, h2;
	cr_assert_eq(sim_disk_durable_hash(vol, 0, &h1), 0);
	cr_assert_eq(sim_disk_durable_hash(img, 0, &h2), 0);
	cr_assert_eq(h1, h2);
	cr_assert_eq(sim_disk_durable_cmp(vol, 1, img, 0), 1, "another disk differs");
	/* One flipped bit changes both the comparison and the hash; flipping it back
	 * restores them. */
	cr_assert_eq(sim_disk_flip_bit(vol, 0, 4000, 8), 0);
	cr_assert_eq(sim_disk_durable_cmp(vol, 0, img, 0), 1);
	cr_assert_eq(sim_disk_durable_hash(vol, 0, &h2), 0);
	cr_assert_neq(h1, h2);
	cr_assert_eq(sim_disk_flip_bit(vol, 0, 4000, 8), 0);
	cr_assert_eq(sim_disk_durable_cmp(vol, 0, img, 0), 0);
	cr_assert_eq(sim_disk_durable_hash(vol, 0, &h2), 0);
	cr_assert_eq(h1, h2);
	sim_volume_close(img);
	sim_volume_close(vol);
	free(path);
}

static void t_save_image_errors(void)
{
	sim_volume *vol = tu_open(1, UINT64_C(1) << 20, SS, 4);
	char *path = tu_path(dir, "no/such/dir.img");
	cr_assert_eq(sim_disk_save_image(vol, 0, path), -ENOENT);
	cr_assert_neq(sim_volume_error(vol)[0], '\0');
	cr_assert_eq(sim_disk_save_image(vol, 1, path), -EINVAL);
	free(path);
	sim_volume_close(vol);
}

Test(image, read_only_image)
{
	char *path = tu_path(dir, "ro.img");
	sim_volume *vol = open_image_ok(path, UINT64_C(4) << 20, SS, true, false);
	tu_write_ok(vol, 0, 2 * SS, SS, 1, SIM_FUA);
	sim_volume_close(vol);

	vol = open_image_ok(path, 0, SS, false, true);
	cr_assert(tu_read_is(vol, 0, 2 * SS, SS, 1));
	uint64_t next = sim_volume_next_seq(vol);
	cr_assert_eq(tu_write(vol, 0, 2 * SS, SS, 2, 0), -EROFS);
	cr_assert_neq(sim_volume_error(vol)[0], '\0');
	cr_assert_eq(tu_write(vol, 0, 2 * SS, SS, 2, SIM_FUA), -EROFS);
	cr_assert_eq(sim_discard(vol, 0, 2 * SS, SS), -EROFS);
	cr_assert_eq(sim_disk_flip_bit(vol, 0, 2, 0), -EROFS);
	cr_assert_eq(sim_disk_replace(vol, 0), -EROFS);
	cr_assert_eq(sim_volume_next_seq(vol), next, "rejected requests are not logged");
	cr_assert_eq(sim_flush(vol, 0), 0, "a flush of nothing is fine");
	cr_assert(tu_read_is(vol, 0, 2 * SS, SS, 1));
	sim_volume_close(vol);
	cr_assert(file_is(path, 2 * SS, SS, 1), "the file is unchanged");
	free(path);
}

Test(image, read_only_image_is_safe_from_scheduled_bit_rot)
{
	char *path = tu_path(dir, "ro2.img");
	sim_volume *vol = open_image_ok(path, UINT64_C(1) << 20, SS, true, false);
	tu_write_ok(vol, 0, 0, SS, 1, SIM_FUA);
	sim_volume_close(vol);
	vol = open_image_ok(path, 0, SS, false, true);
	struct sim_fault f = { .kind = SIM_FAULT_FLIP_AT_REST, .disk = SIM_ANY_DISK, .sector = 0,
			       .count = 1 };
	cr_assert_eq(sim_fault_add(vol, &f), 0);
	uint8_t buf[SS];
	int r = sim_read(vol, 0, 0, buf, SS);
	cr_assert_eq(r, 0, "a read of a read-only image must not fail: %d %s", r,
		     sim_volume_error(vol));
	sim_volume_close(vol);
	cr_assert(file_is(path, 0, SS, 1), "the read-only file is unchanged");
	free(path);
}

/* An overlay takes writes in memory over a file it never writes. */
Test(image, overlay_writes_land_in_memory_and_the_file_stays)
{
	char *path = tu_path(dir, "ov.img");
	sim_volume *vol = open_image_ok(path, UINT64_C(4) << 20, SS, true, false);
	for (int i = 0; i < 4; i++) /* sector by sector: each is tu_pat(SS, 1) */
		tu_write_ok(vol, 0, (uint64_t)i * SS, SS, 1, SIM_FUA);
	sim_volume_close(vol);
	struct stat before = stat_of(path);

	struct sim_volume_config cfg;
	sim_config_init(&cfg, 1, 0, 1);
	cfg.disk[0].image_path = path;
	cfg.disk[0].overlay = true;
	char err[256] = "";
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	tu_write_ok(vol, 0, SS, SS, 2, 0);           /* over the file's data */
	tu_write_ok(vol, 0, 100 * SS, SS, 3, SIM_FUA); /* over a hole */
	cr_assert(tu_read_is(vol, 0, 0, SS, 1));
	cr_assert(tu_read_is(vol, 0, SS, SS, 2));
	cr_assert(tu_durable_is(vol, 0, SS, SS, 1), "not flushed yet");
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert(tu_durable_is(vol, 0, SS, SS, 2), "flushed into the overlay");
	cr_assert(tu_durable_is(vol, 0, 2 * SS, SS, 1), "around it, the file");
	cr_assert(tu_durable_is(vol, 0, 3 * SS, SS, 1));
	cr_assert(tu_durable_is(vol, 0, 100 * SS, SS, 3));
	cr_assert_eq(sim_disk_replace(vol, 0), -EROFS);

	/* A clone carries the overlay with it. */
	sim_volume *c;
	cr_assert_eq(sim_volume_clone(vol, &c), 0, "%s", sim_volume_error(vol));
	cr_assert_eq(sim_disk_durable_cmp(vol, 0, c, 0), 0);
	cr_assert(tu_durable_is(c, 0, 100 * SS, SS, 3));
	sim_volume_close(c);
	sim_volume_close(vol);

	struct stat after = stat_of(path);
	for (int i = 0; i < 4; i++)
		cr_assert(file_is(path, (uint64_t)i * SS, SS, 1), "the file is unchanged");
	cr_assert(file_is(path, 100 * SS, SS, 0));
	cr_assert_eq(before.st_mtim.tv_sec, after.st_mtim.tv_sec);
	cr_assert_eq(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec, "never opened for writing");

	/* A read-only disk becomes an overlay on demand. */
	vol = open_image_ok(path, 0, SS, false, true);
	cr_assert(sim_disk_is_read_only(vol, 0));
	cr_assert_eq(tu_write(vol, 0, SS, SS, 7, 0), -EROFS);
	cr_assert_eq(sim_disk_overlay(vol, 0), 0);
	cr_assert(!sim_disk_is_read_only(vol, 0));
	tu_write_ok(vol, 0, SS, SS, 7, SIM_FUA);
	cr_assert(tu_read_is(vol, 0, SS, SS, 7));
	sim_volume_close(vol);
	cr_assert(file_is(path, SS, SS, 1), "the file is still unchanged");

	/* An overlay needs a file, and never creates one. */
	sim_config_init(&cfg, 1, UINT64_C(1) << 20, 1);
	cfg.disk[0].overlay = true;
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), -EINVAL);
	cfg.disk[0].image_path = path;
	cfg.disk[0].create = true;
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), -EINVAL);
	free(path);
}

Test(image, clone_of_a_file_backed_disk_is_memory_backed_and_independent)
{
	char *path = tu_path(dir, "cl.img");
	sim_volume *vol = open_image_ok(path, UINT64_C(16) << 20, SS, true, false);
	tu_write_ok(vol, 0, 0, 2 * SS, 1, 0);
	tu_write_ok(vol, 0, 3000 * SS, SS, 2, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	tu_write_ok(vol, 0, 10 * SS, SS, 3, 0); /* volatile */

	sim_volume *c;
	cr_assert_eq(sim_volume_clone(vol, &c), 0, "%s", sim_volume_error(vol));
	cr_assert(tu_read_is(c, 0, 0, 2 * SS, 1));
	cr_assert(tu_durable_is(c, 0, 3000 * SS, SS, 2));
	cr_assert(tu_read_is(c, 0, 10 * SS, SS, 3), "pending writes come along");
	cr_assert(tu_durable_is(c, 0, 10 * SS, SS, 0));
	cr_assert_eq(sim_disk_durable_cmp(vol, 0, c, 0), 0);
	uint64_t h1, h2;
	cr_assert_eq(sim_disk_durable_hash(vol, 0, &h1), 0);
	cr_assert_eq(sim_disk_durable_hash(c, 0, &h2), 0);
	cr_assert_eq(h1, h2, "the hash does not depend on the backing");

	/* The clone writes to memory, not to the file. */
	tu_write_ok(c, 0, 0, SS, 4, SIM_FUA);
	tu_write_ok(c, 0, 20 * SS, SS, 5, 0);
	cr_assert_eq(sim_flush(c, 0), 0);
	cr_assert(file_is(path, 0, 2 * SS, 1));
	cr_assert(file_is(path, 10 * SS, SS, 0));
	cr_assert(file_is(path, 20 * SS, SS, 0));
	cr_assert(tu_read_is(vol, 0, 0, 2 * SS, 1));
	struct sim_disk_stats st;
	cr_assert_eq(sim_disk_stats(c, 0, &st), 0);
	cr_assert_eq(st.durable_bytes, 5 * SS, "the clone's media is its own blocks");

	/* The origin's writes do not reach the clone. */
	tu_write_ok(vol, 0, 3000 * SS, SS, 6, SIM_FUA);
	struct sim_crash_spec all = { .policy = SIM_CRASH_ALL };
	cr_assert_eq(sim_disk_crash(vol, 0, &all, NULL), 0);
	cr_assert(file_is(path, 10 * SS, SS, 3));
	cr_assert(tu_read_is(c, 0, 3000 * SS, SS, 2));
	cr_assert_eq(sim_disk_durable_cmp(vol, 0, c, 0), 1);
	sim_volume_close(vol);
	cr_assert(tu_read_is(c, 0, 3000 * SS, SS, 2));
	sim_volume_close(c);
	free(path);
}

Test(image, create_truncates_and_a_smaller_file_grows)
{
	char *path = tu_path(dir, "t.img");
	sim_volume *vol = open_image_ok(path, UINT64_C(1) << 20, SS, true, false);
	tu_write_ok(vol, 0, 0, SS, 1, SIM_FUA);
	sim_volume_close(vol);
	/* Reopened larger without create: the data stays, the file grows. */
	vol = open_image_ok(path, UINT64_C(2) << 20, SS, false, false);
	cr_assert_eq(stat_of(path).st_size, (off_t)(UINT64_C(2) << 20));
	cr_assert(tu_read_is(vol, 0, 0, SS, 1));
	sim_volume_close(vol);
	/* With create: a blank image. */
	vol = open_image_ok(path, UINT64_C(1) << 20, SS, true, false);
	cr_assert(tu_read_is(vol, 0, 0, SS, 0));
	cr_assert_eq(stat_of(path).st_size, (off_t)(UINT64_C(1) << 20));
	sim_volume_close(vol);
	free(path);
}

static void t_bad_images_are_refused_and_left_alone(void)
{
	char err[256];
	sim_volume *vol;
	char *path = tu_path(dir, "e.img");
	vol = open_image_ok(path, UINT64_C(1) << 20, SS, true, false);
	tu_write_ok(vol, 0, 0, SS, 1, SIM_FUA);
	sim_volume_close(vol);

	/* Larger than the disk size asked for. */
	err[0] = '\0';
	cr_assert_eq(tu_open_image(path, UINT64_C(1) << 19, SS, false, false, &vol, err, sizeof(err)),
		     -EINVAL);
	cr_assert_null(vol);
	cr_assert_neq(err[0], '\0');
	/* A size that is not a multiple of the sector size must not resize the file. */
	err[0] = '\0';
	cr_assert_eq(tu_open_image(path, (UINT64_C(1) << 20) + 512, SS, false, false, &vol, err,
				sizeof(err)),
		     -EINVAL);
	cr_assert_neq(err[0], '\0');
	cr_assert_eq(stat_of(path).st_size, (off_t)(UINT64_C(1) << 20), "the image was resized");
	/* A read-only image smaller than the size asked for. */
	err[0] = '\0';
	cr_assert_eq(tu_open_image(path, UINT64_C(2) << 20, SS, false, true, &vol, err, sizeof(err)),
		     -EINVAL);
	cr_assert_neq(err[0], '\0');
	cr_assert_eq(stat_of(path).st_size, (off_t)(UINT64_C(1) << 20));
	cr_assert(file_is(path, 0, SS, 1));

	/* Size 0 and an empty or odd-sized file: nothing to take the size from. */
	char *empty = tu_path(dir, "empty.img");
	int fd = open(empty, O_CREAT | O_WRONLY, 0644);
	cr_assert(fd >= 0);
	cr_assert_eq(ftruncate(fd, 1000), 0);
	close(fd);
	err[0] = '\0';
	cr_assert_eq(tu_open_image(empty, 0, 512, false, false, &vol, err, sizeof(err)), -EINVAL);
	cr_assert_neq(err[0], '\0');
	free(empty);

	/* A missing read-only image. */
	char *missing = tu_path(dir, "missing.img");
	err[0] = '\0';
	cr_assert_eq(tu_open_image(missing, 0, SS, false, true, &vol, err, sizeof(err)), -ENOENT);
	cr_assert_neq(err[0], '\0');
	free(missing);
	free(path);
}

static void t_mixed_memory_and_file_disks(void)
{
	char *path = tu_path(dir, "m.img");
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 2, UINT64_C(4) << 20, 5);
	cfg.disk[1].image_path = path;
	cfg.disk[1].create = true;
	cfg.disk[1].sector_size = 512;
	char err[256] = "";
	sim_volume *vol;
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	for (unsigned d = 0; d < 2; d++) {
		tu_write_ok(vol, d, 0, 4096, 10 + d, 0);
		tu_write_ok(vol, d, 8192, 4096, 20 + d, 0);
	}
	struct sim_crash_spec spec = { .policy = SIM_CRASH_ALL };
	cr_assert_eq(sim_volume_crash(vol, &spec, NULL), 0);
	cr_assert(file_is(path, 0, 4096, 11));
	cr_assert(tu_durable_is(vol, 0, 0, 4096, 10));
	cr_assert_eq(sim_disk_durable_cmp(vol, 0, vol, 1), 1, "other sector size");
	sim_volume_close(vol);
	free(path);
}

Test(image, bad_images_and_save_errors)
{
	t_bad_images_are_refused_and_left_alone();
	t_save_image_errors();
}

Test(image, file_backed_crash_and_mixed_volume)
{
	t_crash_of_a_file_backed_disk();
	t_mixed_memory_and_file_disks();
}
