/*
 * plan.c - fault plans (plan.h): parsing, the canonical text, and arming the
 * points in libfiu with a callback whose decisions come from hit counts or a
 * splitmix64 stream of the seed, never from libfiu's or libc's random numbers.
 */
#include "faults/plan.h"
#include "faults/points.h"

#include <errno.h>
#include <fiu-control.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PLAN_BYTES (UINT64_C(1) << 20)
#define MAX_FLIP_BITS  4096 /* sim_fault_add's limit */

enum rule_mode {
	MODE_ALWAYS, /* every hit (the first `count` with a count) */
	MODE_NTH,    /* hits nth .. nth + count - 1 */
	MODE_PROB,   /* each hit with probability p, at most count times (0: no limit) */
};

struct rule {
	const struct fault_point *point;
	enum rule_mode mode;
	uint64_t nth;
	double p;
	uint64_t count; /* 0: no limit */
	int err;        /* positive errno */
};

struct entry {
	bool sim;
	unsigned line;
	struct rule rule;       /* !sim */
	struct sim_fault fault; /* sim */
};

struct fault_plan {
	char *name; /* the FILE of messages */
	struct entry *e;
	size_t n, cap;
	size_t npoints, nsims;
};

static int say(char *err, size_t errlen, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int say(char *err, size_t errlen, int r, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return r;
}

/* ---- Parsing ---- */

/* A whole decimal number from 1 on. */
static bool parse_count(const char *v, uint64_t *out)
{
	if (!*v)
		return false;
	uint64_t x = 0;
	for (const char *c = v; *c; c++) {
		if (*c < '0' || *c > '9' || x > (UINT64_MAX - (uint64_t)(*c - '0')) / 10)
			return false;
		x = x * 10 + (uint64_t)(*c - '0');
	}
	*out = x;
	return x >= 1;
}

static bool parse_prob(const char *v, double *out)
{
	if (!*v || !((*v >= '0' && *v <= '9') || *v == '.'))
		return false; /* no sign, no "inf" or "nan" */
	char *end;
	errno = 0;
	double p = strtod(v, &end);
	if (errno || *end || !(p >= 0.0 && p <= 1.0))
		return false;
	*out = p;
	return true;
}

/* The errnos a point gives, "EIO, ENOSPC or ENOMEM". */
static void errno_list(const struct fault_point *pt, char *buf, size_t len)
{
	size_t k = 0;
	while (k < FAULT_MAX_ERRNOS && pt->errnos[k])
		k++;
	buf[0] = '\0';
	for (size_t i = 0; i < k; i++) {
		size_t at = strlen(buf);
		const char *sep = i == 0 ? "" : i + 1 == k ? " or " : ", ";
		snprintf(buf + at, len - at, "%s%s", sep, fault_errno_name(pt->errnos[i]));
	}
}

static bool errno_allowed(const struct fault_point *pt, int e)
{
	for (size_t i = 0; i < FAULT_MAX_ERRNOS && pt->errnos[i]; i++)
		if (pt->errnos[i] == e)
			return true;
	return false;
}

/* One point line: the tokens after the name. */
static int parse_rule(const char *file, unsigned line, const struct fault_point *pt, char **tok,
		      size_t ntok, struct rule *out, char *err, size_t errlen)
{
	*out = (struct rule){ .point = pt, .mode = MODE_ALWAYS, .err = pt->errnos[0] };
	bool have_nth = false, have_p = false, have_count = false, have_errno = false;
	for (size_t i = 0; i < ntok; i++) {
		char *t = tok[i], *eq = strchr(t, '=');
		if (!eq)
			return say(err, errlen, -EINVAL,
				   "%s:%u: '%s' is not key=value (nth=, p=, count=, errno=)", file,
				   line, t);
		*eq = '\0';
		const char *key = t, *val = eq + 1;
		bool *seen = !strcmp(key, "nth")     ? &have_nth
			     : !strcmp(key, "p")     ? &have_p
			     : !strcmp(key, "count") ? &have_count
			     : !strcmp(key, "errno") ? &have_errno
						     : NULL;
		if (!seen)
			return say(err, errlen, -EINVAL,
				   "%s:%u: unknown key '%s' (nth=, p=, count=, errno=)", file, line,
				   key);
		if (*seen)
			return say(err, errlen, -EINVAL, "%s:%u: %s= given twice", file, line, key);
		*seen = true;
		if (seen == &have_nth && !parse_count(val, &out->nth))
			return say(err, errlen, -EINVAL,
				   "%s:%u: nth=%s: the hit to fail is a whole number from 1", file,
				   line, val);
		if (seen == &have_count && !parse_count(val, &out->count))
			return say(err, errlen, -EINVAL,
				   "%s:%u: count=%s: a count is a whole number from 1", file, line,
				   val);
		if (seen == &have_p && !parse_prob(val, &out->p))
			return say(err, errlen, -EINVAL,
				   "%s:%u: p=%s: a probability is a number from 0 to 1", file, line,
				   val);
		if (seen == &have_errno) {
			int e = fault_errno_parse(val);
			char list[64];
			errno_list(pt, list, sizeof(list));
			if (!e)
				return say(err, errlen, -EINVAL,
					   "%s:%u: errno=%s: not an errno name (%s gives %s)", file,
					   line, val, pt->name, list);
			if (!errno_allowed(pt, e))
				return say(err, errlen, -EINVAL, "%s:%u: errno=%s: %s gives %s",
					   file, line, val, pt->name, list);
			out->err = e;
		}
	}
	if (have_nth && have_p)
		return say(
			err, errlen, -EINVAL,
			"%s:%u: nth= and p= together: a point fires by its hit number or by chance",
			file, line);
	if (have_nth) {
		out->mode = MODE_NTH;
		if (!have_count)
			out->count = 1;
	} else if (have_p) {
		out->mode = MODE_PROB;
	} else if (have_count) { /* the first `count` hits */
		out->mode = MODE_NTH;
		out->nth = 1;
	}
	return 0;
}

static int parse_sim(const char *file, unsigned line, char **tok, size_t ntok,
		     struct sim_fault *out, char *err, size_t errlen)
{
	if (ntok != 1)
		return say(err, errlen, -EINVAL,
			   "%s:%u: a sim line is 'sim KIND[,key=value...]' (no spaces)", file,
			   line);
	char why[256];
	if (sim_fault_parse(tok[0], out, why, sizeof(why)))
		return say(err, errlen, -EINVAL, "%s:%u: sim %s: %s", file, line, tok[0], why);
	if (out->bits > MAX_FLIP_BITS)
		return say(err, errlen, -EINVAL, "%s:%u: sim %s: bits is at most %d", file, line,
			   tok[0], MAX_FLIP_BITS);
	return 0;
}

static int push(struct fault_plan *p, const struct entry *e)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 8;
		void *np = realloc(p->e, cap * sizeof(*p->e));
		if (!np)
			return -ENOMEM;
		p->e = np;
		p->cap = cap;
	}
	p->e[p->n++] = *e;
	if (e->sim)
		p->nsims++;
	else
		p->npoints++;
	return 0;
}

