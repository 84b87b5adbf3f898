/*
 * wl_parse.c - reads workload files: each line's tokens (wl_lex.c) become
 * one wl_op by the table of wl_internal.h; numbers, modes, times, xattr
 * values and the `= ERRNO` expectation are decoded here.  Errors name the
 * file, line and column of the offending token.
 */
#include "ref/compress.h"
#include "wl_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	struct wl_src src;
	struct wl_toks toks;
	struct wl_workload *w;
	enum wl_kind kind; /* of the line being parsed */
};

/* "KIND: LABEL "token" why" at the token. */
static int arg_error(struct parser *p, const struct wl_tok *t, const char *label,
		     const char *why)
{
	char show[WL_SHOW_SIZE];
	return wl_error(&p->src, t->col, "%s: %s %s %s", wl_kind_name(p->kind), label,
			wl_show(t, show), why);
}

/* ---- numbers ------------------------------------------------------------ */

static const char *const overflow = "overflows 64 bits";

/* Decimal or 0x hex, then (when `suffix`) one of K M G T (either case) for
 * powers of 1024.  NULL, or why t is not such a number. */
static const char *parse_u64(const struct wl_tok *t, bool suffix, uint64_t *v)
{
	const char *s = t->s, *end = t->s + t->n;
	unsigned base = 10;
	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	const char *digits = s;
	uint64_t x = 0;
	for (int d; s < end && (d = wl_digit((unsigned char)*s, base)) >= 0; s++) {
		if (x > (UINT64_MAX - (unsigned)d) / base)
			return overflow;
		x = x * base + (unsigned)d;
	}
	const char *unit = suffix && s > digits && end - s == 1 ? strchr("KMGTkmgt", *s) : NULL;
	if (unit && *unit) {
		unsigned shift = 10 * (unsigned)((unit - "KMGTkmgt") % 4 + 1);
		if (x > UINT64_MAX >> shift)
			return overflow;
		x <<= shift;
		s++;
	}
	if (s == digits || s != end)
		return suffix ? "is not a number (decimal or 0x hex, optional K/M/G/T suffix)"
			      : "is not a number (decimal or 0x hex)";
	*v = x;
	return NULL;
}

/* Octal permission bits: 644, 0644, 04755; at most 07777. */
static const char *parse_mode(const struct wl_tok *t, uint32_t *mode)
{
	uint32_t m = 0;
	size_t i = 0;
	for (int d; i < t->n && (d = wl_digit((unsigned char)t->s[i], 8)) >= 0; i++) {
		m = m * 8 + (unsigned)d;
		if (m > 07777)
			return "is above 07777";
	}
	if (!i || i != t->n)
		return "is not an octal mode (such as 0644)";
	*mode = m;
	return NULL;
}

/* A user or group id; -1 (unchanged) is UINT32_MAX. */
static const char *parse_id(const struct wl_tok *t, uint32_t *id)
{
	uint64_t v;
	if (!strcmp(t->s, "-1")) {
		*id = UINT32_MAX;
		return NULL;
	}
	const char *why = parse_u64(t, false, &v);
	if (why)
		return why;
	if (v > UINT32_MAX)
		return "is above 4294967295 (write -1 for unchanged)";
	*id = (uint32_t)v;
	return NULL;
}

/* [-]SECONDS[.FRACTION] (1 to 9 digits) or omit. */
static const char *parse_time(const struct wl_tok *t, struct timespec *ts)
{
	static const char *const bad = "is not SECONDS[.NANOSECONDS] or omit";
	if (!strcmp(t->s, "omit")) {
		*ts = (struct timespec){ .tv_sec = 0, .tv_nsec = WL_UTIME_OMIT };
		return NULL;
	}
	const char *s = t->s, *end = t->s + t->n;
	bool neg = s < end && *s == '-';
	s += neg;
	uint64_t sec = 0;
	long ns = 0;
	const char *digits = s;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (sec > (UINT64_C(1) << 63) / 10)
			return "overflows 64 bits";
		sec = sec * 10 + (unsigned)(*s - '0');
	}
	if (s == digits)
		return bad;
	if (s < end && *s == '.') {
		const char *frac = ++s;
		for (long scale = 100000000L; s < end && *s >= '0' && *s <= '9'; s++, scale /= 10)
			ns += scale * (*s - '0');
		if (s == frac || s - frac > 9)
			return s == frac ? bad : "has more than 9 digits of fraction";
	}
	if (s != end)
		return bad;
	/* The value is sec + ns / 1e9 (negated); tv_nsec is never negative. */
	if (neg && ns) {
		if (sec > INT64_MAX)
			return "overflows 64 bits";
		ts->tv_sec = -(time_t)sec - 1;
		ts->tv_nsec = 1000000000L - ns;
	} else if (neg) {
		if (sec > (UINT64_C(1) << 63))
			return "overflows 64 bits";
		ts->tv_sec = sec == (UINT64_C(1) << 63) ? INT64_MIN : -(time_t)sec;
		ts->tv_nsec = 0;
	} else {
		if (sec > INT64_MAX)
			return "overflows 64 bits";
		ts->tv_sec = (time_t)sec;
		ts->tv_nsec = ns;
	}
	return NULL;
}

