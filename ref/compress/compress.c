/* compress.c - Btrfs's zlib, lzo and zstd extent encodings (see compress.h). */
#define ZLIB_CONST
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_getParams, as the kernel's zstd_get_params */
#include "ref/compress.h"

#include <errno.h>
#include <limits.h>
#include <lzo/lzo1x.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define LZO_LEN 4u			/* lzo total and segment headers */
#define ZSTD_BTRFS_MAX_WINDOWLOG 17	/* 128 KiB window, both ways */
#define ZSTD_BTRFS_DEFAULT_LEVEL 3
#define ZSTD_BTRFS_MIN_LEVEL (-15)
#define ZSTD_BTRFS_MAX_LEVEL 15
#define ZLIB_BTRFS_DEFAULT_LEVEL 3
#define ZLIB_GIVE_UP_AFTER 8192u	/* zlib.c: "we're making it bigger" */
#define KERNEL_PAGE 4096u		/* x86-64 PAGE_SIZE */
#define ZLIB_PRESET_DICT 0x20

/* ---- small helpers -------------------------------------------------------- */

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static bool sectorsize_ok(uint32_t ss)
{
	return ss >= 512 && ss <= 65536 && (ss & (ss - 1)) == 0;
}

static size_t round_up_to(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* lzo1x_worst_compress() of the kernel's <linux/lzo.h>: the largest segment
 * payload, and the largest segment output, the kernel's reader accepts. */
static size_t lzo_worst(size_t n)
{
	return n + n / 16 + 64 + 3;
}

/* The unit the kernel feeds its compressors (and fills its output pages) in:
 * one folio, max(PAGE_SIZE, sectorsize) with small folios. */
static size_t io_unit(uint32_t ss)
{
	return ss > KERNEL_PAGE ? ss : KERNEL_PAGE;
}

__attribute__((format(printf, 3, 4)))
static int corrupt(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EIO;
}

static void clear_err(char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
}

static pthread_once_t lzo_once = PTHREAD_ONCE_INIT;
static int lzo_init_rc = LZO_E_ERROR;

static void lzo_init_once(void)
{
	lzo_init_rc = lzo_init();
}

static bool lzo_ready(void)
{
	pthread_once(&lzo_once, lzo_init_once);
	return lzo_init_rc == LZO_E_OK;
}

static const char *lzo_error_name(int rc)
{
	switch (rc) {
	case LZO_E_INPUT_OVERRUN: return "input overrun";
	case LZO_E_OUTPUT_OVERRUN: return "output overrun";
	case LZO_E_LOOKBEHIND_OVERRUN: return "lookbehind overrun";
	case LZO_E_EOF_NOT_FOUND: return "end marker not found";
	case LZO_E_INPUT_NOT_CONSUMED: return "input not consumed";
	default: return "error";
	}
}

const char *ref_compress_name(unsigned type)
{
	static const char *const names[] = { "none", "zlib", "lzo", "zstd" };
	return type < 4 ? names[type] : "unknown";
}

/* ---- zlib ------------------------------------------------------------------ */

/* Chunks for zlib's 32-bit avail_in / avail_out. */
#define ZCHUNK ((size_t)1 << 30)

/*
 * Inflate in[0..in_len) into out[0..out_len) the way zlib_decompress_bio does:
 * the 2-byte header checked by hand (deflate, no preset dictionary, FCHECK),
 * then raw deflate with the header's window, no adler32 check.  Stops at the
 * end of the stream or when out is full; *ended tells which.
 */
static ssize_t zlib_decode(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
			   bool *ended, char *err, size_t errlen)
{
	*ended = false;
	if (in_len <= 2)
		return corrupt(err, errlen, "zlib: %zu bytes, shorter than a stream", in_len);
	if ((in[0] & 0x0f) != Z_DEFLATED || (in[1] & ZLIB_PRESET_DICT) ||
	    ((unsigned)in[0] << 8 | in[1]) % 31 != 0)
		return corrupt(err, errlen, "zlib: bad stream header %02x %02x", in[0], in[1]);
	if ((in[0] >> 4) > 7)
		return corrupt(err, errlen, "zlib: window field %u in the header is invalid",
			       in[0] >> 4);

	z_stream s;
	memset(&s, 0, sizeof(s));
	int rc = inflateInit2(&s, -((in[0] >> 4) + 8));
	if (rc != Z_OK)
		return rc == Z_MEM_ERROR ? -ENOMEM : corrupt(err, errlen, "zlib: inflateInit2 %d", rc);

	size_t ip = 2, op = 0;
	ssize_t ret;
	for (;;) {
		size_t ai = min_sz(in_len - ip, ZCHUNK), ao = min_sz(out_len - op, ZCHUNK);
		s.next_in = in + ip;
		s.avail_in = (uInt)ai;
		s.next_out = out + op;
		s.avail_out = (uInt)ao;
		rc = inflate(&s, Z_NO_FLUSH);
		size_t used = ai - s.avail_in, made = ao - s.avail_out;
		ip += used;
		op += made;
		if (rc == Z_STREAM_END) {
			*ended = true;
			ret = (ssize_t)op;
			break;
		}
		if (rc != Z_OK && rc != Z_BUF_ERROR) {
			ret = rc == Z_MEM_ERROR ? -ENOMEM
						: corrupt(err, errlen, "zlib: %s at input byte %zu",
							  s.msg ? s.msg : "inflate error", ip);
			break;
		}
		if (op == out_len) { /* all that was asked for */
			ret = (ssize_t)op;
			break;
		}
		if (ip == in_len) {
			ret = corrupt(err, errlen,
				      "zlib: stream truncated after %zu input bytes (%zu decoded)",
				      in_len, op);
			break;
		}
		if (!used && !made) {
			ret = corrupt(err, errlen, "zlib: no progress at input byte %zu", ip);
			break;
		}
	}
	inflateEnd(&s);
	return ret;
}

/*
 * Deflate as zlib_compress_folios: deflateInit (windowBits 15, memLevel 8),
 * one Z_SYNC_FLUSH per input folio, output in folio-sized pieces, no more
 * output folios than input ones, give up when the output outgrows the input
 * past 8 KiB, then Z_FINISH.  buf holds cap >= round_up(len, unit) bytes.
 */
static ssize_t zlib_encode(int level, const uint8_t *in, size_t len, uint32_t ss, uint8_t *buf,
			   size_t cap)
{
	const size_t unit = io_unit(ss);
	const size_t nr_dest = round_up_to(len, unit) / unit;
	if (cap < nr_dest * unit)
		return -EINVAL;

	z_stream s;
	memset(&s, 0, sizeof(s));
	int rc = deflateInit2(&s, level, Z_DEFLATED, MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
	if (rc != Z_OK)
		return rc == Z_MEM_ERROR ? -ENOMEM : -EIO;

	size_t in_pos = 0, nr = 1;
	ssize_t ret = 0;
	s.next_out = buf;
	s.avail_out = (uInt)unit;
	while (s.total_in < len) {
		if (s.avail_in == 0) {
			size_t cur = min_sz(len, (in_pos / unit + 1) * unit) - in_pos;
			s.next_in = in + in_pos;
			s.avail_in = (uInt)cur;
			in_pos += cur;
		}
		rc = deflate(&s, Z_SYNC_FLUSH);
		if (rc != Z_OK) {
			ret = -EIO;
			goto out;
		}
		if (s.total_in > ZLIB_GIVE_UP_AFTER && s.total_in < s.total_out) {
			ret = -E2BIG;
			goto out;
		}
		if (s.avail_out == 0) {
			if (nr == nr_dest) {
				ret = -E2BIG;
				goto out;
			}
			s.next_out = buf + nr * unit;
			s.avail_out = (uInt)unit;
			nr++;
		}
	}
	s.avail_in = 0;
	/* Each round either ends the stream or fills a folio: nr_dest bounds it. */
	for (unsigned rounds = 0; rc != Z_STREAM_END; rounds++) {
		rc = deflate(&s, Z_FINISH);
		if (rc == Z_STREAM_END)
			break;
		if ((rc != Z_OK && rc != Z_BUF_ERROR) || rounds > nr_dest + 4) {
			ret = -EIO;
			goto out;
		}
		if (s.avail_out == 0) {
			if (nr == nr_dest) {
				ret = -E2BIG;
				goto out;
			}
			s.next_out = buf + nr * unit;
			s.avail_out = (uInt)unit;
			nr++;
		}
	}
	if (s.total_out >= s.total_in)
		ret = -E2BIG;
	else
		ret = (ssize_t)s.total_out;
out:
	deflateEnd(&s);
	return ret;
}

/* ---- lzo ------------------------------------------------------------------- */

/* Decode one segment payload (copied into the padded scratch cbuf first, as
 * the kernel copies it into its workspace) into dst (room: *dlen). */
static int lzo_segment(const uint8_t *payload, uint32_t seg_len, uint8_t *cbuf, uint8_t *dst,
		       lzo_uint *dlen)
{
	memcpy(cbuf, payload, seg_len);
	memset(cbuf + seg_len, 0, 16);
	return lzo1x_decompress_safe(cbuf, seg_len, dst, dlen, NULL);
}

/* lzo_decompress_bio, with the checks listed in compress.h. */
static ssize_t lzo_decode(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
			  uint32_t ss, char *err, size_t errlen)
{
	if (in_len < LZO_LEN)
		return corrupt(err, errlen, "lzo: %zu bytes, shorter than the total length field",
			       in_len);
	const uint32_t total = get_le32(in);
	if (total > min_sz(REF_COMPRESS_MAX_DISK, in_len))
		return corrupt(err, errlen, "lzo: total length %u exceeds the %zu-byte extent%s",
			       total, in_len, total > REF_COMPRESS_MAX_DISK ? " or 128 KiB" : "");
	if (round_up_to(total, ss) < in_len)
		return corrupt(err, errlen,
			       "lzo: total length %u leaves sectors of the %zu-byte extent unused",
			       total, in_len);
	if (total < 2 * LZO_LEN)
		return corrupt(err, errlen, "lzo: total length %u holds no segment", total);

	const size_t cap = lzo_worst(ss);
	uint8_t *cbuf = malloc(cap + 16), *obuf = malloc(cap);
	ssize_t ret;
	if (!cbuf || !obuf) {
		ret = -ENOMEM;
		goto out;
	}
	size_t cur = LZO_LEN, done = 0;
	unsigned seg = 0;
	while (cur < total && done < out_len) {
		if (total - cur < LZO_LEN) {
			ret = corrupt(err, errlen,
				      "lzo: segment %u header at %zu runs past total length %u", seg,
				      cur, total);
			goto out;
		}
		const uint32_t seg_len = get_le32(in + cur);
		cur += LZO_LEN;
		if (seg_len > cap) {
			ret = corrupt(err, errlen,
				      "lzo: segment %u at %zu: length %u exceeds the %zu-byte maximum",
				      seg, cur - LZO_LEN, seg_len, cap);
			goto out;
		}
		if (seg_len > total - cur) {
			ret = corrupt(err, errlen,
				      "lzo: segment %u at %zu: length %u runs past total length %u",
				      seg, cur - LZO_LEN, seg_len, total);
			goto out;
		}
		if (seg_len < 3) { /* no lzo1x stream is shorter; the kernel's rejects it */
			ret = corrupt(err, errlen, "lzo: segment %u at %zu: length %u is too short",
				      seg, cur - LZO_LEN, seg_len);
			goto out;
		}
		/* Straight into out when the whole possible output fits. */
		const bool direct = out_len - done >= cap;
		lzo_uint dlen = cap;
		int rc = lzo_segment(in + cur, seg_len, cbuf, direct ? out + done : obuf, &dlen);
		if (rc != LZO_E_OK) {
			ret = corrupt(err, errlen, "lzo: segment %u at %zu: %s (lzo1x error %d)", seg,
				      cur - LZO_LEN, lzo_error_name(rc), rc);
			goto out;
		}
		size_t take = min_sz(dlen, out_len - done);
		if (!direct)
			memcpy(out + done, obuf, take);
		done += take;
		cur += seg_len;
		seg++;
		size_t left = ss - cur % ss;
		if (left < LZO_LEN) /* the zero pad before the next sector */
			cur += left;
	}
	ret = (ssize_t)done;
out:
	free(cbuf);
	free(obuf);
	return ret;
}

/* lzo_decompress: exactly one segment, output within one sector. */
static ssize_t lzo_decode_inline(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
				 uint32_t ss, char *err, size_t errlen)
{
	const size_t cap = lzo_worst(ss);
	if (in_len < 2 * LZO_LEN || in_len > cap + 2 * LZO_LEN)
		return corrupt(err, errlen, "lzo: inline data of %zu bytes is out of range", in_len);
	if (get_le32(in) != in_len)
		return corrupt(err, errlen, "lzo: inline total length %u != item size %zu",
			       get_le32(in), in_len);
	const uint32_t seg_len = get_le32(in + LZO_LEN);
	if (seg_len != in_len - 2 * LZO_LEN)
		return corrupt(err, errlen,
			       "lzo: inline segment length %u != item size %zu - 8 (one segment)",
			       seg_len, in_len);
	if (seg_len < 3)
		return corrupt(err, errlen, "lzo: inline segment length %u is too short", seg_len);

	uint8_t *cbuf = malloc(seg_len + 16), *obuf = malloc(ss);
	ssize_t ret;
	if (!cbuf || !obuf) {
		ret = -ENOMEM;
		goto out;
	}
	lzo_uint dlen = ss;
	int rc = lzo_segment(in + 2 * LZO_LEN, seg_len, cbuf, obuf, &dlen);
	if (rc != LZO_E_OK) {
		ret = corrupt(err, errlen, "lzo: inline segment: %s (lzo1x error %d)",
			      lzo_error_name(rc), rc);
		goto out;
	}
	if (dlen < out_len) {
		ret = corrupt(err, errlen, "lzo: inline data decodes to %lu of %zu bytes",
			      (unsigned long)dlen, out_len);
		goto out;
	}
	memcpy(out, obuf, out_len);
	ret = (ssize_t)out_len;
out:
	free(cbuf);
	free(obuf);
	return ret;
}

/*
 * lzo_compress_folios: one lzo1x_1 segment per sector of input, headers kept
 * inside sectors by zero padding (also after the last segment), give up after
 * two sectors when the output outgrows the input.  buf holds cap bytes.
 */
static ssize_t lzo_encode(const uint8_t *in, size_t len, uint32_t ss, uint8_t *buf, size_t cap)
{
	if (!lzo_ready())
		return -EIO;
	const size_t worst = lzo_worst(ss);
	uint8_t *cbuf = malloc(worst), *wrk = malloc(LZO1X_1_MEM_COMPRESS);
	ssize_t ret;
	if (!cbuf || !wrk) {
		ret = -ENOMEM;
		goto out;
	}
	size_t cur_in = 0, cur_out = LZO_LEN;
	while (cur_in < len) {
		size_t n = min_sz(len - cur_in, ss - cur_in % ss);
		lzo_uint olen = worst;
		if (lzo1x_1_compress(in + cur_in, n, cbuf, &olen, wrk) != LZO_E_OK || olen > worst) {
			ret = -EIO;
			goto out;
		}
		if (cur_out + LZO_LEN + olen + LZO_LEN > cap) {
			ret = -E2BIG;
			goto out;
		}
		put_le32(buf + cur_out, (uint32_t)olen);
		cur_out += LZO_LEN;
		memcpy(buf + cur_out, cbuf, olen);
		cur_out += olen;
		size_t left = round_up_to(cur_out, ss) - cur_out;
		if (left && left < LZO_LEN) {
			memset(buf + cur_out, 0, left);
			cur_out += left;
		}
		cur_in += n;
		if (cur_in > 2 * (size_t)ss && cur_in < cur_out) {
			ret = -E2BIG;
			goto out;
		}
	}
	put_le32(buf, (uint32_t)cur_out);
	ret = (ssize_t)cur_out;
out:
	free(cbuf);
	free(wrk);
	return ret;
}

/* ---- zstd ------------------------------------------------------------------ */

/* zstd_decompress_bio: one frame, window at most 128 KiB; stops at the frame's
 * end (later bytes ignored) or when out is full. */
static ssize_t zstd_decode(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
			   char *err, size_t errlen)
{
	/* One context per thread, reused: creating one costs more than decoding a
	 * 128 KiB extent. */
	static _Thread_local ZSTD_DCtx *d;
	if (!d && !(d = ZSTD_createDCtx()))
		return -ENOMEM;
	ZSTD_DCtx_reset(d, ZSTD_reset_session_and_parameters);
	ssize_t ret;
	size_t rc = ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, ZSTD_BTRFS_MAX_WINDOWLOG);
	if (ZSTD_isError(rc)) {
		ret = -EIO;
		goto out;
	}
	ZSTD_inBuffer ib = { in, in_len, 0 };
	ZSTD_outBuffer ob = { out, out_len, 0 };
	for (;;) {
		size_t pi = ib.pos, po = ob.pos;
		rc = ZSTD_decompressStream(d, &ob, &ib);
		if (ZSTD_isError(rc)) {
			ret = corrupt(err, errlen, "zstd: %s (input byte %zu, %zu decoded)",
				      ZSTD_getErrorName(rc), ib.pos, ob.pos);
			goto out;
		}
		if (rc == 0 || ob.pos == ob.size) /* end of the frame, or out full */
			break;
		if (ib.pos == ib.size) {
			ret = corrupt(err, errlen,
				      "zstd: frame truncated after %zu input bytes (%zu decoded)",
				      in_len, ob.pos);
			goto out;
		}
		if (ib.pos == pi && ob.pos == po) {
			ret = corrupt(err, errlen, "zstd: no progress at input byte %zu", ib.pos);
			goto out;
		}
	}
	ret = (ssize_t)ob.pos;
out:
	return ret;
}

static size_t zstd_set(ZSTD_CCtx *c, ZSTD_cParameter p, int v)
{
	return ZSTD_CCtx_setParameter(c, p, v);
}

/*
 * zstd_compress_folios: the parameters of zstd_get_btrfs_parameters
 * (ZSTD_getParams(level, len, 0), windowLog at most 17, content size on, no
 * checksum), len pledged, input and output a folio at a time, give up after
 * two sectors when the output outgrows the input, or when the output reaches
 * the input's size.  buf holds cap >= round_up(len, unit) + unit bytes.
 */
static ssize_t zstd_encode(int level, const uint8_t *in, size_t len, uint32_t ss, uint8_t *buf,
			   size_t cap)
{
	const size_t unit = io_unit(ss);
	if (cap < round_up_to(len, unit) + unit)
		return -EINVAL;
	ZSTD_parameters p = ZSTD_getParams(level, len, 0);
	if (p.cParams.windowLog > ZSTD_BTRFS_MAX_WINDOWLOG)
		p.cParams.windowLog = ZSTD_BTRFS_MAX_WINDOWLOG;

	ZSTD_CCtx *c = ZSTD_createCCtx();
	if (!c)
		return -ENOMEM;
	ssize_t ret;
	size_t e = 0;
	const struct { ZSTD_cParameter p; int v; } set[] = {
		{ ZSTD_c_windowLog, (int)p.cParams.windowLog },
		{ ZSTD_c_chainLog, (int)p.cParams.chainLog },
		{ ZSTD_c_hashLog, (int)p.cParams.hashLog },
		{ ZSTD_c_searchLog, (int)p.cParams.searchLog },
		{ ZSTD_c_minMatch, (int)p.cParams.minMatch },
		{ ZSTD_c_targetLength, (int)p.cParams.targetLength },
		{ ZSTD_c_strategy, (int)p.cParams.strategy },
		{ ZSTD_c_contentSizeFlag, p.fParams.contentSizeFlag },
		{ ZSTD_c_checksumFlag, p.fParams.checksumFlag },
		{ ZSTD_c_dictIDFlag, !p.fParams.noDictIDFlag },
	};
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]) && !ZSTD_isError(e); i++)
		e = zstd_set(c, set[i].p, set[i].v);
	if (!ZSTD_isError(e))
		e = ZSTD_CCtx_setPledgedSrcSize(c, len);
	if (ZSTD_isError(e)) {
		ret = -EIO;
		goto out;
	}

	size_t tot_in = 0, tot_out = 0;
	ZSTD_inBuffer ib = { in, min_sz(len, unit), 0 };
	ZSTD_outBuffer ob = { buf, unit, 0 };
	for (;;) {
		e = ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_continue);
		if (ZSTD_isError(e)) {
			ret = -EIO;
			goto out;
		}
		if (tot_in + ib.pos > 2 * (size_t)ss && tot_in + ib.pos < tot_out + ob.pos) {
			ret = -E2BIG;
			goto out;
		}
		if (ob.pos >= ob.size) {
			tot_out += unit;
			if (tot_out >= len) {
				ret = -E2BIG;
				goto out;
			}
			ob = (ZSTD_outBuffer){ buf + tot_out, unit, 0 };
		}
		if (tot_in + ib.pos >= len) {
			tot_in += ib.pos;
			break;
		}
		if (ib.pos >= ib.size) {
			tot_in += ib.size;
			ib = (ZSTD_inBuffer){ in + tot_in, min_sz(len - tot_in, unit), 0 };
		}
	}
	for (unsigned rounds = 0;; rounds++) {
		ZSTD_inBuffer none = { NULL, 0, 0 };
		e = ZSTD_compressStream2(c, &ob, &none, ZSTD_e_end);
		if (ZSTD_isError(e) || rounds > len / unit + 4) {
			ret = -EIO;
			goto out;
		}
		if (e == 0) {
			tot_out += ob.pos;
			break;
		}
		if (ob.pos < ob.size)
			continue;
		tot_out += unit;
		if (tot_out >= len) {
			ret = -E2BIG;
			goto out;
		}
		ob = (ZSTD_outBuffer){ buf + tot_out, unit, 0 };
	}
	ret = tot_out >= tot_in ? -E2BIG : (ssize_t)tot_out;
