/*
 * test_compress.c - ref/compress: round trips of the three Btrfs encodings,
 * the lzo segment layout (total length, sector padding), partial decodes, the
 * kernel's give-up rules, and malformed input (-EIO with a message, never a
 * crash: the inputs are exact-size heap copies so ASan sees any overrun).
 */
#define ZSTD_STATIC_LINKING_ONLY
#include "ref/compress.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <lzo/lzo1x.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define SS 4096u
#define K128 (128u * 1024)
#define CAP (256u * 1024)

static const unsigned codecs[] = { REF_COMPRESS_ZLIB, REF_COMPRESS_LZO, REF_COMPRESS_ZSTD };

/* ---- data ------------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill_random(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(rng_next(&s) >> 24);
}

/* Compressible text: words from a small list, seeded. */
static void fill_text(uint8_t *p, size_t n, uint64_t seed)
{
	static const char *const words[] = { "btrfs ", "extent ", "sector ", "checksum ",
					     "leaf ", "node ", "inode\n", "chunk ", "stripe " };
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
	size_t i = 0;
	while (i < n) {
		const char *w = words[rng_next(&s) % 9];
		for (size_t j = 0; w[j] && i < n; j++)
			p[i++] = (uint8_t)w[j];
	}
}

static uint8_t *text(size_t n, uint64_t seed)
{
	uint8_t *p = malloc(n ? n : 1);
	cr_assert_not_null(p);
	fill_text(p, n, seed);
	return p;
}

