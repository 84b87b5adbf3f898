/*
 * bench_compress.c - `bench-compress write [MIB]`: compressed write
 * throughput per algorithm (zlib, lzo, zstd at their default levels) against
 * compressing the same bytes in memory with the same library, level and
 * pieces (ref_compress over 128 KiB pieces: the bound no write path can
 * pass); goal at least 0.7x (issue 21).  `bench-compress corpus FILE [MIB]`
 * writes the corpus, for bench_compress.sh's size comparison with the kernel.
 *
 * The corpus: text of a few hundred words with numbers, about 3:1 under
 * zstd, deterministic.
 */
#include "bench/benchutil.h"
#include "ref/compress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIECE REF_COMPRESS_MAX_RAM
#define CALL MIB

static uint8_t *corpus(size_t len)
{
	static const char *const words[] = {
		"extent", "tree", "block", "commit", "checksum", "snapshot", "balance", "device",
		"chunk", "stripe", "inode", "directory", "subvolume", "quota", "scrub", "log",
		"replay", "relocation", "superblock", "generation", "transaction", "reference",
		"allocation", "compression", "defragment", "metadata", "data", "mirror", "parity",
		"leaf", "node", "key", "item", "offset", "length", "the", "a", "of", "to", "and",
		"in", "is", "for", "that", "with", "on", "as", "it", "by", "from",
	};
	uint8_t *b = malloc(len);
	if (!b)
		bench_die("corpus", "out of memory");
	uint64_t x = 88172645463325252u;
	size_t i = 0;
	while (i < len) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		char w[48];
		int n = (x >> 60) < 3 ? snprintf(w, sizeof(w), "%llu ", (unsigned long long)(x >> 40))
				      : snprintf(w, sizeof(w), "%s%s", words[(x >> 8) % 50],
						 (x & 31) == 0 ? ".\n" : " ");
		for (int j = 0; j < n && i < len; j++)
			b[i++] = (uint8_t)w[j];
	}
	return b;
}

static double in_memory(unsigned type, const uint8_t *data, size_t len, uint64_t *out_bytes)
{
	uint8_t *out = malloc(PIECE + 4096);
	double best = 1e30;
	for (int round = 0; round < 3; round++) {
		uint64_t total = 0;
		double t0 = bench_now();
		for (size_t off = 0; off < len; off += PIECE) {
			ssize_t n = ref_compress(type, 0, data + off, len - off < PIECE ? len - off : PIECE,
						 out, PIECE, 4096);
			total += n > 0 ? ((uint64_t)n + 4095) / 4096 * 4096 : PIECE;
		}
		double t = bench_now() - t0;
		if (t < best)
			best = t;
		*out_bytes = total;
	}
	free(out);
	return best;
}

static double on_ref(unsigned type, const uint8_t *data, size_t len, uint64_t *nbytes)
{
	double best = 1e30;
	for (int round = 0; round < 3; round++) {
		sim_volume *vol;
		ref_fs *fs = bench_fresh(&vol, 2 * len + 256 * MIB, 0);
		if (ref_umount(fs))
			bench_die("umount", "failed");
		struct ref_mount_opts mo = { .open = { .super_mirror = -1 }, .compress = (uint8_t)type };
		char err[256];
		if (ref_mount(vol, &mo, &fs, err, sizeof(err)))
			bench_die("mount", err);
		if (ref_create(fs, "/f", 0644))
			bench_die("create", ref_error(fs));
		double t0 = bench_now();
		for (size_t off = 0; off < len; off += CALL)
			if (ref_write(fs, "/f", data + off, len - off < CALL ? len - off : CALL, off) < 0)
				bench_die("write", ref_error(fs));
		if (ref_sync(fs))
			bench_die("commit", ref_error(fs));
		double t = bench_now() - t0;
		if (t < best)
			best = t;
		struct ref_stat st;
		if (ref_stat_path(fs, "/f", false, &st))
			bench_die("stat", ref_error(fs));
		*nbytes = st.nbytes;
		ref_umount(fs);
		sim_volume_close(vol);
	}
	return best;
}

int main(int argc, char **argv)
{
	bench_prog = "bench-compress";
	if (argc >= 3 && !strcmp(argv[1], "corpus")) {
		size_t mib = argc > 3 ? (size_t)atoi(argv[3]) : 64;
		uint8_t *b = corpus(mib * MIB);
		FILE *f = fopen(argv[2], "wb");
		if (!f || fwrite(b, 1, mib * MIB, f) != mib * MIB || fclose(f))
			bench_die(argv[2], "cannot write");
		free(b);
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "write")) {
		fprintf(stderr, "usage: bench-compress write [MIB] | corpus FILE [MIB]\n");
		return 2;
	}
	size_t mib = argc > 2 ? (size_t)atoi(argv[2]) : 128;
	size_t len = mib * MIB;
	uint8_t *data = corpus(len);
	printf("compressed writes: %zu MiB of text in 1 MiB calls, committed, against "
	       "ref_compress of the same 128 KiB pieces in memory (best of 3; goal >= 0.70)\n",
	       mib);
	static const unsigned types[] = { REF_COMPRESS_ZLIB, REF_COMPRESS_LZO, REF_COMPRESS_ZSTD };
	for (int i = 0; i < 3; i++) {
		uint64_t mem_bytes, nbytes;
		double tm = in_memory(types[i], data, len, &mem_bytes);
		double tr = on_ref(types[i], data, len, &nbytes);
		printf("  %-5s ref %7.1f MB/s, in memory %7.1f MB/s: %.2fx; %.2f:1 (%llu bytes "
		       "of extents)\n",
		       ref_compress_name(types[i]), (double)len / tr / 1e6, (double)len / tm / 1e6,
		       tm / tr, (double)len / (double)mem_bytes, (unsigned long long)mem_bytes);
		(void)nbytes;
	}
	free(data);
	return 0;
}
