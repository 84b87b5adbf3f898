/*
 * harness_image.c - the `image` harness: a compact image (image_format.c)
 * laid on a memory-backed sim volume, its checksums fixed up so that
 * mutations get past the checksum gate, then opened, checked, walked (every
 * directory, file, symlink and xattr, within budgets), changed by a few
 * writes and committed.  ref must never crash, hang, leak or trip a
 * sanitizer on it (at most 4096 records and 32 MiB are laid out).  Oracle: when ref_check found the image clean before the
 * writes, it must find it clean after them (a failed commit included: the
 * last commit stays the file system), and when every write and the commit
 * succeeded, the new file must read back as written.
 */
#include "fuzz/fuzz.h"
#include "ref/send.h"
#include "ref/csum.h"
#include "ref/ref.h"
#include "ref/vfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Budgets that keep one run short whatever the image claims. */
#define MAX_RECORDS 4096
#define MAX_LAID (UINT64_C(32) << 20)   /* bytes laid out in all */
#define WALK_ENTRIES 2048               /* directory entries looked at */
#define WALK_DEPTH 24
#define READ_BUDGET (UINT64_C(2) << 20) /* file bytes read in all */
#define READ_CHUNK (64u << 10)
#define PATH_BYTES 512

static struct {
	uint8_t *rec;  /* one record, expanded */
	uint8_t *buf;  /* file data read by the walk */
	struct placed {
		enum fzi_kind kind;
		unsigned disk;
		uint64_t offset;
		uint32_t len;
	} *placed;
} G;

