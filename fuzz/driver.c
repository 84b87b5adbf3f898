/*
 * driver.c - the main of the harness programs fuzz-image, fuzz-workload,
 * fuzz-parse and fuzz-stream (compiled once per harness with
 * -DFUZZ_HARNESS_NAME="name").
 *
 * Built with afl-clang-fast (make fuzz), the program without file arguments
 * is an AFL++ persistent-mode target: deferred initialisation after the
 * harness's init (__AFL_INIT), test cases in shared memory
 * (__AFL_FUZZ_TESTCASE_BUF), many inputs per process (__AFL_LOOP).  In every
 * build, files given on the command line are each run once (how the debug
 * and ASan builds replay corpora and findings), and with no file and no
 * AFL++ the input is read from standard input once.
 *
 * usage: fuzz-NAME [-v] [FILE...]
 * Exit status: 0 when every input ran (whatever ref made of it), 1 when a
 * file could not be read, 2 bad usage; a violation aborts (SIGABRT), as
 * does a sanitizer report in the sanitized builds.
 */
#include "fuzz/fuzz.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FUZZ_HARNESS_NAME
#error "compile with -DFUZZ_HARNESS_NAME=\"image\" (or workload, parse, stream)"
#endif

#ifdef __AFL_FUZZ_TESTCASE_LEN
__AFL_FUZZ_INIT();
#endif

/* AFL++ keeps test cases below 1 MiB; a file may be larger. */
#define MAX_INPUT (UINT64_C(64) << 20)

static int read_all(FILE *f, uint8_t **out, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *p = malloc(cap);
	if (!p)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			if (cap >= MAX_INPUT) {
				free(p);
				return -EFBIG;
			}
			uint8_t *q = realloc(p, cap * 2);
			if (!q) {
				free(p);
				return -ENOMEM;
			}
			p = q;
			cap *= 2;
		}
		size_t got = fread(p + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		free(p);
		return -EIO;
	}
	*out = p;
	*len = n;
	return 0;
}

static int run_file(const struct fuzz_harness *h, const char *path, FILE *log)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!f) {
		fprintf(stderr, "fuzz-%s: %s: %s\n", h->name, path, strerror(errno));
		return 1;
	}
	uint8_t *data;
	size_t len;
	int r = read_all(f, &data, &len);
	if (f != stdin)
		fclose(f);
	if (r) {
		fprintf(stderr, "fuzz-%s: %s: %s\n", h->name, path,
			r == -EFBIG ? "larger than 64 MiB" : strerror(-r));
		return 1;
	}
	fuzz_log(log, "== %s (%zu bytes)", path, len);
	h->one(data, len, log);
	free(data);
	return 0;
}

int main(int argc, char **argv)
{
	const struct fuzz_harness *h = fuzz_harness_find(FUZZ_HARNESS_NAME);
	FILE *log = NULL;
	const char *save = NULL;
	int c;
	while ((c = getopt(argc, argv, "vo:h")) != -1) {
		switch (c) {
		case 'v': log = stderr; break;
		case 'o': save = optarg; break;
		case 'h':
			printf("usage: fuzz-%s [-v] [FILE...]\n", h->name);
			if (h->save)
				printf("       fuzz-%s -o DIR FILE\n", h->name);
			printf("The %s harness (fuzz/README.md): %s.\n"
			       "Runs each FILE once (- or none: standard input); under afl-fuzz\n"
			       "(afl-clang-fast build, no FILE) the AFL++ persistent loop.\n"
			       "  -v       say what happens to each input on stderr\n%s",
			       h->name, h->summary, h->save && h->save_help ? h->save_help : "");
			return 0;
		default:
			fprintf(stderr, "usage: fuzz-%s [-v] [FILE...]\n", h->name);
			return 2;
		}
	}
	char err[512];
	if (h->init(err, sizeof(err))) {
		fprintf(stderr, "fuzz-%s: %s\n", h->name, err);
		return 1;
	}
	if (save) {
		if (!h->save || argc - optind != 1) {
			fprintf(stderr, "fuzz-%s: %s\n", h->name,
				h->save ? "-o DIR takes one FILE" : "this harness has no -o");
			return 2;
		}
		uint8_t *data;
		size_t len;
		FILE *f = fopen(argv[optind], "rb");
		int r = f ? read_all(f, &data, &len) : -errno;
		if (f)
			fclose(f);
		if (!r) {
			r = h->save(data, len, save, err, sizeof(err));
			free(data);
		} else {
			snprintf(err, sizeof(err), "%s: %s", argv[optind], strerror(-r));
		}
		if (r) {
			fprintf(stderr, "fuzz-%s: %s\n", h->name, err);
			return 1;
		}
		return 0;
	}
	if (optind < argc) {
		int status = 0;
		for (int i = optind; i < argc; i++)
			status |= run_file(h, argv[i], log);
		return status;
	}
#ifdef __AFL_FUZZ_TESTCASE_LEN
	__AFL_INIT();
	const uint8_t *buf = __AFL_FUZZ_TESTCASE_BUF;
	while (__AFL_LOOP(10000)) {
		size_t len = (size_t)__AFL_FUZZ_TESTCASE_LEN;
		h->one(buf, len, log);
	}
	return 0;
#else
	return run_file(h, "-", log);
#endif
}
