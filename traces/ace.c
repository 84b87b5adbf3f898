/* ace.c - the bounded workload enumeration (ace.h): the default set, and
 * the subvolume set (ace_new_subvol) over files in a subvolume /S and its
 * snapshot /T. */
#include "traces/ace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 4
#define MAX_STEPS 4096
#define LINE 160

/* One core operation and the persistence point after it ("" for none). */
struct step {
	char op[LINE];
	char persist[LINE];
};

struct ace {
	unsigned seq;
	bool subvol;         /* the subvolume set */
	bool quota;          /* the setup starts with quota-enable (ace_set_quota) */
	char *setup;         /* the setup's text */
	size_t setup_ops;
	struct step *steps;  /* every (op, persistence point) */
	size_t nsteps;
	size_t nfinal;       /* steps[0..nfinal) have a persistence point */
};

static const char *const op_names[] = {
	"create", "mkdir", "write", "fallocate", "truncate", "link", "rename",
	"unlink", "rmdir", "symlink", "setxattr", "removexattr", "chmod",
	/* only when --ops names them: not in ace_op_names(), the default */
	"defrag", "clone", "clone-range", "dedupe",
};
#define NOPS (sizeof(op_names) / sizeof(op_names[0]))

/* The subvolume set's operations. */
static const char *const sv_op_names[] = {
	"create", "write", "truncate", "unlink", "link", "rename", "rmdir",
	"snapshot", "subvol-create", "subvol-delete", "subvol-sync",
};
#define NSVOPS (sizeof(sv_op_names) / sizeof(sv_op_names[0]))
#define MAX_NOPS (NOPS > NSVOPS ? NOPS : NSVOPS)

const char *ace_op_names(void)
{
	return "create,mkdir,write,fallocate,truncate,link,rename,unlink,rmdir,symlink,setxattr,"
	       "removexattr,chmod";
}

const char *ace_subvol_op_names(void)
{
	return "create,write,truncate,unlink,link,rename,rmdir,snapshot,subvol-create,"
	       "subvol-delete,subvol-sync";
}

void ace_free(struct ace *a)
{
	if (!a)
		return;
	free(a->setup);
	free(a->steps);
	free(a);
}

int ace_set_quota(struct ace *a)
{
	if (a->quota)
		return 0;
	char *setup;
	if (asprintf(&setup, "quota-enable\n%s", a->setup) < 0)
		return -ENOMEM;
	free(a->setup);
	a->setup = setup;
	a->setup_ops++;
	a->quota = true;
	return 0;
}

uint64_t ace_count(const struct ace *a)
{
	uint64_t n = a->nfinal;
	for (unsigned i = 1; i < a->seq; i++)
		n *= a->nsteps;
	return n;
}

size_t ace_setup_ops(const struct ace *a)
{
	return a->setup_ops;
}

/* The parent directory of an absolute path ("/" for "/foo"). */
static void parent(const char *path, char *out, size_t len)
{
	const char *s = strrchr(path, '/');
	size_t n = s && s != path ? (size_t)(s - path) : 1;
	snprintf(out, len, "%.*s", (int)n, path);
}

struct gen {
	struct ace *a;
	const char *const *names; /* op_names or sv_op_names */
	size_t nnames;
	bool wanted[MAX_NOPS];
	const char *files[MAX_FILES];
	size_t nfiles;
	const char *dirs[MAX_FILES + 1];
	char dirbuf[MAX_FILES][LINE];
	size_t ndirs;
	int err;
};

static bool wants(const struct gen *g, const char *op)
{
	for (size_t i = 0; i < g->nnames; i++)
		if (!strcmp(g->names[i], op))
			return g->wanted[i];
	return false;
}

/* Adds core op `line` (kind `op`, naming paths p1 and p2) with each of its
 * persistence points: fsync of the paths it names and of their parents,
 * fdatasync of a file whose data it changed, sync. */
