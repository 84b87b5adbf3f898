/* iolog.c - the IO log: every request, fault and crash, in order. */
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (UINT64_C(16) << 20)

static uint8_t *payload_alloc(sim_volume *vol, size_t len)
{
	for (; vol->chunk_cur < vol->nchunks; vol->chunk_cur++) {
		struct payload_chunk *c = vol->chunks[vol->chunk_cur];
		if (c->cap - c->used >= len) {
			uint8_t *p = c->data + c->used;
			c->used += (len + 15) & ~(size_t)15;
			if (c->used > c->cap)
				c->used = c->cap;
			return p;
		}
	}
	if (sim_grow(&vol->chunks, &vol->chunks_cap, vol->nchunks + 1, sizeof(*vol->chunks)))
		return NULL;
	size_t cap = len > CHUNK_BYTES ? len : CHUNK_BYTES;
	struct payload_chunk *c = malloc(sizeof(*c) + cap);
	if (!c)
		return NULL;
	c->cap = cap;
	c->used = 0;
	vol->chunks[vol->nchunks++] = c;
	return payload_alloc(vol, len);
}

int log_append(sim_volume *vol, struct sim_io *io, const void *payload, size_t len)
{
	if (vol->nolog) {
		io->payload = NULL;
		return 0;
	}
	if (sim_grow(&vol->log, &vol->log_cap, vol->nlog + 1, sizeof(*vol->log)))
		return sim_fail(vol, ENOMEM, "out of memory for the IO log");
	io->payload = NULL;
	if (vol->recording && payload && len && (io->kind == SIM_IO_WRITE ||
						 io->kind == SIM_IO_WRITE_FUA)) {
		uint8_t *copy = payload_alloc(vol, len);
		if (!copy)
			return sim_fail(vol, ENOMEM, "out of memory recording a payload");
		memcpy(copy, payload, len);
		io->payload = copy;
	}
	vol->log[vol->nlog++] = *io;
	if (vol->sink)
		vol->sink(vol->sink_ctx, io);
	return 0;
}

void sim_volume_log_clear(sim_volume *vol)
{
	for (size_t i = 0; i < vol->nchunks; i++)
		vol->chunks[i]->used = 0;
	vol->chunk_cur = 0;
	vol->nlog = 0;
}

void log_free(sim_volume *vol)
{
	for (size_t i = 0; i < vol->nchunks; i++)
		free(vol->chunks[i]);
	free(vol->chunks);
	vol->chunks = NULL;
	vol->nchunks = vol->chunks_cap = vol->chunk_cur = 0;
	vol->nlog = 0;
	free(vol->log);
	vol->log = NULL;
	vol->log_cap = 0;
}

const struct sim_io *sim_volume_log(const sim_volume *vol, size_t *n)
{
	*n = vol->nlog;
	return vol->log;
}

void sim_volume_set_recording(sim_volume *vol, bool on)
{
	vol->recording = on;
}

void sim_volume_set_log(sim_volume *vol, bool on)
{
	vol->nolog = !on;
}

void sim_volume_set_log_sink(sim_volume *vol, sim_log_sink sink, void *ctx)
{
	vol->sink = sink;
	vol->sink_ctx = ctx;
}

const char *sim_io_kind_name(enum sim_io_kind kind)
{
	static const char *const names[SIM_IO_KIND_COUNT] = {
		[SIM_IO_READ] = "read",   [SIM_IO_WRITE] = "write",     [SIM_IO_WRITE_FUA] = "write-fua",
		[SIM_IO_FLUSH] = "flush", [SIM_IO_DISCARD] = "discard", [SIM_IO_FAULT] = "fault",
		[SIM_IO_CRASH] = "crash", [SIM_IO_REPLACE] = "replace",
	};
	return (unsigned)kind < SIM_IO_KIND_COUNT ? names[kind] : "?";
}

int sim_io_format(const struct sim_io *io, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%8" PRIu64 " d%-2u %-9s %10" PRIu64 "+%-5u e%-4" PRIu64
			 " %-4d %016" PRIx64,
			 io->seq, io->disk, sim_io_kind_name((enum sim_io_kind)io->kind), io->sector,
			 io->nsectors, io->epoch, io->status, io->csum);
	if (io->fault && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " %s:%" PRIu64,
			      sim_fault_kind_name((enum sim_fault_kind)io->fault), io->fault_arg);
	return n;
}
