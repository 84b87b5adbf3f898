/*
 * report_html_internal.h - shared by the files of the HTML report only:
 * report_html.c (opening the database, the page, the files), report_html_svg.c
 * (the plots), report_html_runs.c (summary, crash states, violations),
 * report_html_more.c (fault points, fuzzing, coverage).
 */
#ifndef BTRSIM_TRACES_REPORT_HTML_INTERNAL_H
#define BTRSIM_TRACES_REPORT_HTML_INTERNAL_H

#include "traces/report_html.h"
#include "traces/store_internal.h"

#include <stdbool.h>
#include <stdio.h>

/* Tables list at most this many rows, and say how many they left out. */
#define RH_MAX_ROWS 200
/* Violations shown whole (description, reproducer, commands); the rest in a table. */
#define RH_MAX_VIOLATIONS 50
/* The SVG files a report may write (every one is named here, so that a file a
 * previous report left in the directory and this one did not write is removed). */
#define RH_SVG_NAMES                                                                     \
	{ "states-per-workload.svg", "verdicts-per-epoch.svg", "fault-points.svg",        \
	  "fuzz-execs.svg", "fuzz-findings.svg", "coverage.svg" }
#define RH_NSVG 6

struct rh_cov_dir {
	char *name;       /* a folder, "ref/" */
	long long c[6];   /* lcov's LF LH FNF FNH BRF BRH, summed */
};

struct rh {
	const struct report_html_opts *o;
	struct rh_cov_dir *cov; /* the coverage file's folders, sorted (rh_coverage_load) */
	size_t ncov, ncov_files;
	struct store st;  /* the read-only connection, for store_db_err */
	FILE *f;          /* index.html, being written */
	char *err;
	size_t errlen;
	bool written[RH_NSVG];
};

/* ---- Text ---- */

/* Writes s escaped for HTML and XML text and attributes (& < > " '), invalid
 * UTF-8 and control bytes as U+FFFD; at most max characters (0: all), then an
 * ellipsis.  NULL prints as "-". */
void rh_esc(FILE *f, const char *s, size_t max);
/* s as one shell word (quoted when needed), escaped for HTML. */
void rh_shell_word(FILE *f, const char *s);
/* A number with an SI suffix where it is long: 950, 12.5k, 3.1M. */
void rh_fmt_num(double v, char *buf, size_t len);

/* ---- The database ---- */

int rh_prep(struct rh *r, const char *sql, sqlite3_stmt **st);
/* Finalizes st; rc is the last sqlite3_step's: anything but SQLITE_DONE is the error. */
int rh_finish(struct rh *r, sqlite3_stmt *st, int rc, const char *what);
/* The one integer of a one-row query with ?1 bound to the campaign (0: all). */
int rh_count(struct rh *r, const char *sql, int64_t *out);
/* Column i as text, or NULL. */
const char *rh_col(sqlite3_stmt *st, int i);

/* ---- Page pieces ---- */

/* <td> with the escaped text of column i ("-" for NULL), at most max characters. */
void rh_td(struct rh *r, sqlite3_stmt *st, int i, size_t max);
/* <td class="n"> with the integer of column i ("-" for NULL). */
void rh_td_int(struct rh *r, sqlite3_stmt *st, int i);
/* "<p class=note>N more rows left out (the table shows the first M).</p>" when shown < total. */
void rh_left_out(struct rh *r, int64_t total, int64_t shown, const char *what);

/* ---- SVG files ---- */

/* Opens DIR/NAME (one of RH_SVG_NAMES) for writing, through a temporary file. */
FILE *rh_svg_open(struct rh *r, const char *name);
/* Closes it, renames it into place and writes the <img> that shows it. */
int rh_svg_close(struct rh *r, const char *name, FILE *f, int w, int h, const char *alt);

/* ---- Plots (report_html_svg.c) ---- */

/* Bars: n categories (labels), nseries values each (v[i * nseries + s]). */
struct rh_bars {
	const char *title, *xlabel, *ylabel;
	size_t n, nseries;
	char **labels;
	const char *const *series; /* names, for the legend (nseries > 1) */
	const char *const *colors;
	const double *v;
	double max;    /* the value axis' end, or 0: from the data */
	bool overlay;  /* horizontal bars: series drawn over each other (each <= the one before) */
	bool percent;  /* values are percentages: labels end in % */
	bool legend;   /* a legend even for one series */
};
/* Vertical bars, series stacked; *w and *h receive the picture's size. */
void rh_svg_vbars(FILE *f, const struct rh_bars *b, int *w, int *h);
/* Horizontal bars, one row per category, series side by side (or overlaid). */
void rh_svg_hbars(FILE *f, const struct rh_bars *b, int *w, int *h);
/* The file DIR/NAME drawn with rh_svg_vbars (vertical) or rh_svg_hbars, and
 * its <img> with alt text in the page.  0 or -1 (err set). */
int rh_bar_chart(struct rh *r, const char *name, const struct rh_bars *b, bool vertical,
		 const char *alt);

struct rh_line {
	const char *name, *color;
	size_t n;
	const double *x, *y;
};
/* Lines from x = 0 and y = 0 to the data's ends; integer: y ticks on whole numbers. */
void rh_svg_lines(FILE *f, const char *title, const char *xlabel, const char *ylabel, bool integer,
		  const struct rh_line *lines, size_t nlines, int *w, int *h);
/* A round step (1, 2 or 5 times a power of ten) that cuts [0, max] into about n pieces. */
double rh_nice_step(double max, int n);
/* The colour of series i of a plot with several (a fixed palette). */
const char *rh_color(size_t i);

/* ---- Sections ---- */

int rh_summary(struct rh *r);     /* report_html_runs.c */
int rh_states(struct rh *r);
int rh_violations(struct rh *r);
int rh_faults(struct rh *r);      /* report_html_more.c */
int rh_fuzzing(struct rh *r);
int rh_raid(struct rh *r);        /* report_html_raid.c */
int rh_coverage(struct rh *r);
/* Reads the coverage file, if any, before anything is written. */
int rh_coverage_load(struct rh *r);
void rh_coverage_free(struct rh *r);

#endif
