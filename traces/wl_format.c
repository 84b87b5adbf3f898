/*
 * wl_format.c - prints operations back in the workload language, so that
 * the parser reads the same op again: words that the lexer would split or
 * reinterpret are double-quoted with escapes, sizes get the largest exact
 * K/M/G/T suffix, optional arguments at their default are left out.
 */
#include "ref/compress.h"
#include "wl_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void wl_put(struct wl_out *o, const char *s, size_t n)
{
	if (o->pos + 1 < o->cap) {
		size_t room = o->cap - 1 - o->pos;
		memcpy(o->buf + o->pos, s, n < room ? n : room);
	}
	o->pos += n;
}

void wl_putf(struct wl_out *o, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		wl_put(o, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

void wl_out_end(struct wl_out *o)
{
	if (o->cap)
		o->buf[o->pos < o->cap ? o->pos : o->cap - 1] = 0;
}

void wl_escape(struct wl_out *o, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t c = b[i];
		if (c == '"' || c == '\\')
			wl_putf(o, "\\%c", c);
		else if (c == '\n')
			wl_put(o, "\\n", 2);
		else if (c == '\t')
			wl_put(o, "\\t", 2);
		else if (c == '\r')
			wl_put(o, "\\r", 2);
		else if (c < 0x20 || c >= 0x7f)
			wl_putf(o, "\\x%02x", c);
		else
			wl_put(o, (const char *)&c, 1);
	}
}

/* Whether s can be written as a bare word and read back the same. */
static bool bare_ok(const char *s, size_t n)
{
	if (!n || s[0] == '=')
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= 0x20 || c >= 0x7f || c == '"' || c == '#')
			return false;
	}
	return true;
}

static void put_word(struct wl_out *o, const char *s)
{
	size_t n = strlen(s);
	if (bare_ok(s, n)) {
		wl_put(o, s, n);
		return;
	}
	wl_put(o, "\"", 1);
	wl_escape(o, (const uint8_t *)s, n);
	wl_put(o, "\"", 1);
}

/* An xattr value: "" when empty, a quoted string when it is text, else 0x hex. */
static void put_value(struct wl_out *o, const uint8_t *v, size_t n)
{
	bool text = true;
	for (size_t i = 0; i < n && text; i++)
		text = (v[i] >= 0x20 && v[i] < 0x7f) || v[i] == '\n' || v[i] == '\t';
	if (text) {
		wl_put(o, "\"", 1);
		wl_escape(o, v, n);
		wl_put(o, "\"", 1);
		return;
	}
	wl_put(o, "0x", 2);
	for (size_t i = 0; i < n; i++)
		wl_putf(o, "%02x", v[i]);
}

/* 0x and two hex digits a byte, always (a send stream; "" when empty). */
static void put_hex(struct wl_out *o, const uint8_t *v, size_t n)
{
	static const char digit[] = "0123456789abcdef";
	if (!n) {
		wl_put(o, "\"\"", 2);
		return;
	}
	wl_put(o, "0x", 2);
	char buf[512];
	for (size_t i = 0; i < n;) {
		size_t k = 0;
		for (; i < n && k < sizeof(buf); i++, k += 2) {
			buf[k] = digit[v[i] >> 4];
			buf[k + 1] = digit[v[i] & 15];
		}
		wl_put(o, buf, k);
	}
}

static void put_size(struct wl_out *o, uint64_t v)
{
	static const char suffix[] = "TGMK";
	for (int i = 0; v && i < 4; i++) {
		unsigned shift = 10 * (4 - i);
		if (!(v & ((UINT64_C(1) << shift) - 1))) {
			wl_putf(o, "%" PRIu64 "%c", v >> shift, suffix[i]);
			return;
		}
	}
	wl_putf(o, "%" PRIu64, v);
}

static void put_id(struct wl_out *o, uint32_t id)
{
	if (id == UINT32_MAX)
		wl_put(o, "-1", 2);
	else
		wl_putf(o, "%" PRIu32, id);
}

/* SECONDS[.FRACTION], the value being tv_sec + tv_nsec / 1e9; or omit. */
static void put_time(struct wl_out *o, const struct timespec *t)
{
	if (t->tv_nsec == WL_UTIME_OMIT) {
		wl_put(o, "omit", 4);
		return;
	}
	if (!t->tv_nsec) {
		wl_putf(o, "%lld", (long long)t->tv_sec);
		return;
	}
	long long sec = t->tv_sec;
	long ns = t->tv_nsec;
	if (sec < 0) { /* -1.25 is tv_sec -2, tv_nsec 750000000 */
		wl_put(o, "-", 1);
		sec = -(sec + 1);
		ns = 1000000000L - ns;
	}
	char frac[16];
	snprintf(frac, sizeof(frac), "%09ld", ns);
	size_t n = 9;
	while (frac[n - 1] == '0')
		n--;
	frac[n] = 0;
	wl_putf(o, "%lld.%s", sec, frac);
}