out:
	ZSTD_freeCCtx(c);
	return ret;
}

/* ---- public entry points ----------------------------------------------------- */

static bool known_codec(unsigned type)
{
	return type == REF_COMPRESS_ZLIB || type == REF_COMPRESS_LZO || type == REF_COMPRESS_ZSTD;
}

ssize_t ref_decompress(unsigned type, const uint8_t *in, size_t in_len, uint8_t *out,
		       size_t out_len, uint32_t sectorsize, char *err, size_t errlen)
{
	clear_err(err, errlen);
	if (type != REF_COMPRESS_NONE && !known_codec(type))
		return -EINVAL;
	if (!sectorsize_ok(sectorsize) || (in_len && !in) || (out_len && !out))
		return -EINVAL;
	if (out_len > SSIZE_MAX)
		out_len = SSIZE_MAX;
	if (out_len == 0)
		return 0;
	bool ended;
	switch (type) {
	case REF_COMPRESS_NONE: {
		size_t n = min_sz(in_len, out_len);
		if (n)
			memcpy(out, in, n);
		return (ssize_t)n;
	}
	case REF_COMPRESS_ZLIB:
		return zlib_decode(in, in_len, out, out_len, &ended, err, errlen);
	case REF_COMPRESS_LZO:
		if (!lzo_ready())
			return -EIO;
		return lzo_decode(in, in_len, out, out_len, sectorsize, err, errlen);
	default:
		return zstd_decode(in, in_len, out, out_len, err, errlen);
	}
}

