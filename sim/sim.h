/*
 * sim.h - the simulated multi-disk block layer of btrsim.
 *
 * A volume is an ordered set of simulated disks.  Each disk has a volatile write
 * cache in front of durable media, so that power loss can be reproduced exactly:
 *
 *   - a write is acknowledged at once but stays volatile until a later flush on
 *     the same disk completes, unless it was submitted with SIM_FUA;
 *   - reads see the latest acknowledged data (cache over media);
 *   - sim_disk_crash() turns the disk into what it would hold after power loss:
 *     the durable media plus the volatile writes a crash policy lets through,
 *     possibly torn at sector granularity.
 *
 * Faults (bit flips at rest and in flight, latent sector errors, lost and
 * misdirected writes, device loss, flaky disks) are injected on a schedule or
 * directly, and every request lands in an IO log.  Every random choice comes
 * from the volume's seed: the same seed and the same requests give the same IO
 * log and the same durable images, byte for byte.
 *
 * sim/ knows nothing of Btrfs.  Every function that can fail returns 0 or a
 * negative errno and leaves a one-line reason in sim_volume_error().  The
 * library is single-threaded: one volume is used by one thread at a time.
 */
#ifndef BTRSIM_SIM_H
#define BTRSIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_MAX_DISKS 64
/* Largest disk: 2^50 bytes (1 PiB) keeps sector arithmetic far from overflow. */
#define SIM_MAX_DISK_BYTES (UINT64_C(1) << 50)
/* Largest single request, as Linux caps a bio: 64 MiB. */
#define SIM_MAX_IO_BYTES (UINT64_C(64) << 20)

typedef struct sim_volume sim_volume;

/* ---- Configuration --------------------------------------------------------- */

struct sim_disk_config {
	uint64_t size;        /* bytes; 0 with image_path: take the file's size */
	uint32_t sector_size; /* 512 or 4096; 0 means 4096 */
	/*
	 * NULL: memory-backed (the default).  Otherwise a sparse image file holds
	 * the durable media; it is created when missing (or when `create` is set,
	 * truncated first).
	 */
	const char *image_path;
	bool create;
	bool read_only; /* writes and discards fail with EROFS */
	/*
	 * With image_path: the file is opened read-only and never written, but
	 * the disk takes writes: they (and what flushes make durable) land in
	 * memory over the file and are gone at close.  What a reader of an image
	 * uses to replay a log without changing the image (the kernel's mount
	 * replays in memory only when the device is read-only; btrsim's reading
	 * commands always leave their images as they were).
	 */
	bool overlay;
};

/* Simulated time.  Each request costs per_request_ns + bytes * per_byte_ps / 1000;
 * a flush costs per_flush_ns.  All zero: the clock does not move. */
struct sim_latency {
	uint64_t per_request_ns;
	uint64_t per_byte_ps;
	uint64_t per_flush_ns;
};

struct sim_volume_config {
	uint64_t seed;
	unsigned ndisks;
	struct sim_disk_config disk[SIM_MAX_DISKS];
	bool record_payloads; /* keep each write's payload in the IO log */
	struct sim_latency latency;
};

/* A reasonable default: 4 KiB sectors, memory-backed, a typical SSD's latency. */
void sim_config_init(struct sim_volume_config *cfg, unsigned ndisks, uint64_t disk_size,
		     uint64_t seed);

int sim_volume_open(const struct sim_volume_config *cfg, sim_volume **out, char *err,
		    size_t errlen);
void sim_volume_close(sim_volume *vol);

/*
 * An independent copy of the whole volume: durable media, caches, pending
 * volatile writes, faults, latent errors, RNG and clock.  Memory-backed disks
 * are cloned in O(1) and share blocks copy-on-write; a file-backed disk becomes
 * a memory-backed clone holding the file's allocated data.  The clone's IO log
 * starts empty; its sequence numbers continue from the origin's.
 */
int sim_volume_clone(sim_volume *vol, sim_volume **out);