static void put_arg(struct wl_out *o, const struct wl_op *op, enum wl_arg a)
{
	switch (a) {
	case WA_PATH: put_word(o, op->path); break;
	case WA_PATH2:
	case WA_TARGET: put_word(o, op->path2); break;
	case WA_XNAME:
	case WA_MARK: put_word(o, op->name); break;
	case WA_XVALUE:
	case WA_DATA: put_value(o, op->value, op->vlen); break;
	case WA_STREAM: put_hex(o, op->value, op->vlen); break;
	case WA_MODE: wl_putf(o, "%04" PRIo32, op->mode); break;
	case WA_OFF: put_size(o, op->off); break;
	case WA_LEN: put_size(o, op->len); break;
	case WA_OFF2: put_size(o, op->off2); break;
	case WA_SIZE: put_size(o, op->size); break;
	case WA_DEVID: wl_putf(o, "%" PRIu64, op->devid); break;
	case WA_SEED:
		if (op->flags & WL_WRITE_TEXT)
			wl_putf(o, "t%" PRIu64, op->seed);
		else
			wl_putf(o, "%" PRIu64, op->seed);
		break;
	case WA_FALLOC:
		wl_putf(o, "%s",
			op->flags & WL_FALLOC_PUNCH_HOLE	? "punch-hole"
			: op->flags == WL_FALLOC_ZERO_RANGE	? "zero-range"
			: op->flags & WL_FALLOC_ZERO_RANGE	? "zero-range-keep-size"
								: "keep-size");
		break;
	case WA_RENAME:
		wl_putf(o, "%s", op->flags & WL_RENAME_EXCHANGE ? "exchange" : "noreplace");
		break;
	case WA_SNAP: wl_put(o, "ro", 2); break;
	case WA_DEFRAG:
		wl_putf(o, "%s", op->flags == 1 ? "zlib" : op->flags == 2 ? "lzo" : "zstd");
		break;
	case WA_WSYNC: wl_putf(o, "%s", op->flags & WL_WRITE_DSYNC ? "dsync" : "sync"); break;
	case WA_UID: put_id(o, op->uid); break;
	case WA_GID: put_id(o, op->gid); break;
	case WA_ATIME: put_time(o, &op->atime); break;
	case WA_MTIME: put_time(o, &op->mtime); break;
	}
}

/* Whether an optional argument holds its default (and can be left out). */
static bool is_default(const struct wl_op *op, enum wl_arg a)
{
	struct wl_op def;
	wl_op_init(&def, op->kind);
	switch (a) {
	case WA_MODE: return op->mode == def.mode;
	case WA_SEED: return op->seed == 0 && !(op->flags & WL_WRITE_TEXT);
	case WA_FALLOC:
	case WA_RENAME:
	case WA_SNAP:
	case WA_DEFRAG: return op->flags == 0;
	case WA_WSYNC: return (op->flags & ~WL_WRITE_TEXT) == 0;
	default: return false;
	}
}

int wl_format(const struct wl_op *op, char *buf, size_t len)
{
	if (wl_op_problem(op))
		return -EINVAL;
	const struct wl_kind_info *ki = &wl_kinds[op->kind];
	unsigned nargs = ki->nargs;
	while (nargs > ki->nreq && is_default(op, ki->args[nargs - 1].arg))
		nargs--;
	struct wl_out o = { buf, len, 0 };
	wl_put(&o, ki->name, strlen(ki->name));
	for (unsigned i = 0; i < nargs; i++) {
		wl_put(&o, " ", 1);
		put_arg(&o, op, ki->args[i].arg);
	}
	if (op->expect)
		wl_putf(&o, " = %s", wl_errno_name(op->expect));
	wl_out_end(&o);
	return o.pos > INT32_MAX ? -EOVERFLOW : (int)o.pos;
}

void wl_mount_format(const struct wl_mount *m, char *buf, size_t len)
{
	if (!m->compress)
		snprintf(buf, len, "%s", "");
	else
		ref_compress_format(m->compress, m->compress_level, m->compress_force, buf, len);
}

int wl_print(FILE *f, const struct wl_workload *w)
{
	char *buf = NULL;
	size_t cap = 0;
	int ret = 0;
	char opts[64];
	wl_mount_format(&w->mount, opts, sizeof(opts));
	if (*opts && fprintf(f, "mount-options %s\n", opts) < 0)
		return -EIO;
	for (size_t i = 0; i < w->n && !ret; i++) {
		int n = wl_format(&w->ops[i], buf, cap);
		if (n >= 0 && (size_t)n >= cap) {
			free(buf);
			cap = (size_t)n + 1;
			if (!(buf = malloc(cap))) {
				ret = -ENOMEM;
				break;
			}
			n = wl_format(&w->ops[i], buf, cap);
		}
		if (n < 0)
			ret = n;
		else if (fputs(buf, f) == EOF || putc('\n', f) == EOF)
			ret = -EIO;
	}
	free(buf);
	return ret;
}
