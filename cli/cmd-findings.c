/*
 * cmd-findings.c - `btrsim findings`: the fuzzing findings and statistics in a
 * trace database (fuzz/README.md, "Findings"): list, replay in-process,
 * export, mark fixed; and the two writers `make fuzz-run` uses, --record (one
 * triaged finding) and --import-stats (AFL++'s plot_data and fuzzer_stats).
 */
#include "cli/cli.h"
#include "fuzz/fuzz.h"
#include "traces/findings.h"
#include "traces/record.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: btrsim findings [--db FILE] [--harness NAME]\n"
	"       btrsim findings [--db FILE] --replay ID [--original] [--timeout S] [-v]\n"
	"       btrsim findings [--db FILE] --export ID OUT [--original]\n"
	"       btrsim findings [--db FILE] --fixed ID\n"
	"       btrsim findings [--db FILE] --stats [--harness NAME]\n"
	"       btrsim findings [--db FILE] --record --harness NAME --kind KIND\n"
	"                       --stack-hash HASH --input FILE [--minimized FILE]\n"
	"                       [--signal SIG] [--stack FILE]\n"
	"       btrsim findings [--db FILE] --import-stats NAME DIR\n"
	"\n"
	"The findings of fuzzing campaigns ('make fuzz-run', fuzz/README.md): one per\n"
	"harness and distinct stack.  Without an action, list them: id, harness, when\n"
	"found (UTC), kind (crash, hang, violation), signal, stack hash, input and\n"
	"minimized sizes, fixed, top frame.\n"
	"\n"
	"  --db FILE           the trace database (traces/btrsim.db)\n"
	"  --harness NAME      only that harness's (image, workload, parse, stream)\n"
	"  --replay ID         run finding ID's input (the minimized one when there is\n"
	"                      one) through its harness in a child of this process and\n"
	"                      say how it ended; exit 0 when it ran clean, 1 when it\n"
	"                      still crashes, hangs or violates the oracle.  This build\n"
	"                      is not sanitized: replay sanitizer findings with the\n"
	"                      debug build's fuzz/fuzz-NAME on the exported input\n"
	"  --original          the input as AFL++ found it, not the minimized one\n"
	"  --timeout S         a replay running longer is a hang (10)\n"
	"  -v, --verbose       the harness says what it does on stderr\n"
	"  --export ID OUT     write finding ID's input to OUT ('-': standard output)\n"
	"  --fixed ID          mark finding ID fixed (its input is in fuzz/regress/)\n"
	"  --stats             the campaign statistics samples (fuzz_stats)\n"
	"  --record            record a triaged finding (mk/fuzz-triage.sh); prints\n"
	"                      'new finding ID' or 'known finding ID'\n"
	"  --kind KIND         crash, hang or violation\n"
	"  --signal SIG        the signal it ended with (SIGSEGV, SIGABRT, ...)\n"
	"  --stack-hash HASH   the deduplication key\n"
	"  --stack FILE        the symbolized top frames\n"
	"  --input FILE        the test case; --minimized FILE: afl-tmin's\n"
	"  --import-stats NAME DIR\n"
	"                      record the statistics of harness NAME's campaign in the\n"
	"                      AFL++ output directory DIR (plot_data and fuzzer_stats\n"
	"                      of each instance, summed per sample of the first)\n"
	"  -h, --help          show this help\n"
	"\n"
	"--record and --import-stats create the database when missing; the others\n"
	"need it to exist.  Exit status: 0 done, 1 a failure (or a replay that still\n"
	"fails), 2 bad usage.\n";

const struct cli_cmd cli_cmd_findings;

#define MAX_FILE (UINT64_C(64) << 20)

