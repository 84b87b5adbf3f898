/*
 * wl_internal.h - what the files of the workload language share and nobody
 * else needs: the table of operations (each kind's arguments in the order
 * they are written), defaults, moving an op into a workload, byte classes.
 */
#ifndef BTRSIM_TRACES_WL_INTERNAL_H
#define BTRSIM_TRACES_WL_INTERNAL_H

#include "workload.h"

#include <stdbool.h>

/* What one argument is, which decides how it is parsed, printed and checked. */
enum wl_arg {
	WA_PATH,   /* absolute path -> path */
	WA_PATH2,  /* absolute path -> path2 */
	WA_TARGET, /* symlink target, any non-empty string -> path2 */
	WA_MODE,   /* octal, <= 07777 -> mode */
	WA_OFF,	   /* size number -> off */
	WA_LEN,	   /* size number -> len */
	WA_OFF2,   /* size number -> off2 */
	WA_SIZE,   /* size number -> size */
	WA_SEED,   /* number, no suffix -> seed */
	WA_FALLOC, /* keep-size | punch-hole -> flags */
	WA_RENAME, /* noreplace | exchange -> flags */
	WA_XNAME,  /* xattr name, any string -> name */
	WA_XVALUE, /* xattr value: string or 0x hex -> value, vlen */
	WA_UID,	   /* 32-bit id or -1 -> uid */
	WA_GID,	   /* 32-bit id or -1 -> gid */
	WA_ATIME,  /* SECONDS[.NANOS] or omit -> atime */
	WA_MTIME,  /* SECONDS[.NANOS] or omit -> mtime */
	WA_MARK,   /* [A-Za-z0-9_.-]+ -> name */
	WA_SNAP,   /* ro -> flags (WL_SNAP_RDONLY) */
	WA_WSYNC,  /* sync | dsync -> flags (WL_WRITE_SYNC, WL_WRITE_DSYNC) */
	WA_DEFRAG, /* zlib | lzo | zstd -> flags (1, 2, 3) */
	WA_STREAM, /* a send stream: a file name (read when parsed) or 0x hex -> value, vlen */
	WA_DEVID,  /* number >= 1, no suffix -> devid */
	WA_DATA,   /* bytes, as an xattr value: string or 0x hex -> value, vlen */
};

#define WL_MAX_ARGS 5

struct wl_slot {
	enum wl_arg arg;
	const char *label; /* as in the usage line: PATH, OFFSET, NEW, ... */
};

struct wl_kind_info {
	const char *name;
	unsigned nreq;	/* required arguments; the rest are optional */
	unsigned nargs; /* all arguments */
	struct wl_slot args[WL_MAX_ARGS];
};

extern const struct wl_kind_info wl_kinds[WL_NKINDS];

/* "write PATH OFFSET LENGTH [SEED]" into buf (snprintf-style). */
void wl_usage(enum wl_kind k, char *buf, size_t len);
/* Zeroes op and sets kind k with its defaults (mkdir 0755, create 0644). */
void wl_op_init(struct wl_op *op, enum wl_kind k);
/* Frees the strings and value of op (not op itself). */
void wl_op_release(struct wl_op *op);
/* Moves op (and what it owns) to the end of w; op is zeroed.  0 or -ENOMEM;
 * on failure op is left as it was. */
int wl_push(struct wl_workload *w, struct wl_op *op);

/* The value of digit c in base (8, 10 or 16), or -1. */
int wl_digit(unsigned char c, unsigned base);

/* A mark name byte: [A-Za-z0-9_.-]. */
bool wl_is_mark_byte(unsigned char c);

/* The line being parsed, for messages "FILE:LINE:COL: message". */
struct wl_src {
	const char *file;
	size_t line;
	char *err;
	size_t errlen;
};

/* Writes "FILE:LINE:COL: message" to s->err; returns -EINVAL. */
int wl_error(const struct wl_src *s, size_t col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Writes "FILE:LINE: out of memory"; returns -ENOMEM. */
int wl_nomem(const struct wl_src *s);

/* One token of a line: its bytes after unquoting (s is malloc'd, NUL-
 * terminated, n bytes, and may hold a NUL only when quoted), where it starts
 * and the column just after it. */
struct wl_tok {
	char *s;
	size_t n;
	size_t col, endcol;
	bool quoted;
};

struct wl_toks {
	struct wl_tok *v;
	size_t n, cap;
};

/* Splits one line (without its '\n'; a final '\r' is ignored) into tokens,
 * dropping the comment.  0, -EINVAL (message in s->err) or -ENOMEM. */
int wl_lex(const struct wl_src *s, const char *line, size_t len, struct wl_toks *t);
void wl_toks_free(struct wl_toks *t);

/* Longest token shown whole in a message. */
#define WL_SHOW_MAX 48
/* Room wl_show needs: every byte as \xHH, quotes, "...", NUL. */
#define WL_SHOW_SIZE (4 * WL_SHOW_MAX + 8)
/* t's bytes for a message: quoted, escaped, cut to WL_SHOW_MAX bytes with "...". */
const char *wl_show(const struct wl_tok *t, char buf[WL_SHOW_SIZE]);

/* A text being written snprintf-style: at most cap - 1 bytes reach buf, pos
 * counts them all; wl_out_end puts the NUL. */
struct wl_out {
	char *buf;
	size_t cap, pos;
};

void wl_put(struct wl_out *o, const char *s, size_t n);
void wl_putf(struct wl_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void wl_out_end(struct wl_out *o);
/* Appends b[0..n) escaped for inside double quotes (no quotes around). */
void wl_escape(struct wl_out *o, const uint8_t *b, size_t n);

#endif