static void add(struct gen *g, const char *op, const char *line, const char *p1, const char *p2)
{
	if (!wants(g, op) || g->err)
		return;
	char persist[8][LINE], dir[LINE], want[LINE + 8];
	size_t np = 0;
	const char *paths[2] = { p1, p2 };
	bool data = !strcmp(op, "write") || !strcmp(op, "fallocate") || !strcmp(op, "truncate") ||
		    !strcmp(op, "defrag") || !strcmp(op, "clone") || !strcmp(op, "clone-range") ||
		    !strcmp(op, "dedupe");
	for (int i = 0; i < 2 && paths[i]; i++) {
		snprintf(persist[np++], LINE, "fsync %s", paths[i]);
		if (data)
			snprintf(persist[np++], LINE, "fdatasync %s", paths[i]);
		parent(paths[i], dir, sizeof(dir));
		snprintf(want, sizeof(want), "fsync %.60s", dir);
		bool seen = false;
		for (size_t j = 0; j < np; j++)
			seen |= !strcmp(persist[j], want);
		if (!seen)
			snprintf(persist[np++], LINE, "fsync %.60s", dir);
	}
	snprintf(persist[np++], LINE, "sync");
	for (size_t j = 0; j < np; j++) {
		if (g->a->nsteps >= MAX_STEPS) {
			g->err = -E2BIG;
			return;
		}
		struct step *st = &g->a->steps[g->a->nsteps++];
		snprintf(st->op, LINE, "%s", line);
		memcpy(st->persist, persist[j], LINE);
	}
}

/* Every core op over the files and directories. */
static void enumerate(struct gen *g)
{
	char line[LINE], other[LINE];
	for (size_t i = 0; i < g->nfiles; i++) {
		const char *f = g->files[i];
		snprintf(line, LINE, "create %s", f);
		add(g, "create", line, f, NULL);
		snprintf(line, LINE, "write %s 16K 4K 7", f); /* append */
		add(g, "write", line, f, NULL);
		snprintf(line, LINE, "write %s 4K 4K 8", f); /* overwrite */
		add(g, "write", line, f, NULL);
		snprintf(line, LINE, "fallocate %s 16K 8K keep-size", f);
		add(g, "fallocate", line, f, NULL);
		snprintf(line, LINE, "fallocate %s 4K 4K punch-hole", f);
		add(g, "fallocate", line, f, NULL);
		snprintf(line, LINE, "fallocate %s 2K 12K zero-range", f);
		add(g, "fallocate", line, f, NULL);
		snprintf(line, LINE, "fallocate %s 12K 16K zero-range-keep-size", f);
		add(g, "fallocate", line, f, NULL);
		snprintf(line, LINE, "truncate %s 2K", f);
		add(g, "truncate", line, f, NULL);
		snprintf(line, LINE, "truncate %s 24K", f);
		add(g, "truncate", line, f, NULL);
		snprintf(line, LINE, "unlink %s", f);
		add(g, "unlink", line, f, NULL);
		snprintf(other, LINE, "%.60s.sym", f);
		snprintf(line, LINE, "symlink %.60s %.60s", f, other);
		add(g, "symlink", line, other, NULL);
		snprintf(line, LINE, "setxattr %s user.a v2", f);
		add(g, "setxattr", line, f, NULL);
		snprintf(line, LINE, "removexattr %s user.a", f);
		add(g, "removexattr", line, f, NULL);
		snprintf(line, LINE, "chmod %s 0600", f);
		add(g, "chmod", line, f, NULL);
		snprintf(line, LINE, "defrag %s", f);
		add(g, "defrag", line, f, NULL);
		for (size_t j = 0; j < g->nfiles; j++) {
			if (j == i)
				continue;
			snprintf(line, LINE, "link %s %s", f, g->files[j]);
			add(g, "link", line, f, g->files[j]);
			snprintf(line, LINE, "rename %s %s", f, g->files[j]);
			add(g, "rename", line, f, g->files[j]);
			/* reflinks into the other file (its persistence points:
			 * the destination's) */
			const char *o = g->files[j];
			snprintf(line, LINE, "clone %s %s", f, o);
			add(g, "clone", line, o, NULL);
			snprintf(line, LINE, "clone-range %s 4K 8K %s 8K", f, o);
			add(g, "clone-range", line, o, NULL);
			snprintf(line, LINE, "clone-range %s 0 0 %s 16K", f, o); /* to f's end */
			add(g, "clone-range", line, o, NULL);
			snprintf(line, LINE, "dedupe %s 0 16K %s 0", f, o);
			add(g, "dedupe", line, o, NULL);
		}
		/* within the file: a block onto another */
		snprintf(line, LINE, "clone-range %s 0 4K %s 8K", f, f);
		add(g, "clone-range", line, f, NULL);
	}
	for (size_t i = 0; i < g->ndirs; i++) {
		const char *d = g->dirs[i];
		snprintf(line, LINE, "mkdir %s", d);
		add(g, "mkdir", line, d, NULL);
		snprintf(line, LINE, "rmdir %s", d);
		add(g, "rmdir", line, d, NULL);
		if (strcmp(d, "/B")) {
			snprintf(line, LINE, "rename %s /B", d);
			add(g, "rename", line, d, "/B");
		}
	}
}

