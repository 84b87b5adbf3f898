/*
 * report_html.h - the HTML report of a trace database: DIR/index.html and
 * hand-written SVG plots beside it, one static page with no JavaScript, no
 * external CSS or fonts, readable offline.  `btrsim report -o DIR` writes it;
 * `make run` puts it in reports/latest/.  traces/README.md, "Reports", lists
 * the sections.
 *
 * The database is read only (opened read-only), but for an older schema,
 * which is migrated on open as every reading command migrates it.  The page
 * is a function of the database, the options and the coverage file: the same
 * input gives the same bytes (no time of "now" in it).
 */
#ifndef BTRSIM_TRACES_REPORT_HTML_H
#define BTRSIM_TRACES_REPORT_HTML_H

#include <stddef.h>
#include <stdint.h>

struct report_html_opts {
	const char *db;       /* the trace database; shown as given in the page's commands */
	const char *dir;      /* the output directory, created (with its parents) when missing */
	int64_t campaign;     /* 0: every campaign; else only this one */
	const char *coverage; /* an lcov tracefile, or NULL: "no coverage data" */
};

/* Writes the report: 0, or -1 with a one-line message in err. */
int report_html(const struct report_html_opts *o, char *err, size_t errlen);

#endif
