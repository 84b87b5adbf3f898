/* util.c - usage and failure reporting and argument parsing for the subcommands. */
#include "cli/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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