#define MAX_TOKENS 16

/* One line (NUL-terminated, modifiable), comment and blanks included. */
static int parse_line(struct fault_plan *p, const char *file, unsigned line, char *s, char *err,
		      size_t errlen)
{
	char *hash = strchr(s, '#');
	if (hash)
		*hash = '\0';
	char *tok[MAX_TOKENS + 1];
	size_t ntok = 0;
	for (char *save = NULL, *t = strtok_r(s, " \t\r\f\v", &save); t;
	     t = strtok_r(NULL, " \t\r\f\v", &save)) {
		if (ntok == MAX_TOKENS)
			return say(err, errlen, -EINVAL, "%s:%u: more than %d words on a line",
				   file, line, MAX_TOKENS);
		tok[ntok++] = t;
	}
	if (!ntok)
		return 0;
	struct entry e = { .line = line };
	int r;
	if (!strcmp(tok[0], "sim")) {
		e.sim = true;
		r = parse_sim(file, line, tok + 1, ntok - 1, &e.fault, err, errlen);
	} else {
		const struct fault_point *pt = fault_point_find(tok[0]);
		if (!pt)
			return say(err, errlen, -EINVAL,
				   "%s:%u: unknown fault point '%s' (faults/README.md lists them; "
				   "sim faults are 'sim KIND,...')",
				   file, line, tok[0]);
		for (size_t i = 0; i < p->n; i++)
			if (!p->e[i].sim && p->e[i].rule.point == pt)
				return say(err, errlen, -EINVAL,
					   "%s:%u: %s appears twice (first on line %u)", file, line,
					   pt->name, p->e[i].line);
		r = parse_rule(file, line, pt, tok + 1, ntok - 1, &e.rule, err, errlen);
	}
	if (r)
		return r;
	if (push(p, &e))
		return say(err, errlen, -ENOMEM, "%s:%u: out of memory", file, line);
	return 0;
}

