/* util.c - usage and failure reporting and argument parsing for the subcommands. */
#include "cli/cli.h"
#include "ref/ref.h"
#include "version.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void vprefixed(const struct cli_cmd *cmd, const char *fmt, va_list ap)
{
	fprintf(stderr, "btrsim %s: ", cmd->name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprefixed(cmd, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s", cmd->usage);
	return 2;
}

int cli_fail(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprefixed(cmd, fmt, ap);
	va_end(ap);
	return 1;
}

char *cli_args_text(int argc, char **argv)
{
	size_t len = 1;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++)
		p += sprintf(p, "%s%s", i ? " " : "", argv[i]);
	*p = 0;
	return s;
}

const char *cli_build_string(void)
{
	static char text[160];
	const char *m = ref_mutant();
	snprintf(text, sizeof(text), "v%s %s %s%s%s", BTRSIM_VERSION, BTRSIM_BUILD_ID,
		 BTRSIM_BUILD_MODE, m ? " mutant " : "", m ? m : "");
	return text;
}

FILE *cli_progress_stream(bool quiet)
{
	const char *env = getenv("BTRSIM_PROGRESS");
	if (quiet || (env && !strcmp(env, "0")))
		return NULL;
	if (env && !strcmp(env, "1"))
		return stderr;
	return isatty(STDERR_FILENO) ? stderr : NULL;
}

void cli_print_seed(uint64_t seed)
{
	printf("seed %llu\n", (unsigned long long)seed);
	fflush(stdout);
}

int cli_help(const struct cli_cmd *cmd)
{
	fputs(cmd->usage, stdout);
	return 0;
}

int cli_parse_u64(const char *s, uint64_t *out, int sizes)
{
	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	unsigned shift = 0;
	if (sizes && *end) {
		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default: return -1;
		}
		end++;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

void cli_mode_string(uint32_t mode, char out[11])
{
	const char *t = "?";
	switch (mode & S_IFMT) {
	case S_IFREG: t = "-"; break;
	case S_IFDIR: t = "d"; break;
	case S_IFLNK: t = "l"; break;
	case S_IFCHR: t = "c"; break;
	case S_IFBLK: t = "b"; break;
	case S_IFIFO: t = "p"; break;
	case S_IFSOCK: t = "s"; break;
	}
	snprintf(out, 11, "%s%c%c%c%c%c%c%c%c%c", t, mode & 0400 ? 'r' : '-', mode & 0200 ? 'w' : '-',
		 mode & 04000 ? (mode & 0100 ? 's' : 'S') : (mode & 0100 ? 'x' : '-'),
		 mode & 040 ? 'r' : '-', mode & 020 ? 'w' : '-',
		 mode & 02000 ? (mode & 010 ? 's' : 'S') : (mode & 010 ? 'x' : '-'),
		 mode & 04 ? 'r' : '-', mode & 02 ? 'w' : '-',
		 mode & 01000 ? (mode & 01 ? 't' : 'T') : (mode & 01 ? 'x' : '-'));
}

char *cli_name_dup(const char *name, size_t len)
{
	char *s = malloc(len + 1);
	if (s) {
		memcpy(s, name, len);
		s[len] = '\0';
	}
	return s;
}

int cli_parse_id(const char *s, int64_t *out)
{
	uint64_t v;
	if (cli_parse_u64(s, &v, 0) || v == 0 || v > INT64_MAX)
		return -1;
	*out = (int64_t)v;
	return 0;
}
