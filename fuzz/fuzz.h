/*
 * fuzz.h - btrsim's fuzzing harnesses (fuzz/README.md): the code that turns
 * one test case into calls of ref/, traces/ and faults/, shared by the
 * harness programs (fuzz/driver.c: AFL++ persistent mode, or a plain main
 * that runs each file once), fuzz-mkseed, and `btrsim findings --replay`.
 *
 * A harness never exits on bad input: every input is valid in the sense
 * that it decodes to something to run, and what ref/ or traces/ refuse is an
 * ordinary outcome.  What is a bug: a crash, a hang, a leak, a sanitizer
 * report, or a violation of the harness's oracle, which fuzz_violation()
 * reports on stderr and turns into abort() so that AFL++ saves the input.
 */
#ifndef BTRSIM_FUZZ_FUZZ_H
#define BTRSIM_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ref/ref.h"

struct fuzz_harness {
	const char *name;    /* "image", "workload", "parse", "stream" */
	const char *summary; /* one line */
	/* Once per process, before the first input (AFL++'s deferred
	 * initialisation point comes after it).  0, or -errno with a message. */
	int (*init)(char *err, size_t errlen);
	/* Runs one test case.  log (may be NULL: quiet) gets a line per step
	 * and outcome.  Returns 0; a violation does not return. */
	int (*one)(const uint8_t *data, size_t len, FILE *log);
	/* Optional (NULL when the harness has nothing to show): writes what the
	 * input decodes to into directory dir for triage (image: the disks as
	 * laid out, checksums fixed up, before anything ran: dir/disk0.img ...;
	 * stream: the disk after the receive and the unmount).
	 * 0, or -errno with a message. */
	int (*save)(const uint8_t *data, size_t len, const char *dir, char *err, size_t errlen);
	/* With save: the lines of the usage that say what -o DIR writes. */
	const char *save_help;
};

extern const struct fuzz_harness fuzz_harness_image;
extern const struct fuzz_harness fuzz_harness_workload;
extern const struct fuzz_harness fuzz_harness_parse;
extern const struct fuzz_harness fuzz_harness_stream;

/* The harness of that name, or NULL. */
const struct fuzz_harness *fuzz_harness_find(const char *name);
/* Every harness, in the order above; *n gets the count. */
const struct fuzz_harness *const *fuzz_harnesses(size_t *n);

/* What every harness process does first: glibc's malloc told to keep freed
 * memory (no trimming of the heap, no mmap for large blocks), which makes the
 * allocation pattern of one run per input about ten times cheaper, and the
 * shared /dev/null stream.  Idempotent; 0 or -errno with a message. */
int fuzz_process_init(char *err, size_t errlen);
/* A stream that discards what is written (ref_check's report when quiet). */
FILE *fuzz_devnull(void);

/* The marker of a violation line on stderr: the triage (mk/fuzz-triage.sh)
 * and `btrsim findings --replay` look for it. */
#define FUZZ_VIOLATION_PREFIX "btrsim-fuzz: violation: "
/* Prints FUZZ_VIOLATION_PREFIX and the message on one line to stderr, then
 * abort()s. */
_Noreturn void fuzz_violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ref_check of fs, its report kept: the count of errors (or -errno), with
 * ": why" (a failure) or ", the first: LINE" (the first ERROR line) in
 * first, and the whole report written to log (when not NULL) after any. */
long fuzz_check(ref_fs *fs, FILE *log, char *first, size_t len);

