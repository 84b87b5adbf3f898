/*
 * testutil.h - helpers shared by the unit tests of sim/: volumes, data
 * patterns, read-and-compare, temporary directories.  The helpers assert with
 * Criterion, so a failing helper fails the test that called it.
 */
#ifndef BTRSIM_TESTS_UNIT_TESTUTIL_H
#define BTRSIM_TESTS_UNIT_TESTUTIL_H

#include "sim/sim.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A one-disk volume on an image file (sim_volume_open's result). */
int tu_open_image(const char *path, uint64_t size, uint32_t ss, bool create, bool ro,
		  sim_volume **out, char *err, size_t errlen);
/* A memory-backed volume of ndisks equal disks, no latency. */
sim_volume *tu_open(unsigned ndisks, uint64_t size, uint32_t sector_size, uint64_t seed);

/* Fill buf with the pattern `tag`: tag 0 is zeros; any other tag gives bytes
 * that depend on the tag and on the position, so no two tags (and no two
 * sectors of one tag) hold the same sector. */
void tu_fill(void *buf, size_t len, uint64_t tag);
/* A malloc'd buffer holding the pattern. */
uint8_t *tu_pat(size_t len, uint64_t tag);

/* Write `len` bytes of pattern `tag` at `off`; returns sim_write's result. */
int tu_write(sim_volume *vol, unsigned disk, uint64_t off, size_t len, uint64_t tag,
	     unsigned flags);
/* The same, asserting success. */
void tu_write_ok(sim_volume *vol, unsigned disk, uint64_t off, size_t len, uint64_t tag,
		 unsigned flags);

/* Malloc'd copies of what sim_read / sim_read_durable return (asserting success). */
uint8_t *tu_get(sim_volume *vol, unsigned disk, uint64_t off, size_t len);
uint8_t *tu_get_durable(sim_volume *vol, unsigned disk, uint64_t off, size_t len);

/* Whether the cached view (sim_read) or the durable media hold pattern `tag`
 * at off..off+len, the pattern starting at off. */
bool tu_read_is(sim_volume *vol, unsigned disk, uint64_t off, size_t len, uint64_t tag);
bool tu_durable_is(sim_volume *vol, unsigned disk, uint64_t off, size_t len, uint64_t tag);
/* The same for one slice of a pattern written at `wr_off`. */
bool tu_durable_slice_is(sim_volume *vol, unsigned disk, uint64_t wr_off, size_t wr_len,
			 uint64_t tag, uint64_t off, size_t len);

/* Number of differing bits between a and b; *first gets the first one's
 * position (bit i of byte j is j*8+i) when not NULL and some bit differs. */
uint64_t tu_bitdiff(const void *a, const void *b, size_t len, uint64_t *first);

/* The number of log entries of a kind, and the last such entry (or NULL). */
size_t tu_log_count(const sim_volume *vol, enum sim_io_kind kind);
const struct sim_io *tu_log_last(const sim_volume *vol, enum sim_io_kind kind);

/* The pending list of a disk as a malloc'd copy (NULL when empty). */
struct sim_pending *tu_pending_copy(const sim_volume *vol, unsigned disk, size_t *n);

/* A fresh directory under /tmp and its recursive removal (one level deep). */
char *tu_tmpdir(void);
void tu_rmdir(char *dir);
/* dir/name in a malloc'd string. */
char *tu_path(const char *dir, const char *name);

#endif