/* ---- strings ------------------------------------------------------------ */

/* Moves t's string to *dst (t keeps NULL). */
static int take_string(struct parser *p, struct wl_tok *t, const char *label, char **dst)
{
	if (memchr(t->s, 0, t->n))
		return arg_error(p, t, label, "holds a NUL byte");
	*dst = t->s;
	t->s = NULL;
	return 0;
}

static int take_path(struct parser *p, struct wl_tok *t, const char *label, char **dst)
{
	if (t->s[0] != '/')
		return arg_error(p, t, label, "is not absolute (it must start with '/')");
	return take_string(p, t, label, dst);
}

static int take_mark(struct parser *p, struct wl_tok *t, const char *label, char **dst)
{
	for (size_t i = 0; i < t->n; i++)
		if (!wl_is_mark_byte((unsigned char)t->s[i]))
			return arg_error(p, t, label, "may hold only A-Z a-z 0-9 _ . -");
	if (!t->n)
		return arg_error(p, t, label, "is empty");
	return take_string(p, t, label, dst);
}

/* An xattr value: a quoted or bare string as is, or 0x followed by hex bytes. */
static int take_value(struct parser *p, struct wl_op *op, struct wl_tok *t, const char *label)
{
	if (t->quoted || t->n < 2 || t->s[0] != '0' || (t->s[1] != 'x' && t->s[1] != 'X')) {
		op->vlen = t->n;
		op->value = (uint8_t *)t->s;
		t->s = NULL;
		return 0;
	}
	size_t ndig = t->n - 2;
	if (!ndig || ndig % 2)
		return arg_error(p, t, label,
				 ndig ? "has an odd number of hex digits"
				      : "has no hex digits (write \"\" for an empty value)");
	for (size_t i = 0; i < ndig / 2; i++) {
		int hi = wl_digit((unsigned char)t->s[2 + 2 * i], 16);
		int lo = wl_digit((unsigned char)t->s[3 + 2 * i], 16);
		if (hi < 0 || lo < 0)
			return arg_error(p, t, label, "is not 0x followed by hex bytes (quote text)");
		t->s[i] = (char)(hi << 4 | lo); /* decoded in place, behind the digits */
	}
	op->vlen = ndig / 2;
	op->value = (uint8_t *)t->s;
	t->s = NULL;
	return 0;
}

/* A send stream: 0x hex bytes, "" (empty), or the name of a file holding it,
 * relative to the workload file's directory (the working directory for
 * standard input and text), read now so that the op carries its bytes (a
 * stored or printed workload has them as hex). */
