/*
 * test_iolog.c - the IO log: one entry per request with its fields, recorded
 * payloads, the sink, clearing, formatting, and the simulated clock.
 */
#include "testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define SS 4096u
#define DISK (UINT64_C(8) << 20)

Test(iolog, one_entry_per_request_with_its_fields)
{
	sim_volume *vol = tu_open(2, DISK, SS, 1);
	uint64_t s0 = sim_volume_next_seq(vol);
	uint8_t *w = tu_pat(2 * SS, 5);
	cr_assert_eq(sim_write(vol, 1, 6 * SS, w, 2 * SS, 0), 0);
	cr_assert_eq(sim_write(vol, 0, 0, w, SS, SIM_FUA), 0);
	uint8_t r[2 * SS];
	cr_assert_eq(sim_read(vol, 1, 6 * SS, r, 2 * SS), 0);
	cr_assert_eq(sim_discard(vol, 1, 0, SS), 0);
	cr_assert_eq(sim_flush(vol, 1), 0);
	cr_assert_eq(sim_read(vol, 1, 1, r, SS), -EINVAL); /* not a request: not logged */
	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	cr_assert_eq(n, 5);
	const uint8_t kind[] = { SIM_IO_WRITE, SIM_IO_WRITE_FUA, SIM_IO_READ, SIM_IO_DISCARD,
				 SIM_IO_FLUSH };
	const uint16_t disk[] = { 1, 0, 1, 1, 1 };
	const uint64_t sector[] = { 6, 0, 6, 0, 0 };
	const uint32_t nsec[] = { 2, 1, 2, 1, 0 };
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(log[i].seq, s0 + i);
		cr_assert_eq(log[i].kind, kind[i], "entry %zu", i);
		cr_assert_eq(log[i].disk, disk[i], "entry %zu", i);
		cr_assert_eq(log[i].sector, sector[i], "entry %zu", i);
		cr_assert_eq(log[i].nsectors, nsec[i], "entry %zu", i);
		cr_assert_eq(log[i].status, 0);
		cr_assert_eq(log[i].fault, SIM_FAULT_NONE);
		cr_assert_null(log[i].payload, "not recording");
	}
	cr_assert_eq(log[0].csum, XXH3_64bits(w, 2 * SS), "a write's csum is its payload's");
	cr_assert_eq(log[1].csum, XXH3_64bits(w, SS));
	cr_assert_eq(log[2].csum, XXH3_64bits(w, 2 * SS), "a read's csum is the data read");
	cr_assert_eq(sim_volume_next_seq(vol), s0 + 5);
	free(w);
	sim_volume_close(vol);
}

static void t_recording_and_clear(void)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 1, DISK, 2);
	cfg.record_payloads = true;
	sim_volume *vol;
	char err[256] = "";
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	tu_write_ok(vol, 0, 0, SS, 1, 0);
	uint8_t *big = tu_pat(3 * SS, 2);
	cr_assert_eq(sim_write(vol, 0, SS, big, 3 * SS, SIM_FUA), 0);
	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	cr_assert_eq(n, 2);
	cr_assert_not_null(log[0].payload);
	uint8_t *w1 = tu_pat(SS, 1);
	cr_assert_eq(memcmp(log[0].payload, w1, SS), 0);
	cr_assert_eq(memcmp(log[1].payload, big, 3 * SS), 0);
	big[0] ^= 1; /* the log holds a copy */
	cr_assert_neq(memcmp(log[1].payload, big, 3 * SS), 0);

	sim_volume_log_clear(vol);
	sim_volume_log(vol, &n);
	cr_assert_eq(n, 0);
	uint64_t next = sim_volume_next_seq(vol);
	cr_assert_eq(next, 3, "clearing the log does not reset sequence numbers");

	sim_volume_set_recording(vol, false);
	tu_write_ok(vol, 0, 0, SS, 3, 0);
	log = sim_volume_log(vol, &n);
	cr_assert_eq(n, 1);
	cr_assert_null(log[0].payload, "recording is off");
	cr_assert_eq(log[0].seq, next);
	free(big);
	free(w1);
	sim_volume_close(vol);
}

struct seen {
	size_t n;
	uint64_t seq[16];
	uint8_t kind[16];
	const void *ctx;
};

static void sink(void *ctx, const struct sim_io *io)
{
	struct seen *s = ctx;
	s->ctx = ctx;
	if (s->n < 16) {
		s->seq[s->n] = io->seq;
		s->kind[s->n] = io->kind;
	}
	s->n++;
}