ssize_t ref_decompress_inline(unsigned type, const uint8_t *in, size_t in_len, uint8_t *out,
			      size_t out_len, uint32_t sectorsize, char *err, size_t errlen)
{
	clear_err(err, errlen);
	if (type != REF_COMPRESS_NONE && !known_codec(type))
		return -EINVAL;
	if (!sectorsize_ok(sectorsize) || (in_len && !in) || (out_len && !out))
		return -EINVAL;
	if (out_len > sectorsize)
		return corrupt(err, errlen, "inline: ram_bytes %zu exceeds the sector size %u",
			       out_len, sectorsize);
	if (type == REF_COMPRESS_NONE) {
		if (in_len < out_len)
			return corrupt(err, errlen, "inline: %zu data bytes for ram_bytes %zu",
				       in_len, out_len);
		if (out_len)
			memcpy(out, in, out_len);
		return (ssize_t)out_len;
	}
	if (type == REF_COMPRESS_LZO) {
		if (!lzo_ready())
			return -EIO;
		return lzo_decode_inline(in, in_len, out, out_len, sectorsize, err, errlen);
	}

	uint8_t *buf = malloc(sectorsize);
	if (!buf)
		return -ENOMEM;
	bool ended = true;
	ssize_t n = type == REF_COMPRESS_ZLIB
			    ? zlib_decode(in, in_len, buf, sectorsize, &ended, err, errlen)
			    : zstd_decode(in, in_len, buf, sectorsize, err, errlen);
	if (n >= 0 && !ended)
		n = corrupt(err, errlen, "zlib: inline stream does not end within %u bytes",
			    sectorsize);
	else if (n >= 0 && (size_t)n < out_len)
		n = corrupt(err, errlen, "%s: inline data decodes to %zd of %zu bytes",
			    ref_compress_name(type), n, out_len);
	else if (n >= 0) {
		memcpy(out, buf, out_len);
		n = (ssize_t)out_len;
	}
	free(buf);
	return n;
}

