/*
 * sha256.h - SHA-256 for the content digests of the manifest and the
 * oracle's model: OpenSSL's, which uses the CPU's SHA extensions where it
 * has them.  (libsodium's portable one took 60% of a crash exploration's
 * time, every crash state's files being hashed.)  The low-level calls keep
 * the state on the stack, with nothing to free on an error path; OpenSSL 3
 * marks them deprecated in favour of EVP, which allocates.
 */
#ifndef BTRSIM_TRACES_SHA256_H
#define BTRSIM_TRACES_SHA256_H

#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <stddef.h>

#define DG_SHA256_BYTES SHA256_DIGEST_LENGTH

typedef SHA256_CTX dg_sha256;

static inline void dg_sha256_init(dg_sha256 *s)
{
	SHA256_Init(s);
}

static inline void dg_sha256_update(dg_sha256 *s, const void *p, size_t n)
{
	SHA256_Update(s, p, n);
}

static inline void dg_sha256_final(dg_sha256 *s, unsigned char out[DG_SHA256_BYTES])
{
	SHA256_Final(out, s);
}

#endif
