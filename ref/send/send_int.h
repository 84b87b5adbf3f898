/*
 * send_int.h - the stream writer shared by ref/send/ (ref/ only): commands
 * built attribute by attribute into one buffer, then written to the output
 * with their length and CRC32C (send.h gives the format).
 */
#ifndef BTRSIM_REF_SEND_INT_H
#define BTRSIM_REF_SEND_INT_H

#include "ref/send.h"

#include <stdio.h>

struct sw {
	FILE *out;
	uint32_t version;
	uint8_t *buf; /* the command being built: header, then attributes */
	size_t len, cap;
	uint64_t written; /* bytes of the stream so far */
	uint64_t commands;
	int err; /* the first failure (-errno), after which nothing is written */
};

/* Starts writing a stream of that version to out, with its header (magic,
 * version) unless !header; 0 or -errno. */
int sw_begin(struct sw *w, FILE *out, uint32_t version, bool header);
void sw_cmd(struct sw *w, uint16_t cmd);
void sw_attr(struct sw *w, uint16_t type, const void *v, size_t len);
void sw_u64(struct sw *w, uint16_t type, uint64_t v);
void sw_u32(struct sw *w, uint16_t type, uint32_t v);
void sw_str(struct sw *w, uint16_t type, const char *s);
void sw_time(struct sw *w, uint16_t type, const struct timespec *t);
/* DATA: with its length in a version 1 stream, the rest of the command after. */
void sw_data(struct sw *w, const void *d, size_t len);
/* The command's length and CRC32C filled in, the command written: 0 or -errno. */
int sw_end(struct sw *w);
void sw_free(struct sw *w);

#endif