/* The subvolume set: the files in /S and in its snapshot /T (made by the
 * setup: their data shared), links and renames inside each and across the
 * two (EXDEV), a write to /U (a snapshot some steps make), and the
 * subvolume operations; these commit, so their persistence point is a sync
 * alone. */
static void enumerate_subvol(struct gen *g)
{
	static const char *const side[2] = { "/S", "/T" };
	char line[LINE], p[64], q[64];
	for (int s = 0; s < 2; s++) {
		for (size_t i = 0; i < g->nfiles; i++) {
			snprintf(p, sizeof(p), "%s%.48s", side[s], g->files[i]);
			snprintf(line, LINE, "create %.60s", p);
			add(g, "create", line, p, NULL);
			snprintf(line, LINE, "write %.60s 16K 4K 7", p); /* append */
			add(g, "write", line, p, NULL);
			snprintf(line, LINE, "write %.60s 4K 4K 8", p); /* overwrite shared data */
			add(g, "write", line, p, NULL);
			snprintf(line, LINE, "truncate %.60s 2K", p);
			add(g, "truncate", line, p, NULL);
			snprintf(line, LINE, "unlink %.60s", p);
			add(g, "unlink", line, p, NULL);
			for (size_t j = 0; j < g->nfiles; j++) {
				if (j == i)
					continue;
				snprintf(q, sizeof(q), "%s%.48s", side[s], g->files[j]);
				snprintf(line, LINE, "link %.60s %.60s", p, q);
				add(g, "link", line, p, q);
				snprintf(line, LINE, "rename %.60s %.60s", p, q);
				add(g, "rename", line, p, q);
			}
		}
	}
	snprintf(p, sizeof(p), "/S%.48s", g->files[0]);
	snprintf(q, sizeof(q), "/T%.48s", g->files[0]);
	snprintf(line, LINE, "link %.60s %.60s", p, q); /* EXDEV */
	add(g, "link", line, p, q);
	snprintf(line, LINE, "rename %.60s %.60s", p, q); /* EXDEV */
	add(g, "rename", line, p, q);
	snprintf(p, sizeof(p), "/U%.48s", g->files[0]);
	snprintf(line, LINE, "write %.60s 4K 4K 9", p); /* a snapshot of a snapshot, or ro */
	add(g, "write", line, p, NULL);
	static const char *const sv[][2] = {
		{ "snapshot", "snapshot /S /U" },
		{ "snapshot", "snapshot /S /U ro" },
		{ "snapshot", "snapshot /T /U" },      /* a snapshot of a snapshot */
		{ "subvol-create", "subvol-create /S/N" }, /* nested: /U/N a stand-in */
		{ "subvol-delete", "subvol-delete /S/N" },
		{ "subvol-delete", "subvol-delete /T" }, /* its shared data stays /S's */
		{ "subvol-delete", "subvol-delete /S" },
		{ "subvol-delete", "subvol-delete /U" },
		{ "subvol-sync", "subvol-sync" },
		{ "rmdir", "rmdir /U/N" },             /* a stand-in goes */
		{ "rmdir", "rmdir /S/N" },             /* an empty subvolume goes */
		{ "rename", "rename /T /U" },          /* a subvolume moves */
		{ "rename", "rename /U /S/U" },        /* into another subvolume */
		{ "rename", "rename /S/N /U/N" },      /* over a stand-in */
		{ "create", "create /U/N/f" },         /* EACCES: a stand-in takes no names */
	};
	for (size_t i = 0; i < sizeof(sv) / sizeof(sv[0]); i++)
		add(g, sv[i][0], sv[i][1], NULL, NULL);
}

