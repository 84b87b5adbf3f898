/*
 * harness_workload.c - the `workload` harness: bytes decoded into a workload
 * (operations and their persistence points), crash-point options and a fault
 * plan (fuzz/README.md, "The workload encoding"); ref runs it on sim and the
 * crash explorer (traces/explore.h) judges every crash state it builds, with
 * small enumeration bounds.  Oracle: any violation (a state that does not
 * mount, check or match the model), the model unable to follow ref's
 * results, a failed final commit without faults, or a recorded IO log that
 * does not replay, is a bug: fuzz_violation() aborts.
 *
 * The encoder (fzw_encode) turns a workload file into this encoding for seed
 * corpora: operations it cannot express (names outside the alphabet) are
 * left out.
 */
#include "fuzz/fuzz.h"
#include "faults/plan.h"
#include "ref/format.h"
#include "traces/explore.h"
#include "traces/workload.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- The tables of the encoding ---- */

static char name255[256], name256[257];

/* Path components: 4 bits each. */
static const char *const alphabet[16] = {
	"d0", "d1", "d2", "d3", "f0", "f1", "f2", "f3", "l0", "l1", "l2", ".", "..", "", name255,
	name256,
};

static const char *const xattr_names[8] = {
	"user.a", "user.b", "user.tag", "user.checksum", "trusted.t", "security.capability",
	"", "user.x0",
};

static const uint32_t modes[8] = { 0755, 0644, 0700, 0777, 01777, 02755, 04755, 0 };
static const uint32_t ids[4] = { 0, 1000, 65534, UINT32_MAX };

static const struct timespec times_table[8] = {
	{ 0, WL_UTIME_OMIT }, { 0, 0 }, { 1, 500000000 }, { -2, 750000000 },
	{ 1700000000, 0 }, { 2147483648, 1 }, { 4102444800, 999999999 }, { 86400, 0 },
};

/* The kinds an op byte selects (b % NKINDS): every kind but mark and crash,
 * which the explorer does not run; but the SUBVOL_BYTES byte values from
 * SUBVOL_BYTE0 (248..251, which b % NKINDS mapped to utimes, fsync,
 * fdatasync and sync before) select the subvolume operations, and
 * QUOTA_BYTE (247, chown's before) quota-enable, and the REFLINK_BYTES
 * from REFLINK_BYTE0 (244..246) clone, clone-range and dedupe: values no
 * op byte of the regression corpus or the seeds had, so those decode as
 * before. */
#define NKINDS 18
_Static_assert(WL_SYNC == NKINDS - 1, "the op byte selects WL_MKDIR..WL_SYNC");
#define SUBVOL_BYTES 4
#define SUBVOL_BYTE0 248
_Static_assert(WL_SUBVOL_SYNC - WL_SUBVOL_CREATE == SUBVOL_BYTES - 1,
	       "bytes 248..251 select WL_SUBVOL_CREATE..WL_SUBVOL_SYNC");
#define QUOTA_BYTE 247
_Static_assert(QUOTA_BYTE + 1 == SUBVOL_BYTE0, "247 selects WL_QUOTA_ENABLE");
#define REFLINK_BYTES 3
#define REFLINK_BYTE0 244
_Static_assert(WL_DEDUPE - WL_CLONE == REFLINK_BYTES - 1 && REFLINK_BYTE0 + REFLINK_BYTES == QUOTA_BYTE,
	       "bytes 244..246 select WL_CLONE..WL_DEDUPE");
/* A reflink's offsets are blocks of 4 KiB (below MAX_OFF), now and then
 * one byte off; its length a count of blocks (0: to the source's end) or
 * one byte short. */
#define RL_BLOCK 4096u

/* The kind op byte b selects. */
static enum wl_kind byte_kind(unsigned b)
{
	if (b == QUOTA_BYTE)
		return WL_QUOTA_ENABLE;
	if (b - REFLINK_BYTE0 < REFLINK_BYTES)
		return (enum wl_kind)(WL_CLONE + b - REFLINK_BYTE0);
	if (b - SUBVOL_BYTE0 < SUBVOL_BYTES)
		return (enum wl_kind)(WL_SUBVOL_CREATE + b - SUBVOL_BYTE0);
	return (enum wl_kind)(b % NKINDS);
}