static int clamp_level(unsigned type, int level)
{
	int lo = 1, hi = 9, def = ZLIB_BTRFS_DEFAULT_LEVEL;
	if (type == REF_COMPRESS_ZSTD) {
		lo = ZSTD_BTRFS_MIN_LEVEL;
		hi = ZSTD_BTRFS_MAX_LEVEL;
		def = ZSTD_BTRFS_DEFAULT_LEVEL;
	}
	if (level == 0)
		return def;
	return level < lo ? lo : level > hi ? hi : level;
}

static ssize_t compress_common(unsigned type, int level, const uint8_t *in, size_t in_len,
			       uint8_t *out, size_t out_cap, uint32_t ss, bool inline_extent)
{
	if (!known_codec(type) || !sectorsize_ok(ss) || !in || in_len == 0 ||
	    in_len > (inline_extent ? ss : REF_COMPRESS_MAX_RAM) || (out_cap && !out))
		return -EINVAL;
	const size_t unit = io_unit(ss);
	const size_t cap = round_up_to(in_len, unit) + unit + lzo_worst(ss) + 2 * LZO_LEN;
	uint8_t *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	level = clamp_level(type, level);
	ssize_t n = type == REF_COMPRESS_ZLIB  ? zlib_encode(level, in, in_len, ss, buf, cap)
		    : type == REF_COMPRESS_LZO ? lzo_encode(in, in_len, ss, buf, cap)
					       : zstd_encode(level, in, in_len, ss, buf, cap);
	if (n >= 0) {
		if (!inline_extent && round_up_to((size_t)n, ss) + ss > round_up_to(in_len, ss))
			n = -E2BIG;
		else if ((size_t)n > out_cap)
			n = -ENOSPC;
		else
			memcpy(out, buf, (size_t)n);
	}
	free(buf);
	return n;
}

ssize_t ref_compress(unsigned type, int level, const uint8_t *in, size_t in_len, uint8_t *out,
		     size_t out_cap, uint32_t sectorsize)
{
	return compress_common(type, level, in, in_len, out, out_cap, sectorsize, false);
}

ssize_t ref_compress_inline(unsigned type, int level, const uint8_t *in, size_t in_len,
			    uint8_t *out, size_t out_cap, uint32_t sectorsize)
{
	return compress_common(type, level, in, in_len, out, out_cap, sectorsize, true);
}