static int read_file(const char *path, uint8_t **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	FILE *f = fopen(path, "rb");
	if (!f)
		return cli_fail(&cli_cmd_findings, "%s: %s", path, strerror(errno));
	size_t cap = 4096, n = 0;
	uint8_t *p = malloc(cap);
	while (p) {
		if (n == cap) {
			uint8_t *q = cap < MAX_FILE ? realloc(p, cap * 2) : NULL;
			if (!q) {
				free(p);
				fclose(f);
				return cli_fail(&cli_cmd_findings, "%s: %s", path,
						cap < MAX_FILE ? "out of memory" : "larger than 64 MiB");
			}
			p = q;
			cap *= 2;
		}
		size_t got = fread(p + n, 1, cap - n, f);
		n += got;
		if (!got)
			break;
	}
	int bad = !p || ferror(f);
	fclose(f);
	if (bad) {
		free(p);
		return cli_fail(&cli_cmd_findings, "%s: %s", path, p ? "read error" : "out of memory");
	}
	*out = p;
	*len = n;
	return 0;
}

/* ---- Replay ---- */

static const char *signal_name(int sig)
{
	static char buf[16];
	const char *n = sigabbrev_np(sig);
	if (!n) {
		snprintf(buf, sizeof(buf), "%d", sig);
		return buf;
	}
	snprintf(buf, sizeof(buf), "SIG%s", n);
	return buf;
}

static int replay(const struct finding *f, bool original, unsigned timeout, bool verbose)
{
	const struct fuzz_harness *h = fuzz_harness_find(f->harness);
	if (!h)
		return cli_fail(&cli_cmd_findings, "finding %lld: unknown harness '%s'",
				(long long)f->id, f->harness);
	bool min = f->minimized && !original;
	const uint8_t *in = min ? f->minimized : f->input;
	size_t len = min ? f->minimized_len : f->input_len;
	printf("finding %lld: %s harness, %s%s%s, %s input of %zu bytes\n", (long long)f->id,
	       f->harness, f->kind, f->signal ? " " : "", f->signal ? f->signal : "",
	       min ? "minimized" : "original", len);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return cli_fail(&cli_cmd_findings, "fork: %s", strerror(errno));
	if (pid == 0) {
		char err[512];
		if (h->init(err, sizeof(err))) {
			fprintf(stderr, "btrsim findings: %s harness: %s\n", h->name, err);
			_exit(3);
		}
		signal(SIGALRM, SIG_DFL);
		alarm(timeout);
		h->one(in, len, verbose ? stderr : NULL);
		fflush(NULL);
		_exit(0);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return cli_fail(&cli_cmd_findings, "waitpid: %s", strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("replayed: the harness ran it to the end: no crash, no hang, no violation\n");
		if (strcmp(f->kind, "violation"))
			printf("(this btrsim is not sanitized; a sanitizer's finding shows only in the "
			       "debug build: btrsim findings --export %lld FILE, then "
			       "build/debug/fuzz/fuzz-%s FILE)\n",
			       (long long)f->id, f->harness);
		return 0;
	}
	if (WIFEXITED(status)) {
		printf("replayed: the harness could not start (exit %d)\n", WEXITSTATUS(status));
		return 1;
	}
	int sig = WTERMSIG(status);
	if (sig == SIGALRM)
		printf("replayed: still running after %u s: a hang\n", timeout);
	else
		printf("replayed: killed by %s%s\n", signal_name(sig),
		       sig == SIGABRT ? " (a violation or a failed assertion: its message is above)"
				      : "");
	return 1;
}

/* ---- Statistics import ---- */

struct sample {
	double t, execs_per_sec;
	int64_t execs, corpus, crashes, hangs;
};

struct instance {
	char name[256];
	struct sample *s;
	size_t n, cap;
	/* fuzzer_stats */
	double start_time, last_update, run_time, execs_per_sec;
	int64_t execs, corpus, crashes, hangs;
	bool have_stats;
};

static int col_index(char **names, int n, const char *want)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], want))
			return i;
	return -1;
}

