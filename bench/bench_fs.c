/*
 * bench_fs.c - figures of the write path, each beside its baseline measured
 * in the same run:
 *   bench-fs write [MIB]          sequential write of MIB (default 1024) MiB into one
 *                                 file on a memory-backed disk, 1 MiB per call, committed;
 *                                 baseline: memcpy plus crc32c of the same bytes
 *   bench-fs meta-ref N D         N empty files in D directories created, stat'ed and
 *                                 deleted on ref (memory-backed disk), with peak RSS
 *   bench-fs meta-host DIR N D    the same through the system calls in DIR
 *                                 (bench_fs.sh mounts the kernel's btrfs there)
 * Times are the best of 3 (write) or one run (metadata, whose baseline runs
 * beside it in bench_fs.sh).  Ratios go to stdout; nothing is asserted.
 */
#include "ref/csum.h"
#include "bench/benchutil.h"
#include "ref/vfs.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void write_file(ref_fs *fs, const char *path, uint64_t mib, const uint8_t *buf)
{
	if (ref_create(fs, path, 0644))
		bench_die("create", ref_error(fs));
	for (uint64_t i = 0; i < mib; i++)
		if (ref_write(fs, path, buf, MIB, i * MIB) < 0)
			bench_die("write", ref_error(fs));
}

/* Seconds to write and commit the file.  Warm: the disk's memory was
 * written once before (a file written and deleted), so the host's page
 * faults for fresh memory are not counted, as they are not in the bound. */
static double ref_write_run(uint64_t mib, const uint8_t *buf, bool warm)
{
	sim_volume *vol;
	ref_fs *fs = bench_fresh(&vol, (mib + mib / 2 + 512) * MIB, 0);
	if (warm) {
		write_file(fs, "/warmup", mib, buf);
		if (ref_unlink(fs, "/warmup") || ref_sync(fs))
			bench_die("warm-up", ref_error(fs));
	}
	double t0 = bench_now();
	write_file(fs, "/f", mib, buf);
	if (ref_umount(fs))
		bench_die("commit", "failed");
	double t = bench_now() - t0;
	sim_volume_close(vol);
	return t;
}

/* The bound: the bytes copied once into memory the size of the file (touched
 * beforehand, so page faults are not counted) and checksummed per sector. */
static double bound_run(uint64_t mib, const uint8_t *buf)
{
	uint8_t *dst = malloc(mib * MIB);
	if (!dst)
		bench_die("memory", strerror(ENOMEM));
	memset(dst, 1, mib * MIB);
	double t0 = bench_now();
	uint32_t acc = 0;
	for (uint64_t i = 0; i < mib; i++) {
		memcpy(dst + i * MIB, buf, MIB);
		for (uint64_t s = 0; s < MIB; s += 4096)
			acc ^= ref_crc32c_raw(~0u, dst + i * MIB + s, 4096);
	}
	double t = bench_now() - t0;
	free(dst);
	if (acc == 0x12345678)
		fprintf(stderr, "(unlikely)\n"); /* keeps the work */
	return t;
}

