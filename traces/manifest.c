/*
 * manifest.c - the canonical description of a file-system tree (the format
 * of `btrsim manifest`, cli/README.md): one line per object, escaped paths,
 * sorted bytewise.  Used by both walkers of the command (an image through
 * ref/, a host directory through POSIX) and by the crash oracle, so that
 * every side of a comparison is formatted by this one code.
 */
#include "traces/manifest.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- Formatting (both walkers) ------------------------------------------ */

/* A growing string. */
struct buf {
	char *s;
	size_t n, cap;
	bool oom;
};

static void put(struct buf *b, const char *s, size_t len)
{
	if (b->oom)
		return;
	if (b->n + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		while (cap < b->n + len + 1)
			cap *= 2;
		char *p = realloc(b->s, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, len);
	b->n += len;
	b->s[b->n] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void putf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct buf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static const char hex_digits[] = "0123456789abcdef";

static void put_hex(struct buf *b, const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char h[2] = { hex_digits[p[i] >> 4], hex_digits[p[i] & 15] };
		put(b, h, 2);
	}
}

/* Raw bytes, each outside 0x21..0x7e, a backslash or `extra` as \xHH. */
static void put_escaped(struct buf *b, const char *s, size_t len, char extra)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x21 || c > 0x7e || c == '\\' || (extra && c == (unsigned char)extra)) {
			char h[4] = { '\\', 'x', hex_digits[c >> 4], hex_digits[c & 15] };
			put(b, h, 4);
		} else {
			put(b, (const char *)&c, 1);
		}
	}
}

char *mf_path_join(const char *parent, const char *name, size_t len)
{
	struct buf b = { 0 };
	if (strcmp(parent, "/"))
		puts_(&b, parent);
	put(&b, "/", 1);
	put_escaped(&b, name, len, '/');
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char type_char(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return 'f';
	case S_IFDIR: return 'd';
	case S_IFLNK: return 'l';
	case S_IFCHR: return 'c';
	case S_IFBLK: return 'b';
	case S_IFIFO: return 'p';
	case S_IFSOCK: return 's';
	default: return '?';
	}
}

static int keep_line(struct manifest *m, char *line)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		char **p = realloc(m->lines, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		m->lines = p;
		m->cap = cap;
	}
	m->lines[m->n++] = line;
	return 0;
}

int mf_add(struct manifest *m, const struct mf_object *o)
{
	struct buf b = { 0 };
	char t = type_char(o->mode);
	puts_(&b, o->path); /* already escaped */
	putf(&b, " %c %o %u %u %llu %llu ", t, o->mode & 07777, o->uid, o->gid,
	     (unsigned long long)o->nlink, (unsigned long long)o->size);
	if (t == 'f' && o->sha256) {
		put_hex(&b, o->sha256, crypto_hash_sha256_BYTES);
	} else if (t == 'l') {
		puts_(&b, "-> ");
		put_escaped(&b, o->target ? o->target : "", o->target ? o->target_len : 0, 0);
	} else if (t == 'c' || t == 'b') {
		putf(&b, "%u,%u", o->rdev_major, o->rdev_minor);
	} else {
		puts_(&b, "-");
	}
	if (m->ino)
		putf(&b, " i:%llu", (unsigned long long)o->ino);
	if (m->times)
		putf(&b, " m:%lld.%09ld", (long long)o->mtime.tv_sec, (long)o->mtime.tv_nsec);
	size_t nx = o->xattrs ? o->xattrs->n : 0;
	if (nx) {
		char **xs = calloc(nx, sizeof(*xs));
		if (!xs) {
			free(b.s);
			return -ENOMEM;
		}
		bool oom = false;
		for (size_t i = 0; i < nx; i++) {
			const struct mf_xattr *x = &o->xattrs->x[i];
			struct buf xb = { 0 };
			puts_(&xb, " x:");
			put_escaped(&xb, x->name, x->nlen, '=');
			put(&xb, "=", 1);
			put_hex(&xb, x->value, x->vlen);
			if (xb.oom) {
				free(xb.s);
				oom = true;
				continue;
			}
			xs[i] = xb.s;
		}
		if (!oom) {
			qsort(xs, nx, sizeof(*xs), cmp_str);
			for (size_t i = 0; i < nx; i++)
				puts_(&b, xs[i]);
		}
		for (size_t i = 0; i < nx; i++)
			free(xs[i]);
		free(xs);
		if (oom)
			b.oom = true;
	}
	put(&b, "\n", 1);
	if (b.oom || keep_line(m, b.s)) {
		free(b.s);
		return -ENOMEM;
	}
	return 0;
}

