/*
 * manifest.h - the host side of `btrsim manifest` (the format and the image
 * side are traces/manifest.h).
 */
#ifndef BTRSIM_CLI_MANIFEST_H
#define BTRSIM_CLI_MANIFEST_H

#include "cli/cli.h"
#include "traces/manifest.h"

/* The host walker: fills m from directory DIR; 0, or the exit status after
 * printing why (1). */
int mf_walk_host(const struct cli_cmd *cmd, struct manifest *m, const char *dir);

#endif