static int image_init(char *err, size_t errlen)
{
	int r = fuzz_process_init(err, errlen);
	if (r)
		return r;
	if (!G.rec) {
		G.rec = malloc((size_t)FZI_MAX_RECORD_UNITS * FZI_UNIT);
		G.buf = malloc(READ_CHUNK);
		G.placed = malloc(MAX_RECORDS * sizeof(*G.placed));
		if (!G.rec || !G.buf || !G.placed) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	return 0;
}

/* ---- Laying the records out ---- */

static bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* Rewrites the checksum of [off, off + len) on disk d: csum over bytes
 * 32..len, in the first bytes. */
static void fix_csum(sim_volume *vol, unsigned d, uint64_t off, uint32_t len, unsigned type)
{
	if (sim_read(vol, d, off, G.rec, len))
		return;
	uint8_t sum[32];
	if (ref_csum(type, G.rec + 32, len - 32, sum))
		return;
	memcpy(G.rec, sum, BTRFS_CSUM_BYTES);
	sim_write(vol, d, off, G.rec, len, SIM_FUA);
}

static int lay_out(const uint8_t *data, size_t len, const struct fzi_header *h, sim_volume *vol,
		   FILE *log)
{
	size_t pos = 0, n = 0, skipped = 0;
	struct fzi_record rec;
	uint64_t size = (uint64_t)h->disk_mib << 20, laid = 0;
	while (n < MAX_RECORDS && laid < MAX_LAID &&
	       fzi_next_record(data, len, &pos, h, &rec, G.rec)) {
		if (!rec.len)
			continue;
		laid += rec.len;
		if (rec.offset + rec.len > size) {
			skipped++;
			continue;
		}
		if (sim_write(vol, rec.disk, rec.offset, G.rec, rec.len, SIM_FUA)) {
			fuzz_log(log, "laying a record: %s", sim_volume_error(vol));
			return -EIO;
		}
		G.placed[n++] = (struct placed){ rec.kind, rec.disk, rec.offset, rec.len };
	}
	/* The checksum type and node size: the first superblock record's. */
	unsigned csum = REF_CSUM_CRC32C;
	uint32_t nodesize = 0;
	for (size_t i = 0; i < n; i++) {
		struct btrfs_super_disk sb;
		if (G.placed[i].kind != FZI_SUPER ||
		    sim_read(vol, G.placed[i].disk, G.placed[i].offset, &sb, sizeof(sb)))
			continue;
		if (ref_csum_size(LE16(sb.csum_type)))
			csum = LE16(sb.csum_type);
		nodesize = LE32(sb.nodesize);
		break;
	}
	if (!pow2(nodesize) || nodesize < 4096 || nodesize > 65536)
		nodesize = 0;
	for (size_t i = 0; i < n; i++) {
		const struct placed *p = &G.placed[i];
		if (p->kind == FZI_SUPER) {
			struct btrfs_super_disk sb;
			if (sim_read(vol, p->disk, p->offset, &sb, sizeof(sb)))
				continue;
			unsigned t = LE16(sb.csum_type);
			fix_csum(vol, p->disk, p->offset, BTRFS_SUPER_SIZE,
				 ref_csum_size(t) ? t : REF_CSUM_CRC32C);
		} else if (p->kind == FZI_TREE) {
			uint32_t bs = nodesize && nodesize <= p->len ? nodesize : p->len;
			for (uint32_t o = 0; o + bs <= p->len; o += bs)
				fix_csum(vol, p->disk, p->offset + o, bs, csum);
		}
	}
	fuzz_log(log, "laid %zu records on %u disk%s of %u MiB (%zu past the end skipped)", n,
		 h->ndisks, h->ndisks > 1 ? "s" : "", h->disk_mib, skipped);
	return 0;
}

/* ---- Walking every file ---- */

struct walk {
	ref_fs *fs;
	FILE *log;
	unsigned entries;       /* left to look at */
	uint64_t bytes;         /* left to read */
	long errors;            /* reads that failed */
	/* for the write phase: paths in the top-level subvolume */
	char file[2][PATH_BYTES];
	unsigned nfiles;
	char dir[PATH_BYTES];
};

static int count_xattr(void *ctx, const char *name, size_t nlen, const uint8_t *value,
		       size_t vlen)
{
	(void)name;
	(void)value;
	*(size_t *)ctx += nlen + vlen;
	return 0;
}

/* A name usable in a path of ref/vfs.h: no '/', no NUL, not "." or "..". */
static bool plain_name(const char *name, size_t len)
{
	if (!len || memchr(name, '/', len) || memchr(name, 0, len))
		return false;
	return !(len == 1 && name[0] == '.') && !(len == 2 && name[0] == '.' && name[1] == '.');
}

static void walk_dir(struct walk *w, const struct ref_ino *dir, const char *path, int depth);

static void visit(struct walk *w, const struct ref_dentry *de, const char *parent, int depth)
{
	char path[PATH_BYTES];
	bool named = parent && plain_name(de->name, de->len) &&
		     strlen(parent) + 1 + de->len < sizeof(path);
	if (named)
		snprintf(path, sizeof(path), "%s/%.*s", strcmp(parent, "/") ? parent : "",
			 (int)de->len, de->name);
	struct ref_stat st;
	if (ref_stat(w->fs, &de->ino, &st)) {
		w->errors++;
		return;
	}
	size_t xbytes = 0;
	if (ref_listxattr(w->fs, &de->ino, count_xattr, &xbytes) < 0)
		w->errors++;
	/* A name in another subvolume is not a path of the top level. */
	bool top = de->ino.subvol == BTRFS_FS_TREE_OBJECTID;
	if (S_ISDIR(st.mode)) {
		if (named && top && !w->dir[0])
			snprintf(w->dir, sizeof(w->dir), "%s", path);
		walk_dir(w, &de->ino, named && top ? path : NULL, depth + 1);
	} else if (S_ISREG(st.mode)) {
		if (named && top && w->nfiles < 2)
			snprintf(w->file[w->nfiles++], PATH_BYTES, "%s", path);
		for (uint64_t off = 0; off < st.size && w->bytes;) {
			size_t want = w->bytes < READ_CHUNK ? (size_t)w->bytes : READ_CHUNK;
			ssize_t got = ref_pread(w->fs, &de->ino, G.buf, want, off);
			if (got <= 0) {
				w->errors += got < 0;
				break;
			}
			w->bytes -= (uint64_t)got;
			off += (uint64_t)got;
		}
	} else if (S_ISLNK(st.mode)) {
		char target[4096 + 1];
		if (ref_readlink(w->fs, &de->ino, target, sizeof(target)) < 0)
			w->errors++;
	}
}

static void walk_dir(struct walk *w, const struct ref_ino *dir, const char *path, int depth)
{
	if (depth > WALK_DEPTH || !w->entries)
		return;
	struct ref_dentries d = { 0 };
	if (ref_dentries_read(w->fs, dir, &d))
		w->errors++;
	for (size_t i = 0; i < d.n && w->entries; i++) {
		w->entries--;
		visit(w, &d.e[i], path, depth);
	}
	ref_dentries_free(&d);
}

/* ---- The write phase ---- */

#define NEW_DIR "/fuzz.d"
#define NEW_FILE "/fuzz.d/f"
#define NEW_NAME "/fuzz.d/g"
#define DATA1_LEN 6000u
#define DATA2_OFF 9000u
#define DATA2_LEN 100u

static void pattern(uint8_t *p, size_t n, unsigned salt)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + salt);
}