/* The slot of directory (a, b) in the set, or the free slot where it goes. */
static struct mf_dir *dir_slot(struct mf_dir *t, size_t cap, uint64_t a, uint64_t b)
{
	size_t h = (size_t)(((a * 0x9e3779b97f4a7c15ull) ^ b) * 0x9e3779b97f4a7c15ull % cap);
	while (t[h].used && (t[h].a != a || t[h].b != b))
		h = (h + 1) % cap;
	return &t[h];
}

int mf_enter(struct manifest *m, uint64_t a, uint64_t b)
{
	/* An open-addressing set, at most half full. */
	if (2 * (m->ndirs + 1) > m->dirs_cap) {
		size_t cap = m->dirs_cap ? m->dirs_cap * 2 : 1024;
		struct mf_dir *t = calloc(cap, sizeof(*t));
		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < m->dirs_cap; i++)
			if (m->dirs[i].used)
				*dir_slot(t, cap, m->dirs[i].a, m->dirs[i].b) = m->dirs[i];
		free(m->dirs);
		m->dirs = t;
		m->dirs_cap = cap;
	}
	struct mf_dir *d = dir_slot(m->dirs, m->dirs_cap, a, b);
	if (!d->used) {
		*d = (struct mf_dir){ .a = a, .b = b, .used = true };
		m->ndirs++;
	}
	if (d->open)
		return -ELOOP;
	if (d->visits >= MF_MAX_VISITS)
		return -EMLINK;
	d->visits++;
	d->open = true;
	return 0;
}

void mf_leave(struct manifest *m, uint64_t a, uint64_t b)
{
	if (m->dirs_cap)
		dir_slot(m->dirs, m->dirs_cap, a, b)->open = false;
}

const char *mf_enter_error(int r)
{
	switch (r) {
	case -ELOOP: return "directory inside itself (a loop)";
	case -EMLINK: return "directory reached by too many paths";
	default: return strerror(-r);
	}
}

int mf_print(struct manifest *m, FILE *out)
{
	/* Escaped paths hold no space and every byte in them sorts above ' ', so
	 * comparing whole lines orders them by path. */
	qsort(m->lines, m->n, sizeof(*m->lines), cmp_str);
	for (size_t i = 0; i < m->n; i++)
		fputs(m->lines[i], out);
	if (fflush(out) || ferror(out))
		return -(errno ? errno : EIO);
	return 0;
}

void mf_free(struct manifest *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->lines[i]);
	free(m->lines);
	free(m->dirs);
	m->lines = NULL;
	m->dirs = NULL;
	m->n = m->cap = m->ndirs = m->dirs_cap = 0;
}

int mf_xattr_add(struct mf_xattrs *xs, const char *name, size_t nlen, const void *value,
		 size_t vlen)
{
	if (xs->n == xs->cap) {
		size_t cap = xs->cap ? xs->cap * 2 : 8;
		struct mf_xattr *p = realloc(xs->x, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		xs->x = p;
		xs->cap = cap;
	}
	char *n = malloc(nlen + 1);
	unsigned char *v = malloc(vlen + 1);
	if (!n || !v) {
		free(n);
		free(v);
		return -ENOMEM;
	}
	memcpy(n, name, nlen);
	n[nlen] = '\0';
	if (vlen)
		memcpy(v, value, vlen);
	xs->x[xs->n++] = (struct mf_xattr){ n, nlen, v, vlen };
	return 0;
}

void mf_xattrs_clear(struct mf_xattrs *xs)
{
	for (size_t i = 0; i < xs->n; i++) {
		free(xs->x[i].name);
		free(xs->x[i].value);
	}
	xs->n = 0;
}

