/*
 * bench_meta.c - the metadata figure of bench/bench_mount.sh: N empty files
 * created in directories of 1000 (open O_CREAT|O_EXCL, close), each stat'ed,
 * each unlinked, the directories removed; the seconds of each phase on one
 * line: "create S stat S delete S".  The same program on every target, so
 * that only the file system differs.  Usage: bench-meta DIR N
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void path(char *buf, size_t len, const char *dir, long i)
{
	snprintf(buf, len, "%s/d%ld/f%ld", dir, i / 1000, i);
}

int main(int argc, char **argv)
{
	if (argc != 3 || atol(argv[2]) <= 0) {
		fprintf(stderr, "usage: bench-meta DIR N\n");
		return 2;
	}
	const char *dir = argv[1];
	long n = atol(argv[2]);
	char p[4096];
	double t0 = now();
	for (long i = 0; i < n; i++) {
		if (i % 1000 == 0) {
			snprintf(p, sizeof(p), "%s/d%ld", dir, i / 1000);
			if (mkdir(p, 0755)) {
				fprintf(stderr, "bench-meta: mkdir %s: %s\n", p, strerror(errno));
				return 1;
			}
		}
		path(p, sizeof(p), dir, i);
		int fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0 || close(fd)) {
			fprintf(stderr, "bench-meta: create %s: %s\n", p, strerror(errno));
			return 1;
		}
	}
	double t1 = now();
	struct stat st;
	for (long i = 0; i < n; i++) {
		path(p, sizeof(p), dir, i);
		if (stat(p, &st)) {
			fprintf(stderr, "bench-meta: stat %s: %s\n", p, strerror(errno));
			return 1;
		}
	}
	double t2 = now();
	for (long i = 0; i < n; i++) {
		path(p, sizeof(p), dir, i);
		if (unlink(p)) {
			fprintf(stderr, "bench-meta: unlink %s: %s\n", p, strerror(errno));
			return 1;
		}
		if (i % 1000 == 999 || i == n - 1) {
			snprintf(p, sizeof(p), "%s/d%ld", dir, i / 1000);
			if (rmdir(p)) {
				fprintf(stderr, "bench-meta: rmdir %s: %s\n", p, strerror(errno));
				return 1;
			}
		}
	}
	double t3 = now();
	printf("create %.3f stat %.3f delete %.3f\n", t1 - t0, t2 - t1, t3 - t2);
	return 0;
}