/* plot_data: a "# name, name, ..." header, then comma-separated rows. */
static int read_plot(const char *path, struct instance *in)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return cli_fail(&cli_cmd_findings, "%s: %s", path, strerror(errno));
	char line[4096];
	char *names[64];
	int nn = 0, ti = -1, ei = -1, xi = -1, ci = -1, ki = -1, hi = -1;
	char hdr[4096] = "";
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#') {
			snprintf(hdr, sizeof(hdr), "%s", line + 1);
			nn = 0;
			for (char *save, *tok = strtok_r(hdr, ",\n", &save); tok && nn < 64;
			     tok = strtok_r(NULL, ",\n", &save)) {
				while (*tok == ' ')
					tok++;
				names[nn++] = tok;
			}
			ti = col_index(names, nn, "relative_time");
			ei = col_index(names, nn, "execs_per_sec");
			xi = col_index(names, nn, "total_execs");
			ci = col_index(names, nn, "corpus_count");
			ki = col_index(names, nn, "saved_crashes");
			hi = col_index(names, nn, "saved_hangs");
			continue;
		}
		if (ti < 0 || xi < 0)
			continue;
		double v[64] = { 0 };
		int k = 0;
		for (char *save, *tok = strtok_r(line, ",\n", &save); tok && k < 64;
		     tok = strtok_r(NULL, ",\n", &save))
			v[k++] = strtod(tok, NULL);
		if (k <= ti || k <= xi)
			continue;
		if (in->n == in->cap) {
			size_t cap = in->cap ? in->cap * 2 : 64;
			struct sample *p = realloc(in->s, cap * sizeof(*p));
			if (!p) {
				fclose(f);
				return cli_fail(&cli_cmd_findings, "out of memory");
			}
			in->s = p;
			in->cap = cap;
		}
		in->s[in->n++] = (struct sample){ v[ti], ei >= 0 ? v[ei] : 0, (int64_t)v[xi],
						  ci >= 0 ? (int64_t)v[ci] : -1,
						  ki >= 0 ? (int64_t)v[ki] : -1,
						  hi >= 0 ? (int64_t)v[hi] : -1 };
	}
	fclose(f);
	if (ti < 0 || xi < 0)
		return cli_fail(&cli_cmd_findings,
				"%s: no header naming relative_time and total_execs: not AFL++'s "
				"plot_data", path);
	return 0;
}

static int read_stats(const char *path, struct instance *in)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return cli_fail(&cli_cmd_findings, "%s: %s", path, strerror(errno));
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		char key[64];
		double v;
		if (sscanf(line, "%63s : %lf", key, &v) != 2)
			continue;
		if (!strcmp(key, "start_time"))
			in->start_time = v;
		else if (!strcmp(key, "last_update"))
			in->last_update = v;
		else if (!strcmp(key, "run_time"))
			in->run_time = v;
		else if (!strcmp(key, "execs_done"))
			in->execs = (int64_t)v;
		else if (!strcmp(key, "execs_per_sec"))
			in->execs_per_sec = v;
		else if (!strcmp(key, "corpus_count"))
			in->corpus = (int64_t)v;
		else if (!strcmp(key, "saved_crashes"))
			in->crashes = (int64_t)v;
		else if (!strcmp(key, "saved_hangs"))
			in->hangs = (int64_t)v;
	}
	fclose(f);
	in->have_stats = in->start_time > 0;
	if (!in->have_stats)
		return cli_fail(&cli_cmd_findings, "%s: no start_time: not AFL++'s fuzzer_stats", path);
	return 0;
}