const char *sim_volume_error(const sim_volume *vol);
unsigned sim_volume_ndisks(const sim_volume *vol);
uint64_t sim_volume_seed(const sim_volume *vol);
uint64_t sim_disk_size(const sim_volume *vol, unsigned disk);
uint32_t sim_disk_sector_size(const sim_volume *vol, unsigned disk);
/* Flushes completed on the disk so far: the epoch of its next request. */
uint64_t sim_disk_epoch(const sim_volume *vol, unsigned disk);
bool sim_disk_is_lost(const sim_volume *vol, unsigned disk);
bool sim_disk_is_read_only(const sim_volume *vol, unsigned disk);
/* A read-only image disk takes writes from now on, in memory over its file, as
 * sim_disk_config.overlay (a writable disk is left as it is). */
int sim_disk_overlay(sim_volume *vol, unsigned disk);

/* ---- Requests ---------------------------------------------------------------
 * Offsets and lengths are bytes, multiples of the disk's sector size, within the
 * disk, length 1 sector to SIM_MAX_IO_BYTES.  Each returns 0 or a negative errno:
 * EINVAL bad argument, EIO a failed request (device lost, latent sector error,
 * flaky disk), EROFS read-only disk, ENOSPC/EFBIG the image file's file system.
 */
#define SIM_FUA 1u /* this write is durable when it completes */

int sim_read(sim_volume *vol, unsigned disk, uint64_t offset, void *buf, size_t len);
int sim_write(sim_volume *vol, unsigned disk, uint64_t offset, const void *buf, size_t len,
	      unsigned flags);
int sim_flush(sim_volume *vol, unsigned disk);
/* Discarded sectors read as zeros; like a write, a discard is volatile until flushed. */
int sim_discard(sim_volume *vol, unsigned disk, uint64_t offset, size_t len);

/* Read the durable media, bypassing the cache, faults and the IO log. */
int sim_read_durable(sim_volume *vol, unsigned disk, uint64_t offset, void *buf, size_t len);

/* ---- Volatile writes and crashes ------------------------------------------- */

/* One volatile write or discard, in submission order. */
struct sim_pending {
	uint64_t seq;     /* its IO-log sequence number */
	uint64_t sector;  /* first sector */
	uint32_t nsectors;
	bool discard;
};

/* The disk's volatile writes (NULL, 0 when none).  Valid until the next request. */
const struct sim_pending *sim_disk_pending(const sim_volume *vol, unsigned disk, size_t *n);

enum sim_crash_policy {
	SIM_CRASH_NONE,     /* every volatile write is lost */
	SIM_CRASH_ALL,      /* every volatile write persists */
	SIM_CRASH_RANDOM,   /* each persists with keep_probability, maybe torn */
	SIM_CRASH_PREFIX,   /* the first prefix_len, in submission order */
	SIM_CRASH_EXPLICIT, /* exactly the picks */
};

/* A volatile write chosen to persist: whole (count == 0) or only `count`
 * sectors from `first` (relative to the write's first sector): a torn write. */
struct sim_crash_pick {
	uint64_t seq;
	uint32_t first;
	uint32_t count;
};

struct sim_crash_spec {
	enum sim_crash_policy policy;
	double keep_probability; /* RANDOM; 0.5 when 0 */
	double tear_probability; /* RANDOM: chance a kept multi-sector write is torn */
	size_t prefix_len;       /* PREFIX */
	const struct sim_crash_pick *picks; /* EXPLICIT; seqs of this disk's writes */
	size_t npicks;
};

/* What a crash did to one disk. */
struct sim_crash_result {
	size_t pending;   /* volatile writes at the crash */
	size_t persisted; /* of which persisted, whole or torn */
	size_t torn;      /* of which torn */
	uint64_t sectors_persisted;
};

/*
 * Power loss on one disk: the chosen volatile writes become durable in
 * submission order (a sector already overwritten durably by a later FUA write
 * keeps that newer content), the rest are dropped, and the cache empties.  The
 * disk then serves its durable media; it keeps its epoch and its faults.
 * res may be NULL.  An explicit pick naming an unknown seq is EINVAL.
 */
