/*
 * main.c - the btrsim command: global options and dispatch to the subcommands,
 * in the style of btrfs-progs (`btrsim --help`, `btrsim help CMD`).
 */
#include "cli/cli.h"
#include "ref/ref.h"
#include "version.h"

#include <stdio.h>
#include <string.h>

static const struct cli_cmd *const commands[] = {
	&cli_cmd_mkfs,
	&cli_cmd_mkdir,
	&cli_cmd_mknod,
	&cli_cmd_rm,
	&cli_cmd_mv,
	&cli_cmd_ln,
	&cli_cmd_truncate,
	&cli_cmd_write,
	&cli_cmd_cp,
	&cli_cmd_clone,
	&cli_cmd_dedupe,
	&cli_cmd_put,
	&cli_cmd_subvolume,
	&cli_cmd_qgroup,
	&cli_cmd_property,
	&cli_cmd_lsattr,
	&cli_cmd_chattr,
	&cli_cmd_filesystem,
	&cli_cmd_send,
	&cli_cmd_receive,
	&cli_cmd_run,
	&cli_cmd_gen,
	&cli_cmd_explore,
	&cli_cmd_campaign,
	&cli_cmd_kernel_disks,
	&cli_cmd_raid_campaign,
	&cli_cmd_runs,
	&cli_cmd_merge,
	&cli_cmd_replay,
	&cli_cmd_violations,
	&cli_cmd_findings,
	&cli_cmd_report,
	&cli_cmd_dump_super,
	&cli_cmd_dump_tree,
	&cli_cmd_ls,
	&cli_cmd_cat,
	&cli_cmd_stat,
	&cli_cmd_du,
	&cli_cmd_filefrag,
	&cli_cmd_extract,
	&cli_cmd_manifest,
	&cli_cmd_check,
	&cli_cmd_scrub,
	&cli_cmd_device,
	&cli_cmd_balance,
	&cli_cmd_map,
	&cli_cmd_mount,
	&cli_cmd_record,
	&cli_cmd_demo,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	fprintf(out, "usage: btrsim [--help] [--version] <command> [<args>]\n\n"
		     "A reference Btrfs on a simulated multi-disk block layer, with power-loss,\n"
		     "fault injection and crash-consistency testing.\n\nCommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-12s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(out, "  %-12s %s\n", "help", "show the usage of a command");
	fprintf(out, "  %-12s %s\n", "version", "show the version");
	fprintf(out, "\nRun 'btrsim help <command>' for a command's options.\n");
}

static const struct cli_cmd *find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

static int version(void)
{
	const char *m = ref_mutant();
	printf("btrsim v%s (%s, %s build%s%s%s)\n", BTRSIM_VERSION, BTRSIM_BUILD_ID, BTRSIM_BUILD_MODE,
	       m ? ", MUTANT " : "", m ? m : "", m ? ": ref broken on purpose, for make mutants" : "");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *a = argv[1];
	if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(a, "--version") || !strcmp(a, "version")) {
		if (argc > 2) {
			fprintf(stderr, "btrsim version: takes no arguments\n");
			return 2;
		}
		return version();
	}
	if (!strcmp(a, "help")) {
		if (argc == 2) {
			usage(stdout);
			return 0;
		}
		const struct cli_cmd *c = argc == 3 ? find(argv[2]) : NULL;
		if (!c) {
			fprintf(stderr, "btrsim help: %s\n\n",
				argc == 3 ? "unknown command" : "takes one command name");
			usage(stderr);
			return 2;
		}
		return cli_help(c);
	}
	const struct cli_cmd *c = find(a);
	if (!c) {
		fprintf(stderr, "btrsim: unknown %s '%s'\n\n", a[0] == '-' ? "option" : "command", a);
		usage(stderr);
		return 2;
	}
	return c->run(argc - 1, argv + 1);
}