static void iso(double t, char out[32])
{
	time_t s = (time_t)t;
	struct tm tm;
	if (!gmtime_r(&s, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, 32, "@%lld", (long long)s);
}

static int cmp_instance(const void *a, const void *b)
{
	const struct instance *x = a, *y = b;
	/* "main" (the -M instance) first, then by name. */
	int mx = !strcmp(x->name, "main"), my = !strcmp(y->name, "main");
	return mx != my ? my - mx : strcmp(x->name, y->name);
}

static int import_stats(struct store *s, const char *harness, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return cli_fail(&cli_cmd_findings, "%s: %s", dir, strerror(errno));
	struct instance *in = NULL;
	size_t n = 0;
	int rc = 0;
	struct dirent *e;
	while (!rc && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[4096];
		snprintf(p, sizeof(p), "%s/%s/fuzzer_stats", dir, e->d_name);
		if (access(p, R_OK))
			continue;
		struct instance *q = realloc(in, (n + 1) * sizeof(*q));
		if (!q) {
			rc = cli_fail(&cli_cmd_findings, "out of memory");
			break;
		}
		in = q;
		memset(&in[n], 0, sizeof(in[n]));
		snprintf(in[n].name, sizeof(in[n].name), "%s", e->d_name);
		n++;
		rc = read_stats(p, &in[n - 1]);
		snprintf(p, sizeof(p), "%s/%s/plot_data", dir, e->d_name);
		if (!rc)
			rc = read_plot(p, &in[n - 1]);
	}
	closedir(d);
	if (!rc && !n)
		rc = cli_fail(&cli_cmd_findings, "%s: no AFL++ instance (no */fuzzer_stats)", dir);
	struct fuzz_stat *st = NULL;
	size_t ns = 0;
	char (*at)[32] = NULL;
	if (!rc) {
		qsort(in, n, sizeof(*in), cmp_instance);
		st = calloc(in[0].n + 1, sizeof(*st));
		at = calloc(in[0].n + 1, sizeof(*at));
		if (!st || !at)
			rc = cli_fail(&cli_cmd_findings, "out of memory");
	}
	/* One sample per sample of the first instance: each instance's last
	 * sample at or before that time, summed (corpus: the largest). */
	for (size_t i = 0; !rc && i < in[0].n; i++) {
		double t = in[0].s[i].t;
		struct fuzz_stat v = { harness, NULL, t, 0, 0, -1, 0, 0 };
		for (size_t k = 0; k < n; k++) {
			const struct sample *last = NULL;
			for (size_t j = 0; j < in[k].n && in[k].s[j].t <= t; j++)
				last = &in[k].s[j];
			if (!last)
				continue;
			v.execs += last->execs;
			v.execs_per_sec += last->execs_per_sec;
			if (last->corpus > v.corpus)
				v.corpus = last->corpus;
			v.crashes += last->crashes > 0 ? last->crashes : 0;
			v.hangs += last->hangs > 0 ? last->hangs : 0;
		}
		iso(in[0].start_time + t, at[ns]);
		v.at = at[ns];
		st[ns++] = v;
	}
	/* The last: fuzzer_stats, the totals when the campaign ended. */
	if (!rc) {
		struct fuzz_stat v = { harness, NULL, 0, 0, 0, -1, 0, 0 };
		double last = 0;
		for (size_t k = 0; k < n; k++) {
			v.elapsed = in[k].run_time > v.elapsed ? in[k].run_time : v.elapsed;
			last = in[k].last_update > last ? in[k].last_update : last;
			v.execs += in[k].execs;
			v.execs_per_sec += in[k].execs_per_sec;
			v.corpus = in[k].corpus > v.corpus ? in[k].corpus : v.corpus;
			v.crashes += in[k].crashes;
			v.hangs += in[k].hangs;
		}
		iso(last, at[ns]);
		v.at = at[ns];
		st[ns++] = v;
		char err[1024];
		if (fuzz_stats_add(s, st, ns, err, sizeof(err)))
			rc = cli_fail(&cli_cmd_findings, "%s", err);
		else
			printf("%zu statistics samples of %zu instance%s recorded: %lld execs in %.0f s, "
			       "%.1f execs/s, corpus %lld, %lld crashes, %lld hangs\n",
			       ns, n, n == 1 ? "" : "s", (long long)v.execs, v.elapsed, v.execs_per_sec,
			       (long long)v.corpus, (long long)v.crashes, (long long)v.hangs);
	}
	for (size_t k = 0; k < n; k++)
		free(in[k].s);
	free(in);
	free(st);
	free(at);
	return rc;
}

/* ---- The command ---- */

enum action { LIST, REPLAY, EXPORT, FIXED, STATS, RECORD, IMPORT };

static int parse_id(const char *arg, int64_t *id)
{
	uint64_t v;
	if (cli_parse_u64(arg, &v, 0) || v == 0 || v > INT64_MAX)
		return cli_usage_error(&cli_cmd_findings, "a finding id is a positive number, not '%s'",
				       arg);
	*id = (int64_t)v;
	return 0;
}

static int cmd_findings(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'D' },	   { "harness", required_argument, NULL, 'H' },
		{ "replay", required_argument, NULL, 'r' },  { "original", no_argument, NULL, 'o' },
		{ "timeout", required_argument, NULL, 't' }, { "verbose", no_argument, NULL, 'v' },
		{ "export", required_argument, NULL, 'e' },  { "fixed", required_argument, NULL, 'f' },
		{ "stats", no_argument, NULL, 's' },	   { "record", no_argument, NULL, 'R' },
		{ "kind", required_argument, NULL, 'k' },	   { "signal", required_argument, NULL, 'S' },
		{ "stack-hash", required_argument, NULL, 'x' }, { "stack", required_argument, NULL, 'T' },
		{ "input", required_argument, NULL, 'i' },   { "minimized", required_argument, NULL, 'm' },
		{ "import-stats", required_argument, NULL, 'I' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = CLI_DEFAULT_DB, *harness = NULL, *kind = NULL, *sig = NULL, *hash = NULL;
	const char *stack_file = NULL, *input = NULL, *minimized = NULL;
	enum action act = LIST;
	int nact = 0;
	int64_t id = 0;
	bool original = false, verbose = false;
	uint64_t timeout = 10;
	int c, e;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case 'D': db = optarg; break;
		case 'H': harness = optarg; break;
		case 'r': act = REPLAY; nact++; if ((e = parse_id(optarg, &id))) return e; break;
		case 'e': act = EXPORT; nact++; if ((e = parse_id(optarg, &id))) return e; break;
		case 'f': act = FIXED; nact++; if ((e = parse_id(optarg, &id))) return e; break;
		case 's': act = STATS; nact++; break;
		case 'R': act = RECORD; nact++; break;
		case 'I': act = IMPORT; nact++; harness = optarg; break;
		case 'o': original = true; break;
		case 'v': verbose = true; break;
		case 't':
			if (cli_parse_u64(optarg, &timeout, 0) || timeout == 0 || timeout > 86400)
				return cli_usage_error(&cli_cmd_findings,
						       "--timeout takes 1 to 86400 seconds, not '%s'", optarg);
			break;
		case 'k': kind = optarg; break;
		case 'S': sig = optarg; break;
		case 'x': hash = optarg; break;
		case 'T': stack_file = optarg; break;
		case 'i': input = optarg; break;
		case 'm': minimized = optarg; break;
		case 'h': return cli_help(&cli_cmd_findings);
		default:
			return cli_usage_error(&cli_cmd_findings, "unknown option or missing argument '%s'",
					       argv[optind - 1]);
		}
	}
	if (nact > 1)
		return cli_usage_error(&cli_cmd_findings,
				       "--replay, --export, --fixed, --stats, --record and --import-stats "
				       "exclude each other");
	int want = act == EXPORT || act == IMPORT ? 1 : 0;
	if (argc - optind != want)
		return cli_usage_error(&cli_cmd_findings, want ? "%s takes %s" : "unexpected argument '%s'",
				       want ? (act == EXPORT ? "--export ID" : "--import-stats NAME")
					    : argv[optind],
				       act == EXPORT ? "an output file" : "an AFL++ output directory");
	if ((act == RECORD || act == IMPORT) && harness && !fuzz_harness_find(harness))
		return cli_usage_error(&cli_cmd_findings,
				       "unknown harness '%s' (image, workload or parse)", harness);
	if (act == RECORD) {
		if (!harness || !kind || !hash || !input)
			return cli_usage_error(&cli_cmd_findings,
					       "--record needs --harness, --kind, --stack-hash and --input");
		if (!finding_kind_valid(kind))
			return cli_usage_error(&cli_cmd_findings,
					       "--kind is crash, hang or violation, not '%s'", kind);
	}
	struct finding f = { 0 };
	char *stack = NULL;
	size_t stack_len = 0;
	if (act == RECORD) {
		if (read_file(input, &f.input, &f.input_len) ||
		    (minimized && read_file(minimized, &f.minimized, &f.minimized_len)) ||
		    (stack_file && read_file(stack_file, (uint8_t **)&stack, &stack_len))) {
			finding_free(&f);
			free(stack);
			return 1;
		}
		if (stack) { /* text: NUL-terminated, trailing newlines dropped */
			char *p = realloc(stack, stack_len + 1);
			if (!p) {
				finding_free(&f);
				free(stack);
				return cli_fail(&cli_cmd_findings, "out of memory");
			}
			stack = p;
			stack[stack_len] = 0;
			while (stack_len && stack[stack_len - 1] == '\n')
				stack[--stack_len] = 0;
		}
	}
	char err[1024];
	struct store *s;
	int r = act == RECORD || act == IMPORT ? store_open(db, &s, err, sizeof(err))
					       : store_open_existing(db, &s, err, sizeof(err));
	if (r) {
		finding_free(&f);
		free(stack);
		return cli_fail(&cli_cmd_findings, "%s", err);
	}
	int rc = 0;
	switch (act) {
	case LIST:
		if (findings_list(s, harness, stdout, err, sizeof(err)))
			rc = cli_fail(&cli_cmd_findings, "%s", err);
		break;
	case STATS:
		if (fuzz_stats_list(s, harness, stdout, err, sizeof(err)))
			rc = cli_fail(&cli_cmd_findings, "%s", err);
		break;
	case FIXED:
		if (findings_set_fixed(s, id, true, err, sizeof(err)))
			rc = cli_fail(&cli_cmd_findings, "%s", err);
		else
			printf("finding %lld marked fixed\n", (long long)id);
		break;
	case RECORD: {
		f.harness = (char *)harness;
		f.kind = (char *)kind;
		f.signal = (char *)sig;
		f.stack_hash = (char *)hash;
		f.stack = stack;
		bool known;
		int64_t fid;
		if (findings_add(s, &f, &fid, &known, err, sizeof(err)))
			rc = cli_fail(&cli_cmd_findings, "%s", err);
		else
			printf("%s finding %lld\n", known ? "known" : "new", (long long)fid);
		free(f.input);
		free(f.minimized);
		break;
	}
	case IMPORT: rc = import_stats(s, harness, argv[optind]); break;
	case REPLAY:
	case EXPORT: {
		struct finding g;
		if (findings_load(s, id, &g, err, sizeof(err))) {
			rc = cli_fail(&cli_cmd_findings, "%s", err);
			break;
		}
		store_close(s);
		s = NULL;
		if (act == REPLAY) {
			rc = replay(&g, original, (unsigned)timeout, verbose);
		} else {
			bool min = g.minimized && !original;
			const char *out = argv[optind];
			FILE *o = strcmp(out, "-") ? fopen(out, "wb") : stdout;
			size_t len = min ? g.minimized_len : g.input_len;
			if (!o) {
				rc = cli_fail(&cli_cmd_findings, "%s: %s", out, strerror(errno));
			} else {
				bool bad = fwrite(min ? g.minimized : g.input, 1, len, o) != len;
				bad |= fflush(o) != 0;
				if (o != stdout)
					bad |= fclose(o) != 0;
				if (bad)
					rc = cli_fail(&cli_cmd_findings, "%s: cannot write: %s", out,
						      strerror(errno));
				else if (o != stdout)
					fprintf(stderr, "finding %lld: %s input, %zu bytes, written to %s\n",
						(long long)id, min ? "minimized" : "original", len, out);
			}
		}
		finding_free(&g);
		break;
	}
	}
	free(stack);
	store_close(s);
	return rc;
}

const struct cli_cmd cli_cmd_findings = {
	.name = "findings",
	.summary = "list, replay and export fuzzing findings (fuzz/README.md)",
	.usage = usage_text,
	.run = cmd_findings,
};