/* An exact-size heap copy, so reading past n is an ASan error. */
static uint8_t *dup_exact(const uint8_t *p, size_t n)
{
	uint8_t *q = malloc(n ? n : 1);
	cr_assert_not_null(q);
	if (n)
		memcpy(q, p, n);
	return q;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static size_t rup(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* ---- decode helpers ------------------------------------------------------------- */

/* ref_decompress into an exact-size buffer of out_len from an exact-size
 * copy of the input; *err_out gets the message. */
static ssize_t dec(unsigned type, const uint8_t *in, size_t in_len, uint8_t *out, size_t out_len,
		   uint32_t ss, bool inl, char *msg)
{
	uint8_t *i = dup_exact(in, in_len);
	uint8_t *o = malloc(out_len ? out_len : 1);
	cr_assert_not_null(o);
	char err[256] = "unset";
	ssize_t n = inl ? ref_decompress_inline(type, i, in_len, o, out_len, ss, err, sizeof err)
			: ref_decompress(type, i, in_len, o, out_len, ss, err, sizeof err);
	if (n > 0 && out)
		memcpy(out, o, (size_t)n);
	if (msg)
		strcpy(msg, err);
	free(i);
	free(o);
	return n;
}

/* Decoding must fail with -EIO and a message. */
static void expect_eio(unsigned type, const uint8_t *in, size_t in_len, size_t out_len,
		       uint32_t ss, bool inl, const char *what)
{
	char msg[256];
	ssize_t n = dec(type, in, in_len, NULL, out_len, ss, inl, msg);
	cr_assert_eq(n, -EIO, "%s %s: got %zd, want -EIO", ref_compress_name(type), what, n);
	cr_assert(msg[0] && strcmp(msg, "unset"), "%s %s: no message", ref_compress_name(type),
		  what);
}

/* Decode enc and compare with want (n bytes), through the regular decoder
 * and, when inl, the inline one too. */
static void expect_decodes(unsigned type, const uint8_t *enc, size_t enc_len, const uint8_t *want,
			   size_t n, uint32_t ss, bool inl)
{
	uint8_t *got = malloc(n ? n : 1);
	char msg[256];
	ssize_t r = dec(type, enc, enc_len, got, n, ss, false, msg);
	cr_assert_eq(r, (ssize_t)n, "%s: decoded %zd of %zu (%s)", ref_compress_name(type), r, n,
		     msg);
	cr_assert(!memcmp(got, want, n), "%s: decoded bytes differ", ref_compress_name(type));
	if (inl) {
		memset(got, 0, n);
		r = dec(type, enc, enc_len, got, n, ss, true, msg);
		cr_assert_eq(r, (ssize_t)n, "%s inline: decoded %zd of %zu (%s)",
			     ref_compress_name(type), r, n, msg);
		cr_assert(!memcmp(got, want, n), "%s inline: bytes differ", ref_compress_name(type));
	}
	free(got);
}

/* ---- stock encoders (independent of ref/read/compress.c) ------------------------------- */

static size_t stock_zlib(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	uLongf len = cap;
	cr_assert_eq(compress2(out, &len, in, n, 6), Z_OK);
	return len;
}

static size_t stock_zstd(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	size_t r = ZSTD_compress(out, cap, in, n, 3);
	cr_assert(!ZSTD_isError(r));
	return r;
}

/* A hand-made lzo1x stream of L literal bytes (lit), then the end marker. */
static size_t lzo_literals(const uint8_t *lit, size_t L, uint8_t *out)
{
	size_t o = 0;
	cr_assert(L >= 4);
	if (L <= 238) {
		out[o++] = (uint8_t)(17 + L);
	} else { /* literal run t + 3, t = 255 * z + 15 + b */
		size_t t = L - 3 - 15, z = (t - 1) / 255;
		out[o++] = 0;
		for (size_t i = 0; i < z; i++)
			out[o++] = 0;
		out[o++] = (uint8_t)(t - 255 * z);
	}
	memcpy(out + o, lit, L);
	o += L;
	out[o++] = 0x11;
	out[o++] = 0;
	out[o++] = 0;
	return o;
}

/* A literal segment of exactly `want` bytes (payload); its literal count in
 * *L.  Some sizes have no such encoding; the callers' sizes do. */
static size_t lzo_lit_exact(const uint8_t *lit, size_t want, uint8_t *out, size_t *L)
{
	for (size_t l = want - 4; l >= 4; l--) {
		size_t n = lzo_literals(lit, l, out);
		if (n == want) {
			*L = l;
			return n;
		}
		if (n < want)
			break;
	}
	cr_assert_fail("no literal segment of %zu bytes", want);
	return 0;
}

/* Btrfs lzo layout from given segment payloads, written by the test's own
 * rules: headers never straddle a sector, pads of `pad` bytes. */
struct seg {
	const uint8_t *p;
	size_t len;
};
static size_t build_lzo(const struct seg *segs, size_t n, uint32_t ss, uint8_t pad, uint8_t *out)
{
	size_t cur = 4;
	for (size_t i = 0; i < n; i++) {
		put32(out + cur, (uint32_t)segs[i].len);
		memcpy(out + cur + 4, segs[i].p, segs[i].len);
		cur += 4 + segs[i].len;
		size_t left = rup(cur, ss) - cur;
		if (left && left < 4) {
			memset(out + cur, pad, left);
			cur += left;
		}
	}
	put32(out, (uint32_t)cur);
	return cur;
}

/* ---- round trips ---------------------------------------------------------------- */

/* n bytes of text through ref_compress (regular) and, where the kernel would
 * make it inline, ref_compress_inline. */
static void roundtrip(unsigned type, size_t n, uint32_t ss)
{
	uint8_t *in = text(n, n + type), *enc = malloc(CAP);
	ssize_t c = ref_compress(type, 0, in, n, enc, CAP, ss);
	if (rup(n, ss) <= ss) {
		/* one sector of input can never save a sector */
		cr_assert_eq(c, -E2BIG, "%s n=%zu: regular extent %zd, want -E2BIG",
			     ref_compress_name(type), n, c);
		c = ref_compress_inline(type, 0, in, n, enc, CAP, ss);
		cr_assert(c > 0 && (size_t)c < n, "%s n=%zu: inline encode %zd",
			  ref_compress_name(type), n, c);
		expect_decodes(type, enc, (size_t)c, in, n, ss, true);
	} else {
		cr_assert(c > 0, "%s n=%zu: encode %zd", ref_compress_name(type), n, c);
		cr_assert_leq(rup((size_t)c, ss) + ss, rup(n, ss), "must save a sector");
		/* on disk: padded with zeros to the sector */
		size_t disk = rup((size_t)c, ss);
		memset(enc + c, 0, disk - (size_t)c);
		expect_decodes(type, enc, disk, in, n, ss, false);
		expect_decodes(type, enc, (size_t)c, in, n, ss, false);
	}
	free(in);
	free(enc);
}

Test(compress, roundtrip_sizes_4k)
{
	const size_t sizes[] = { 4095, 4096, 4097, 3 * 4096 + 5, K128 };
	for (size_t t = 0; t < 3; t++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			roundtrip(codecs[t], sizes[i], SS);
}

Test(compress, roundtrip_sizes_64k)
{
	const size_t sizes[] = { 3000, 65536, 65537, K128 };
	for (size_t t = 0; t < 3; t++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			roundtrip(codecs[t], sizes[i], 65536);
}

/* One byte never compresses; a stock encoding of it still decodes. */
Test(compress, one_byte)
{
	const uint8_t b = 'x';
	uint8_t enc[64], out[8];
	for (size_t t = 0; t < 3; t++) {
		cr_assert_eq(ref_compress(codecs[t], 0, &b, 1, enc, sizeof enc, SS), -E2BIG);
		ssize_t n = ref_compress_inline(codecs[t], 0, &b, 1, enc, sizeof enc, SS);
		if (codecs[t] == REF_COMPRESS_LZO)
			cr_assert(n > 1, "lzo inline of one byte: %zd", n);
		else
			cr_assert_eq(n, -E2BIG);
	}
	size_t n = stock_zlib(&b, 1, enc, sizeof enc);
	expect_decodes(REF_COMPRESS_ZLIB, enc, n, &b, 1, SS, true);
	n = stock_zstd(&b, 1, enc, sizeof enc);
	expect_decodes(REF_COMPRESS_ZSTD, enc, n, &b, 1, SS, true);
	/* lzo1x_1 of one byte: 3-byte... stream inside a one-segment layout */
	uint8_t seg[64], wrk[LZO1X_1_MEM_COMPRESS];
	lzo_uint sl = sizeof seg;
	cr_assert_eq(lzo_init(), LZO_E_OK);
	cr_assert_eq(lzo1x_1_compress(&b, 1, seg, &sl, wrk), LZO_E_OK);
	struct seg s = { seg, sl };
	n = build_lzo(&s, 1, SS, 0, enc);
	cr_assert_eq(n, 8 + sl);
	expect_decodes(REF_COMPRESS_LZO, enc, n, &b, 1, SS, true);
	cr_assert_eq(dec(REF_COMPRESS_LZO, enc, n, out, 1, SS, false, NULL), 1);
}

Test(compress, levels)
{
	uint8_t *in = text(K128, 3), *enc = malloc(CAP);
	const int zl[] = { 1, 3, 9, 0, 42, -5 }, sl[] = { -15, -1, 1, 3, 15, 0, 99, -99 };
	for (size_t i = 0; i < sizeof zl / sizeof zl[0]; i++) {
		ssize_t c = ref_compress(REF_COMPRESS_ZLIB, zl[i], in, K128, enc, CAP, SS);
		cr_assert(c > 0, "zlib level %d: %zd", zl[i], c);
		expect_decodes(REF_COMPRESS_ZLIB, enc, (size_t)c, in, K128, SS, false);
	}
	for (size_t i = 0; i < sizeof sl / sizeof sl[0]; i++) {
		ssize_t c = ref_compress(REF_COMPRESS_ZSTD, sl[i], in, K128, enc, CAP, SS);
		cr_assert(c > 0, "zstd level %d: %zd", sl[i], c);
		expect_decodes(REF_COMPRESS_ZSTD, enc, (size_t)c, in, K128, SS, false);
	}
	/* level changes the output (so it is really passed on) */
	uint8_t *e2 = malloc(CAP);
	ssize_t a = ref_compress(REF_COMPRESS_ZLIB, 1, in, K128, enc, CAP, SS);
	ssize_t b = ref_compress(REF_COMPRESS_ZLIB, 9, in, K128, e2, CAP, SS);
	cr_assert(a != b || memcmp(enc, e2, (size_t)a));
	a = ref_compress(REF_COMPRESS_ZSTD, -15, in, K128, enc, CAP, SS);
	b = ref_compress(REF_COMPRESS_ZSTD, 15, in, K128, e2, CAP, SS);
	cr_assert_gt(a, b, "zstd -15 (%zd) should be larger than 15 (%zd)", a, b);
	free(in);
	free(enc);
	free(e2);
}

/* ---- give-up rules ---------------------------------------------------------------- */

Test(compress, incompressible_is_e2big)
{
	uint8_t *in = malloc(K128), *enc = malloc(CAP);
	fill_random(in, K128, 5);
	const size_t sizes[] = { 4097, 3 * 4096, K128 };
	for (size_t t = 0; t < 3; t++) {
		for (size_t i = 0; i < 3; i++)
			cr_assert_eq(ref_compress(codecs[t], 0, in, sizes[i], enc, CAP, SS), -E2BIG,
				     "%s random %zu", ref_compress_name(codecs[t]), sizes[i]);
		/* inline: the codec's own verdict; lzo has none for one segment
		 * and returns an encoding larger than the data, as the kernel's */
		ssize_t n = ref_compress_inline(codecs[t], 0, in, 3000, enc, CAP, SS);
		if (codecs[t] == REF_COMPRESS_LZO)
			cr_assert(n > 3000, "lzo inline of random data: %zd", n);
		else
			cr_assert_eq(n, -E2BIG);
	}
	free(in);
	free(enc);
}

/* Compressing to exactly one sector less is the least win allowed. */
Test(compress, sector_saving_rule)
{
	/* 8192 bytes of text compress far below 4096: accepted; 8192 random
	 * bytes with 200 bytes of text cannot lose a whole sector: refused. */
	uint8_t *in = text(8192, 9), *enc = malloc(CAP);
	for (size_t t = 0; t < 3; t++) {
		ssize_t c = ref_compress(codecs[t], 0, in, 8192, enc, CAP, SS);
		cr_assert(c > 0 && c <= 4096);
	}
	fill_random(in, 8192 - 200, 3);
	for (size_t t = 0; t < 3; t++)
		cr_assert_eq(ref_compress(codecs[t], 0, in, 8192, enc, CAP, SS), -E2BIG);
	free(in);
	free(enc);
}

Test(compress, bad_arguments)
{
	uint8_t *in = text(K128 + 1, 1), out[64];
	char err[64];
	cr_assert_eq(ref_compress(REF_COMPRESS_NONE, 0, in, 100, out, sizeof out, SS), -EINVAL);
	cr_assert_eq(ref_compress(7, 0, in, 100, out, sizeof out, SS), -EINVAL);
	cr_assert_eq(ref_compress(REF_COMPRESS_ZSTD, 0, in, 0, out, sizeof out, SS), -EINVAL);
	cr_assert_eq(ref_compress(REF_COMPRESS_ZSTD, 0, in, K128 + 1, out, sizeof out, SS), -EINVAL);
	cr_assert_eq(ref_compress(REF_COMPRESS_ZSTD, 0, in, 8192, out, sizeof out, 3000), -EINVAL);
	cr_assert_eq(ref_compress_inline(REF_COMPRESS_LZO, 0, in, SS + 1, out, sizeof out, SS),
		     -EINVAL);
	/* a win that does not fit in out_cap */
	cr_assert_eq(ref_compress(REF_COMPRESS_ZLIB, 0, in, K128, out, sizeof out, SS), -ENOSPC);
	cr_assert_eq(ref_decompress(4, in, 100, out, sizeof out, SS, err, sizeof err), -EINVAL);
	cr_assert_eq(ref_decompress(REF_COMPRESS_ZLIB, in, 100, out, sizeof out, 4095, err,
				    sizeof err),
		     -EINVAL);
	cr_assert_eq(ref_decompress_inline(9, in, 100, out, sizeof out, SS, err, sizeof err),
		     -EINVAL);
	/* NONE is a plain copy */
	cr_assert_eq(ref_decompress(REF_COMPRESS_NONE, in, 10, out, sizeof out, SS, err, sizeof err),
		     10);
	cr_assert(!memcmp(out, in, 10));
	cr_assert_str_eq(ref_compress_name(REF_COMPRESS_LZO), "lzo");
	cr_assert_str_eq(ref_compress_name(REF_COMPRESS_ZSTD), "zstd");
	cr_assert_str_eq(ref_compress_name(REF_COMPRESS_ZLIB), "zlib");
	cr_assert_str_eq(ref_compress_name(REF_COMPRESS_NONE), "none");
	cr_assert_str_eq(ref_compress_name(4), "unknown");
	free(in);
}

/* ---- layouts ---------------------------------------------------------------------- */

/* Walk a ref_compress lzo extent: total, one segment per sector of input,
 * headers inside sectors, zero pads, payloads that stock liblzo2 decodes to
 * exactly that sector.  Returns the number of pads seen. */
static unsigned check_lzo_layout(const uint8_t *enc, size_t c, const uint8_t *in, size_t n,
				 uint32_t ss)
{
	cr_assert_eq(le32(enc), c, "total length field %u != size %zu", le32(enc), c);
	size_t cur = 4, done = 0;
	unsigned segs = 0, pads = 0;
	uint8_t *buf = malloc(ss);
	while (cur < c) {
		cr_assert_eq(cur / ss, (cur + 3) / ss, "segment header at %zu straddles", cur);
		uint32_t sl = le32(enc + cur);
		cur += 4;
		cr_assert_leq(cur + sl, c);
		lzo_uint dl = ss;
		cr_assert_eq(lzo1x_decompress_safe(enc + cur, sl, buf, &dl, NULL), LZO_E_OK);
		size_t want = n - done < ss ? n - done : ss;
		cr_assert_eq(dl, want, "segment %u decodes to %lu, want %zu", segs,
			     (unsigned long)dl, want);
		cr_assert(!memcmp(buf, in + done, want));
		done += want;
		cur += sl;
		segs++;
		size_t left = rup(cur, ss) - cur;
		if (left && left < 4) {
			for (size_t i = 0; i < left; i++)
				cr_assert_eq(enc[cur + i], 0, "pad byte not zero");
			cur += left;
			pads++;
		}
	}
	cr_assert_eq(cur, c);
	cr_assert_eq(done, n);
	cr_assert_eq(segs, (n + ss - 1) / ss);
	free(buf);
	return pads;
}

Test(compress, lzo_layout)
{
	const uint32_t sss[] = { 4096, 65536 };
	for (size_t k = 0; k < 2; k++) {
		uint8_t *in = text(K128, 11), *enc = malloc(CAP);
		ssize_t c = ref_compress(REF_COMPRESS_LZO, 0, in, K128, enc, CAP, sss[k]);
		cr_assert(c > 0);
		check_lzo_layout(enc, (size_t)c, in, K128, sss[k]);
		c = ref_compress(REF_COMPRESS_LZO, 0, in, 5 * 4096 + 17, enc, CAP, sss[k]);
		if (sss[k] == 4096) {
			cr_assert(c > 0);
			check_lzo_layout(enc, (size_t)c, in, 5 * 4096 + 17, sss[k]);
		}
		free(in);
		free(enc);
	}
}

/* Inputs whose first segment ends 3, 2 and 1 bytes before the sector's end:
 * text then r random bytes in sector 0 (lzo1x_1 keeps the random tail as
 * literals, so the segment grows by about one byte per random byte). */
Test(compress, lzo_encoder_pads_at_sector_end)
{
	uint8_t *in = malloc(16384), *enc = malloc(CAP);
	bool seen[4] = { false };
	for (size_t k = 0; k < 16 * 297 && !(seen[1] && seen[2] && seen[3]); k++) {
		size_t r = 3800 + k % 297; /* up to 4096 */
		fill_text(in, 16384, 77 + k / 297);
		fill_random(in + 4096 - r, r, k);
		ssize_t c = ref_compress(REF_COMPRESS_LZO, 0, in, 16384, enc, CAP, SS);
		if (c < 0)
			continue;
		size_t end = 8 + le32(enc + 4), left = rup(end, SS) - end;
		if (end >= SS || left >= 4)
			continue;
		cr_assert_eq(check_lzo_layout(enc, (size_t)c, in, 16384, SS) >= 1, true);
		if (left) {
			/* the next header sits at the sector start */
			cr_assert_eq(le32(enc) > SS, true);
			cr_assert_gt(le32(enc + SS), 0);
		}
		expect_decodes(REF_COMPRESS_LZO, enc, rup((size_t)c, SS), in, 16384, SS, false);
		seen[left] = true;
	}
	cr_assert(seen[1] && seen[2] && seen[3], "pads of 1/2/3 bytes seen: %d %d %d", seen[1],
		  seen[2], seen[3]);
	free(in);
	free(enc);
}

/* Hand-built layouts put segment ends anywhere: 0..4 bytes before a sector
 * end (pads only for 1..3), at 4 KiB and 64 KiB sectors; pad bytes are not
 * checked (the kernel skips them), so 0xAA pads decode too. */
Test(compress, lzo_decoder_padding_positions)
{
	const uint32_t sss[] = { 4096, 65536 };
	for (size_t k = 0; k < 2; k++) {
		uint32_t ss = sss[k];
		for (size_t left = 0; left <= 5; left++) {
			for (int padv = 0; padv < 2; padv++) {
				/* segment 0 ends `left` bytes before the sector end */
				size_t L0;
				uint8_t *lit = malloc(2 * ss), *s0 = malloc(2 * ss), *s1 = malloc(2 * ss);
				fill_random(lit, 2 * ss, left + ss);
				size_t n0 = lzo_lit_exact(lit, ss - left - 8, s0, &L0);
				size_t n1 = lzo_literals(lit + L0, 1000, s1);
				struct seg segs[] = { { s0, n0 }, { s1, n1 } };
				uint8_t *enc = malloc(3 * ss);
				size_t c = build_lzo(segs, 2, ss, padv ? 0xAA : 0, enc);
				size_t hdr1 = 4 + 4 + n0 + (left && left < 4 ? left : 0);
				cr_assert_eq(le32(enc + hdr1), n1);
				expect_decodes(REF_COMPRESS_LZO, enc, c, lit, L0 + 1000, ss, false);
				free(lit);
				free(s0);
				free(s1);
				free(enc);
			}
		}
	}
}

/* A header written across the sector boundary (no pad) is misread. */
Test(compress, lzo_straddling_header_rejected)
{
	uint8_t lit[4096], s0[4200], s1[64], enc[8192];
	fill_random(lit, sizeof lit, 1);
	size_t L0, n0 = lzo_lit_exact(lit, 4086, s0, &L0); /* 4 + 4 + n0 = 4094 */
	size_t n1 = lzo_literals(lit, 20, s1);
	size_t cur = 4;
	put32(enc + cur, (uint32_t)n0);
	memcpy(enc + cur + 4, s0, n0);
	cur += 4 + n0; /* 2 bytes left in the sector: header written across */
	cr_assert_eq(4096 - cur % 4096, 2u);
	put32(enc + cur, (uint32_t)n1);
	memcpy(enc + cur + 4, s1, n1);
	cur += 4 + n1;
	put32(enc, (uint32_t)cur);
	expect_eio(REF_COMPRESS_LZO, enc, cur, 4096, SS, false, "straddling header");
}

Test(compress, zlib_and_zstd_format)
{
	uint8_t *in = text(K128, 21), *enc = malloc(CAP);
	const struct { int level; uint8_t h1; } hz[] = { { 1, 0x01 }, { 3, 0x5e }, { 0, 0x5e },
							{ 6, 0x9c }, { 9, 0xda } };
	for (size_t i = 0; i < 5; i++) {
		ssize_t c = ref_compress(REF_COMPRESS_ZLIB, hz[i].level, in, K128, enc, CAP, SS);
		cr_assert(c > 0);
		cr_assert_eq(enc[0], 0x78);
		cr_assert_eq(enc[1], hz[i].h1, "level %d header %02x", hz[i].level, enc[1]);
		/* a complete zlib stream: stock inflate agrees, adler32 included */
		uint8_t *out = malloc(K128);
		uLongf ol = K128;
		cr_assert_eq(uncompress(out, &ol, enc, (uLong)c), Z_OK);
		cr_assert_eq(ol, K128);
		cr_assert(!memcmp(out, in, K128));
		free(out);
	}
	const size_t sizes[] = { 3000, 5000, 70000, K128 };
	for (size_t i = 0; i < 4; i++) {
		ssize_t c = sizes[i] < SS
				    ? ref_compress_inline(REF_COMPRESS_ZSTD, 0, in, sizes[i], enc, CAP, SS)
				    : ref_compress(REF_COMPRESS_ZSTD, 0, in, sizes[i], enc, CAP, SS);
		cr_assert(c > 0);
		ZSTD_frameHeader h;
		cr_assert_eq(ZSTD_getFrameHeader(&h, enc, (size_t)c), 0);
		cr_assert_eq(h.frameType, ZSTD_frame);
		cr_assert_eq(h.frameContentSize, sizes[i], "content size recorded");
		cr_assert_leq(h.windowSize, K128);
		cr_assert_eq(h.checksumFlag, 0);
		cr_assert_eq(h.dictID, 0);
		cr_assert_eq(ZSTD_findFrameCompressedSize(enc, (size_t)c), (size_t)c, "one frame");
	}
	free(in);
	free(enc);
}

/* The kernel syncs zlib at every 4 KiB of input: the empty stored block
 * 00 00 ff ff appears once per input page (plus the final block). */
Test(compress, zlib_sync_flush_per_page)
{
	uint8_t *in = malloc(5 * 4096), *enc = malloc(CAP);
	memset(in, 'a', 5 * 4096);
	ssize_t c = ref_compress(REF_COMPRESS_ZLIB, 0, in, 5 * 4096, enc, CAP, SS);
	cr_assert(c > 0);
	unsigned marks = 0;
	for (ssize_t i = 0; i + 4 <= c; i++)
		if (!memcmp(enc + i, "\x00\x00\xff\xff", 4))
			marks++;
	cr_assert_eq(marks, 5, "sync markers %u", marks);
	free(in);
	free(enc);
}

/* ---- partial decodes --------------------------------------------------------------- */

Test(compress, partial_decode)
{
	uint8_t *in = text(K128, 31), *enc = malloc(CAP), *out = malloc(CAP);
	const size_t lens[] = { 1, 100, 4096, 5000, 65537, K128 - 1 };
	for (size_t t = 0; t < 3; t++) {
		ssize_t c = ref_compress(codecs[t], 0, in, K128, enc, CAP, SS);
		cr_assert(c > 0);
		for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
			ssize_t r = dec(codecs[t], enc, (size_t)c, out, lens[i], SS, false, NULL);
			cr_assert_eq(r, (ssize_t)lens[i], "%s out_len %zu: %zd",
				     ref_compress_name(codecs[t]), lens[i], r);
			cr_assert(!memcmp(out, in, lens[i]));
		}
		/* more room than data: the data's length */
		ssize_t r = dec(codecs[t], enc, (size_t)c, out, K128 + 5000, SS, false, NULL);
		cr_assert_eq(r, (ssize_t)K128);
		cr_assert(!memcmp(out, in, K128));
		/* partial decode stops early: a corrupt tail is not seen (zstd
		 * decodes whole blocks: one 128 KiB block here) */
		if (codecs[t] == REF_COMPRESS_ZSTD)
			continue;
		size_t cut = (size_t)c - 8;
		uint8_t *bad = dup_exact(enc, (size_t)c);
		memset(bad + cut, 0xEE, 8);
		r = dec(codecs[t], bad, (size_t)c, out, 100, SS, false, NULL);
		cr_assert_eq(r, 100);
		free(bad);
	}
	free(in);
	free(enc);
	free(out);
}

/* Inline rules: all of ram_bytes must come out, one sector at most. */
Test(compress, inline_rules)
{
	uint8_t *in = text(8000, 41), *enc = malloc(CAP);
	for (size_t t = 0; t < 3; t++) {
		ssize_t c = ref_compress_inline(codecs[t], 0, in, 3000, enc, CAP, SS);
		cr_assert(c > 0 && c < 3000);
		if (codecs[t] == REF_COMPRESS_LZO) {
			cr_assert_eq(le32(enc), (uint32_t)c);
			cr_assert_eq(le32(enc + 4), (uint32_t)c - 8, "one segment");
		}
		expect_decodes(codecs[t], enc, (size_t)c, in, 3000, SS, true);
		/* ram_bytes beyond the data */
		expect_eio(codecs[t], enc, (size_t)c, 3001, SS, true, "inline short");
		/* the regular decoder just reports the shorter length */
		cr_assert_eq(dec(codecs[t], enc, (size_t)c, NULL, 3001, SS, false, NULL), 3000);
		/* ram_bytes over a sector */
		expect_eio(codecs[t], enc, (size_t)c, SS + 1, SS, true, "inline over sector");
	}
	/* zlib / zstd data of more than a sector: inline zlib must end within it */
	size_t n = stock_zlib(in, 8000, enc, CAP);
	expect_eio(REF_COMPRESS_ZLIB, enc, n, 3000, SS, true, "inline zlib > sector");
	cr_assert_eq(dec(REF_COMPRESS_ZLIB, enc, n, NULL, 3000, SS, false, NULL), 3000);
	/* two lzo segments are fine for a regular extent, not inline */
	uint8_t s0[300], s1[300], lz[1024];
	size_t n0 = lzo_literals(in, 200, s0), n1 = lzo_literals(in + 200, 100, s1);
	struct seg segs[] = { { s0, n0 }, { s1, n1 } };
	size_t c2 = build_lzo(segs, 2, SS, 0, lz);
	expect_decodes(REF_COMPRESS_LZO, lz, c2, in, 300, SS, false);
	expect_eio(REF_COMPRESS_LZO, lz, c2, 300, SS, true, "inline two segments");
	/* inline total length must equal the item size */
	c2 = build_lzo(segs, 1, SS, 0, lz);
	expect_decodes(REF_COMPRESS_LZO, lz, c2, in, 200, SS, true);
	expect_eio(REF_COMPRESS_LZO, lz, c2 + 1, 200, SS, true, "inline item longer than total");
	put32(lz, (uint32_t)c2 - 1); /* total short by one, segment length intact */
	expect_eio(REF_COMPRESS_LZO, lz, c2, 200, SS, true, "inline total != item size");
	free(in);
	free(enc);
}

/* ---- malformed input ---------------------------------------------------------------- */

Test(compress, zlib_malformed)
{
	uint8_t *in = text(K128, 51), *enc = malloc(CAP);
	ssize_t c = ref_compress(REF_COMPRESS_ZLIB, 0, in, K128, enc, CAP, SS);
	cr_assert(c > 0);
	/* truncated anywhere before the deflate data ends */
	const size_t cuts[] = { 0, 1, 2, 3, 100, (size_t)c / 2, (size_t)c - 200 };
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
		expect_eio(REF_COMPRESS_ZLIB, enc, cuts[i], K128, SS, false, "truncated");
	/* cut inside the final empty blocks: all the data is out, as in the kernel
	 * (it stops once the extent's pages are full) */
	expect_decodes(REF_COMPRESS_ZLIB, enc, (size_t)c - 7, in, K128, SS, false);
	expect_eio(REF_COMPRESS_ZLIB, enc, (size_t)c - 7, K128 + 1, SS, false, "no stream end");
	/* the adler32 trailer is neither needed nor checked (as the kernel) */
	expect_decodes(REF_COMPRESS_ZLIB, enc, (size_t)c - 4, in, K128, SS, false);
	uint8_t *bad = dup_exact(enc, (size_t)c);
	bad[c - 1] ^= 0xff;
	expect_decodes(REF_COMPRESS_ZLIB, bad, (size_t)c, in, K128, SS, false);
	/* headers: bad FCHECK, preset dictionary, bad method, window field 8 */
	const uint8_t hdrs[][2] = { { 0x78, 0x5f }, { 0x78, 0xbb }, { 0x79, 0x18 }, { 0x88, 0x1c } };
	for (size_t i = 0; i < 4; i++) {
		cr_assert_eq((hdrs[i][0] << 8 | hdrs[i][1]) % 31 == 0, i != 0);
		memcpy(bad, enc, (size_t)c);
		bad[0] = hdrs[i][0];
		bad[1] = hdrs[i][1];
		expect_eio(REF_COMPRESS_ZLIB, bad, (size_t)c, K128, SS, false, "bad header");
	}
	/* garbage after a good header, and plain garbage */
	memcpy(bad, enc, (size_t)c);
	fill_random(bad + 2, 64, 3);
	bad[2] |= 0x06; /* block type 3: reserved */
	expect_eio(REF_COMPRESS_ZLIB, bad, (size_t)c, K128, SS, false, "reserved block type");
	fill_random(bad, (size_t)c, 99);
	expect_eio(REF_COMPRESS_ZLIB, bad, (size_t)c, K128, SS, false, "garbage");
	free(bad);
	free(in);
	free(enc);
}

Test(compress, lzo_malformed)
{
	uint8_t *in = text(K128, 61), *enc = calloc(1, CAP), *bad = calloc(1, CAP);
	ssize_t cc = ref_compress(REF_COMPRESS_LZO, 0, in, K128, enc, CAP, SS);
	cr_assert(cc > 0);
	size_t c = (size_t)cc, disk = rup(c, SS);
	memset(enc + c, 0, disk - c);
	const unsigned L = REF_COMPRESS_LZO;

	/* shorter than the header; truncated extents (total beyond the input) */
	expect_eio(L, enc, 0, K128, SS, false, "empty");
	expect_eio(L, enc, 3, K128, SS, false, "3 bytes");
	expect_eio(L, enc, c - 1, K128, SS, false, "cut by one");
	expect_eio(L, enc, c / 2, K128, SS, false, "cut in half");
	/* total larger than the input, or than 128 KiB */
	memcpy(bad, enc, disk);
	put32(bad, (uint32_t)disk + 1);
	expect_eio(L, bad, disk, K128, SS, false, "total > input");
	put32(bad, 200000);
	expect_eio(L, bad, CAP, K128, SS, false, "total > 128K");
	/* total that leaves whole sectors of the extent unused */
	expect_eio(L, enc, disk + SS, K128, SS, false, "unused sector");
	/* total too small to hold a segment */
	put32(bad, 5);
	expect_eio(L, bad, disk, K128, SS, false, "total 5");
	/* segment length past the end of the data */
	memcpy(bad, enc, disk);
	put32(bad + 4, (uint32_t)c);
	expect_eio(L, bad, disk, K128, SS, false, "segment past end");
	/* segment length over lzo1x_worst_compress(sectorsize) */
	put32(bad + 4, 4420);
	expect_eio(L, bad, disk, K128, SS, false, "segment too large");
	/* zero-length and 1-byte segments */
	put32(bad + 4, 0);
	expect_eio(L, bad, disk, K128, SS, false, "zero-length segment");
	put32(bad + 4, 1);
	expect_eio(L, bad, disk, K128, SS, false, "1-byte segment");
	/* garbage payload */
	memcpy(bad, enc, disk);
	fill_random(bad + 8, le32(enc + 4), 7);
	expect_eio(L, bad, disk, K128, SS, false, "garbage payload");
	/* payload length one short / one long: stream not ending where it should */
	memcpy(bad, enc, disk);
	put32(bad + 4, le32(enc + 4) - 1);
	expect_eio(L, bad, disk, K128, SS, false, "payload one short");
	/* a one-segment extent (in_len == total): stray bytes after the segment
	 * that cannot hold a header, and a segment running past the total */
	{
		uint8_t sg[300], one[400];
		size_t sn = lzo_literals(in, 200, sg);
		struct seg sgs = { sg, sn };
		size_t on = build_lzo(&sgs, 1, SS, 0, one);
		memset(one + on, 0, 2);
		put32(one, (uint32_t)on + 2);
		/* (with out_len 200 decoding stops before them, as the kernel) */
		cr_assert_eq(dec(L, one, on + 2, NULL, 200, SS, false, NULL), 200);
		expect_eio(L, one, on + 2, 201, SS, false, "2 stray bytes in total");
		put32(one, (uint32_t)on);
		expect_decodes(L, one, on, in, 200, SS, true);
		put32(one + 4, (uint32_t)sn + 50);
		expect_eio(L, one, on, 200, SS, false, "segment past total");
	}
	/* all garbage */
	fill_random(bad, disk, 8);
	expect_eio(L, bad, disk, K128, SS, false, "garbage");

	/* out buffer too small: a segment decoding past lzo1x_worst_compress(ss)
	 * (4419 bytes at 4 KiB) fails; one decoding to 4200 (over a sector, within
	 * the kernel's buffer) is read by the regular decoder but not inline */
	uint8_t *lit = text(8192, 13), *seg = malloc(9000), wrk[LZO1X_1_MEM_COMPRESS];
	lzo_uint sl = 9000;
	cr_assert_eq(lzo_init(), LZO_E_OK);
	cr_assert_eq(lzo1x_1_compress(lit, 8192, seg, &sl, wrk), LZO_E_OK);
	cr_assert_lt(sl, 4419u);
	struct seg s = { seg, sl };
	size_t n = build_lzo(&s, 1, SS, 0, bad);
	expect_eio(L, bad, n, 8192, SS, false, "segment output > worst case");
	sl = 9000;
	cr_assert_eq(lzo1x_1_compress(lit, 4200, seg, &sl, wrk), LZO_E_OK);
	s.len = sl;
	n = build_lzo(&s, 1, SS, 0, bad);
	expect_decodes(L, bad, n, lit, 4200, SS, false);
	expect_eio(L, bad, n, 4096, SS, true, "inline segment output > sector");

	free(lit);
	free(seg);
	free(in);
	free(enc);
	free(bad);
}

Test(compress, zstd_malformed)
{
	uint8_t *in = text(K128, 71), *enc = malloc(CAP), *bad = malloc(CAP);
	ssize_t cc = ref_compress(REF_COMPRESS_ZSTD, 0, in, K128, enc, CAP, SS);
	cr_assert(cc > 0);
	size_t c = (size_t)cc;
	const unsigned Z = REF_COMPRESS_ZSTD;
	const size_t cuts[] = { 0, 1, 4, 5, 9, c / 3, c - 1 };
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
		expect_eio(Z, enc, cuts[i], K128, SS, false, "truncated");
	/* bad magic, garbage */
	memcpy(bad, enc, c);
	bad[0] ^= 1;
	expect_eio(Z, bad, c, K128, SS, false, "bad magic");
	fill_random(bad, c, 5);
	expect_eio(Z, bad, c, K128, SS, false, "garbage");
	/* a corrupted block */
	memcpy(bad, enc, c);
	fill_random(bad + c / 2, 32, 6);
	expect_eio(Z, bad, c, K128, SS, false, "corrupt block");
	/* trailing bytes after the frame are ignored (disk padding) */
	memcpy(bad, enc, c);
	fill_random(bad + c, 100, 7);
	expect_decodes(Z, bad, c + 100, in, K128, SS, false);
	free(in);
	free(enc);
	free(bad);
}

/* Frames the kernel's writer never makes: no content size, a checksum; and a
 * window over 128 KiB, which the kernel's reader refuses. */
Test(compress, zstd_frame_variants)
{
	const size_t n = 300 * 1024;
	uint8_t *in = text(n, 81), *enc = malloc(n + 1024);
	for (int variant = 0; variant < 3; variant++) {
		ZSTD_CCtx *c = ZSTD_createCCtx();
		cr_assert_not_null(c);
		int wlog = variant == 2 ? 20 : 17;
		cr_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, wlog)));
		cr_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, variant == 1)));
		/* streamed without a pledged size: no content size in the header */
		ZSTD_outBuffer ob = { enc, n + 1024, 0 };
		size_t len = variant == 2 ? n : K128;
		for (size_t off = 0; off < len; off += 4096) {
			ZSTD_inBuffer ib = { in + off, len - off < 4096 ? len - off : 4096, 0 };
			cr_assert(!ZSTD_isError(ZSTD_compressStream2(c, &ob, &ib, ZSTD_e_continue)));
			cr_assert_eq(ib.pos, ib.size);
		}
		ZSTD_inBuffer none = { NULL, 0, 0 };
		cr_assert_eq(ZSTD_compressStream2(c, &ob, &none, ZSTD_e_end), 0);
		ZSTD_freeCCtx(c);
		ZSTD_frameHeader h;
		cr_assert_eq(ZSTD_getFrameHeader(&h, enc, ob.pos), 0);
		cr_assert_eq(h.frameContentSize, ZSTD_CONTENTSIZE_UNKNOWN);
		if (variant == 2) {
			cr_assert_gt(h.windowSize, K128);
			expect_eio(REF_COMPRESS_ZSTD, enc, ob.pos, len, SS, false, "window > 128K");
			continue;
		}
		expect_decodes(REF_COMPRESS_ZSTD, enc, ob.pos, in, len, SS, false);
		if (variant == 1) { /* checksum present and checked */
			cr_assert_eq(h.checksumFlag, 1);
			uint8_t *bad = dup_exact(enc, ob.pos);
			bad[ob.pos - 1] ^= 0x40;
			expect_eio(REF_COMPRESS_ZSTD, bad, ob.pos, len, SS, false, "bad checksum");
			free(bad);
		}
	}
	free(in);
	free(enc);
}

