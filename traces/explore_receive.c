/*
 * explore_receive.c - what a crash inside a `receive` may leave, for the
 * oracle.  btrfs receive makes the subvolume DIR/NAME (a commit), fills it
 * with ordinary calls, then sets its received uuid (a commit) and its
 * read-only flag (another).  So a crash inside it shows, besides the states
 * before and after:
 *   - DIR/NAME writable, not received, holding any part of the stream: what
 *     it holds is not judged (no promise covers it), everything else must
 *     be the state before the receive with an empty subvolume there;
 *   - DIR/NAME received but still writable, the rest the state after.
 * A subvolume that shows as received must hold the whole stream: that is
 * the promise (issue 22), and the mutant `receive-early` breaks it.
 */
#include "traces/explore_internal.h"
#include "traces/manifest.h"
#include "traces/model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* path escaped as manifest's descriptions show it. */
static char *escaped(const char *path)
{
	char *out = strdup("/");
	for (const char *p = path; out && *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (!n)
			break;
		char *next = mf_path_join(out, p, n);
		free(out);
		out = next;
		p += n;
	}
	return out;
}

/* The line's path is P or below it. */
static bool under(const char *line, size_t linelen, const char *p, size_t pl)
{
	return linelen > pl && !memcmp(line, p, pl) && (line[pl] == ' ' || line[pl] == '/');
}

/* text without the lines of path p and below it (malloc'd; NULL: no memory). */
static char *masked(const char *text, const char *p)
{
	size_t pl = strlen(p), o = 0;
	char *out = malloc(strlen(text) + 1);
	for (const char *l = text; out && *l;) {
		size_t n = strcspn(l, "\n");
		n += l[n] == '\n';
		if (!under(l, n, p, pl)) {
			memcpy(out + o, l, n);
			o += n;
		}
		l += n;
	}
	if (out)
		out[o] = 0;
	return out;
}

int explore_receive_span(struct ex *x, size_t j, const struct model *before,
			 const struct wl_op *op, char *err, size_t errlen)
{
	char **paths;
	size_t n;
	int r = model_receive_subvols(op, &paths, &n);
	if (r == -ENOMEM)
		return r;
	if (r || n != 1) {
		for (size_t i = 0; i < n; i++)
			free(paths[i]);
		free(paths);
		snprintf(err, errlen, "line %zu: the explorer judges a receive of one subvolume "
				      "(this stream has %zu)", op->line, n);
		return -EINVAL;
	}
	struct span *s = &x->spans[j];
	struct model *part = model_clone(before);
	struct wl_op mk = { .kind = WL_SUBVOL_CREATE, .path = paths[0] };
	char *text = NULL;
	r = -ENOMEM;
	if (!part || !(s->rx_path = escaped(paths[0])))
		goto out;
	char why[256];
	if ((r = model_apply(part, &mk, 0, why, sizeof(why)))) {
		if (r == -EINVAL)
			snprintf(err, errlen, "line %zu: the state a receive leaves part-way: %s",
				 op->line, why);
		goto out;
	}
	r = -ENOMEM;
	if (!(text = model_describe(part)) || !(s->rx_text = masked(text, s->rx_path)) ||
	    (x->subv && !(s->rx_subv = model_describe_subvols(part))))
		goto out;
	/* after it, with the read-only flag not yet set */
	if (x->subv) {
		char *ro = NULL, *rw = NULL;
		if (asprintf(&ro, "%s subvol ro received\n", s->rx_path) < 0 ||
		    asprintf(&rw, "%s subvol rw received\n", s->rx_path) < 0) {
			free(ro);
			goto out;
		}
		const char *after = x->subv[j + 1], *at = strstr(after, ro);
		while (at && at != after && at[-1] != '\n')
			at = strstr(at + 1, ro);
		if (at && (s->rx_rw_subv = strdup(after)))
			memcpy(s->rx_rw_subv + (at - after), rw, strlen(rw));
		free(ro);
		free(rw);
		if (!at) {
			snprintf(err, errlen, "line %zu: the model has no received subvolume %s after "
					      "the receive", op->line, paths[0]);
			r = -EINVAL;
			goto out;
		}
		if (!s->rx_rw_subv)
			goto out;
	}
	r = 0;
out:
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	free(text);
	model_free(part);
	return r;
}

void explore_receive_free(struct span *s)
{
	free(s->rx_path);
	free(s->rx_text);
	free(s->rx_subv);
	free(s->rx_rw_subv);
	s->rx_path = s->rx_text = s->rx_subv = s->rx_rw_subv = NULL;
}

int explore_receive_legal(const struct ex *x, size_t lo, size_t hi, const char *text,
			  const char *subv)
{
	for (size_t j = lo; j < hi && j < x->nspans; j++) {
		const struct span *s = &x->spans[j];
		if (!s->rx_path)
			continue;
		if (subv && s->rx_rw_subv && !strcmp(text, x->snaps[j + 1]) &&
		    !strcmp(subv, s->rx_rw_subv))
			return 1;
		if (subv && (!s->rx_subv || strcmp(subv, s->rx_subv)))
			continue;
		char *t = masked(text, s->rx_path);
		if (!t)
			return -ENOMEM;
		bool ok = !strcmp(t, s->rx_text);
		free(t);
		if (ok)
			return 1;
	}
	return 0;
}
