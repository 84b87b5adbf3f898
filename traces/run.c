/*
 * run.c - running a workload on a target: each operation executed, its
 * result compared with the errno the workload expects, a log line per
 * operation, and optionally the workload written back annotated with the
 * results (how a run on the kernel becomes the expectation for ref).
 */
#include "traces/run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *errname(int e)
{
	const char *n = wl_errno_name(e);
	return n ? n : "an unnamed errno";
}

/* The op as a line (truncated with "..." when very long). */
static void op_text(const struct wl_op *op, char *buf, size_t len)
{
	struct wl_op o = *op;
	o.expect = 0;
	int n = wl_format(&o, buf, len);
	if (n < 0)
		snprintf(buf, len, "%s", wl_kind_name(op->kind) ? wl_kind_name(op->kind) : "?");
	else if ((size_t)n >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
}

static int annotate(FILE *f, const struct wl_op *op, int got)
{
	struct wl_op o = *op;
	o.expect = got;
	int n = wl_format(&o, NULL, 0);
	if (n < 0)
		return n;
	char *line = malloc((size_t)n + 1);
	if (!line)
		return -ENOMEM;
	wl_format(&o, line, (size_t)n + 1);
	/* wl_format leaves "= 0" out: say it, so the file states every result. */
	int r = fprintf(f, "%s%s\n", line, got ? "" : " = 0") < 0 ? -EIO : 0;
	free(line);
	return r;
}

int wl_run(const struct wl_workload *w, wl_exec_fn exec, void *target,
	   const struct wl_run_opts *opts, struct wl_run_result *res, char *err, size_t errlen)
{
	struct wl_run_opts none = { 0 };
	struct wl_run_result dummy;
	if (!opts)
		opts = &none;
	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	if (errlen)
		err[0] = 0;
	const char *file = w->name ? w->name : "workload";
	for (size_t i = 0; i < w->n; i++) {
		const struct wl_op *op = &w->ops[i];
		char msg[512] = "", text[300];
		int r = 0;
		if (op->kind == WL_CRASH) {
			if (!opts->crash) {
				snprintf(err, errlen, "%s:%zu: crash: this target cannot lose power", file,
					 op->line);
				return -EOPNOTSUPP;
			}
			if ((r = opts->crash(target, msg, sizeof(msg)))) {
				snprintf(err, errlen, "%s:%zu: crash: %s", file, op->line, msg);
				return r;
			}
			res->crashes++;
		} else if (op->kind != WL_MARK) {
			r = exec(target, op, msg, sizeof(msg));
		}
		res->ops++;
		int got = r < 0 ? -r : 0;
		op_text(op, text, sizeof(text));
		if (opts->log)
			fprintf(opts->log, "%zu: %s = %s%s%s\n", op->line, text, got ? errname(got) : "0",
				got && msg[0] ? ": " : "", got ? msg : "");
		if (opts->annotate && (r = annotate(opts->annotate, op, got))) {
			snprintf(err, errlen, "writing the annotated workload: %s", strerror(-r));
			return r;
		}
		if (opts->record || got == op->expect)
			continue;
		if (res->mismatches++ == 0)
			snprintf(err, errlen, "%s:%zu: %s: expected %s, got %s%s%s", file, op->line, text,
				 op->expect ? errname(op->expect) : "success", got ? errname(got) : "success",
				 msg[0] ? " - " : "", msg);
		if (!opts->keep_going)
			return 1;
	}
	return res->mismatches ? 1 : 0;
}