/* The op byte that selects kind k, or -1 (mark, crash: never decoded). */
static int kind_byte(enum wl_kind k)
{
	if (k == WL_QUOTA_ENABLE)
		return QUOTA_BYTE;
	if (k >= WL_SUBVOL_CREATE && k <= WL_SUBVOL_SYNC)
		return SUBVOL_BYTE0 + (int)(k - WL_SUBVOL_CREATE);
	if (k >= WL_CLONE && k <= WL_DEDUPE)
		return REFLINK_BYTE0 + (int)(k - WL_CLONE);
	return k <= WL_SYNC ? (int)k : -1;
}

/* Whether kind k has a path (encoded after the op byte). */
static bool has_path(enum wl_kind k)
{
	return k != WL_SYNC && k != WL_SUBVOL_SYNC && k != WL_QUOTA_ENABLE;
}

/* sim fault kinds a plan line may add: those whose damage checksums can
 * catch or that fail requests (a lost or misdirected write could make a
 * correct file system show old data, which no checksum can tell). */
static const char *const sim_kinds[6] = {
	"flip-on-write", "flip-at-rest", "flip-on-read", "latent", "flaky", "device-loss",
};

/* Bounds that keep a run short: every crash state's tree is walked and each
 * file hashed (its data read; holes and preallocated ranges fed as zeros
 * unread, but a file's last MiB is read whole), so data costs in every state. */
#define MAX_OPS 16
#define MAX_FAULTS 2
#define MAX_OFF (UINT64_C(1) << 20)  /* offsets below 1 MiB */
#define MAX_LEN (UINT64_C(128) << 10) /* lengths up to 128 KiB */
#define MAX_DATA (UINT64_C(1) << 20)  /* bytes written by all writes together */
#define MAX_VLEN 65537u
/* The special offset: 256 bytes below the largest file offset (2^63 - 1),
 * where a write or fallocate of up to 255 bytes makes a file of nearly 2^63
 * bytes (the crash judge skips its holes: ref_next_data) and a longer one
 * fails (EINVAL, EFBIG). */
#define BIG_OFF ((UINT64_C(1) << 63) - 256)
#define DISK_SIZE (UINT64_C(256) << 20)

/* ---- Decoding ---- */

struct reader {
	const uint8_t *p;
	size_t len, pos;
};

/* The next n bytes as a little-endian number; missing bytes read as 0. */
static uint64_t take(struct reader *r, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++, r->pos++)
		if (r->pos < r->len)
			v |= (uint64_t)r->p[r->pos] << (8 * i);
	return v;
}

/* A path: byte 0 bits 0-1 the number of components less one, bit 2 a
 * trailing slash, bit 3 the root alone, bit 4 relative (symlink targets
 * only); bytes 1-2 four 4-bit components, the first in the low bits. */
static void take_path(struct reader *r, bool may_be_relative, char *out, size_t outlen)
{
	unsigned b = (unsigned)take(r, 1), names = (unsigned)take(r, 2);
	if (b & 8) {
		snprintf(out, outlen, "/");
		return;
	}
	size_t o = 0;
	unsigned n = (b & 3) + 1;
	bool rel = may_be_relative && (b & 16);
	for (unsigned i = 0; i < n; i++) {
		const char *c = alphabet[(names >> (4 * i)) & 15];
		o += (size_t)snprintf(out + o, outlen - o, "%s%s", rel && i == 0 ? "" : "/", c);
	}
	if (b & 4)
		snprintf(out + o, outlen - o, "/");
	if (!out[0]) /* a relative target of one empty component */
		snprintf(out, outlen, ".");
}