int fault_plan_parse_text(const char *name, const char *text, size_t len, struct fault_plan **out,
			  char *err, size_t errlen)
{
	*out = NULL;
	if (!name)
		name = "plan";
	if (!text && len)
		return say(err, errlen, -EINVAL, "%s: no text", name);
	if (len > MAX_PLAN_BYTES)
		return say(err, errlen, -EFBIG, "%s: a plan is at most %llu bytes", name,
			   (unsigned long long)MAX_PLAN_BYTES);
	struct fault_plan *p = calloc(1, sizeof(*p));
	char *buf = malloc(len + 1);
	if (p)
		p->name = strdup(name);
	if (!p || !buf || !p->name) {
		fault_plan_free(p);
		free(buf);
		return say(err, errlen, -ENOMEM, "%s: out of memory", name);
	}
	if (len)
		memcpy(buf, text, len);
	buf[len] = '\0';
	int r = 0;
	unsigned line = 1;
	size_t at = 0;
	while (!r && at < len) {
		size_t end = at;
		while (end < len && buf[end] != '\n' && buf[end] != '\0')
			end++;
		if (end < len && buf[end] == '\0') {
			r = say(err, errlen, -EINVAL, "%s:%u: a NUL byte in the text", name, line);
			break;
		}
		buf[end] = '\0';
		r = parse_line(p, name, line, buf + at, err, errlen);
		at = end + 1;
		line++;
	}
	free(buf);
	if (r) {
		fault_plan_free(p);
		return r;
	}
	*out = p;
	return 0;
}

int fault_plan_parse_file(const char *path, struct fault_plan **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!path)
		return say(err, errlen, -EINVAL, "no plan file given");
	FILE *f = fopen(path, "rb");
	if (!f)
		return say(err, errlen, -errno, "%s: %s", path, strerror(errno));
	char *buf = malloc(MAX_PLAN_BYTES + 1);
	if (!buf) {
		fclose(f);
		return say(err, errlen, -ENOMEM, "%s: out of memory", path);
	}
	errno = 0;
	size_t n = fread(buf, 1, MAX_PLAN_BYTES + 1, f);
	int r = 0, e = errno ? errno : EIO;
	if (ferror(f))
		r = say(err, errlen, -e, "%s: %s", path, strerror(e));
	else if (n > MAX_PLAN_BYTES)
		r = say(err, errlen, -EFBIG, "%s: a plan is at most %llu bytes", path,
			(unsigned long long)MAX_PLAN_BYTES);
	fclose(f);
	if (!r)
		r = fault_plan_parse_text(path, buf, n, out, err, errlen);
	free(buf);
	return r;
}

void fault_plan_free(struct fault_plan *p)
{
	if (!p)
		return;
	free(p->name);
	free(p->e);
	free(p);
}

size_t fault_plan_npoints(const struct fault_plan *p)
{
	return p ? p->npoints : 0;
}

size_t fault_plan_nsims(const struct fault_plan *p)
{
	return p ? p->nsims : 0;
}

/* ---- The canonical text ---- */

/* The shortest decimal that reads back as exactly p. */
static void fmt_prob(double p, char *buf, size_t len)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, p);
		if (strtod(buf, NULL) == p)
			return;
	}
}

