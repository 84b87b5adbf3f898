/*
 * bench_sim.c - `make bench`: sim/ write throughput against memcpy of the same
 * bytes, measured side by side in the same run.
 *
 * For 4 KiB and 1 MiB writes spread round-robin over 4 memory-backed disks
 * (each disk flushed every 64 MiB it receives, as a file system commits), it
 * reports MB/s of sim_write and of memcpy into a buffer of the same size, and
 * their ratio, with IO-log payload recording off and on.  The goal for
 * recording off is a ratio within 2x.  Each figure is the best of 5 rounds on
 * one volume, after two warm-up rounds (which fill the disks, so that the
 * rounds measured replace blocks as a long run does).  Each case runs in a
 * child process of its own: sim's sector blocks come from a per-thread pool,
 * and the order in which one case leaves it free would otherwise shape the
 * next case's memory layout (a long-lived process whose pool is scrambled by
 * mixed write sizes sees 1 MiB writes about 20% slower).
 */
#include "sim/sim.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NDISKS 4
#define DISK_SIZE (UINT64_C(256) << 20)
#define TOTAL (UINT64_C(512) << 20) /* bytes written per round */
#define FLUSH_EVERY (UINT64_C(64) << 20)
#define ROUNDS 5

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct sim_state {
	sim_volume *vol;
	uint64_t off[NDISKS], since_flush[NDISKS];
};

static void sim_setup(struct sim_state *st, bool recording)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, NDISKS, DISK_SIZE, 1);
	cfg.record_payloads = recording;
	char err[256];
	memset(st, 0, sizeof(*st));
	if (sim_volume_open(&cfg, &st->vol, err, sizeof(err))) {
		fprintf(stderr, "bench: %s\n", err);
		exit(1);
	}
}

/* Seconds for TOTAL bytes of `size`-byte writes through sim, round-robin over
 * the disks, each flushed every FLUSH_EVERY bytes. */
static double round_sim(struct sim_state *st, size_t size, const uint8_t *src)
{
	double t0 = now_s();
	for (uint64_t done = 0, i = 0; done < TOTAL; done += size, i++) {
		unsigned d = (unsigned)(i % NDISKS);
		if (sim_write(st->vol, d, st->off[d], src + st->off[d] % FLUSH_EVERY, size, 0)) {
			fprintf(stderr, "bench: %s\n", sim_volume_error(st->vol));
			exit(1);
		}
		st->off[d] = (st->off[d] + size) % DISK_SIZE;
		st->since_flush[d] += size;
		if (st->since_flush[d] >= FLUSH_EVERY) {
			sim_flush(st->vol, d);
			st->since_flush[d] = 0;
			sim_volume_log_clear(st->vol); /* as traces/ drains the log */
		}
	}
	return now_s() - t0;
}

/* Seconds for TOTAL bytes of `size`-byte memcpy into a DISK_SIZE buffer. */
static double round_memcpy(size_t size, const uint8_t *src, uint8_t *dst)
{
	uint64_t off = 0;
	double t0 = now_s();
	for (uint64_t done = 0; done < TOTAL; done += size) {
		memcpy(dst + off, src + off % FLUSH_EVERY, size);
		off = (off + size) % DISK_SIZE;
	}
	/* Keep the copies observable so they are not optimised away. */
	volatile uint8_t sink = dst[off % DISK_SIZE];
	(void)sink;
	return now_s() - t0;
}

int main(void)
{
	uint8_t *src = malloc(FLUSH_EVERY + (UINT64_C(1) << 20));
	uint8_t *dst = malloc(DISK_SIZE);
	if (!src || !dst)
		return 1;
	for (size_t i = 0; i < FLUSH_EVERY + (UINT64_C(1) << 20); i++)
		src[i] = (uint8_t)(i * 2654435761u >> 13);
	memset(dst, 1, DISK_SIZE);
	printf("bench-sim: %" PRIu64 " MiB of writes per round over %d memory disks, best of %d\n",
	       TOTAL >> 20, NDISKS, ROUNDS);
	printf("%-8s %-10s %12s %12s %8s\n", "write", "recording", "sim MB/s", "memcpy MB/s",
	       "ratio");
	static const size_t sizes[] = { 4096, 1 << 20 };
	for (unsigned si = 0; si < 2; si++) {
		for (int rec = 0; rec < 2; rec++) {
			/* Steady state for both: one volume, warmed by a first round
			 * (first-touch page faults), as the memcpy target is by memset. */
			fflush(stdout);
			pid_t pid = fork();
			if (pid < 0) {
				perror("bench: fork");
				return 1;
			}
			if (pid > 0) {
				int status;
				if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
				    WEXITSTATUS(status)) {
					fprintf(stderr, "bench: a case failed\n");
					return 1;
				}
				continue;
			}
			struct sim_state st;
			sim_setup(&st, rec);
			round_sim(&st, sizes[si], src);
			round_sim(&st, sizes[si], src);
			double best_sim = 1e9, best_mem = 1e9;
			for (int r = 0; r < ROUNDS; r++) {
				/* Alternate so both see the same machine state. */
				double m = round_memcpy(sizes[si], src, dst);
				double s = round_sim(&st, sizes[si], src);
				if (m < best_mem)
					best_mem = m;
				if (s < best_sim)
					best_sim = s;
			}
			sim_volume_close(st.vol);
			double mb = (double)TOTAL / 1e6;
			printf("%-8s %-10s %12.0f %12.0f %7.2fx\n",
			       sizes[si] == 4096 ? "4KiB" : "1MiB", rec ? "on" : "off", mb / best_sim,
			       mb / best_mem, best_sim / best_mem);
			fflush(stdout);
			_exit(0);
		}
	}
	printf("ratio = sim time / memcpy time for the same bytes; goal with recording off: <= 2x\n");
	free(src);
	free(dst);
	return 0;
}