/* Random damage to good extents of every type: -EIO with a message, or a
 * length within out_len; never a crash or an overrun (ASan). */
Test(compress, mutations_never_crash)
{
	uint8_t *in = text(K128, 91), *enc = malloc(CAP), *m = malloc(CAP);
	uint64_t s = 12345;
	unsigned eio = 0, ok = 0;
	for (size_t t = 0; t < 3; t++) {
		const size_t sizes[] = { K128, 3 * 4096 + 100 };
		for (size_t z = 0; z < 2; z++) {
			ssize_t c = ref_compress(codecs[t], 0, in, sizes[z], enc, CAP, SS);
			cr_assert(c > 0);
			size_t disk = rup((size_t)c, SS);
			memset(enc + c, 0, disk - (size_t)c);
			for (int iter = 0; iter < 300; iter++) {
				memcpy(m, enc, disk);
				size_t len = disk;
				int kind = (int)(rng_next(&s) % 4);
				if (kind == 0) { /* flip a few bytes */
					for (int k = 0; k < 4; k++)
						m[rng_next(&s) % len] ^= (uint8_t)(1 + rng_next(&s) % 255);
				} else if (kind == 1) { /* truncate */
					len = rng_next(&s) % len;
				} else if (kind == 2) { /* damage a length field (lzo) or header */
					size_t at = codecs[t] == REF_COMPRESS_LZO ? 4 : 0;
					put32(m + at, (uint32_t)rng_next(&s));
				} else { /* overwrite a run */
					size_t at = rng_next(&s) % len, k = rng_next(&s) % 64;
					for (size_t i = at; i < at + k && i < len; i++)
						m[i] = (uint8_t)rng_next(&s);
				}
				size_t out_len = 1 + rng_next(&s) % (sizes[z] + 100);
				char msg[256];
				bool inl = rng_next(&s) % 8 == 0;
				if (inl && out_len > SS)
					out_len = SS;
				ssize_t r = dec(codecs[t], m, len, NULL, out_len, SS, inl, msg);
				cr_assert(r == -EIO || (r >= 0 && (size_t)r <= out_len),
					  "%s: result %zd", ref_compress_name(codecs[t]), r);
				if (r == -EIO) {
					cr_assert(msg[0] && strcmp(msg, "unset"));
					eio++;
				} else {
					ok++;
				}
			}
		}
	}
	cr_assert_gt(eio, 500u, "damage must be detected (%u -EIO, %u ok)", eio, ok);
	free(in);
	free(enc);
	free(m);
}