struct sbuf {
	char *s;
	size_t n, cap;
	bool oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if (k < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)k < b->cap - b->n) {
			b->n += (size_t)k;
			return;
		}
		size_t cap = (b->cap + (size_t)k + 1) * 2;
		char *ns = realloc(b->s, cap);
		if (!ns) {
			b->oom = true;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
}

static void fmt_sim(struct sbuf *b, const struct sim_fault *f)
{
	sb_printf(b, "sim %s", sim_fault_kind_name(f->kind));
	if (f->disk != SIM_ANY_DISK)
		sb_printf(b, ",disk=%d", f->disk);
	if (f->sector != SIM_ANY_SECTOR)
		sb_printf(b, ",sector=%lld", (long long)f->sector);
	if (f->after_seq)
		sb_printf(b, ",after=%llu", (unsigned long long)f->after_seq);
	if (f->probability != 1.0) {
		char pb[32];
		fmt_prob(f->probability, pb, sizeof(pb));
		sb_printf(b, ",p=%s", pb);
	}
	if (f->count)
		sb_printf(b, ",count=%u", f->count);
	if (f->bits)
		sb_printf(b, ",bits=%u", f->bits);
	if (f->nsectors)
		sb_printf(b, ",n=%u", f->nsectors);
	if (f->shift)
		sb_printf(b, ",shift=%lld", (long long)f->shift);
	sb_printf(b, "\n");
}

static void fmt_rule(struct sbuf *b, const struct rule *r)
{
	sb_printf(b, "%s", r->point->name);
	if (r->mode == MODE_NTH) {
		sb_printf(b, " nth=%llu", (unsigned long long)r->nth);
		if (r->count != 1)
			sb_printf(b, " count=%llu", (unsigned long long)r->count);
	} else if (r->mode == MODE_PROB) {
		char pb[32];
		fmt_prob(r->p, pb, sizeof(pb));
		sb_printf(b, " p=%s", pb);
		if (r->count)
			sb_printf(b, " count=%llu", (unsigned long long)r->count);
	}
	sb_printf(b, " errno=%s\n", fault_errno_name(r->err));
}

int fault_plan_format(const struct fault_plan *p, char **text)
{
	*text = NULL;
	struct sbuf b = { 0 };
	b.s = malloc(64);
	if (!b.s)
		return -ENOMEM;
	b.cap = 64;
	b.s[0] = '\0';
	for (size_t i = 0; p && i < p->n; i++) {
		if (p->e[i].sim)
			fmt_sim(&b, &p->e[i].fault);
		else
			fmt_rule(&b, &p->e[i].rule);
	}
	if (b.oom) {
		free(b.s);
		return -ENOMEM;
	}
	*text = b.s;
	return 0;
}

/* ---- Arming ---- */

struct armed {
	struct rule rule;
	size_t idx;   /* into counts */
	uint64_t rng; /* splitmix64 state */
};

static struct {
	bool armed;
	struct armed *pts;
	struct fault_count *counts;
	size_t n;
} g;

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * UINT64_C(0x100000001b3);
	return h;
}

/* libfiu's external callback: whether this hit of the point fails.  It runs
 * under libfiu's read lock, so it calls nothing of libfiu. */
static int decide(const char *name, int *failnum, void **failinfo, unsigned int *flags)
{
	(void)name;
	(void)flags;
	struct armed *a = *failinfo;
	struct fault_count *c = &g.counts[a->idx];
	uint64_t hit = ++c->hits;
	bool room = !a->rule.count || c->fired < a->rule.count;
	bool fire;
	switch (a->rule.mode) {
	case MODE_NTH:
		fire = room && hit >= a->rule.nth;
		break;
	case MODE_PROB: {
		/* One draw per hit, fired or not: hit i's decision depends on i alone. */
		double u = (double)(splitmix64(&a->rng) >> 11) * 0x1.0p-53;
		fire = room && u < a->rule.p;
		break;
	}
	default:
		fire = room;
		break;
	}
	if (!fire)
		return 0;
	c->fired++;
	*failnum = a->rule.err;
	return 1;
}

static int fiu_ready(void)
{
	static bool done;
	if (!done) {
		if (fiu_init(0))
			return -1;
		done = true;
	}
	return 0;
}

