/*
 * bench_log.c - the figures of issue 19, the fsync log tree against a full
 * commit, side by side in the same run:
 *   bench-log fsync   a 4 KiB append then fsync of one file of a file system
 *                     of 10,000 files (in 100 directories, committed), 200
 *                     times: the bytes written to the disk and the time per
 *                     fsync, with the log (the default) and with -o notreelog
 *                     (each fsync a commit); goal: at least 5x fewer bytes.
 *   bench-log fsync-host DIR STAT [notreelog]
 *                     the same calls through the system calls on the
 *                     kernel's btrfs mounted at DIR (bench_log.sh mounts it,
 *                     with and without -o notreelog); the bytes are the
 *                     device's written sectors read from STAT
 *                     (/sys/block/loopN/stat) before and after: the
 *                     kernel's own ratio, the yardstick for ref's.
 * Every 64th fsync the transaction is committed (ref_sync) in both runs, as
 * the kernel's commit interval would, so that the log does not grow without
 * bound; those commits are counted in both.  Nothing is asserted; the
 * figures go to stdout.
 */
#include "bench/benchutil.h"
#include "ref/vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { FILES = 10000, DIRS = 100, ROUNDS = 200, COMMIT_EVERY = 64 };

static void ok(ref_fs *fs, long r, const char *what)
{
	if (r < 0)
		bench_die(what, ref_error(fs));
}

static uint64_t written(sim_volume *vol)
{
	struct sim_disk_stats st;
	if (sim_disk_stats(vol, 0, &st))
		bench_die("stats", sim_volume_error(vol));
	return st.bytes_written;
}

struct fig {
	double seconds;   /* per fsync */
	double bytes;     /* written to the disk per fsync */
	uint64_t syncs, commits;
};

static struct fig run(bool treelog)
{
	sim_volume *vol;
	ref_fs *fs = bench_fresh(&vol, 1024 * MIB, 0);
	char path[64];
	for (unsigned d = 0; d < DIRS; d++) {
		snprintf(path, sizeof(path), "/d%u", d);
		ok(fs, ref_mkdir(fs, path, 0755), "mkdir");
	}
	for (unsigned i = 0; i < FILES; i++) {
		snprintf(path, sizeof(path), "/d%u/f%u", i % DIRS, i);
		ok(fs, ref_create(fs, path, 0644), "create");
		ok(fs, ref_write(fs, path, "x", 1, 0), "write");
	}
	ok(fs, ref_umount(fs), "umount");
	struct ref_mount_opts mo = { .open = { .super_mirror = -1 }, .notreelog = !treelog };
	char err[256];
	if (ref_mount(vol, &mo, &fs, err, sizeof(err)))
		bench_die("mount", err);
	static uint8_t block[4096];
	memset(block, 'a', sizeof(block));
	const char *f = "/d7/f4207";
	uint64_t off = 1, w0 = written(vol);
	double t0 = bench_now();
	for (unsigned k = 0; k < ROUNDS; k++) {
		ok(fs, ref_write(fs, f, block, sizeof(block), off), "append");
		off += sizeof(block);
		ok(fs, ref_fsync(fs, f), "fsync");
		if ((k + 1) % COMMIT_EVERY == 0)
			ok(fs, ref_sync(fs), "commit");
	}
	struct fig g;
	g.seconds = (bench_now() - t0) / ROUNDS;
	g.bytes = (double)(written(vol) - w0) / ROUNDS;
	struct ref_log_stats ls;
	ref_log_stats(fs, &ls);
	g.syncs = ls.log_syncs;
	g.commits = ref_commits(fs);
	ok(fs, ref_umount(fs), "umount");
	sim_volume_close(vol);
	return g;
}

static void host_ok(int r, const char *what)
{
	if (r < 0)
		bench_die(what, strerror(errno));
}

/* Bytes written to the block device whose /sys/block/NAME/stat is `stat`. */
static uint64_t host_written(const char *stat)
{
	FILE *f = fopen(stat, "r");
	unsigned long long v[7];
	if (!f)
		bench_die(stat, strerror(errno));
	int n = fscanf(f, "%llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
		       &v[5], &v[6]);
	fclose(f);
	if (n != 7)
		bench_die(stat, "not a block device's stat file");
	return v[6] * 512; /* field 7: sectors written, in 512-byte units */
}

/* run() on the kernel's file system mounted at dir. */
static struct fig run_host(const char *dir, const char *stat)
{
	char path[4096];
	for (unsigned d = 0; d < DIRS; d++) {
		snprintf(path, sizeof(path), "%s/d%u", dir, d);
		host_ok(mkdir(path, 0755), path);
	}
	for (unsigned i = 0; i < FILES; i++) {
		snprintf(path, sizeof(path), "%s/d%u/f%u", dir, i % DIRS, i);
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		host_ok(fd, path);
		host_ok((int)write(fd, "x", 1), "write");
		host_ok(close(fd), "close");
	}
	snprintf(path, sizeof(path), "%s/d7/f4207", dir);
	int fd = open(path, O_WRONLY);
	host_ok(fd, path);
	host_ok(syncfs(fd), "syncfs");
	static uint8_t block[4096];
	memset(block, 'a', sizeof(block));
	uint64_t off = 1, w0 = host_written(stat);
	double t0 = bench_now();
	for (unsigned k = 0; k < ROUNDS; k++) {
		host_ok((int)pwrite(fd, block, sizeof(block), (off_t)off), "append");
		off += sizeof(block);
		host_ok(fsync(fd), "fsync");
		if ((k + 1) % COMMIT_EVERY == 0)
			host_ok(syncfs(fd), "commit");
	}
	struct fig g = { 0 };
	g.seconds = (bench_now() - t0) / ROUNDS;
	g.bytes = (double)(host_written(stat) - w0) / ROUNDS;
	close(fd);
	return g;
}

int main(int argc, char **argv)
{
	bench_prog = "bench-log";
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "fsync-host")) {
		bool notreelog = argc == 5 && !strcmp(argv[4], "notreelog");
		if (argc == 5 && !notreelog) {
			fprintf(stderr, "bench-log fsync-host: the fourth argument is notreelog or nothing\n");
			return 2;
		}
		struct fig g = run_host(argv[2], argv[3]);
		printf("  kernel, %s %8.0f bytes written per fsync, %7.1f us per fsync\n",
		       notreelog ? "full commit:" : "log tree:   ", g.bytes, g.seconds * 1e6);
		return 0;
	}
	if (argc != 2 || strcmp(argv[1], "fsync")) {
		fprintf(stderr, "usage: bench-log fsync | fsync-host DIR STAT [notreelog]\n");
		return 2;
	}
	struct fig log = run(true), full = run(false);
	printf("bench-log fsync: a 4 KiB append + fsync in a file system of %u files, %u times\n",
	       FILES, ROUNDS);
	printf("  log tree:      %8.0f bytes written per fsync, %7.1f us per fsync (%llu log syncs, %llu commits)\n",
	       log.bytes, log.seconds * 1e6, (unsigned long long)log.syncs,
	       (unsigned long long)log.commits);
	printf("  full commit:   %8.0f bytes written per fsync, %7.1f us per fsync (%llu commits)\n",
	       full.bytes, full.seconds * 1e6, (unsigned long long)full.commits);
	printf("  ratio: %.1fx fewer bytes, %.1fx the speed with the log (goal: at least 5x fewer bytes)\n",
	       full.bytes / log.bytes, full.seconds / log.seconds);
	return 0;
}
