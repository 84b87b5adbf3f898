/*
 * cli.h - what the subcommands of the btrsim command share: the command table
 * entry, usage and failure reporting, and argument parsing.
 *
 * Exit codes, as btrfs-progs and fstests expect: 0 success, 1 a failed
 * operation (one line on stderr saying why), 2 bad usage (usage on stderr).
 */
#ifndef BTRSIM_CLI_H
#define BTRSIM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

struct cli_cmd {
	const char *name;
	const char *summary; /* one line, for `btrsim --help` */
	const char *usage;   /* the whole usage text, for `btrsim help NAME` */
	int (*run)(int argc, char **argv);
};

extern const struct cli_cmd cli_cmd_demo;
extern const struct cli_cmd cli_cmd_dump_super;
extern const struct cli_cmd cli_cmd_dump_tree;
extern const struct cli_cmd cli_cmd_ls;
extern const struct cli_cmd cli_cmd_cp;
extern const struct cli_cmd cli_cmd_clone;
extern const struct cli_cmd cli_cmd_dedupe;
extern const struct cli_cmd cli_cmd_cat;
extern const struct cli_cmd cli_cmd_stat;
extern const struct cli_cmd cli_cmd_du;
extern const struct cli_cmd cli_cmd_filefrag;
extern const struct cli_cmd cli_cmd_extract;
extern const struct cli_cmd cli_cmd_manifest;
extern const struct cli_cmd cli_cmd_check;
extern const struct cli_cmd cli_cmd_scrub;
extern const struct cli_cmd cli_cmd_device;
extern const struct cli_cmd cli_cmd_balance;
extern const struct cli_cmd cli_cmd_map;
extern const struct cli_cmd cli_cmd_mount;
extern const struct cli_cmd cli_cmd_merge;
extern const struct cli_cmd cli_cmd_record;
extern const struct cli_cmd cli_cmd_mkfs;
extern const struct cli_cmd cli_cmd_mkdir;
extern const struct cli_cmd cli_cmd_mknod;
extern const struct cli_cmd cli_cmd_rm;
extern const struct cli_cmd cli_cmd_mv;
extern const struct cli_cmd cli_cmd_ln;
extern const struct cli_cmd cli_cmd_truncate;
extern const struct cli_cmd cli_cmd_write;
extern const struct cli_cmd cli_cmd_put;
extern const struct cli_cmd cli_cmd_subvolume;
extern const struct cli_cmd cli_cmd_qgroup;
extern const struct cli_cmd cli_cmd_property;
extern const struct cli_cmd cli_cmd_lsattr;
extern const struct cli_cmd cli_cmd_chattr;
extern const struct cli_cmd cli_cmd_filesystem;
extern const struct cli_cmd cli_cmd_receive;
extern const struct cli_cmd cli_cmd_send;
extern const struct cli_cmd cli_cmd_run;
extern const struct cli_cmd cli_cmd_gen;
extern const struct cli_cmd cli_cmd_explore;
extern const struct cli_cmd cli_cmd_kernel_disks;
/* The trace database the reading commands use without --db (make run's). */
#define CLI_DEFAULT_DB "traces/btrsim.db"

extern const struct cli_cmd cli_cmd_runs;
extern const struct cli_cmd cli_cmd_campaign;
extern const struct cli_cmd cli_cmd_raid_campaign;
extern const struct cli_cmd cli_cmd_replay;
extern const struct cli_cmd cli_cmd_violations;
extern const struct cli_cmd cli_cmd_findings;
extern const struct cli_cmd cli_cmd_report;

/* A NUL-terminated copy of a name that is not (names in tree items are not). */
char *cli_name_dup(const char *name, size_t len);

/* "drwxr-xr-x" for a mode. */
void cli_mode_string(uint32_t mode, char out[11]);

/* Prints "btrsim NAME: <message>" and the command's usage to stderr; returns 2. */
int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prints "btrsim NAME: <message>" to stderr; returns 1. */
int cli_fail(const struct cli_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prints the usage of cmd to stdout (for --help); returns 0. */
int cli_help(const struct cli_cmd *cmd);
/* The run's seed, "seed N" on stdout, flushed at once: a run killed later
 * (stdout a file, fully buffered) still leaves the line that reruns it. */
void cli_print_seed(uint64_t seed);
/* Where a long command draws its progress line: stderr when it is a terminal,
 * or whenever BTRSIM_PROGRESS=1; never with quiet or BTRSIM_PROGRESS=0 (as
 * mk/progress.sh decides for the scripts); else NULL. */
FILE *cli_progress_stream(bool quiet);
/* The build, as the trace store records it with each run: "vVERSION ID MODE",
 * and " mutant NAME" in a deliberately broken build (ref_mutant). */
const char *cli_build_string(void);
/* The command line as one string, words joined by spaces, for the trace
 * store's campaign rows (malloc'd; NULL when out of memory). */
char *cli_args_text(int argc, char **argv);

/* A non-negative integer, decimal or 0x hex, with an optional K, M, G or T
 * suffix (powers of 1024) when `sizes` is set.  Returns 0 or -1. */
int cli_parse_u64(const char *s, uint64_t *out, int sizes);
/* A row id of the trace store: 1 to INT64_MAX.  0 or -1. */
int cli_parse_id(const char *s, int64_t *out);

#endif