static void t_sink_sees_every_entry(void)
{
	sim_volume *vol = tu_open(1, DISK, SS, 3);
	struct seen s = { 0 };
	sim_volume_set_log_sink(vol, sink, &s);
	tu_write_ok(vol, 0, 0, SS, 1, 0);
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert_eq(sim_disk_add_latent(vol, 0, 9, 1), 0);
	struct sim_crash_spec none = { .policy = SIM_CRASH_NONE };
	cr_assert_eq(sim_disk_crash(vol, 0, &none, NULL), 0);
	cr_assert_eq(sim_disk_replace(vol, 0), 0);
	cr_assert_eq(s.n, 5);
	cr_assert_eq(s.ctx, &s);
	const uint8_t kind[] = { SIM_IO_WRITE, SIM_IO_FLUSH, SIM_IO_FAULT, SIM_IO_CRASH,
				 SIM_IO_REPLACE };
	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	cr_assert_eq(n, 5);
	for (size_t i = 0; i < 5; i++) {
		cr_assert_eq(s.kind[i], kind[i], "entry %zu", i);
		cr_assert_eq(s.seq[i], log[i].seq);
	}
	sim_volume_set_log_sink(vol, NULL, NULL);
	cr_assert_eq(sim_flush(vol, 0), 0);
	cr_assert_eq(s.n, 5, "no sink, no calls");
	sim_volume_close(vol);
}

Test(iolog, format_and_names)
{
	struct sim_io io = { .seq = 17, .epoch = 3, .sector = 1234, .csum = 0xabcdef,
			     .nsectors = 8, .disk = 2, .kind = SIM_IO_WRITE_FUA,
			     .fault = SIM_FAULT_MISDIRECT, .fault_arg = 99, .status = 0 };
	char line[256];
	int len = sim_io_format(&io, line, sizeof(line));
	cr_assert_eq(len, (int)strlen(line));
	cr_assert(strstr(line, "17"), "%s", line);
	cr_assert(strstr(line, "d2"), "%s", line);
	cr_assert(strstr(line, "write-fua"), "%s", line);
	cr_assert(strstr(line, "1234+8"), "%s", line);
	cr_assert(strstr(line, "e3"), "%s", line);
	cr_assert(strstr(line, "0000000000abcdef"), "%s", line);
	cr_assert(strstr(line, "misdirect:99"), "%s", line);
	io.fault = SIM_FAULT_NONE;
	sim_io_format(&io, line, sizeof(line));
	cr_assert_null(strstr(line, "misdirect"), "%s", line);
	/* A short buffer truncates; the full length is returned. */
	char tiny[8];
	int full = sim_io_format(&io, tiny, sizeof(tiny));
	cr_assert(full > 8);
	cr_assert_eq(strlen(tiny), 7);
	cr_assert_str_eq(sim_io_kind_name(SIM_IO_CRASH), "crash");
	cr_assert_str_eq(sim_io_kind_name(SIM_IO_READ), "read");
	cr_assert_str_eq(sim_io_kind_name((enum sim_io_kind)200), "?");
}

Test(iolog, clock_follows_the_latency_model)
{
	struct sim_volume_config cfg;
	sim_config_init(&cfg, 1, DISK, 4);
	cfg.latency = (struct sim_latency){ .per_request_ns = 1000, .per_byte_ps = 500,
					    .per_flush_ns = 100000 };
	sim_volume *vol;
	char err[256] = "";
	cr_assert_eq(sim_volume_open(&cfg, &vol, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(sim_volume_sim_time_ns(vol), 0);
	tu_write_ok(vol, 0, 0, 2 * SS, 1, 0);
	uint64_t t = 1000 + 2 * SS * 500 / 1000;
	cr_assert_eq(sim_volume_sim_time_ns(vol), t);
	cr_assert_eq(sim_flush(vol, 0), 0);
	t += 1000 + 100000;
	cr_assert_eq(sim_volume_sim_time_ns(vol), t);
	uint8_t buf[SS];
	cr_assert_eq(sim_read(vol, 0, 0, buf, SS), 0);
	t += 1000 + SS * 500 / 1000;
	cr_assert_eq(sim_volume_sim_time_ns(vol), t);
	size_t n;
	const struct sim_io *log = sim_volume_log(vol, &n);
	cr_assert_eq(log[n - 1].sim_time_ns, t, "entries carry the completion time");
	/* A failed request costs the request time only. */
	cr_assert_eq(sim_disk_lose(vol, 0), 0);
	cr_assert_eq(sim_read(vol, 0, 0, buf, SS), -EIO);
	cr_assert_eq(sim_volume_sim_time_ns(vol), t + 1000);
	sim_volume_close(vol);
}

Test(iolog, recording_clear_and_sink)
{
	t_recording_and_clear();
	t_sink_sees_every_entry();
}
