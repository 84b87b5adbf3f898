/*
 * send_write.c - writing a send stream (send_int.h): the header, then each
 * command as the kernel's send.c emits it: a 10-byte header (payload length,
 * command, CRC32C with seed 0 and no inversion over the header with its crc
 * zeroed and the payload), then type-length-value attributes; from version 2
 * on, DATA has no length and is the rest of its command.
 */
#include "ref/csum.h"
#include "ref/send/send_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMD_HEADER 10

static void put(struct sw *w, const void *p, size_t n)
{
	if (w->err)
		return;
	if (w->len + n > w->cap) {
		size_t cap = (w->len + n) * 2;
		uint8_t *b = realloc(w->buf, cap);
		if (!b) {
			w->err = -ENOMEM;
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void put_le(struct sw *w, uint64_t v, int bytes)
{
	uint8_t b[8];
	for (int i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(w, b, (size_t)bytes);
}

int sw_begin(struct sw *w, FILE *out, uint32_t version, bool header)
{
	*w = (struct sw){ .out = out, .version = version };
	if (!header)
		return 0;
	static const char magic[] = "btrfs-stream";
	uint8_t h[REF_SEND_HEADER];
	memcpy(h, magic, sizeof(magic));
	for (int i = 0; i < 4; i++)
		h[sizeof(magic) + i] = (uint8_t)(version >> (8 * i));
	if (fwrite(h, 1, sizeof(h), out) != sizeof(h))
		return w->err = -EIO;
	w->written = sizeof(h);
	return 0;
}

void sw_cmd(struct sw *w, uint16_t cmd)
{
	w->len = 0;
	put_le(w, 0, 4);
	put_le(w, cmd, 2);
	put_le(w, 0, 4);
}

void sw_attr(struct sw *w, uint16_t type, const void *v, size_t len)
{
	if (len > UINT16_MAX) {
		if (!w->err)
			w->err = -E2BIG;
		return;
	}
	put_le(w, type, 2);
	put_le(w, len, 2);
	put(w, v, len);
}

void sw_u64(struct sw *w, uint16_t type, uint64_t v)
{
	put_le(w, type, 2);
	put_le(w, 8, 2);
	put_le(w, v, 8);
}

void sw_u32(struct sw *w, uint16_t type, uint32_t v)
{
	put_le(w, type, 2);
	put_le(w, 4, 2);
	put_le(w, v, 4);
}

void sw_str(struct sw *w, uint16_t type, const char *s)
{
	sw_attr(w, type, s, strlen(s));
}

void sw_time(struct sw *w, uint16_t type, const struct timespec *t)
{
	put_le(w, type, 2);
	put_le(w, 12, 2);
	put_le(w, (uint64_t)t->tv_sec, 8);
	put_le(w, (uint64_t)t->tv_nsec, 4);
}

void sw_data(struct sw *w, const void *d, size_t len)
{
	if (w->version >= 2) {
		put_le(w, REF_SEND_A_DATA, 2);
		put(w, d, len);
	} else {
		sw_attr(w, REF_SEND_A_DATA, d, len);
	}
}

int sw_end(struct sw *w)
{
	if (w->err)
		return w->err;
	uint32_t plen = (uint32_t)(w->len - CMD_HEADER);
	for (int i = 0; i < 4; i++)
		w->buf[i] = (uint8_t)(plen >> (8 * i));
	uint32_t crc = ref_crc32c_raw(0, w->buf, w->len);
	for (int i = 0; i < 4; i++)
		w->buf[6 + i] = (uint8_t)(crc >> (8 * i));
	if (fwrite(w->buf, 1, w->len, w->out) != w->len)
		return w->err = -EIO;
	w->written += w->len;
	w->commands++;
	return 0;
}

void sw_free(struct sw *w)
{
	free(w->buf);
	w->buf = NULL;
}