static int seterr(char *err, size_t errlen, int e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int seterr(char *err, size_t errlen, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -e;
}

/* Appends "fmt" to the plan text. */
static int plan_add(char **text, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int plan_add(char **text, size_t *len, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	char *p = realloc(*text, *len + (size_t)n + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p + *len, line, (size_t)n + 1);
	*text = p;
	*len += (size_t)n;
	return 0;
}

static int decode_faults(struct reader *r, unsigned nfaults, struct fzw_case *c, char *err,
			 size_t errlen)
{
	size_t npoints, len = 0;
	const struct fault_point *pts = fault_points(&npoints);
	bool used[64] = { false };
	for (unsigned i = 0; i < nfaults; i++) {
		unsigned what = (unsigned)(take(r, 1) % (npoints + 6));
		unsigned when = (unsigned)take(r, 1), count = (unsigned)take(r, 1) % 4;
		unsigned arg = (unsigned)take(r, 1);
		int e = 0;
		if (what < npoints) {
			if (used[what]) /* a point appears at most once in a plan */
				continue;
			used[what] = true;
			const struct fault_point *fp = &pts[what];
			unsigned ne = 0;
			while (ne < FAULT_MAX_ERRNOS && fp->errnos[ne])
				ne++;
			const char *en = fault_errno_name(fp->errnos[arg % (ne ? ne : 1)]);
			char trig[32];
			if (when & 0x80)
				snprintf(trig, sizeof(trig), " p=%.6f", (double)(when & 0x7f) / 127);
			else
				snprintf(trig, sizeof(trig), " nth=%u", (when & 0x1f) + 1);
			char cnt[16] = "";
			if (count)
				snprintf(cnt, sizeof(cnt), " count=%u", count);
			e = plan_add(&c->plan_text, &len, "%s%s%s errno=%s\n", fp->name, trig, cnt,
				     en ? en : "EIO");
		} else {
			const char *k = sim_kinds[what - npoints];
			unsigned disk = arg % c->ndisks, bits = ((arg >> 4) & 3) + 1;
			char cnt[16] = "";
			if (count)
				snprintf(cnt, sizeof(cnt), ",count=%u", count);
			e = plan_add(&c->plan_text, &len, "sim %s,disk=%u,p=%.6f%s%s\n", k, disk,
				     (double)((when & 0x7f) + 1) / 128, cnt,
				     !strncmp(k, "flip", 4) ? (bits == 1 ? "" : bits == 2 ? ",bits=2"
								     : bits == 3 ? ",bits=3"
										 : ",bits=4")
							    : "");
		}
		if (e)
			return seterr(err, errlen, ENOMEM, "out of memory");
	}
	return 0;
}

int fzw_decode(const uint8_t *data, size_t len, struct fzw_case *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	if (!name255[0]) {
		memset(name255, 'n', 255);
		memset(name256, 'n', 256);
	}
	struct reader r = { data, len, 0 };
	c->seed = take(&r, 1) + 1;
	unsigned b = (unsigned)take(&r, 1);
	c->max_subset = b & 3;
	c->samples = (b >> 2) & 7;
	c->torn = (b >> 5) & 3;
	b = (unsigned)take(&r, 1);
	c->nodesize = b & 1 ? 4096 : 16384;
	c->ndisks = b & 2 ? 2 : 1;
	unsigned skip = (unsigned)take(&r, 1);
	unsigned nfaults = (unsigned)(take(&r, 1) % (MAX_FAULTS + 1));
	c->w = calloc(1, sizeof(*c->w));
	if (!c->w)
		return seterr(err, errlen, ENOMEM, "out of memory");
	int e = decode_faults(&r, nfaults, c, err, errlen);
	if (e)
		return e;
	if (c->plan_text) {
		char perr[256];
		if (fault_plan_parse_text("decoded-plan", c->plan_text, strlen(c->plan_text), &c->plan,
					  perr, sizeof(perr)))
			return seterr(err, errlen, EINVAL,
				      "the decoder wrote a plan its parser refuses: %s", perr);
	}
	uint64_t data_left = MAX_DATA;
	char path[1200], path2[1200], name[300];
	uint8_t *value = NULL;
	while (r.pos < r.len && c->w->n < MAX_OPS) {
		unsigned kb = (unsigned)take(&r, 1);
		struct wl_op op = { .kind = byte_kind(kb), .line = c->w->n + 1 };
		if (has_path(op.kind)) {
			op.path = path;
			take_path(&r, false, path, sizeof(path));
		}
		switch (op.kind) {
		case WL_MKDIR:
		case WL_CREATE: op.mode = modes[take(&r, 1) % 8]; break;
		case WL_WRITE:
		case WL_FALLOCATE: {
			uint64_t off = take(&r, 4), l = take(&r, 3);
			op.off = off == 0xffffffff ? BIG_OFF : off % MAX_OFF;
			op.len = l % (MAX_LEN + 1);
			if (op.kind == WL_WRITE) {
				op.seed = take(&r, 2);
				if (op.len > data_left)
					op.len = data_left;
				data_left -= op.len;
			} else {
				unsigned m = (unsigned)take(&r, 1) % 3;
				op.flags = m == 0 ? 0 : m == 1 ? WL_FALLOC_KEEP_SIZE
							 : WL_FALLOC_PUNCH_HOLE | WL_FALLOC_KEEP_SIZE;
			}
			break;
		}
		case WL_TRUNCATE: {
			uint64_t s = take(&r, 4);
			op.size = s == 0xffffffff ? UINT64_C(1) << 63 : s % (MAX_OFF + MAX_LEN);
			break;
		}
		case WL_LINK:
		case WL_RENAME:
			op.path2 = path2;
			take_path(&r, false, path2, sizeof(path2));
			if (op.kind == WL_RENAME) {
				unsigned m = (unsigned)take(&r, 1) % 3;
				op.flags = m == 0 ? 0 : m == 1 ? WL_RENAME_NOREPLACE : WL_RENAME_EXCHANGE;
			}
			break;
		case WL_SNAPSHOT:
			op.path2 = path2;
			take_path(&r, false, path2, sizeof(path2));
			op.flags = take(&r, 1) % 2 ? WL_SNAP_RDONLY : 0;
			break;
		case WL_CLONE:
		case WL_CLONE_RANGE:
		case WL_DEDUPE:
			op.path2 = path2;
			take_path(&r, false, path2, sizeof(path2));
			if (op.kind != WL_CLONE) {
				/* 2 bytes each: a block number (its top bit: one byte on) */
				uint64_t so = take(&r, 2), l = take(&r, 2), d = take(&r, 2);
				uint64_t blocks = MAX_OFF / RL_BLOCK;
				op.off = (so & 0x7fff) % blocks * RL_BLOCK + (so >> 15);
				op.off2 = (d & 0x7fff) % blocks * RL_BLOCK + (d >> 15);
				op.len = (l & 0x7fff) % 256 * RL_BLOCK;
				if ((l >> 15) && op.len)
					op.len--;
			}
			break;
		case WL_SYMLINK:
			op.path2 = path2;
			take_path(&r, true, path2, sizeof(path2));
			break;
		case WL_SETXATTR:
		case WL_REMOVEXATTR:
			snprintf(name, sizeof(name), "%s", xattr_names[take(&r, 1) % 8]);
			if ((unsigned)take(&r, 1) % 8 == 7) /* a 255-byte name: the longest */
				snprintf(name, sizeof(name), "user.%.250s", name255);
			op.name = name;
			if (op.kind == WL_SETXATTR) {
				uint64_t vl = take(&r, 3);
				op.vlen = (size_t)(vl > MAX_VLEN ? MAX_VLEN : vl);
				unsigned vs = (unsigned)take(&r, 1);
				free(value);
				value = malloc(op.vlen ? op.vlen : 1);
				if (!value)
					return seterr(err, errlen, ENOMEM, "out of memory");
				wl_content(vs, 0, value, op.vlen);
				op.value = value;
			}
			break;
		case WL_CHMOD: op.mode = (uint32_t)take(&r, 2) & 07777; break;
		case WL_CHOWN:
			op.uid = ids[take(&r, 1) % 4];
			op.gid = ids[take(&r, 1) % 4];
			break;
		case WL_UTIMES:
			op.atime = times_table[take(&r, 1) % 8];
			op.mtime = times_table[take(&r, 1) % 8];
			break;
		default: break; /* unlink, rmdir, fsync, fdatasync, subvol-create,
				 * subvol-delete: the path alone; sync, subvol-sync,
				 * quota-enable: nothing */
		}
		const char *why = wl_op_problem(&op);
		int a = why ? 0 : wl_append(c->w, &op);
		if (why) {
			free(value);
			return seterr(err, errlen, EINVAL, "the decoder made an invalid %s: %s",
				      wl_kind_name(op.kind), why);
		}
		if (a) {
			free(value);
			return seterr(err, errlen, -a, "out of memory");
		}
	}
	free(value);
	c->skip_ops = skip % (c->w->n + 1);
	return 0;
}

void fzw_case_free(struct fzw_case *c)
{
	if (c->w) {
		wl_free(c->w);
		free(c->w);
	}
	fault_plan_free(c->plan);
	free(c->plan_text);
	memset(c, 0, sizeof(*c));
}

void fzw_explore_opts(const struct fzw_case *c, struct explore_opts *o)
{
	memset(o, 0, sizeof(*o));
	explore_defaults(o);
	o->seed = c->seed;
	o->max_subset = c->max_subset;
	o->samples = c->samples;
	o->torn = c->torn;
	o->nodesize = c->nodesize;
	o->ndisks = c->ndisks;
	o->disk_size = DISK_SIZE;
	if (c->ndisks > 1)
		o->data_profile = o->meta_profile = BTRFS_BLOCK_GROUP_RAID1;
	o->skip_ops = c->skip_ops;
	o->faults = c->plan;
	o->stop_first = true;
	o->minimize_picks = false;
}

/* ---- Encoding (seeds) ---- */

static int put(struct fzi_out *o, uint64_t v, unsigned n)
{
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 256;
		while (cap < o->len + n)
			cap *= 2;
		uint8_t *p = realloc(o->p, cap);
		if (!p)
			return -ENOMEM;
		o->p = p;
		o->cap = cap;
	}
	for (unsigned i = 0; i < n; i++)
		o->p[o->len++] = (uint8_t)(v >> (8 * i));
	return 0;
}

/* Names outside the alphabet get the alphabet's names l2, l1, ..., d0 in the
 * order they are first met (the same name always the same one). */
struct namemap {
	char *from[11];
	size_t n;
};

static int map_name(struct namemap *nm, const char *s, size_t len)
{
	for (int a = 0; a < 16; a++)
		if (strlen(alphabet[a]) == len && !memcmp(alphabet[a], s, len))
			return a;
	/* From the end of d0..l2, so that a workload mixing both kinds of names
	 * (rare) seldom gets two names made one. */
	for (size_t i = 0; i < nm->n; i++)
		if (strlen(nm->from[i]) == len && !memcmp(nm->from[i], s, len))
			return 10 - (int)i;
	if (nm->n == 11 || !(nm->from[nm->n] = strndup(s, len)))
		return -1;
	return 10 - (int)nm->n++;
}

/* The encoding of a path, or -1 when it has none (more than four
 * components, more than eleven distinct names). */
static int64_t encode_path(struct namemap *nm, const char *path, bool may_be_relative)
{
	bool rel = path[0] != '/';
	if (rel && !may_be_relative)
		return -1;
	if (!strcmp(path, "/"))
		return 8;
	const char *s = rel ? path : path + 1;
	size_t len = strlen(s);
	bool trailing = len && s[len - 1] == '/';
	if (trailing)
		len--;
	unsigned n = 0, names = 0;
	for (size_t i = 0; i <= len; n++) {
		size_t e = i;
		while (e < len && s[e] != '/')
			e++;
		int k = n < 4 ? map_name(nm, s + i, e - i) : -1;
		if (k < 0)
			return -1;
		names |= (unsigned)k << (4 * n);
		i = e + 1;
	}
	return (int64_t)((n - 1) | (trailing ? 4u : 0) | (rel ? 16u : 0)) | (int64_t)names << 8;
}

static int index_of_time(struct timespec t)
{
	for (int i = 0; i < 8; i++)
		if (times_table[i].tv_sec == t.tv_sec && times_table[i].tv_nsec == t.tv_nsec)
			return i;
	return t.tv_nsec == WL_UTIME_OMIT ? 0 : 4;
}

static unsigned index_of_u32(const uint32_t *t, unsigned n, uint32_t v, unsigned dflt)
{
	for (unsigned i = 0; i < n; i++)
		if (t[i] == v)
			return i;
	return dflt;
}

/* One line of a canonical plan as a fault line of the encoding, or false. */
static bool encode_fault(const char *line, unsigned ndisks, uint8_t out[4])
{
	size_t npoints;
	const struct fault_point *pts = fault_points(&npoints);
	char name[64];
	if (sscanf(line, "%63s", name) != 1)
		return false;
	const char *nth = strstr(line, " nth="), *p = strstr(line, "p="), *cnt = strstr(line, "count=");
	unsigned count = cnt ? (unsigned)strtoul(cnt + 6, NULL, 10) % 4 : 0;
	if (!strcmp(name, "sim")) {
		for (unsigned k = 0; k < 6; k++) {
			size_t kl = strlen(sim_kinds[k]);
			if (strncmp(line + 4, sim_kinds[k], kl) || (line[4 + kl] != ',' && line[4 + kl]))
				continue;
			const char *d = strstr(line, "disk="), *bits = strstr(line, "bits=");
			unsigned disk = d ? (unsigned)strtoul(d + 5, NULL, 10) % ndisks : 0;
			unsigned b = bits ? ((unsigned)strtoul(bits + 5, NULL, 10) - 1) & 3 : 0;
			double prob = p ? strtod(p + 2, NULL) : 1;
			int q = (int)(prob * 128 + 0.5) - 1;
			out[0] = (uint8_t)(npoints + k);
			out[1] = (uint8_t)(q < 0 ? 0 : q > 127 ? 127 : q);
			out[2] = (uint8_t)count;
			out[3] = (uint8_t)(disk | b << 4);
			return true;
		}
		return false;
	}
	for (size_t i = 0; i < npoints; i++) {
		if (strcmp(pts[i].name, name))
			continue;
		const char *en = strstr(line, "errno=");
		unsigned ei = 0;
		for (unsigned k = 0; en && k < FAULT_MAX_ERRNOS && pts[i].errnos[k]; k++) {
			const char *nm = fault_errno_name(pts[i].errnos[k]);
			if (nm && !strncmp(en + 6, nm, strlen(nm)))
				ei = k;
		}
		out[0] = (uint8_t)i;
		if (nth)
			out[1] = (uint8_t)((strtoul(nth + 5, NULL, 10) - 1) & 0x1f);
		else
			out[1] = (uint8_t)(0x80 | (int)((p ? strtod(p + 2, NULL) : 1) * 127 + 0.5));
		out[2] = (uint8_t)count;
		out[3] = (uint8_t)ei;
		return true;
	}
	return false;
}

int fzw_encode(const struct wl_workload *w, const char *plan, const uint8_t hdr[4],
	       struct fzi_out *o, size_t *encoded, size_t *faults)
{
	if (!name255[0]) {
		memset(name255, 'n', 255);
		memset(name256, 'n', 256);
	}
	*encoded = *faults = 0;
	uint8_t lines[MAX_FAULTS][4];
	unsigned ndisks = hdr[2] & 2 ? 2 : 1;
	for (const char *l = plan; l && *l && *faults < MAX_FAULTS;) {
		size_t len = strcspn(l, "\n");
		char line[256];
		snprintf(line, sizeof(line), "%.*s", (int)(len < 255 ? len : 255), l);
		if (encode_fault(line, ndisks, lines[*faults]))
			(*faults)++;
		l += len + (l[len] == '\n');
	}
	if (put(o, hdr[0], 1) || put(o, hdr[1], 1) || put(o, hdr[2], 1) || put(o, hdr[3], 1) ||
	    put(o, *faults, 1))
		return -ENOMEM;
	for (size_t i = 0; i < *faults; i++)
		if (put(o, lines[i][0], 1) || put(o, lines[i][1], 1) || put(o, lines[i][2], 1) ||
		    put(o, lines[i][3], 1))
			return -ENOMEM;
	struct namemap nm = { .n = 0 };
	int ret = 0;
	for (size_t i = 0; i < w->n && *encoded < MAX_OPS && !ret; i++) {
		const struct wl_op *op = &w->ops[i];
		int kb = kind_byte(op->kind);
		if (kb < 0)
			continue;
		bool nopath = !has_path(op->kind);
		int64_t p = nopath ? 8 : encode_path(&nm, op->path, false), p2 = 0;
		bool reflink = op->kind == WL_CLONE || op->kind == WL_CLONE_RANGE ||
			       op->kind == WL_DEDUPE;
		if (op->kind == WL_LINK || op->kind == WL_RENAME || op->kind == WL_SNAPSHOT || reflink)
			p2 = encode_path(&nm, op->path2, false);
		/* a range the encoding holds: offsets of whole blocks (or one byte
		 * on) below MAX_OFF, a length of up to 255 blocks (or one short) */
		bool rl_ok = op->kind == WL_CLONE ||
			     (op->off % RL_BLOCK <= 1 && op->off / RL_BLOCK < MAX_OFF / RL_BLOCK &&
			      op->off2 % RL_BLOCK <= 1 && op->off2 / RL_BLOCK < MAX_OFF / RL_BLOCK &&
			      (op->len + 1) / RL_BLOCK < 256 &&
			      (op->len % RL_BLOCK == 0 || op->len % RL_BLOCK == RL_BLOCK - 1));
		if (op->kind == WL_SYMLINK)
			p2 = encode_path(&nm, op->path2, true);
		int xn = -1;
		if (op->kind == WL_SETXATTR || op->kind == WL_REMOVEXATTR)
			for (int k = 0; k < 8 && xn < 0; k++)
				if (!strcmp(op->name, xattr_names[k]))
					xn = k;
		if (p < 0 || p2 < 0 ||
		    ((op->kind == WL_SETXATTR || op->kind == WL_REMOVEXATTR) && xn < 0) ||
		    ((op->kind == WL_WRITE || op->kind == WL_FALLOCATE) &&
		     ((op->off >= MAX_OFF && op->off != BIG_OFF) || op->len > MAX_LEN)) ||
		    (op->kind == WL_TRUNCATE && op->size >= MAX_OFF + MAX_LEN) || (reflink && !rl_ok))
			continue;
		int e = put(o, (uint64_t)kb, 1) || (!nopath && put(o, (uint64_t)p, 3));
		switch (op->kind) {
		case WL_MKDIR:
		case WL_CREATE: e = e || put(o, index_of_u32(modes, 8, op->mode, 0), 1); break;
		case WL_WRITE:
			e = e || put(o, op->off == BIG_OFF ? 0xffffffff : op->off, 4) ||
			    put(o, op->len, 3) || put(o, op->seed, 2);
			break;
		case WL_FALLOCATE:
			e = e || put(o, op->off == BIG_OFF ? 0xffffffff : op->off, 4) ||
			    put(o, op->len, 3) ||
			    put(o, op->flags & WL_FALLOC_PUNCH_HOLE ? 2 : op->flags ? 1 : 0, 1);
			break;
		case WL_TRUNCATE: e = e || put(o, op->size, 4); break;
		case WL_LINK:
		case WL_SYMLINK: e = e || put(o, (uint64_t)p2, 3); break;
		case WL_RENAME:
			e = e || put(o, (uint64_t)p2, 3) ||
			    put(o, op->flags & WL_RENAME_EXCHANGE ? 2 : op->flags ? 1 : 0, 1);
			break;
		case WL_SETXATTR:
			e = e || put(o, (uint64_t)xn, 1) || put(o, 0, 1) ||
			    put(o, op->vlen > MAX_VLEN ? MAX_VLEN : op->vlen, 3) ||
			    put(o, op->vlen ? op->value[0] : 0, 1);
			break;
		case WL_REMOVEXATTR: e = e || put(o, (uint64_t)xn, 1) || put(o, 0, 1); break;
		case WL_SNAPSHOT:
			e = e || put(o, (uint64_t)p2, 3) || put(o, op->flags & WL_SNAP_RDONLY ? 1 : 0, 1);
			break;
		case WL_CLONE: e = e || put(o, (uint64_t)p2, 3); break;
		case WL_CLONE_RANGE:
		case WL_DEDUPE: {
			uint64_t lb = (op->len + 1) / RL_BLOCK | (op->len % RL_BLOCK ? 0x8000 : 0);
			e = e || put(o, (uint64_t)p2, 3) ||
			    put(o, op->off / RL_BLOCK | (op->off % RL_BLOCK) << 15, 2) ||
			    put(o, lb, 2) || put(o, op->off2 / RL_BLOCK | (op->off2 % RL_BLOCK) << 15, 2);
			break;
		}
		case WL_CHMOD: e = e || put(o, op->mode, 2); break;
		case WL_CHOWN:
			e = e || put(o, index_of_u32(ids, 4, op->uid, 0), 1) ||
			    put(o, index_of_u32(ids, 4, op->gid, 0), 1);
			break;
		case WL_UTIMES:
			e = e || put(o, (uint64_t)index_of_time(op->atime), 1) ||
			    put(o, (uint64_t)index_of_time(op->mtime), 1);
			break;
		default: break;
		}
		if (e)
			ret = -ENOMEM;
		else
			(*encoded)++;
	}
	for (size_t i = 0; i < nm.n; i++)
		free(nm.from[i]);
	return ret;
}

/* ---- One input ---- */

/* The quoted text after `key` in s ("" when absent), at most len - 1 bytes. */
static void quoted_after(const char *s, const char *key, char *out, size_t len)
{
	const char *p = strstr(s, key);
	out[0] = 0;
	if (!p)
		return;
	p += strlen(key);
	size_t n = strcspn(p, "\"");
	snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), p);
}