#define STREAM_MAX (UINT64_C(256) << 20)
static int take_stream(struct parser *p, struct wl_op *op, struct wl_tok *t, const char *label)
{
	if (!t->n) {
		op->vlen = 0;
		op->value = (uint8_t *)t->s;
		t->s = NULL;
		return 0;
	}
	if (!t->quoted && t->n > 2 && t->s[0] == '0' && (t->s[1] == 'x' || t->s[1] == 'X'))
		return take_value(p, op, t, label);
	if (memchr(t->s, 0, t->n))
		return arg_error(p, t, label, "is a file name holding a NUL");
	char *path = NULL;
	const char *slash = p->src.file ? strrchr(p->src.file, '/') : NULL;
	if (t->s[0] != '/' && slash &&
	    asprintf(&path, "%.*s/%s", (int)(slash - p->src.file), p->src.file, t->s) < 0)
		return wl_nomem(&p->src);
	FILE *f = fopen(path ? path : t->s, "rb");
	int e = errno;
	free(path);
	if (!f)
		return arg_error(p, t, label, strerror(e));
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	int r = 0;
	for (;;) {
		if (len == cap) {
			if (cap >= STREAM_MAX) {
				r = arg_error(p, t, label, "is a file over 256 MiB");
				break;
			}
			uint8_t *nb = realloc(buf, cap ? 2 * cap : 65536);
			if (!nb) {
				r = wl_nomem(&p->src);
				break;
			}
			buf = nb;
			cap = cap ? 2 * cap : 65536;
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0) {
			if (ferror(f))
				r = arg_error(p, t, label, "could not be read");
			break;
		}
	}
	fclose(f);
	if (r) {
		free(buf);
		return r;
	}
	op->value = buf;
	op->vlen = len;
	return 0;
}

/* ---- one line ----------------------------------------------------------- */

static int keyword(struct parser *p, struct wl_tok *t, const char *label, const char *k1,
		   int v1, const char *k2, int v2, int *flags)
{
	if (!strcmp(t->s, k1) || !strcmp(t->s, k2)) {
		*flags = strcmp(t->s, k1) ? v2 : v1;
		return 0;
	}
	char show[WL_SHOW_SIZE];
	return wl_error(&p->src, t->col, "%s: unknown option %s (%s)", wl_kind_name(p->kind),
			wl_show(t, show), label);
}

static int number(struct parser *p, struct wl_tok *t, const char *label, const char *why)
{
	return why ? arg_error(p, t, label, why) : 0;
}

static int parse_arg(struct parser *p, struct wl_op *op, const struct wl_slot *slot,
		     struct wl_tok *t)
{
	const char *l = slot->label;
	switch (slot->arg) {
	case WA_PATH: return take_path(p, t, l, &op->path);
	case WA_PATH2: return take_path(p, t, l, &op->path2);
	case WA_TARGET:
		return t->n ? take_string(p, t, l, &op->path2) : arg_error(p, t, l, "is empty");
	case WA_XNAME: return take_string(p, t, l, &op->name);
	case WA_MARK: return take_mark(p, t, l, &op->name);
	case WA_XVALUE:
	case WA_DATA: return take_value(p, op, t, l);
	case WA_STREAM: return take_stream(p, op, t, l);
	case WA_MODE: return number(p, t, l, parse_mode(t, &op->mode));
	case WA_OFF: return number(p, t, l, parse_u64(t, true, &op->off));
	case WA_LEN: return number(p, t, l, parse_u64(t, true, &op->len));
	case WA_OFF2: return number(p, t, l, parse_u64(t, true, &op->off2));
	case WA_SIZE: return number(p, t, l, parse_u64(t, true, &op->size));
	case WA_DEVID: {
		int r = number(p, t, l, parse_u64(t, false, &op->devid));
		return r ? r : op->devid ? 0 : arg_error(p, t, l, "is 0 (devids start at 1)");
	}
	case WA_DEFRAG:
		for (int i = 1; i <= 3; i++)
			if (!t->quoted && !strcmp(t->s, i == 1 ? "zlib" : i == 2 ? "lzo" : "zstd")) {
				op->flags = i;
				return 0;
			}
		return arg_error(p, t, l, "is not zlib, lzo or zstd");
	case WA_SEED:
		/* tN: text data (WL_WRITE_TEXT), compressible, for compression */
		if (!t->quoted && t->n > 1 && t->s[0] == 't') {
			struct wl_tok n = *t;
			n.s = t->s + 1;
			n.n = t->n - 1;
			op->flags |= WL_WRITE_TEXT;
			return number(p, t, l, parse_u64(&n, false, &op->seed));
		}
		return number(p, t, l, parse_u64(t, false, &op->seed));
	case WA_UID: return number(p, t, l, parse_id(t, &op->uid));
	case WA_GID: return number(p, t, l, parse_id(t, &op->gid));
	case WA_ATIME: return number(p, t, l, parse_time(t, &op->atime));
	case WA_MTIME: return number(p, t, l, parse_time(t, &op->mtime));
	case WA_FALLOC:
		if (!strcmp(t->s, "zero-range") || !strcmp(t->s, "zero-range-keep-size"))
			return keyword(p, t, l, "zero-range", WL_FALLOC_ZERO_RANGE,
				       "zero-range-keep-size", WL_FALLOC_ZERO_RANGE | WL_FALLOC_KEEP_SIZE,
				       &op->flags);
		return keyword(p, t, l, "keep-size", WL_FALLOC_KEEP_SIZE, "punch-hole",
			       WL_FALLOC_PUNCH_HOLE | WL_FALLOC_KEEP_SIZE, &op->flags);
	case WA_RENAME:
		return keyword(p, t, l, "noreplace", WL_RENAME_NOREPLACE, "exchange",
			       WL_RENAME_EXCHANGE, &op->flags);
	case WA_SNAP:
		return keyword(p, t, l, "ro", WL_SNAP_RDONLY, "ro", WL_SNAP_RDONLY, &op->flags);
	case WA_WSYNC:
	{
		int text = op->flags & WL_WRITE_TEXT, r;
		r = keyword(p, t, l, "sync", WL_WRITE_SYNC, "dsync", WL_WRITE_DSYNC, &op->flags);
		op->flags |= text;
		return r;
	}
	}
	return 0;
}