static int bench_write(uint64_t mib)
{
	uint8_t *buf = malloc(MIB);
	if (!buf)
		bench_die("memory", strerror(ENOMEM));
	for (size_t i = 0; i < MIB; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	double best_cold = 1e30, best_warm = 1e30, best_bound = 1e30;
	for (int round = 0; round < 3; round++) {
		double b = bound_run(mib, buf), c = ref_write_run(mib, buf, false),
		       w = ref_write_run(mib, buf, true);
		best_bound = b < best_bound ? b : best_bound;
		best_cold = c < best_cold ? c : best_cold;
		best_warm = w < best_warm ? w : best_warm;
	}
	double bound = (double)mib / best_bound, cold = (double)mib / best_cold,
	       warm = (double)mib / best_warm;
	printf("seq-write %llu MiB: memcpy+crc32c %.0f MiB/s; ref warm %.0f MiB/s (ratio %.2f, goal >= "
	       "0.50), ref cold %.0f MiB/s (ratio %.2f, with the host's page faults for new disk "
	       "memory)\n",
	       (unsigned long long)mib, bound, warm, warm / bound, cold, cold / bound);
	free(buf);
	return 0;
}

/* The three phases on either target, through function pointers. */
struct meta_ops {
	void *ctx;
	int (*mkdir)(void *ctx, const char *path);
	int (*create)(void *ctx, const char *path);
	int (*stat)(void *ctx, const char *path);
	int (*unlink)(void *ctx, const char *path);
	int (*rmdir)(void *ctx, const char *path);
	int (*sync)(void *ctx);
};

static void meta_run(const char *who, const struct meta_ops *o, unsigned n, unsigned dirs)
{
	char p[256];
	double t[3];
	double t0 = bench_now();
	for (unsigned d = 0; d < dirs; d++) {
		snprintf(p, sizeof(p), "/d%u", d);
		if (o->mkdir(o->ctx, p))
			bench_die(who, "mkdir failed");
	}
	for (unsigned i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "/d%u/f%u", i % dirs, i);
		if (o->create(o->ctx, p))
			bench_die(who, "create failed");
	}
	o->sync(o->ctx);
	t[0] = bench_now() - t0;
	t0 = bench_now();
	for (unsigned i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "/d%u/f%u", i % dirs, i);
		if (o->stat(o->ctx, p))
			bench_die(who, "stat failed");
	}
	t[1] = bench_now() - t0;
	t0 = bench_now();
	for (unsigned i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "/d%u/f%u", i % dirs, i);
		if (o->unlink(o->ctx, p))
			bench_die(who, "unlink failed");
	}
	for (unsigned d = 0; d < dirs; d++) {
		snprintf(p, sizeof(p), "/d%u", d);
		if (o->rmdir(o->ctx, p))
			bench_die(who, "rmdir failed");
	}
	o->sync(o->ctx);
	t[2] = bench_now() - t0;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	/* One line the script parses: who, seconds per phase, peak RSS in KiB. */
	printf("%s create %.3f stat %.3f delete %.3f maxrss_kib %ld\n", who, t[0], t[1], t[2],
	       ru.ru_maxrss);
}

static int r_mkdir(void *c, const char *p) { return ref_mkdir(c, p, 0755); }
static int r_create(void *c, const char *p) { return ref_create(c, p, 0644); }
static int r_stat(void *c, const char *p)
{
	struct ref_stat st;
	return ref_stat_path(c, p, false, &st);
}
static int r_unlink(void *c, const char *p) { return ref_unlink(c, p); }
static int r_rmdir(void *c, const char *p) { return ref_rmdir(c, p); }
static int r_sync(void *c) { return ref_sync(c); }

static char host_buf[4096];
static const char *hp(void *root, const char *p)
{
	snprintf(host_buf, sizeof(host_buf), "%s%s", (const char *)root, p);
	return host_buf;
}
static int h_mkdir(void *c, const char *p) { return mkdir(hp(c, p), 0755); }
static int h_create(void *c, const char *p)
{
	int fd = open(hp(c, p), O_CREAT | O_EXCL | O_WRONLY, 0644);
	return fd < 0 ? -1 : close(fd);
}
static int h_stat(void *c, const char *p)
{
	struct stat st;
	return lstat(hp(c, p), &st);
}
static int h_unlink(void *c, const char *p) { return unlink(hp(c, p)); }
static int h_rmdir(void *c, const char *p) { return rmdir(hp(c, p)); }
static int h_sync(void *c)
{
	int fd = open(c, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -1;
	int r = syncfs(fd);
	close(fd);
	return r;
}

int main(int argc, char **argv)
{
	bench_prog = "bench-fs";
	if (argc >= 2 && !strcmp(argv[1], "write"))
		return bench_write(argc > 2 ? strtoull(argv[2], NULL, 0) : 1024);
	if (argc == 4 && !strcmp(argv[1], "meta-ref")) {
		sim_volume *vol;
		ref_fs *fs = bench_fresh(&vol, UINT64_C(4) << 30, 0);
		struct meta_ops o = { fs, r_mkdir, r_create, r_stat, r_unlink, r_rmdir, r_sync };
		meta_run("ref", &o, (unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
		ref_umount(fs);
		sim_volume_close(vol);
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "meta-host")) {
		struct meta_ops o = { argv[2], h_mkdir, h_create, h_stat, h_unlink, h_rmdir, h_sync };
		meta_run("kernel", &o, (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]));
		return 0;
	}
	fprintf(stderr, "usage: bench-fs write [MIB] | meta-ref N DIRS | meta-host DIR N DIRS\n");
	return 2;
}