int sim_disk_crash(sim_volume *vol, unsigned disk, const struct sim_crash_spec *spec,
		   struct sim_crash_result *res);
/* The same spec on every disk, each drawing from its own random stream (picks
 * are matched to the disk that holds their seq). */
int sim_volume_crash(sim_volume *vol, const struct sim_crash_spec *spec,
		     struct sim_crash_result *res /* [ndisks] or NULL */);

/* ---- Faults ---------------------------------------------------------------- */

enum sim_fault_kind {
	SIM_FAULT_NONE,
	SIM_FAULT_FLIP_AT_REST,  /* flips bits of a durable sector when triggered */
	SIM_FAULT_FLIP_ON_WRITE, /* the stored copy of a write has flipped bits */
	SIM_FAULT_FLIP_ON_READ,  /* the data returned by a read has flipped bits */
	SIM_FAULT_LATENT,        /* sectors fail reads with EIO until rewritten */
	SIM_FAULT_LOST_WRITE,    /* acknowledged, but neither cached nor persisted */
	SIM_FAULT_MISDIRECT,     /* the write lands on other sectors of the disk */
	SIM_FAULT_DEVICE_LOSS,   /* from then on every request to the disk fails */
	SIM_FAULT_FLAKY,         /* the request fails with EIO, nothing done */
	SIM_FAULT_KIND_COUNT
};

#define SIM_ANY_DISK (-1)
#define SIM_ANY_SECTOR (-1)

/*
 * A scheduled fault.  It is armed from request number `after_seq` on (0: at
 * once) and fires on a request that matches `disk` and overlaps `sector`
 * (SIM_ANY_* match all), with `probability` (1.0 = always; 0 is read as 1.0),
 * at most `count` times (0: no limit), after letting the first `skip` requests
 * it would have fired on pass (so that "the k-th write to disk 0 from now" can
 * be named without knowing its request number).
 *
 * FLIP_AT_REST, LATENT and DEVICE_LOSS act on the disk itself: they fire on the
 * first matching request of any kind, before it is served.  A FLIP_AT_REST or
 * LATENT with SIM_ANY_SECTOR picks a random sector.  The flip kinds flip `bits`
 * random bits (1 when 0); LATENT marks `nsectors` sectors (1 when 0);
 * MISDIRECT shifts the write by `shift` sectors (a random shift when 0, kept
 * within the disk).
 */
struct sim_fault {
	enum sim_fault_kind kind;
	int disk;
	int64_t sector;
	uint64_t after_seq;
	double probability;
	uint32_t count;
	uint32_t skip;
	uint32_t bits;
	uint32_t nsectors;
	int64_t shift;
};

int sim_fault_add(sim_volume *vol, const struct sim_fault *fault);
void sim_fault_clear(sim_volume *vol);
/* Parse "kind[,key=value...]", keys disk, sector, after, p, count, bits, n, shift;
 * kinds: flip-at-rest flip-on-write flip-on-read latent lost-write misdirect
 * device-loss flaky.  The whole grammar is in sim/README.md. */
int sim_fault_parse(const char *text, struct sim_fault *out, char *err, size_t errlen);
const char *sim_fault_kind_name(enum sim_fault_kind kind);

/* Immediate faults. */
int sim_disk_flip_bit(sim_volume *vol, unsigned disk, uint64_t sector, uint32_t bit);
int sim_disk_add_latent(sim_volume *vol, unsigned disk, uint64_t sector, uint32_t nsectors);
int sim_disk_lose(sim_volume *vol, unsigned disk);
/* A blank disk of the same geometry takes the lost (or healthy) disk's place. */
int sim_disk_replace(sim_volume *vol, unsigned disk);

/* ---- IO log ---------------------------------------------------------------- */

