/* report_html.c - the HTML report (report_html.h): the database opened read-only and
 * checked, the page's frame, text escaping, the files written through temporaries. */
#include "traces/report_html_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const svg_names[RH_NSVG] = RH_SVG_NAMES;

/* ---- Text ---- */

/* The length of the valid UTF-8 sequence at p (not ASCII), or 0. U+FFFE and
 * U+FFFF, which XML forbids, count as invalid. */
static size_t utf8_len(const unsigned char *p)
{
	unsigned c = p[0];
	size_t n;
	unsigned lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	if (n == 3 && c == 0xef && p[1] == 0xbf && (p[2] == 0xbe || p[2] == 0xbf))
		return 0;
	return n;
}

void rh_esc(FILE *f, const char *s, size_t max)
{
	if (!s) {
		fputc('-', f);
		return;
	}
	const unsigned char *p = (const unsigned char *)s;
	for (size_t n = 0; *p; n++) {
		if (max && n == max) {
			fputs("\xe2\x80\xa6", f); /* ... */
			return;
		}
		unsigned c = *p;
		size_t len = 1;
		switch (c) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			if (c >= 0x80) {
				len = utf8_len(p);
				if (len)
					fwrite(p, 1, len, f);
				else {
					fputs("\xef\xbf\xbd", f);
					len = 1;
				}
			} else if ((c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f)
				fputs("\xef\xbf\xbd", f);
			else
				fputc((int)c, f);
		}
		p += len;
	}
}

void rh_shell_word(FILE *f, const char *s)
{
	bool plain = *s != 0;
	for (const char *p = s; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=:,", *p))
			plain = false;
	if (plain) {
		rh_esc(f, s, 0);
		return;
	}
	fputs("&#39;", f);
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			fputs("&#39;\\&#39;&#39;", f);
		else {
			char one[2] = { *p, 0 };
			rh_esc(f, one, 0);
		}
	}
	fputs("&#39;", f);
}

void rh_fmt_num(double v, char *buf, size_t len)
{
	double a = v < 0 ? -v : v;
	if (a >= 1e9)
		snprintf(buf, len, "%.3gG", v / 1e9);
	else if (a >= 1e6)
		snprintf(buf, len, "%.3gM", v / 1e6);
	else if (a >= 1e4)
		snprintf(buf, len, "%.3gk", v / 1e3);
	else if (a == (double)(long long)a)
		snprintf(buf, len, "%lld", (long long)v);
	else
		snprintf(buf, len, "%.3g", v);
}

/* ---- The database ---- */

static void seterr(struct rh *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void seterr(struct rh *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
}

int rh_prep(struct rh *r, const char *sql, sqlite3_stmt **st)
{
	return store_prep(&r->st, sql, st, r->err, r->errlen);
}

int rh_finish(struct rh *r, sqlite3_stmt *st, int rc, const char *what)
{
	if (rc != SQLITE_DONE) {
		store_db_err(&r->st, what, r->err, r->errlen);
		sqlite3_finalize(st);
		return -1;
	}
	sqlite3_finalize(st);
	return 0;
}

int rh_count(struct rh *r, const char *sql, int64_t *out)
{
	sqlite3_stmt *st;
	if (rh_prep(r, sql, &st))
		return -1;
	if (sqlite3_bind_parameter_count(st) >= 1)
		sqlite3_bind_int64(st, 1, r->o->campaign);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		return 0;
	}
	if (rc == SQLITE_DONE) { /* a count always has its row */
		sqlite3_finalize(st);
		seterr(r, "%s: a count returned no row", r->o->db);
		return -1;
	}
	rh_finish(r, st, rc, "count");
	return -1;
}

