/*
 * hash.h - the IO log's payload checksum, XXH3-64 from libxxhash.  Where the
 * library ships its x86 run-time dispatcher (Debian's does), XXH3_64bits is
 * routed through it: the same value, computed with AVX2/AVX-512 when the CPU
 * has them, several times faster than the library's SSE2 default.
 */
#ifndef BTRSIM_SIM_HASH_H
#define BTRSIM_SIM_HASH_H

#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h> /* #defines XXH3_64bits as XXH3_64bits_dispatch */
#define BTRSIM_SIM_HASH_DISPATCH 1
#endif
#endif
#include <xxhash.h>

#endif