/* The changes; returns true when every one succeeded. */
static bool write_phase(ref_fs *fs, const struct walk *w, FILE *log)
{
	uint8_t a[DATA1_LEN], b[DATA2_LEN], c[10];
	pattern(a, sizeof(a), 1);
	pattern(b, sizeof(b), 2);
	pattern(c, sizeof(c), 3);
	int r[12];
	size_t n = 0;
	r[n++] = ref_mkdir(fs, NEW_DIR, 0755);
	r[n++] = ref_create(fs, NEW_FILE, 0644);
	r[n++] = (int)ref_write(fs, NEW_FILE, a, sizeof(a), 0) == (int)sizeof(a) ? 0 : -EIO;
	r[n++] = (int)ref_write(fs, NEW_FILE, b, sizeof(b), DATA2_OFF) == (int)sizeof(b) ? 0 : -EIO;
	r[n++] = ref_setxattr(fs, NEW_FILE, "user.fuzz", "v", 1, 0);
	r[n++] = ref_rename(fs, NEW_FILE, NEW_NAME, 0);
	bool mine_ok = true;
	for (size_t i = 0; i < n; i++)
		mine_ok &= r[i] == 0;
	/* What was there before: an overwrite across a sector boundary (a
	 * read-modify-write of the old extent), a truncate, an unlink and a
	 * rename of a directory. */
	if (w->nfiles > 0) {
		ssize_t k = ref_write(fs, w->file[0], c, sizeof(c), 4090);
		fuzz_log(log, "write %s: %zd", w->file[0], k);
		fuzz_log(log, "truncate %s: %d", w->file[0], ref_truncate(fs, w->file[0], 5000));
	}
	if (w->nfiles > 1)
		fuzz_log(log, "unlink %s: %d", w->file[1], ref_unlink(fs, w->file[1]));
	if (w->dir[0])
		fuzz_log(log, "rename %s: %d", w->dir, ref_rename(fs, w->dir, "/fuzz.moved", 0));
	fuzz_log(log, "new file: mkdir %d create %d write %d %d setxattr %d rename %d", r[0], r[1],
		 r[2], r[3], r[4], r[5]);
	return mine_ok;
}

/* The new file as the reopened file system shows it: "" when right. */
static void verify_new_file(ref_fs *fs, char *why, size_t whylen)
{
	struct ref_ino top, ino;
	struct ref_stat st;
	int r = ref_subvol_root(fs, BTRFS_FS_TREE_OBJECTID, &top);
	if (!r)
		r = ref_resolve(fs, &top, &NEW_NAME[1], &ino);
	if (!r)
		r = ref_stat(fs, &ino, &st);
	if (r) {
		snprintf(why, whylen, "%s: %s", NEW_NAME, ref_error(fs));
		return;
	}
	if (st.size != DATA2_OFF + DATA2_LEN) {
		snprintf(why, whylen, "%s: size %llu, written %u", NEW_NAME,
			 (unsigned long long)st.size, DATA2_OFF + DATA2_LEN);
		return;
	}
	uint8_t want[DATA2_OFF + DATA2_LEN], got[DATA2_OFF + DATA2_LEN];
	memset(want, 0, sizeof(want));
	pattern(want, DATA1_LEN, 1);
	pattern(want + DATA2_OFF, DATA2_LEN, 2);
	ssize_t n = ref_pread(fs, &ino, got, sizeof(got), 0);
	if (n != (ssize_t)sizeof(got)) {
		snprintf(why, whylen, "%s: read %zd bytes of %zu: %s", NEW_NAME, n, sizeof(got),
			 n < 0 ? ref_error(fs) : "short");
		return;
	}
	for (size_t i = 0; i < sizeof(got); i++)
		if (got[i] != want[i]) {
			snprintf(why, whylen, "%s: byte %zu is %#x, written %#x", NEW_NAME, i, got[i],
				 want[i]);
			return;
		}
	why[0] = 0;
}

/* ---- One input ---- */

/* The volume the input describes, laid out and fixed up: 0, or -errno with
 * the reason in err. */
static int make_volume(const uint8_t *data, size_t len, struct fzi_header *h, sim_volume **vol,
		       FILE *log, char *err, size_t errlen)
{
	int r = fzi_decode_header(data, len, h, err, errlen);
	if (r)
		return r;
	struct sim_volume_config cfg;
	sim_config_init(&cfg, h->ndisks, (uint64_t)h->disk_mib << 20, 1);
	memset(&cfg.latency, 0, sizeof(cfg.latency));
	if (sim_volume_open(&cfg, vol, err, errlen))
		return -ENOMEM;
	if (lay_out(data, len, h, *vol, log)) {
		snprintf(err, errlen, "laying the records out: %s", sim_volume_error(*vol));
		sim_volume_close(*vol);
		return -EIO;
	}
	return 0;
}

static int image_save(const uint8_t *data, size_t len, const char *dir, char *err, size_t errlen)
{
	struct fzi_header h;
	sim_volume *vol;
	int r = make_volume(data, len, &h, &vol, NULL, err, errlen);
	if (r)
		return r;
	for (unsigned d = 0; d < h.ndisks && !r; d++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/disk%u.img", dir, d);
		if ((r = sim_disk_save_image(vol, d, path)))
			snprintf(err, errlen, "%s: %s", path, sim_volume_error(vol));
	}
	sim_volume_close(vol);
	return r;
}