/* The setup: the directories of the files, every file but the last with
 * 16 KiB of data and an xattr, then sync. */
static int setup(struct gen *g, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0, n = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	const char *sv = g->a->subvol ? "/S" : "";
	if (g->a->subvol) {
		fprintf(f, "subvol-create /S\n");
		n++;
	}
	for (size_t i = 0; i < g->ndirs; i++)
		if (strcmp(g->dirs[i], "/B")) {
			fprintf(f, "mkdir %s%s\n", sv, g->dirs[i]);
			n++;
		}
	for (size_t i = 0; i + 1 < g->nfiles; i++) {
		fprintf(f, "create %s%s\nwrite %s%s 0 16K %zu\nsetxattr %s%s user.a v1\n", sv,
			g->files[i], sv, g->files[i], i + 1, sv, g->files[i]);
		n += 3;
	}
	if (g->a->subvol) {
		fprintf(f, "snapshot /S /T\n");
		n++;
	}
	fprintf(f, "sync\n");
	n++;
	if (fclose(f)) {
		free(text);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	g->a->setup = text;
	g->a->setup_ops = n;
	return 0;
}

/* Splits a comma list into at most max names (in place); max + 1 when longer. */
static size_t split(char *list, const char **out, size_t max)
{
	size_t n = 0;
	for (char *save, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (n == max)
			return max + 1;
		out[n++] = t;
	}
	return n;
}

static int check_file(const char *f, char *err, size_t errlen)
{
	static const char ok[] = "/ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-";
	const char *slash = strchr(f + 1, '/');
	size_t len = strlen(f);
	if (f[0] != '/' || len < 2 || len > 40 || (slash && strchr(slash + 1, '/')) ||
	    f[len - 1] == '/' || strspn(f, ok) != len || strstr(f, "/.") || !strncmp(f, "/B/", 3) ||
	    !strcmp(f, "/B")) {
		snprintf(err, errlen,
			 "--files: '%s' is not an absolute file path of at most one directory level "
			 "(letters, digits, '_', '.', '-'; not /B, which the workloads make)", f);
		return -EINVAL;
	}
	return 0;
}

static int parse_ops(struct gen *g, char *list, char *err, size_t errlen)
{
	const char *names[MAX_NOPS + 1];
	size_t nn = split(list, names, g->nnames);
	if (nn == 0 || nn > g->nnames) {
		snprintf(err, errlen, "--ops takes 1 to %zu operation names", g->nnames);
		return -EINVAL;
	}
	for (size_t i = 0; i < nn; i++) {
		size_t k = 0;
		while (k < g->nnames && strcmp(g->names[k], names[i]))
			k++;
		if (k == g->nnames) {
			snprintf(err, errlen, "--ops: unknown operation '%s' (known%s: %s%s)", names[i],
				 g->a->subvol ? " with --subvol" : "",
				 g->a->subvol ? ace_subvol_op_names() : ace_op_names(),
				 g->a->subvol ? "" : ",defrag,clone,clone-range,dedupe");
			return -EINVAL;
		}
		g->wanted[k] = true;
	}
	return 0;
}

static int parse_files(struct gen *g, char *list, char *err, size_t errlen)
{
	g->nfiles = split(list, g->files, MAX_FILES);
	if (g->nfiles < 2 || g->nfiles > MAX_FILES) {
		snprintf(err, errlen, "--files takes 2 to %d file paths", MAX_FILES);
		return -EINVAL;
	}
	for (size_t i = 0; i < g->nfiles; i++) {
		int r = check_file(g->files[i], err, errlen);
		if (r)
			return r;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(g->files[i], g->files[j])) {
				snprintf(err, errlen, "--files: '%s' is named twice", g->files[i]);
				return -EINVAL;
			}
	}
	/* The directories: the files' parents (but "/"), and /B, made by the workloads. */
	for (size_t i = 0; i < g->nfiles; i++) {
		parent(g->files[i], g->dirbuf[i], LINE);
		bool seen = !strcmp(g->dirbuf[i], "/");
		for (size_t j = 0; j < g->ndirs; j++)
			seen |= !strcmp(g->dirs[j], g->dirbuf[i]);
		if (!seen)
			g->dirs[g->ndirs++] = g->dirbuf[i];
	}
	g->dirs[g->ndirs++] = "/B";
	return 0;
}

