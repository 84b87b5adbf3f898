/*
 * compress_opts.c - the values of the kernel's compress= and compress-force=
 * mount options (btrfs_parse_compress in fs/btrfs/super.c, Linux 6.18), read
 * and written back, for every command and workload that takes them.
 */
#include "ref/compress.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* btrfs_compress_set_level: 0 is the default; the rest clamped to the range. */
static int clamp(uint8_t type, long v)
{
	long lo = type == REF_COMPRESS_ZSTD ? -15 : 1, hi = type == REF_COMPRESS_ZSTD ? 15 : 9;
	if (type == REF_COMPRESS_LZO || v == 0)
		return 0;
	return (int)(v < lo ? lo : v > hi ? hi : v);
}

int ref_compress_parse(const char *s, uint8_t *type, int8_t *level, char *err, size_t errlen)
{
	*type = 0;
	*level = 0;
	if (!s || !*s) { /* -o compress: zlib at its default level */
		*type = REF_COMPRESS_ZLIB;
		return 0;
	}
	if (!strcmp(s, "no") || !strcmp(s, "none"))
		return 0;
	for (uint8_t t = REF_COMPRESS_ZLIB; t <= REF_COMPRESS_ZSTD; t++) {
		const char *name = ref_compress_name(t);
		size_t n = strlen(name);
		if (strncmp(s, name, n) || (s[n] && s[n] != ':'))
			continue;
		*type = t;
		if (!s[n])
			return 0;
		/* kstrtoint: an optional sign and decimal digits, nothing else */
		char *end;
		const char *num = s + n + 1;
		long v = strtol(num, &end, 10);
		if (!*num || *end || end == num || v < INT_MIN || v > INT_MAX) {
			snprintf(err, errlen, "compress=%s: the level must be a number", s);
			*type = 0;
			return -EINVAL;
		}
		*level = (int8_t)clamp(t, v);
		return 0;
	}
	snprintf(err, errlen, "compress=%s: unknown compression (zlib, lzo, zstd[:LEVEL], no)", s);
	return -EINVAL;
}

void ref_compress_format(uint8_t type, int8_t level, bool force, char *buf, size_t len)
{
	const char *opt = force ? "compress-force" : "compress";
	if (!type)
		snprintf(buf, len, "%s=no", opt);
	else if (level)
		snprintf(buf, len, "%s=%s:%d", opt, ref_compress_name(type), level);
	else
		snprintf(buf, len, "%s=%s", opt, ref_compress_name(type));
}