/*
 * A violation's class, for deduplicating findings (mk/fuzz-triage.sh hashes
 * it): the verdict, and for the oracle the first field of the manifest line
 * that differs (traces/README.md: PATH TYPE PERM UID GID NLINK SIZE CONTENT
 * then xattrs), or a missing or unexpected entry.
 */
static void violation_class(const char *v, char *out, size_t len)
{
	static const char *const verdicts[] = { "oracle", "mount", "check", "read" };
	const char *verdict = "state";
	for (size_t i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]); i++) {
		char key[16];
		snprintf(key, sizeof(key), ": %s: ", verdicts[i]);
		if (strstr(v, key)) {
			verdict = verdicts[i];
			break;
		}
	}
	if (strcmp(verdict, "oracle")) {
		snprintf(out, len, "%s", verdict);
		return;
	}
	if (strstr(v, ": expected, missing")) {
		snprintf(out, len, "oracle missing-entry");
		return;
	}
	if (strstr(v, ": unexpected \"")) {
		snprintf(out, len, "oracle unexpected-entry");
		return;
	}
	static const char *const fields[] = { "path", "type", "perm", "uid", "gid", "nlink", "size",
					      "content" };
	char want[1024], got[1024];
	quoted_after(v, "expected \"", want, sizeof(want));
	quoted_after(v, "found \"", got, sizeof(got));
	const char *a = want, *b = got;
	for (size_t i = 0; *a || *b; i++) {
		size_t la = strcspn(a, " "), lb = strcspn(b, " ");
		if (la != lb || memcmp(a, b, la)) {
			snprintf(out, len, "oracle %s", i < 8 ? fields[i] : "xattrs");
			return;
		}
		a += la + (a[la] == ' ');
		b += lb + (b[lb] == ' ');
	}
	snprintf(out, len, "oracle");
}