static int ace_make(unsigned seq, bool subvol, const char *ops, const char *files,
		    struct ace **out, char *err, size_t errlen)
{
	*out = NULL;
	if (seq < 1 || seq > 3) {
		snprintf(err, errlen, "--seq takes 1, 2 or 3");
		return -EINVAL;
	}
	struct gen *g = calloc(1, sizeof(*g));
	char *opl = strdup(ops ? ops : subvol ? ace_subvol_op_names() : ace_op_names());
	char *fl = strdup(files ? files : subvol ? "/foo,/A/bar" : "/foo,/A/foo,/A/bar");
	if (g)
		g->a = calloc(1, sizeof(*g->a));
	if (g && g->a)
		g->a->steps = calloc(MAX_STEPS, sizeof(*g->a->steps));
	int r = 0;
	if (!opl || !fl || !g || !g->a || !g->a->steps) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto out;
	}
	g->a->seq = seq;
	g->a->subvol = subvol;
	g->names = subvol ? sv_op_names : op_names;
	g->nnames = subvol ? NSVOPS : NOPS;
	if ((r = parse_ops(g, opl, err, errlen)) || (r = parse_files(g, fl, err, errlen)) ||
	    (r = setup(g, err, errlen)))
		goto out;
	/* Steps with a persistence point come first: the last op of a workload
	 * has one, for there is nothing to crash after otherwise.  Earlier ops
	 * may also have none. */
	if (subvol)
		enumerate_subvol(g);
	else
		enumerate(g);
	g->a->nfinal = g->a->nsteps;
	for (size_t i = 0; i < g->a->nfinal && seq > 1 && !g->err; i++)
		if (i == 0 || strcmp(g->a->steps[i].op, g->a->steps[i - 1].op)) {
			if (g->a->nsteps >= MAX_STEPS) {
				g->err = -E2BIG;
				break;
			}
			struct step *st = &g->a->steps[g->a->nsteps++];
			memcpy(st->op, g->a->steps[i].op, LINE);
			st->persist[0] = 0;
		}
	if ((r = g->err))
		snprintf(err, errlen, "too many operations for one enumeration");
	else if (g->a->nfinal == 0) {
		snprintf(err, errlen, "--ops and --files give no operation");
		r = -EINVAL;
	}
out:
	free(opl);
	free(fl);
	if (g && r)
		ace_free(g->a);
	else if (g)
		*out = g->a;
	free(g);
	return r;
}

int ace_new(unsigned seq, const char *ops, const char *files, struct ace **out, char *err,
	    size_t errlen)
{
	return ace_make(seq, false, ops, files, out, err, errlen);
}

int ace_new_subvol(unsigned seq, const char *ops, const char *files, struct ace **out, char *err,
		   size_t errlen)
{
	return ace_make(seq, true, ops, files, out, err, errlen);
}

int ace_workload(const struct ace *a, uint64_t i, struct wl_workload *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (i >= ace_count(a)) {
		snprintf(err, errlen, "workload %" PRIu64 " is beyond the enumeration (%" PRIu64 ")", i,
			 ace_count(a));
		return -EINVAL;
	}
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	fputs(a->setup, f);
	/* Mixed radix: the last op varies fastest, over the steps that persist. */
	size_t pick[3];
	uint64_t rest = i;
	pick[a->seq - 1] = (size_t)(rest % a->nfinal);
	rest /= a->nfinal;
	for (unsigned j = a->seq - 1; j-- > 0;) {
		pick[j] = (size_t)(rest % a->nsteps);
		rest /= a->nsteps;
	}
	for (unsigned j = 0; j < a->seq; j++) {
		const struct step *st = &a->steps[pick[j]];
		fprintf(f, "%s\n", st->op);
		if (st->persist[0])
			fprintf(f, "%s\n", st->persist);
	}
	if (fclose(f)) {
		free(text);
		return -ENOMEM;
	}
	char name[64];
	snprintf(name, sizeof(name), "seq-%u%s%s/%" PRIu64, a->seq, a->subvol ? "-subvol" : "",
		 a->quota ? "-quota" : "", i);
	int r = wl_parse_text(name, text, len, out, err, errlen);
	free(text);
	return r;
}