/* printf to log when log is not NULL. */
void fuzz_log(FILE *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- The compact image format (image_format.c; fuzz/README.md) ---- */

#define FZI_MAGIC "BFZI"
#define FZI_VERSION 1
#define FZI_HEADER_BYTES 12
#define FZI_RECORD_HEADER_BYTES 8
#define FZI_UNIT 4096u        /* offsets and lengths of records count these */
#define FZI_MAX_DISKS 4
#define FZI_MAX_DISK_MIB 4096u
#define FZI_MAX_RECORD_UNITS 256u /* 1 MiB */

/* Record kinds: how the harness fixes the record's checksum up. */
enum fzi_kind {
	FZI_SUPER = 0, /* a superblock: csum over bytes 32..4096 of the record */
	FZI_TREE = 1,  /* tree blocks: csum over 32..nodesize of each block in it */
	FZI_RAW = 2,   /* anything else (file data): laid as it is */
};

/* Header flags. */
#define FZI_FLAG_NO_WRITE 0x01 /* skip the write phase */
#define FZI_FLAG_DEGRADED 0x02 /* open with ref_open_opts.degraded */
/* bits 2-3: the superblock copy to open: 0 the newest valid one, 1..3 copy 0..2 */
#define FZI_FLAG_MIRROR_SHIFT 2

struct fzi_header {
	unsigned ndisks;    /* 1..FZI_MAX_DISKS */
	uint32_t disk_mib;  /* 1..FZI_MAX_DISK_MIB */
	uint8_t flags;
};

/* One record as decoded: the bytes are expanded into buf (len bytes). */
struct fzi_record {
	enum fzi_kind kind;
	unsigned disk;
	uint64_t offset;    /* bytes, a multiple of FZI_UNIT */
	uint32_t len;       /* bytes, a multiple of FZI_UNIT */
};

/* Decodes the header: 0, or -EINVAL with a message (short input, wrong magic
 * or version, disk count or size out of range). */
int fzi_decode_header(const uint8_t *data, size_t len, struct fzi_header *h, char *err,
		      size_t errlen);
/* Decodes the record at *pos (after the header on the first call) into rec
 * and buf (at least FZI_MAX_RECORD_UNITS * FZI_UNIT bytes), advancing *pos.
 * Returns 1 for a record, 0 at the end of the input.  Input that ends in the
 * middle of a record leaves the rest of it zero; a record with length 0 is
 * given as such (the caller skips it).  Never fails. */
int fzi_next_record(const uint8_t *data, size_t len, size_t *pos, const struct fzi_header *h,
		    struct fzi_record *rec, uint8_t *buf);

/* Encoding (fuzz-mkseed): an output buffer that grows. */
struct fzi_out {
	uint8_t *p;
	size_t len, cap;
};
int fzi_put_header(struct fzi_out *o, const struct fzi_header *h);
/* Appends one record holding bytes[0..len) (len a multiple of FZI_UNIT, at
 * most FZI_MAX_RECORD_UNITS units), its runs of 16 or more zero bytes left
 * out.  0 or -ENOMEM / -EINVAL. */
int fzi_put_record(struct fzi_out *o, enum fzi_kind kind, unsigned disk, uint64_t offset,
		   const uint8_t *bytes, uint32_t len);

/* ---- The workload decoding (harness_workload.c; fuzz/README.md) ---- */

struct wl_workload;
struct explore_opts;
struct fault_plan;

/* What a test case of the workload harness decodes to. */
struct fzw_case {
	struct wl_workload *w;   /* the operations */
	char *plan_text;         /* the fault plan as text (NULL: none) */
	struct fault_plan *plan; /* parsed from plan_text (NULL: none) */
	uint64_t seed;
	unsigned max_subset, samples, torn, ndisks;
	uint32_t nodesize;
	size_t skip_ops;
};
/* Decodes data into c (free with fzw_case_free).  0, or -ENOMEM / -EINVAL
 * with a message (a decoded plan that its own parser refuses is a bug of the
 * decoder and says so). */
int fzw_decode(const uint8_t *data, size_t len, struct fzw_case *c, char *err, size_t errlen);
void fzw_case_free(struct fzw_case *c);
/* The explore options of a decoded case (defaults for the rest). */
void fzw_explore_opts(const struct fzw_case *c, struct explore_opts *o);
/* Encodes a workload (seed corpora): the first four header bytes as given
 * (hdr), the lines of plan (a fault plan's canonical text, or NULL) that the
 * encoding expresses (at most two), then every op that has an encoding (at
 * most the decoder's 16); names outside the alphabet are renamed, ops with
 * more names or out-of-range numbers left out.  *encoded and *faults get the
 * counts.  0 or -ENOMEM. */
int fzw_encode(const struct wl_workload *w, const char *plan, const uint8_t hdr[4],
	       struct fzi_out *o, size_t *encoded, size_t *faults);

#endif
