/*
 * wl_lex.c - splits one line of a workload file into tokens: words separated
 * by spaces and tabs, double-quoted strings with C escapes, `#` comments;
 * and the "FILE:LINE:COL: message" errors of the whole parser.
 */
#include "wl_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int wl_error(const struct wl_src *s, size_t col, const char *fmt, ...)
{
	if (s->errlen) {
		int n = snprintf(s->err, s->errlen, "%s:%zu:%zu: ", s->file, s->line, col);
		size_t used = n < 0 ? 0 : (size_t)n;
		if (used < s->errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(s->err + used, s->errlen - used, fmt, ap);
			va_end(ap);
		}
	}
	return -EINVAL;
}

int wl_nomem(const struct wl_src *s)
{
	if (s->errlen)
		snprintf(s->err, s->errlen, "%s:%zu: out of memory", s->file, s->line);
	return -ENOMEM;
}

const char *wl_show(const struct wl_tok *t, char buf[WL_SHOW_SIZE])
{
	struct wl_out o = { buf, WL_SHOW_SIZE, 0 };
	size_t n = t->n > WL_SHOW_MAX ? WL_SHOW_MAX : t->n;
	wl_put(&o, "\"", 1);
	wl_escape(&o, (const uint8_t *)t->s, n);
	wl_put(&o, "\"", 1);
	if (n < t->n)
		wl_put(&o, "...", 3);
	wl_out_end(&o);
	return buf;
}

void wl_toks_free(struct wl_toks *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].s);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

static void toks_clear(struct wl_toks *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].s);
	t->n = 0;
}

/* A new token at the end of t, its string n bytes (+ NUL) uninitialised. */
static struct wl_tok *tok_add(struct wl_toks *t, size_t n)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		struct wl_tok *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		t->v = v;
		t->cap = cap;
	}
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	s[n] = 0;
	struct wl_tok *k = &t->v[t->n++];
	*k = (struct wl_tok){ .s = s, .n = n };
	return k;
}

int wl_digit(unsigned char c, unsigned base)
{
	int d = -1;
	if (c >= '0' && c <= '9')
		d = c - '0';
	else if (c >= 'a' && c <= 'f')
		d = c - 'a' + 10;
	else if (c >= 'A' && c <= 'F')
		d = c - 'A' + 10;
	return d < (int)base ? d : -1;
}

/* Decodes the escape at l[i] == '\\' into *out; returns its length in the
 * line, or 0 when it is not a valid escape. */
static size_t unescape(const char *l, size_t len, size_t i, char *out)
{
	if (i + 1 >= len)
		return 0;
	switch (l[i + 1]) {
	case 'n': *out = '\n'; return 2;
	case 't': *out = '\t'; return 2;
	case 'r': *out = '\r'; return 2;
	case '\\': *out = '\\'; return 2;
	case '"': *out = '"'; return 2;
	case 'x': {
		int hi = i + 2 < len ? wl_digit((unsigned char)l[i + 2], 16) : -1;
		int lo = i + 3 < len ? wl_digit((unsigned char)l[i + 3], 16) : -1;
		if (hi < 0 || lo < 0)
			return 0;
		*out = (char)(hi << 4 | lo);
		return 4;
	}
	default:
		return 0;
	}
}

/* The closing quote of the string opened at l[i], or len when there is none. */
static size_t closing_quote(const char *l, size_t len, size_t i)
{
	for (size_t j = i + 1; j < len; j++) {
		if (l[j] == '\\')
			j++;
		else if (l[j] == '"')
			return j;
	}
	return len;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

static int bad_escape(const struct wl_src *s, const char *l, size_t j)
{
	unsigned char c = (unsigned char)l[j + 1];
	const char *known = "(known: \\n \\t \\r \\\\ \\\" \\xHH)";
	if (c == 'x')
		return wl_error(s, j + 1, "\\x needs two hex digits %s", known);
	if (c > 0x20 && c < 0x7f)
		return wl_error(s, j + 1, "bad escape \"\\%c\" %s", c, known);
	return wl_error(s, j + 1, "bad escape: '\\' then byte 0x%02x %s", c, known);
}

/* A quoted string at l[*i]; *i moves past it. */
static int lex_quoted(const struct wl_src *s, const char *l, size_t len, size_t *i,
		      struct wl_toks *t)
{
	size_t open = *i, close = closing_quote(l, len, open);
	if (close == len)
		return wl_error(s, open + 1, "unterminated quoted string");
	if (close + 1 < len && !is_space(l[close + 1]) && l[close + 1] != '#')
		return wl_error(s, close + 2, "a space must follow the closing quote");
	struct wl_tok *k = tok_add(t, close - open - 1);
	if (!k)
		return wl_nomem(s);
	size_t n = 0;
	for (size_t j = open + 1; j < close;) {
		if (l[j] != '\\') {
			k->s[n++] = l[j++];
			continue;
		}
		size_t used = unescape(l, close, j, &k->s[n++]);
		if (!used)
			return bad_escape(s, l, j);
		j += used;
	}
	k->s[n] = 0;
	k->n = n;
	k->quoted = true;
	k->col = open + 1;
	k->endcol = close + 2;
	*i = close + 1;
	return 0;
}

/* A bare word at l[*i]: up to a space, a tab, '#' or the end. */
static int lex_bare(const struct wl_src *s, const char *l, size_t len, size_t *i,
		    struct wl_toks *t)
{
	size_t start = *i, j = start;
	for (; j < len && !is_space(l[j]) && l[j] != '#'; j++) {
		unsigned char c = (unsigned char)l[j];
		if (c == '"')
			return wl_error(s, j + 1,
					"'\"' inside an unquoted word (quote the whole word)");
		if (c < 0x20 || c == 0x7f)
			return wl_error(s, j + 1,
					"control byte 0x%02x outside quotes (write \"\\x%02x\")",
					c, c);
	}
	struct wl_tok *k = tok_add(t, j - start);
	if (!k)
		return wl_nomem(s);
	memcpy(k->s, l + start, j - start);
	k->col = start + 1;
	k->endcol = j + 1;
	*i = j;
	return 0;
}

int wl_lex(const struct wl_src *s, const char *line, size_t len, struct wl_toks *t)
{
	toks_clear(t);
	const char *nul = memchr(line, 0, len);
	if (nul)
		return wl_error(s, (size_t)(nul - line) + 1, "NUL byte: this is not a text file");
	if (len && line[len - 1] == '\r')
		len--; /* CRLF line ends */
	for (size_t i = 0;;) {
		while (i < len && is_space(line[i]))
			i++;
		if (i == len || line[i] == '#')
			return 0;
		int ret = line[i] == '"' ? lex_quoted(s, line, len, &i, t)
					 : lex_bare(s, line, len, &i, t);
		if (ret)
			return ret;
	}
}
