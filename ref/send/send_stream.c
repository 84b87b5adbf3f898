/*
 * send_stream.c - reading send streams (send.h): the header, then each
 * command checked whole before anything uses it, as btrfs-progs' receiver
 * (common/send-stream.c) reads them: length, CRC32C, attributes.
 */
#include "ref/csum.h"
#include "ref/send.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define CMD_HEADER 10
#define TLV_HEADER 4

static int bad(char *err, size_t errlen, uint64_t off, const char *fmt, ...)
{
	if (errlen) {
		int n = snprintf(err, errlen, "offset %llu: ", (unsigned long long)off);
		va_list ap;
		va_start(ap, fmt);
		if (n >= 0 && (size_t)n < errlen)
			vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

int ref_send_header(const uint8_t *buf, size_t len, uint32_t *version, char *err, size_t errlen)
{
	static const char magic[] = "btrfs-stream";
	if (len < REF_SEND_HEADER || memcmp(buf, magic, sizeof(magic))) {
		if (errlen)
			snprintf(err, errlen, "not a send stream (no btrfs-stream magic)");
		return -EINVAL;
	}
	*version = rd32(buf + sizeof(magic));
	if (*version < 1 || *version > REF_SEND_VERSION_MAX) {
		if (errlen)
			snprintf(err, errlen, "send stream version %u (1 to %u are known)", *version,
				 REF_SEND_VERSION_MAX);
		return -EINVAL;
	}
	return 0;
}

/* The last command and attribute each version has. */
static uint16_t max_cmd(uint32_t v)
{
	return v == 1 ? REF_SEND_C_UPDATE_EXTENT : v == 2 ? REF_SEND_C_ENCODED_WRITE : REF_SEND_C_MAX;
}

static uint16_t max_attr(uint32_t v)
{
	return v == 1 ? REF_SEND_A_CLONE_LEN : v == 2 ? REF_SEND_A_ENCRYPTION : REF_SEND_A_MAX;
}

int ref_send_next(const uint8_t *buf, size_t len, uint32_t version, uint64_t *off,
		  struct ref_send_cmd *c, char *err, size_t errlen)
{
	uint64_t at = *off;
	if (at >= len)
		return 1;
	if (len - at < CMD_HEADER)
		return bad(err, errlen, at, "the stream ends inside a command header (%llu of %d bytes)",
			   (unsigned long long)(len - at), CMD_HEADER);
	const uint8_t *h = buf + at;
	uint32_t plen = rd32(h), crc = rd32(h + 6);
	uint16_t cmd = rd16(h + 4);
	if (plen > len - at - CMD_HEADER)
		return bad(err, errlen, at, "the stream ends inside command %u (%u payload bytes, %llu left)",
			   cmd, plen, (unsigned long long)(len - at - CMD_HEADER));
	uint8_t zero[CMD_HEADER];
	memcpy(zero, h, CMD_HEADER);
	memset(zero + 6, 0, 4);
	uint32_t got = ref_crc32c_raw(0, zero, CMD_HEADER);
	got = ref_crc32c_raw(got, h + CMD_HEADER, plen);
	if (got != crc)
		return bad(err, errlen, at, "crc32c mismatch in command %u (stored %#x, computed %#x)",
			   cmd, crc, got);
	if (cmd == 0 || cmd > max_cmd(version))
		return bad(err, errlen, at, "unknown command %u for a version %u stream", cmd, version);
	memset(c, 0, sizeof(*c));
	c->cmd = cmd;
	c->len = plen;
	c->offset = at;
	const uint8_t *p = h + CMD_HEADER, *end = p + plen;
	while (p < end) {
		/* v2+: DATA has a type but no length: it is the rest of the command */
		bool rest = end - p >= 2 && version >= 2 && rd16(p) == REF_SEND_A_DATA;
		if (end - p < (rest ? 2 : TLV_HEADER))
			return bad(err, errlen, at, "command %u: an attribute header runs past the command",
				   cmd);
		uint16_t type = rd16(p);
		if (type == 0 || type > max_attr(version))
			return bad(err, errlen, at, "command %u: unknown attribute %u for version %u", cmd,
				   type, version);
		uint32_t alen = rest ? (uint32_t)(end - p - 2) : rd16(p + 2);
		p += rest ? 2 : TLV_HEADER;
		if (alen > (uint64_t)(end - p))
			return bad(err, errlen, at, "command %u: attribute %u runs past the command", cmd,
				   type);
		c->a[type] = (struct ref_send_attr){ p, alen, 1 };
		p += alen;
	}
	*off = at + CMD_HEADER + plen;
	return 0;
}

const char *ref_send_cmd_name(uint16_t cmd)
{
	static const char *const names[] = {
		NULL,	    "subvol",	      "snapshot",    "mkfile",	     "mkdir",
		"mknod",    "mkfifo",	      "mksock",	     "symlink",	     "rename",
		"link",	    "unlink",	      "rmdir",	     "set_xattr",    "remove_xattr",
		"write",    "clone",	      "truncate",    "chmod",	     "chown",
		"utimes",   "end",	      "update_extent", "fallocate",  "fileattr",
		"encoded_write", "enable_verity",
	};
	return cmd <= REF_SEND_C_MAX ? names[cmd] : NULL;
}

static int attr(const struct ref_send_cmd *c, int type, uint32_t want, const uint8_t **p)
{
	if (type <= 0 || type > REF_SEND_A_MAX || !c->a[type].present)
		return -ENODATA;
	if (want && c->a[type].len != want)
		return -EBADMSG;
	*p = c->a[type].data;
	return 0;
}

int ref_send_u64(const struct ref_send_cmd *c, int type, uint64_t *v)
{
	const uint8_t *p;
	int r = attr(c, type, 8, &p);
	if (!r)
		*v = rd64(p);
	return r;
}

int ref_send_u32(const struct ref_send_cmd *c, int type, uint32_t *v)
{
	const uint8_t *p;
	int r = attr(c, type, 4, &p);
	if (!r)
		*v = rd32(p);
	return r;
}

int ref_send_uuid(const struct ref_send_cmd *c, int type, uint8_t uuid[16])
{
	const uint8_t *p;
	int r = attr(c, type, 16, &p);
	if (!r)
		memcpy(uuid, p, 16);
	return r;
}

int ref_send_time(const struct ref_send_cmd *c, int type, int64_t *sec, uint32_t *nsec)
{
	const uint8_t *p;
	int r = attr(c, type, 12, &p);
	if (!r) {
		*sec = (int64_t)rd64(p);
		*nsec = rd32(p + 8);
	}
	return r;
}

int ref_send_bytes(const struct ref_send_cmd *c, int type, const uint8_t **p, uint32_t *len)
{
	int r = attr(c, type, 0, p);
	if (!r)
		*len = c->a[type].len;
	return r;
}