const char *rh_col(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

/* What the report reads, table by table: preparing these fails on a database
 * that lacks a table or a column ("no such table: fault_hits"). */
static const char *const schema_probe[] = {
	"SELECT id, args, seed, build, started, ended, workloads, states, violations, seconds,"
	" status FROM campaigns",
	"SELECT id, kind, seed, build, config, workload_id, started, ended, ops, states,"
	" violations, seconds, status, campaign_id, name, faults, detected FROM runs",
	"SELECT id, hash FROM workloads",
	"SELECT run_id, k, point, picks, verdict FROM crash_states",
	"SELECT run_id, idx, epoch, fault FROM io",
	"SELECT id, run_id, description, state_k, point, picks, verdict, reproducer FROM violations",
	"SELECT run_id, point, hits, fired FROM fault_hits",
	"SELECT id, harness, found, kind, signal, stack_hash, stack, input, minimized, fixed"
	" FROM findings",
	"SELECT id, harness, at, elapsed, execs, execs_per_sec, corpus, crashes, hangs FROM fuzz_stats",
	"SELECT id, args, seed, build, started, files, runs, failed, not_injected FROM raid_campaigns",
	"SELECT campaign_id, idx, profile, disks, fault, within, mounted, injected, detected,"
	" repaired, files, lost, wrong, failed, verdict FROM raid_runs",
};

/* Opened for reading and writing when the file allows it, though only read:
 * the last connection to close then checkpoints and removes the -wal and
 * -shm files, which a read-only connection would leave beside the database. */
static int open_ro(struct rh *r, const char *path)
{
	r->st.path = (char *)path;
	if (sqlite3_open_v2(path, &r->st.db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK)
		goto opened;
	sqlite3_close(r->st.db);
	r->st.db = NULL;
	if (sqlite3_open_v2(path, &r->st.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		if (r->st.db)
			seterr(r, "%s: cannot open: %s", path, sqlite3_errmsg(r->st.db));
		else
			seterr(r, "%s: out of memory", path);
		return -1;
	}
opened:
	sqlite3_extended_result_codes(r->st.db, 1);
	sqlite3_busy_timeout(r->st.db, 10000);
	return 0;
}

static void close_ro(struct rh *r)
{
	if (r->st.db && !sqlite3_get_autocommit(r->st.db))
		sqlite3_exec(r->st.db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close_v2(r->st.db);
	r->st.db = NULL;
}

static int user_version(struct rh *r, int64_t *v)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(r->st.db, "PRAGMA user_version", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		store_db_err(&r->st, "schema version", r->err, r->errlen);
		sqlite3_finalize(st);
		return -1;
	}
	*v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}

/*
 * Opens the database read-only and checks that it is a trace database this
 * code reads.  An older btrsim's (version 1 or 2) is migrated first by the
 * store, as `btrsim runs` would; a newer one, a file that is not SQLite, an
 * SQLite database of another program (version 0) or one that lacks a table
 * are refused, and none is changed.
 */
static int open_db(struct rh *r)
{
	const char *path = r->o->db;
	struct stat sb;
	if (stat(path, &sb)) {
		if (errno == ENOENT)
			seterr(r, "%s: no such trace database", path);
		else
			seterr(r, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (S_ISDIR(sb.st_mode)) {
		seterr(r, "%s: is a directory, not a trace database", path);
		return -1;
	}
	int64_t v;
	if (open_ro(r, path) || user_version(r, &v))
		goto fail;
	if (v > STORE_VERSION) {
		seterr(r, "%s: trace database version %lld is newer than this btrsim knows (%d); "
			  "use a newer btrsim", path, (long long)v, STORE_VERSION);
		goto fail;
	}
	if (v <= 0) {
		int64_t tables = 0;
		sqlite3_stmt *st = NULL;
		if (sqlite3_prepare_v2(r->st.db, "SELECT count(*) FROM sqlite_master", -1, &st,
				       NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			tables = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		if (tables)
			seterr(r, "%s: not a btrsim trace database (an SQLite database with other "
				  "tables and no schema version)", path);
		else
			seterr(r, "%s: not a btrsim trace database (an empty SQLite database)", path);
		goto fail;
	}
	if (v < STORE_VERSION) {
		close_ro(r);
		struct store *s;
		if (store_open_existing(path, &s, r->err, r->errlen))
			return -1;
		store_close(s);
		if (open_ro(r, path))
			goto fail;
	}
	for (size_t i = 0; i < sizeof(schema_probe) / sizeof(schema_probe[0]); i++) {
		sqlite3_stmt *st = NULL;
		if (sqlite3_prepare_v2(r->st.db, schema_probe[i], -1, &st, NULL) != SQLITE_OK) {
			int code = sqlite3_errcode(r->st.db) & 0xff;
			if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
				store_db_err(&r->st, "schema", r->err, r->errlen);
			else
				seterr(r, "%s: not a btrsim trace database of version %d (%s)", path,
				       STORE_VERSION, sqlite3_errmsg(r->st.db));
			goto fail;
		}
		sqlite3_finalize(st);
	}
	/* One read transaction: every section sees the same snapshot, even while
	 * a campaign goes on recording into the database. */
	if (sqlite3_exec(r->st.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		store_db_err(&r->st, "begin", r->err, r->errlen);
		goto fail;
	}
	return 0;
fail:
	close_ro(r);
	return -1;
}

/* ---- Files ---- */

static char *join(const char *dir, const char *dot, const char *name, const char *ext)
{
	char *p;
	if (asprintf(&p, "%s/%s%s%s", dir, dot, name, ext) < 0)
		return NULL;
	return p;
}

/* mkdir -p */
static int make_dir(struct rh *r, const char *dir)
{
	size_t n = strlen(dir);
	char *p = strdup(dir);
	if (!p) {
		seterr(r, "out of memory");
		return -1;
	}
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != 0)
			continue;
		char c = p[i];
		p[i] = 0;
		struct stat sb;
		if (stat(p, &sb)) {
			if (errno != ENOENT || (mkdir(p, 0777) && errno != EEXIST)) {
				seterr(r, "%s: %s", p, strerror(errno));
				free(p);
				return -1;
			}
		} else if (!S_ISDIR(sb.st_mode)) {
			seterr(r, "%s: %s", p, strerror(ENOTDIR));
			free(p);
			return -1;
		}
		p[i] = c;
	}
	free(p);
	return 0;
}

/* Closes f (opened on DIR/.NAME.tmp) and renames it to DIR/NAME. */
static int commit_file(struct rh *r, FILE *f, const char *name)
{
	char *tmp = join(r->o->dir, ".", name, ".tmp"), *dst = join(r->o->dir, "", name, "");
	int bad = ferror(f);
	int e = bad ? EIO : 0;
	if (fclose(f) && !e)
		e = errno;
	int ret = -1;
	if (!tmp || !dst)
		seterr(r, "out of memory");
	else if (e) {
		seterr(r, "%s: %s", dst, strerror(e));
		unlink(tmp);
	} else if (rename(tmp, dst)) {
		seterr(r, "%s: %s", dst, strerror(errno));
		unlink(tmp);
	} else
		ret = 0;
	free(tmp);
	free(dst);
	return ret;
}

static FILE *open_tmp(struct rh *r, const char *name)
{
	char *tmp = join(r->o->dir, ".", name, ".tmp");
	if (!tmp) {
		seterr(r, "out of memory");
		return NULL;
	}
	FILE *f = fopen(tmp, "w");
	if (!f)
		seterr(r, "%s: %s", tmp, strerror(errno));
	free(tmp);
	return f;
}

FILE *rh_svg_open(struct rh *r, const char *name)
{
	return open_tmp(r, name);
}

int rh_svg_close(struct rh *r, const char *name, FILE *f, int w, int h, const char *alt)
{
	if (commit_file(r, f, name))
		return -1;
	for (size_t i = 0; i < RH_NSVG; i++)
		if (!strcmp(svg_names[i], name))
			r->written[i] = true;
	fprintf(r->f, "<p><img src=\"%s\" width=\"%d\" height=\"%d\" alt=\"", name, w, h);
	rh_esc(r->f, alt, 0);
	fputs("\"></p>\n", r->f);
	return 0;
}

/* ---- Page pieces ---- */

void rh_td(struct rh *r, sqlite3_stmt *st, int i, size_t max)
{
	fputs("<td>", r->f);
	rh_esc(r->f, rh_col(st, i), max);
	fputs("</td>", r->f);
}

void rh_td_int(struct rh *r, sqlite3_stmt *st, int i)
{
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		fputs("<td class=\"n\">-</td>", r->f);
	else
		fprintf(r->f, "<td class=\"n\">%lld</td>", (long long)sqlite3_column_int64(st, i));
}

void rh_left_out(struct rh *r, int64_t total, int64_t shown, const char *what)
{
	if (total > shown)
		fprintf(r->f, "<p class=\"note\">%lld more %s left out: the table shows %lld of %lld.</p>\n",
			(long long)(total - shown), what, (long long)shown, (long long)total);
}

static const char style[] =
	"body{font-family:sans-serif;max-width:72em;margin:1em auto;padding:0 1em;color:#222}\n"
	"table{border-collapse:collapse;margin:.5em 0;font-size:90%}\n"
	"th,td{border:1px solid #bbb;padding:2px 6px;text-align:left;vertical-align:top}\n"
	"th{background:#eee}\n"
	"td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\n"
	"pre{background:#f5f5f5;border:1px solid #ddd;padding:.5em;overflow-x:auto}\n"
	".note{color:#555}\n"
	".bad{color:#b71c1c;font-weight:bold}\n"
	".good{color:#1b5e20}\n"
	"img{max-width:100%;height:auto}\n"
	"section{margin-top:2em}\n";

static const struct {
	const char *id, *title;
} sections[] = {
	{ "summary", "Campaign summary" },
	{ "crash-states", "Crash states per workload and per epoch" },
	{ "violations", "Violations and their reproducers" },
	{ "fault-points", "Fault points hit" },
	{ "fuzzing", "Fuzzing" },
	{ "raid-campaign", "RAID fault campaign" },
	{ "coverage", "Coverage" },
};

static int head(struct rh *r)
{
	FILE *f = r->f;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>btrsim report: ",
	      f);
	rh_esc(f, r->o->db, 0);
	if (r->o->campaign)
		fprintf(f, ", campaign %lld", (long long)r->o->campaign);
	fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>btrsim report</h1>\n", style);
	fputs("<p>Trace database <code>", f);
	rh_esc(f, r->o->db, 0);
	fprintf(f, "</code> (schema version %d), ", STORE_VERSION);
	if (r->o->campaign)
		fprintf(f, "campaign %lld only.", (long long)r->o->campaign);
	else
		fputs("every campaign and run.", f);
	sqlite3_stmt *st;
	if (rh_prep(r, "SELECT count(*), min(started), max(coalesce(ended, started)) FROM runs"
		       " WHERE ?1 = 0 OR campaign_id = ?1", &st))
		return -1;
	sqlite3_bind_int64(st, 1, r->o->campaign);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0) {
		fprintf(f, " %lld runs recorded from ", (long long)sqlite3_column_int64(st, 0));
		rh_esc(f, rh_col(st, 1), 0);
		fputs(" to ", f);
		rh_esc(f, rh_col(st, 2), 0);
		fputs(" (UTC).", f);
		rc = SQLITE_DONE;
	} else if (rc == SQLITE_ROW) {
		fputs(" No run recorded.", f);
		rc = SQLITE_DONE;
	}
	if (rh_finish(r, st, rc, "runs"))
		return -1;
	fputs("</p>\n<nav>\n<ol>\n", f);
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		fprintf(f, "<li><a href=\"#%s\">%s</a></li>\n", sections[i].id, sections[i].title);
	fputs("</ol>\n</nav>\n", f);
	return 0;
}

static int section(struct rh *r, size_t i, int (*body)(struct rh *))
{
	fprintf(r->f, "<section id=\"%s\">\n<h2>%zu. %s</h2>\n", sections[i].id, i + 1,
		sections[i].title);
	if (body(r))
		return -1;
	fputs("</section>\n", r->f);
	return 0;
}

static int campaign_exists(struct rh *r)
{
	sqlite3_stmt *st;
	if (rh_prep(r, "SELECT 1 FROM campaigns WHERE id = ?1", &st))
		return -1;
	sqlite3_bind_int64(st, 1, r->o->campaign);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		sqlite3_finalize(st);
		return 0;
	}
	if (rc == SQLITE_DONE) {
		sqlite3_finalize(st);
		seterr(r, "%s: campaign %lld: no such campaign", r->o->db, (long long)r->o->campaign);
		return -1;
	}
	return rh_finish(r, st, rc, "campaign");
}

int report_html(const struct report_html_opts *o, char *err, size_t errlen)
{
	struct rh r = { .o = o, .err = err, .errlen = errlen };
	if (open_db(&r))
		return -1;
	int ret = -1;
	if ((o->campaign && campaign_exists(&r)) || rh_coverage_load(&r))
		goto out;
	if (make_dir(&r, o->dir) || !(r.f = open_tmp(&r, "index.html")))
		goto out;
	int (*const bodies[])(struct rh *) = { rh_summary, rh_states,  rh_violations, rh_faults,
					       rh_fuzzing, rh_raid,    rh_coverage };
	if (head(&r))
		goto out;
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		if (section(&r, i, bodies[i]))
			goto out;
	fputs("</body>\n</html>\n", r.f);
	FILE *f = r.f;
	r.f = NULL;
	if (commit_file(&r, f, "index.html"))
		goto out;
	/* A plot an earlier report left here and this one did not draw would
	 * only mislead: it is removed. */
	for (size_t i = 0; i < RH_NSVG; i++) {
		if (r.written[i])
			continue;
		char *p = join(o->dir, "", svg_names[i], "");
		if (p)
			unlink(p);
		free(p);
	}
	ret = 0;
out:
	if (r.f) {
		fclose(r.f);
		char *tmp = join(o->dir, ".", "index.html", ".tmp");
		if (tmp)
			unlink(tmp);
		free(tmp);
	}
	close_ro(&r);
	rh_coverage_free(&r);
	return ret;
}