static int workload_init(char *err, size_t errlen)
{
	return fuzz_process_init(err, errlen);
}

static int workload_one(const uint8_t *data, size_t len, FILE *log)
{
	struct fzw_case c;
	char err[1024];
	int r = fzw_decode(data, len, &c, err, sizeof(err));
	if (r == -EINVAL)
		fuzz_violation("workload: %s", err);
	if (r) {
		fuzz_log(log, "decoding: %s", err);
		fzw_case_free(&c);
		return 0;
	}
	if (log) {
		fuzz_log(log, "seed %llu, max-subset %u, samples %u, torn %u, nodesize %u, %u disk%s, "
			      "crash points from op %zu",
			 (unsigned long long)c.seed, c.max_subset, c.samples, c.torn, c.nodesize,
			 c.ndisks, c.ndisks > 1 ? "s (RAID1)" : "", c.skip_ops);
		if (c.plan_text)
			fprintf(log, "fault plan:\n%s", c.plan_text);
		fprintf(log, "workload:\n");
		wl_print(log, c.w);
	}
	struct explore_opts o;
	fzw_explore_opts(&c, &o);
	struct explore_result res;
	r = explore_run(c.w, &o, &res, err, sizeof(err));
	free(res.results);
	if (r == 1) {
		char cls[64];
		violation_class(res.violation, cls, sizeof(cls));
		fuzz_violation("workload [%s]: %s", cls, res.violation);
	}
	if (r < 0 && r != -ENOMEM) {
		/* "the model cannot follow: OP ...": the operation is the class */
		const char *m = strstr(err, "cannot follow: ");
		char cls[64] = "explore";
		if (m)
			snprintf(cls, sizeof(cls), "model %.*s", (int)strcspn(m + 15, " "), m + 15);
		else if (strstr(err, "final commit"))
			snprintf(cls, sizeof(cls), "final commit");
		else if (strstr(err, "replaying IO"))
			snprintf(cls, sizeof(cls), "replay");
		fuzz_violation("workload [%s]: the exploration failed: %s", cls, err);
	}
	fuzz_log(log, "%zu ops, %zu crash points, %zu states, %zu detected%s%s", res.ops,
		 res.crash_points, res.states, res.detected, r ? ": " : "", r ? err : "");
	fzw_case_free(&c);
	return 0;
}

const struct fuzz_harness fuzz_harness_workload = {
	.name = "workload",
	.summary = "a decoded workload and fault plan run on ref, every crash state judged",
	.init = workload_init,
	.one = workload_one,
};
