/* common.c - what the harnesses share (fuzz.h): the table, process set-up, violations. */
#include "fuzz/fuzz.h"
#include "traces/explore.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const struct fuzz_harness *const harnesses[] = {
	&fuzz_harness_image,
	&fuzz_harness_workload,
	&fuzz_harness_parse,
	&fuzz_harness_stream,
};

const struct fuzz_harness *const *fuzz_harnesses(size_t *n)
{
	*n = sizeof(harnesses) / sizeof(harnesses[0]);
	return harnesses;
}

const struct fuzz_harness *fuzz_harness_find(const char *name)
{
	for (size_t i = 0; i < sizeof(harnesses) / sizeof(harnesses[0]); i++)
		if (!strcmp(harnesses[i]->name, name))
			return harnesses[i];
	return NULL;
}

static FILE *devnull;

FILE *fuzz_devnull(void)
{
	return devnull;
}

int fuzz_process_init(char *err, size_t errlen)
{
	if (devnull)
		return 0;
	/* one run per input allocates and frees the same few megabytes */
	explore_keep_freed_memory();
	devnull = fopen("/dev/null", "w");
	if (!devnull) {
		int e = errno;
		snprintf(err, errlen, "/dev/null: %s", strerror(e));
		return -e;
	}
	return 0;
}

long fuzz_check(ref_fs *fs, FILE *log, char *first, size_t len)
{
	char *report = NULL;
	size_t rlen = 0;
	FILE *rf = open_memstream(&report, &rlen);
	struct ref_check_opts co = { .out = rf ? rf : fuzz_devnull() };
	long bad = ref_check(fs, &co);
	if (rf)
		fclose(rf);
	first[0] = 0;
	if (bad) {
		/* the first ERROR line says what broke (the deduplication key) */
		const char *e = report ? strstr(report, "ERROR: ") : NULL;
		if (bad < 0)
			snprintf(first, len, ": %s", ref_error(fs));
		else if (e)
			snprintf(first, len, ", the first: %.*s", (int)strcspn(e + 7, "\n"), e + 7);
		if (log && report)
			fputs(report, log);
	}
	free(report);
	return bad;
}

void fuzz_log(FILE *log, const char *fmt, ...)
{
	if (!log)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(log, fmt, ap);
	va_end(ap);
	fputc('\n', log);
}

_Noreturn void fuzz_violation(const char *fmt, ...)
{
	char msg[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One line: newlines of the message become spaces. */
	for (char *p = msg; *p; p++)
		if (*p == '\n')
			*p = ' ';
	fprintf(stderr, "%s%s\n", FUZZ_VIOLATION_PREFIX, msg);
	fflush(stderr);
	abort();
}