/* `= ERRNO` (or `=ERRNO`) starting at token i, which must end the line. */
static int parse_expect(struct parser *p, size_t i, int *expect)
{
	struct wl_tok *t = p->toks.v, *eq = &t[i];
	char show[WL_SHOW_SIZE];
	struct wl_tok name = *eq;
	size_t next = i + 1;
	if (eq->n > 1) { /* =ENOENT */
		name.s++;
		name.n--;
		name.col++;
	} else if (next < p->toks.n) {
		name = t[next++];
	} else {
		return wl_error(&p->src, eq->endcol, "missing errno name after \"=\"");
	}
	if (next < p->toks.n)
		return wl_error(&p->src, t[next].col, "unexpected %s after the expected errno",
				wl_show(&t[next], show));
	int e = memchr(name.s, 0, name.n) ? -1 : wl_errno_parse(name.s);
	if (e < 0)
		return wl_error(&p->src, name.col,
				"unknown errno name %s (a Linux name such as ENOENT, or 0)",
				wl_show(&name, show));
	*expect = e;
	return 0;
}

/* Arguments 1..nargs of the line: too many, each one, too few, in the order
 * they would be read. */
static int parse_args(struct parser *p, struct wl_op *op, size_t nargs)
{
	const struct wl_kind_info *ki = &wl_kinds[p->kind];
	struct wl_tok *t = p->toks.v;
	char usage[160];
	wl_usage(p->kind, usage, sizeof(usage));
	for (size_t i = 0; i < nargs; i++) {
		if (i == ki->nargs)
			return wl_error(&p->src, t[i + 1].col, "%s: too many arguments (usage: %s)",
					ki->name, usage);
		int ret = parse_arg(p, op, &ki->args[i], &t[i + 1]);
		if (ret)
			return ret;
	}
	if (nargs < ki->nreq)
		return wl_error(&p->src, t[nargs].endcol, "%s: missing %s (usage: %s)", ki->name,
				ki->args[nargs].label, usage);
	return 0;
}

/* The header line `mount-options OPT[,OPT]... [OPT...]`: compress[=ALG[:LEVEL]]
 * and compress-force[=ALG[:LEVEL]], before the first op. */