/* Send streams of the first subvolumes (ref_send refuses writable ones at
 * once), each full and against the one before, written nowhere: on a damaged
 * image the sender must fail with an errno and a reason, never crash. */
static void send_phase(ref_fs *fs, FILE *log)
{
	uint64_t *ids;
	size_t n;
	if (ref_subvol_ids(fs, &ids, &n))
		return;
	for (size_t k = 0; k < n && k < 4; k++) {
		struct ref_send_opts o = { .proto = 1 + (uint32_t)(k % 2),
					   .parent = k >= 2 ? ids[k - 1] : 0,
					   .compressed_data = k % 2 };
		char err[256] = "";
		int r = ref_send(fs, ids[k], &o, fuzz_devnull(), NULL, err, sizeof(err));
		fuzz_log(log, "send %llu: %d %s", (unsigned long long)ids[k], r, err);
		if (r > 0 || (r < 0 && !err[0]))
			fuzz_violation("image: send of subvolume %llu returned %d without a reason",
				       (unsigned long long)ids[k], r);
	}
	free(ids);
}

static int image_one(const uint8_t *data, size_t len, FILE *log)
{
	struct fzi_header h;
	char err[512];
	sim_volume *vol;
	int r = make_volume(data, len, &h, &vol, log, err, sizeof(err));
	if (r) {
		fuzz_log(log, "input refused: %s", err);
		return 0;
	}
	FILE *out = log ? log : fuzz_devnull();
	int mirror = (h.flags >> FZI_FLAG_MIRROR_SHIFT) & 3;
	/* usebackuproot: a damaged root tree falls back to the backup roots, so
	 * that their parsing and the writes on top of an older root are fuzzed
	 * too (as mounting with -o usebackuproot would). */
	struct ref_open_opts oo = { .degraded = h.flags & FZI_FLAG_DEGRADED,
				    .super_mirror = mirror - 1, /* 0: the newest valid copy */
				    .log = log,
				    .usebackuproot = true };
	ref_fs *fs;
	if (ref_open(vol, &oo, &fs, err, sizeof(err))) {
		fuzz_log(log, "open: %s", err);
		sim_volume_close(vol);
		return 0;
	}
	struct ref_check_opts co = { .out = out };
	long errors = ref_check(fs, &co);
	fuzz_log(log, "check: %ld", errors);
	struct walk w = { .fs = fs, .log = log, .entries = WALK_ENTRIES, .bytes = READ_BUDGET };
	struct ref_ino top;
	if (ref_subvol_root(fs, BTRFS_FS_TREE_OBJECTID, &top) == 0)
		walk_dir(&w, &top, "/", 0);
	else
		w.errors++;
	fuzz_log(log, "walk: %u entries, %llu bytes read, %ld errors", WALK_ENTRIES - w.entries,
		 (unsigned long long)(READ_BUDGET - w.bytes), w.errors);
	send_phase(fs, log);
	ref_close(fs);
	if (h.flags & FZI_FLAG_NO_WRITE) {
		sim_volume_close(vol);
		return 0;
	}

	struct ref_mount_opts mo = { .open = oo, .clock_start = 1700000000 };
	if (ref_mount(vol, &mo, &fs, err, sizeof(err))) {
		fuzz_log(log, "mount: %s", err);
		sim_volume_close(vol);
		return 0;
	}
	bool ok = write_phase(fs, &w, log);
	int u = ref_umount(fs);
	fuzz_log(log, "umount: %d", u);
	if (errors == 0) {
		/* The image was clean: whatever happened, it must still be.  Opened
		 * as before: a commit writes every superblock copy, a failed one
		 * leaves the copy that was checked. */
		if (ref_open(vol, &oo, &fs, err, sizeof(err)))
			fuzz_violation("image: clean before the writes, cannot be opened after "
				       "them (commit %s): %s", u ? "failed" : "succeeded", err);
		char first[300];
		long after = fuzz_check(fs, log, first, sizeof(first));
		if (after != 0)
			fuzz_violation("image: clean before the writes, check gives %ld after them "
				       "(commit %s)%s", after, u ? "failed" : "succeeded", first);
		if (ok && u == 0) {
			char why[256];
			verify_new_file(fs, why, sizeof(why));
			if (why[0]) {
				ref_close(fs);
				fuzz_violation("image: the committed file does not read back: %s", why);
			}
		}
		ref_close(fs);
	}
	sim_volume_close(vol);
	return 0;
}

const struct fuzz_harness fuzz_harness_image = {
	.name = "image",
	.summary = "a compact image opened, checked, walked, written and committed",
	.init = image_init,
	.one = image_one,
	.save = image_save,
	.save_help = "  -o DIR   write the disks FILE describes (laid out, checksums\n"
		     "           fixed up, before anything ran) as DIR/disk0.img...\n",
};