enum sim_io_kind {
	SIM_IO_READ,
	SIM_IO_WRITE,
	SIM_IO_WRITE_FUA,
	SIM_IO_FLUSH,
	SIM_IO_DISCARD,
	SIM_IO_FAULT, /* a fault that acted on the disk outside any request */
	SIM_IO_CRASH, /* power loss: sector = writes persisted, nsectors = torn */
	SIM_IO_REPLACE,
	SIM_IO_KIND_COUNT
};

struct sim_io {
	uint64_t seq;
	uint64_t epoch;       /* flushes completed on this disk before the request */
	uint64_t sector;
	uint64_t csum;        /* XXH3-64 of the payload written or the data read */
	uint64_t fault_arg;   /* the flipped bit, the misdirected sector, ... */
	uint64_t sim_time_ns; /* simulated clock when the request completed */
	uint32_t nsectors;
	uint16_t disk;
	uint8_t kind;        /* enum sim_io_kind */
	uint8_t fault;       /* enum sim_fault_kind that acted on it, or NONE */
	int32_t status;      /* 0 or a negative errno */
	const uint8_t *payload; /* written bytes, when recording; NULL otherwise */
};

/* The log so far, in order.  Valid until the next request or clear. */
const struct sim_io *sim_volume_log(const sim_volume *vol, size_t *n);
void sim_volume_log_clear(sim_volume *vol);
void sim_volume_set_recording(sim_volume *vol, bool on);
/* Off: requests are not logged at all, nor their data hashed for the log
 * (sim_volume_log stays as it was); for a throw-away volume whose requests
 * nobody reads, a crash state being judged.  On by default; clones inherit it. */
void sim_volume_set_log(sim_volume *vol, bool on);
/* Called for every entry as it is appended (after it is stored). */
typedef void (*sim_log_sink)(void *ctx, const struct sim_io *io);
void sim_volume_set_log_sink(sim_volume *vol, sim_log_sink sink, void *ctx);
const char *sim_io_kind_name(enum sim_io_kind kind);
/* One line: "seq disk kind sector+n epoch status csum [fault]". */
int sim_io_format(const struct sim_io *io, char *buf, size_t len);
/* The next sequence number. */
uint64_t sim_volume_next_seq(const sim_volume *vol);

/* ---- Clock and statistics --------------------------------------------------- */

struct sim_disk_stats {
	uint64_t reads, writes, flushes, discards, fua_writes;
	uint64_t bytes_read, bytes_written;
	uint64_t errors, faults;
	uint64_t pending_writes; /* volatile writes right now */
	uint64_t durable_bytes;  /* allocated (non-zero) durable bytes */
};
int sim_disk_stats(const sim_volume *vol, unsigned disk, struct sim_disk_stats *st);
uint64_t sim_volume_sim_time_ns(const sim_volume *vol);

/* ---- Images ---------------------------------------------------------------- */

/* Write the disk's durable media to a sparse image file (holes where zero). */
int sim_disk_save_image(sim_volume *vol, unsigned disk, const char *path);
/* Compare the durable media of two disks: 0 equal, 1 different, <0 error. */
int sim_disk_durable_cmp(sim_volume *a, unsigned da, sim_volume *b, unsigned db);
/* XXH3-64 over the durable media (zeros included), for quick comparison. */
int sim_disk_durable_hash(sim_volume *vol, unsigned disk, uint64_t *hash);
/* A 128-bit identity of what every read of the volume returns now: each
 * disk's size, sector size, loss, read-only mode, latent sectors and the
 * bytes of its media and cache, digested as they change (blockmap.h) once
 * sim_volume_track_content has started it (clones made after inherit it):
 * no read of the data.  Equal identities mean equal reads, but for a chance
 * near 2^-128, and so equal outcomes of a deterministic program run on the
 * volumes.  -ENOTSUP when there is none: not tracked, a disk backed by an
 * image file, or faults armed (reads may then depend on more than the
 * bytes).  Tracking costs a hash of each block stored: turn it off (on=false)
 * for a volume whose identity is no longer asked. */
int sim_volume_track_content(sim_volume *vol, bool on);
int sim_volume_content_id(sim_volume *vol, uint64_t id[2]);

#endif