static int parse_mount_options(struct parser *p)
{
	struct wl_tok *t = p->toks.v;
	if (p->w->n)
		return wl_error(&p->src, t[0].col,
				"mount-options: the header goes before the first operation");
	if (p->toks.n < 2)
		return wl_error(&p->src, t[0].endcol, "mount-options: missing OPTIONS");
	for (size_t i = 1; i < p->toks.n; i++) {
		char *opts = strdup(t[i].s);
		if (!opts)
			return wl_nomem(&p->src);
		int ret = 0;
		for (char *save = NULL, *o = strtok_r(opts, ",", &save); o && !ret;
		     o = strtok_r(NULL, ",", &save)) {
			bool force = !strncmp(o, "compress-force", 14) && (!o[14] || o[14] == '=');
			bool plain = !strncmp(o, "compress", 8) && (!o[8] || o[8] == '=');
			char why[160];
			struct wl_mount *m = &p->w->mount;
			if (!force && !plain)
				ret = wl_error(&p->src, t[i].col,
					       "mount-options: unknown option '%s' (compress=, "
					       "compress-force=)", o);
			else if (ref_compress_parse(o + (force ? 14 : 8) + (o[force ? 14 : 8] == '='),
						    &m->compress, &m->compress_level, why, sizeof(why)))
				ret = wl_error(&p->src, t[i].col, "mount-options: %s", why);
			else
				m->compress_force = force && m->compress;
		}
		free(opts);
		if (ret)
			return ret;
	}
	return 0;
}

static int parse_line(struct parser *p, const char *line, size_t len)
{
	int ret = wl_lex(&p->src, line, len, &p->toks);
	if (ret || !p->toks.n)
		return ret;
	struct wl_tok *t = p->toks.v;
	if (t[0].quoted)
		return wl_error(&p->src, t[0].col, "operation names are not quoted");
	if (!strcmp(t[0].s, "mount-options"))
		return parse_mount_options(p);
	int k = wl_kind_parse(t[0].s);
	if (k < 0) {
		char show[WL_SHOW_SIZE];
		return wl_error(&p->src, t[0].col, "unknown operation %s", wl_show(&t[0], show));
	}
	p->kind = (enum wl_kind)k;
	size_t eq = 1;
	while (eq < p->toks.n && (t[eq].quoted || t[eq].s[0] != '='))
		eq++;
	struct wl_op op;
	wl_op_init(&op, p->kind);
	op.line = p->src.line;
	ret = parse_args(p, &op, eq - 1);
	if (!ret && eq < p->toks.n)
		ret = parse_expect(p, eq, &op.expect);
	if (!ret && wl_push(p->w, &op))
		ret = wl_nomem(&p->src);
	if (ret)
		wl_op_release(&op);
	return ret;
}

/* ---- whole files -------------------------------------------------------- */

static int parse_begin(struct parser *p, const char *name, struct wl_workload *out, char *err,
		       size_t errlen)
{
	memset(p, 0, sizeof(*p));
	memset(out, 0, sizeof(*out));
	p->src = (struct wl_src){ name, 0, err, errlen };
	p->w = out;
	if (errlen)
		err[0] = 0;
	out->name = strdup(name);
	return out->name ? 0 : wl_nomem(&p->src);
}

static int parse_end(struct parser *p, int ret)
{
	wl_toks_free(&p->toks);
	if (ret)
		wl_free(p->w);
	return ret;
}

int wl_parse_text(const char *name, const char *text, size_t len, struct wl_workload *out,
		  char *err, size_t errlen)
{
	struct parser p;
	int ret = parse_begin(&p, name ? name : "<text>", out, err, errlen);
	for (size_t off = 0; !ret && off < len;) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t n = nl ? (size_t)(nl - (text + off)) : len - off;
		p.src.line++;
		ret = parse_line(&p, text + off, n);
		off += n + 1;
	}
	return parse_end(&p, ret);
}

static int read_error(const char *file, int e, char *err, size_t errlen)
{
	if (errlen)
		snprintf(err, errlen, "%s: %s", file, strerror(e));
	return -e;
}

int wl_parse_file(const char *file, struct wl_workload *out, char *err, size_t errlen)
{
	bool std = !strcmp(file, "-");
	struct parser p;
	int ret = parse_begin(&p, std ? "<stdin>" : file, out, err, errlen);
	FILE *f = std ? stdin : fopen(file, "r");
	if (!f && !ret)
		ret = read_error(file, errno, err, errlen);
	char *line = NULL;
	size_t cap = 0;
	while (!ret) {
		errno = 0;
		ssize_t n = getline(&line, &cap, f);
		if (n < 0) {
			if (ferror(f))
				ret = read_error(p.src.file, errno ? errno : EIO, err, errlen);
			break;
		}
		if (n && line[n - 1] == '\n')
			n--;
		p.src.line++;
		ret = parse_line(&p, line, (size_t)n);
	}
	free(line);
	if (f && !std)
		fclose(f);
	return parse_end(&p, ret);
}
