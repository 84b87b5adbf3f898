/*
 * internal.h - the state behind sim.h, shared by the files of sim/ only.
 *
 * A disk's content is two layers: `media` (durable: a block map, or an image
 * file when fd >= 0) and `cache` (the volatile blocks written since the last
 * flush, over the media).  Every volatile write is also kept, with references
 * to its blocks, in `pend` in submission order: that is what a crash picks from.
 */
#ifndef BTRSIM_SIM_INTERNAL_H
#define BTRSIM_SIM_INTERNAL_H

#include "blockmap.h"
#include "rng.h"
#include "sim.h"

#include <stdarg.h>

/* A volatile write's blocks; a NULL entry is a sector that a later FUA write
 * made durable with newer data, so a crash must not bring this one back. */
struct pend_blocks {
	struct sim_block **blk;
};

struct latent_range {
	uint64_t sector;
	uint64_t count;
};

struct sim_disk {
	uint64_t size;
	uint64_t nsectors;
	uint32_t sector_size;
	bool read_only;
	bool lost;
	int fd; /* >= 0: the media is this image file */
	bool overlay; /* fd >= 0 and writes land in `media` over the file */
	char *path;
	struct blockmap media; /* when fd < 0 */
	struct blockmap cache;
	struct sim_pending *pend; /* public view, parallel to pend_blk */
	struct pend_blocks *pend_blk;
	size_t npend, pend_cap;
	struct latent_range *latent;
	size_t nlatent, latent_cap;
	uint64_t epoch;
	struct sim_rng rng;
	struct sim_disk_stats st;
};

struct fault_slot {
	struct sim_fault f;
	uint32_t fired;
	uint32_t passed; /* requests let pass of f.skip */
};

/* Recorded payloads live in chunks that are reused after a log clear, so that
 * recording costs a copy, not an allocation (and its page faults) per write. */
struct payload_chunk {
	size_t cap, used;
	uint8_t data[];
};

struct sim_volume {
	unsigned ndisks;
	uint64_t seed;
	struct sim_disk disk[SIM_MAX_DISKS];
	struct sim_latency lat;
	uint64_t sim_time_ns;
	uint64_t next_seq;
	bool recording;
	bool nolog; /* requests not logged nor their data hashed (sim_volume_set_log) */
	struct sim_io *log;
	size_t nlog, log_cap;
	struct payload_chunk **chunks;
	size_t nchunks, chunks_cap, chunk_cur;
	sim_log_sink sink;
	void *sink_ctx;
	struct fault_slot *faults;
	size_t nfaults, faults_cap;
	uint8_t *scratch; /* one request's worth, for reads of file media */
	size_t scratch_len;
	char err[256];
};

/* Sets the volume's error message; returns -errnum. */
int sim_fail(sim_volume *vol, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Grow *arr (of *cap elements of `size` bytes) to hold `need`. */
int sim_grow(void *arr, size_t *cap, size_t need, size_t size);

/* Media access (disk.c).  Offsets in sectors, lengths in sectors. */
int media_read(sim_volume *vol, struct sim_disk *d, uint64_t sector, uint32_t n, uint8_t *buf);
/* Store sectors durably: blk[i] for sector+i (NULL entries skipped, SIM_BLOCK_ZERO
 * zeroes).  The media takes its own references. */
int media_store(sim_volume *vol, struct sim_disk *d, uint64_t sector, uint32_t n,
		struct sim_block *const *blk);
int media_write_buf(sim_volume *vol, struct sim_disk *d, uint64_t sector, uint32_t n,
		    const uint8_t *buf);
/* The first sector at or after `sector` that may hold non-zero durable data. */
uint64_t media_next_data(struct sim_disk *d, uint64_t sector);
int disk_init(sim_volume *vol, struct sim_disk *d, unsigned idx, const struct sim_disk_config *c,
	      uint64_t seed);
void disk_free(struct sim_disk *d);
int disk_clone(sim_volume *vol, struct sim_disk *dst, struct sim_disk *src);
/* Forget the cache and every volatile write. */
void disk_drop_volatile(struct sim_disk *d);
/* Make the volatile writes durable in submission order (a flush). */
int disk_persist_all(sim_volume *vol, struct sim_disk *d);
int disk_add_latent(struct sim_disk *d, uint64_t sector, uint64_t count);
void disk_clear_latent(struct sim_disk *d, uint64_t sector, uint64_t count);
bool disk_is_latent(const struct sim_disk *d, uint64_t sector, uint64_t count);
int disk_flip_bit(sim_volume *vol, struct sim_disk *d, uint64_t sector, uint32_t bit);

/* IO log (iolog.c). */
int log_append(sim_volume *vol, struct sim_io *io, const void *payload, size_t len);
void log_free(sim_volume *vol);

/* Faults (fault.c).  Disk-level faults that fire before request `seq` on disk d. */
int fault_before_request(sim_volume *vol, unsigned disk, uint64_t sector, uint64_t n);
/* The request fault (flaky, lost, misdirect, flip) that fires on this request. */
const struct sim_fault *fault_on_request(sim_volume *vol, unsigned disk, uint64_t seq,
					 uint64_t sector, uint64_t n, enum sim_io_kind kind);
/* Flip `bits` bits of buf (len bytes); in the sector `sector_in` when >= 0.
 * Returns the first flipped bit's position. */
uint64_t fault_flip(struct sim_rng *r, uint8_t *buf, size_t len, uint32_t sector_size,
		    int64_t sector_in, uint32_t bits);

#endif