static void release(void)
{
	free(g.pts);
	free(g.counts);
	memset(&g, 0, sizeof(g));
}

int fault_plan_arm(const struct fault_plan *p, uint64_t seed, sim_volume *vol, char *err,
		   size_t errlen)
{
	if (!p)
		return say(err, errlen, -EINVAL, "arm: no plan");
	if (g.armed)
		return say(err, errlen, -EBUSY,
			   "arm: a fault plan is armed already (disarm it first)");
	if (p->nsims && !vol)
		return say(err, errlen, -EINVAL,
			   "arm: the plan has %zu sim line%s and no volume to add %s to", p->nsims,
			   p->nsims == 1 ? "" : "s", p->nsims == 1 ? "it" : "them");
	if (fiu_ready())
		return say(err, errlen, -ENOMEM, "arm: libfiu failed to initialise");
	/* The sim lines first, checked against the volume before any is added. */
	for (size_t i = 0; i < p->n; i++) {
		const struct entry *e = &p->e[i];
		if (!e->sim)
			continue;
		unsigned nd = sim_volume_ndisks(vol);
		if (e->fault.disk != SIM_ANY_DISK && (unsigned)e->fault.disk >= nd)
			return say(err, errlen, -EINVAL,
				   "%s:%u: sim %s: no disk %d (the volume has %u)", p->name,
				   e->line, sim_fault_kind_name(e->fault.kind), e->fault.disk, nd);
		for (unsigned d = 0; d < nd && e->fault.sector >= 0; d++) {
			if (e->fault.disk != SIM_ANY_DISK && (unsigned)e->fault.disk != d)
				continue;
			uint64_t sectors = sim_disk_size(vol, d) / sim_disk_sector_size(vol, d);
			if ((uint64_t)e->fault.sector >= sectors)
				return say(err, errlen, -EINVAL,
					   "%s:%u: sim %s: sector %lld is past the end of disk %u",
					   p->name, e->line, sim_fault_kind_name(e->fault.kind),
					   (long long)e->fault.sector, d);
		}
	}
	g.pts = calloc(p->npoints + 1, sizeof(*g.pts));
	g.counts = calloc(p->npoints + 1, sizeof(*g.counts));
	if (!g.pts || !g.counts) {
		release();
		return say(err, errlen, -ENOMEM, "arm: out of memory");
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct entry *e = &p->e[i];
		if (e->sim)
			continue;
		struct armed *a = &g.pts[g.n];
		a->rule = e->rule;
		a->idx = g.n;
		a->rng = seed ^ fnv1a(e->rule.point->name);
		g.counts[g.n].point = e->rule.point->name;
		if (fiu_enable_external(e->rule.point->name, e->rule.err, a, 0, decide)) {
			for (size_t k = 0; k < g.n; k++)
				fiu_disable(g.pts[k].rule.point->name);
			release();
			return say(err, errlen, -ENOMEM, "arm: libfiu could not enable %s",
				   e->rule.point->name);
		}
		g.n++;
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct entry *e = &p->e[i];
		int a = e->sim ? sim_fault_add(vol, &e->fault) : 0;
		if (a) {
			int r = say(err, errlen, a, "%s:%u: sim %s: %s", p->name, e->line,
				    sim_fault_kind_name(e->fault.kind), sim_volume_error(vol));
			for (size_t k = 0; k < g.n; k++)
				fiu_disable(g.pts[k].rule.point->name);
			release();
			return r;
		}
	}
	g.armed = true;
	fp_armed = g.n > 0;
	return 0;
}

void fault_plan_disarm(void)
{
	if (!g.armed)
		return;
	fp_armed = 0;
	for (size_t i = 0; i < g.n; i++)
		fiu_disable(g.pts[i].rule.point->name);
	release();
}

const struct fault_count *fault_plan_counts(size_t *n)
{
	*n = g.armed ? g.n : 0;
	return g.armed ? g.counts : NULL;
}

uint64_t fault_plan_fired(const char *point)
{
	for (size_t i = 0; g.armed && point && i < g.n; i++)
		if (!strcmp(g.counts[i].point, point))
			return g.counts[i].fired;
	return 0;
}
