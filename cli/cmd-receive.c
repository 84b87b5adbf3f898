/*
 * cmd-receive.c - `btrsim receive [-f FILE] [-e] IMG... DIR`: send streams
 * applied under DIR of the file system on the images (ref_receive), as
 * `btrfs receive` applies them to a mounted btrfs; and `btrsim receive
 * --dump`: a stream's commands printed as btrfs-progs 6.2's `btrfs receive
 * --dump` prints them, line for line, every command checked first.
 */
#include "cli/cli.h"
#include "cli/fsops.h"
#include "ref/send.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_text[] =
	"usage: btrsim receive [-f FILE] [-e] [-q] IMG... DIR\n"
	"       btrsim receive --dump [-f FILE]\n"
	"\n"
	"Read send streams (btrfs send, versions 1 to 3) from FILE or standard input\n"
	"and apply them under DIR (a directory of the file system on the images, the\n"
	"disks of one volume), as 'btrfs receive DIR' applies them to a mounted btrfs:\n"
	"each stream makes the subvolume DIR/NAME (a full stream a new one, an\n"
	"incremental one a snapshot of its parent, found by received UUID, then by\n"
	"UUID), which at the stream's end gets its received UUID and becomes\n"
	"read-only.  Several streams one after another are applied in turn.  Clones\n"
	"share the source's extents; encoded writes are decompressed (btrsim cannot\n"
	"write encoded data yet); fileattr is ignored, as btrfs-progs 6.2 ignores\n"
	"it; enable_verity is refused.  A bad or failing\n"
	"command stops it with its offset in the stream; what was applied before is\n"
	"committed, and the subvolume then stays writable and not received.\n"
	"\n"
	"With --dump, print the commands as 'btrfs receive --dump' (btrfs-progs 6.2)\n"
	"prints them: the command, the path under ./SUBVOL, its arguments; times in\n"
	"the local time zone.  Every command's length, crc32c and attributes are\n"
	"checked before it is printed.  As btrfs-progs 6.2's, the dump stops at the\n"
	"first end command (a file of several streams dumps its first).\n"
	"\n"
	"  -f FILE      read the stream from FILE (default: standard input)\n"
	"  -e           stop after the first end command (btrfs receive -e)\n"
	"  -q, --quiet  no 'At subvol NAME' / 'At snapshot NAME' lines\n"
	"  --dump       print the commands instead of applying them\n"
	"  -h, --help   show this help\n"
	"\n"
	"Exit status: 0, 1 for a bad stream, a failed command or an unreadable\n"
	"file, 2 bad usage.\n";

const struct cli_cmd cli_cmd_receive;

struct dump {
	char subvol[4200]; /* ./SUBVOL */
};

/* btrfs-progs' print_path_escaped: control bytes, space and backslash as
 * escapes, other unprintable bytes in octal.  Returns the columns used. */
static int print_escaped(FILE *f, const char *s)
{
	int n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		static const char from[] = "\a\b\e\f\n\r\t\v \\", to[] = "abefnrtv \\";
		const char *e = *p ? strchr(from, *p) : NULL;
		if (e) {
			fprintf(f, "\\%c", to[e - from]);
			n += 2;
		} else if (!isprint(*p)) {
			fprintf(f, "\\%c%c%c", '0' + (*p >> 6), '0' + ((*p >> 3) & 7), '0' + (*p & 7));
			n += 4;
		} else {
			putc(*p, f);
			n++;
		}
	}
	return n;
}

/* s escaped as print_escaped prints it, into out. */
static const char *escaped(const char *s, char *out, size_t cap)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return s;
	print_escaped(f, s);
	fclose(f);
	snprintf(out, cap, "%s", buf ? buf : s);
	free(buf);
	return out;
}

/* "TITLE PATH ARGS": title in 16 columns, the path escaped, at least one
 * space and up to column 32, then the arguments (none: nothing after). */
static void line(const char *title, const char *path, const char *fmt, ...)
{
	printf("%-16s", title);
	int n = print_escaped(stdout, path);
	if (fmt) {
		do
			putchar(' ');
		while (++n < 32);
		va_list ap;
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	putchar('\n');
}

static void uuid_str(const uint8_t u[16], char out[37])
{
	static const int dash[] = { 4, 6, 8, 10 };
	int k = 0;
	for (int i = 0, d = 0; i < 16; i++) {
		if (d < 4 && i == dash[d]) {
			out[k++] = '-';
			d++;
		}
		k += sprintf(out + k, "%02x", u[i]);
	}
	out[k] = 0;
}

static void time_str(int64_t sec, char *out, size_t len)
{
	time_t t = (time_t)sec;
	struct tm tm;
	if (!localtime_r(&t, &tm) || !strftime(out, len, "%Y-%m-%dT%H:%M:%S%z", &tm))
		snprintf(out, len, "%" PRId64, sec);
}

/* A string attribute, NUL-terminated in buf; "" when absent. */
static const char *str(const struct ref_send_cmd *c, int type, char *buf, size_t cap)
{
	const uint8_t *p;
	uint32_t len;
	if (ref_send_bytes(c, type, &p, &len))
		len = 0;
	if (len >= cap)
		len = (uint32_t)cap - 1;
	if (len)
		memcpy(buf, p, len);
	buf[len] = 0;
	return buf;
}

/* SUBVOL/PATH (progs' path_cat: "./s1" and "" give "./s1/"). */
static void full(const struct dump *d, const char *path, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", d->subvol, path);
}

static int missing(const struct ref_send_cmd *c, const char *what)
{
	return cli_fail(&cli_cmd_receive, "offset %llu: %s: no %s", (unsigned long long)c->offset,
			ref_send_cmd_name(c->cmd), what);
}

static int dump_cmd(struct dump *d, const struct ref_send_cmd *c)
{
	char path[4096], fp[8300], other[4096], of[8300], name[4096], esc[4 * 8300];
	uint64_t a = 0, b = 0, x = 0;
	uint8_t u[16], pu[16];
	char us[37], pus[37];
	const char *title = ref_send_cmd_name(c->cmd);
	str(c, REF_SEND_A_PATH, path, sizeof(path));
	full(d, path, fp, sizeof(fp));
	switch (c->cmd) {
	case REF_SEND_C_SUBVOL:
	case REF_SEND_C_SNAPSHOT:
		snprintf(d->subvol, sizeof(d->subvol), "./%s", path);
		if (ref_send_uuid(c, REF_SEND_A_UUID, u) || ref_send_u64(c, REF_SEND_A_CTRANSID, &a))
			return missing(c, "uuid or ctransid");
		uuid_str(u, us);
		if (c->cmd == REF_SEND_C_SUBVOL) {
			line(title, d->subvol, "uuid=%s transid=%llu", us, (unsigned long long)a);
			break;
		}
		if (ref_send_uuid(c, REF_SEND_A_CLONE_UUID, pu) ||
		    ref_send_u64(c, REF_SEND_A_CLONE_CTRANSID, &b))
			return missing(c, "clone uuid or ctransid");
		uuid_str(pu, pus);
		line(title, d->subvol, "uuid=%s transid=%llu parent_uuid=%s parent_transid=%llu", us,
		     (unsigned long long)a, pus, (unsigned long long)b);
		break;
	case REF_SEND_C_MKFILE:
	case REF_SEND_C_MKDIR:
	case REF_SEND_C_MKFIFO:
	case REF_SEND_C_MKSOCK:
	case REF_SEND_C_UNLINK:
	case REF_SEND_C_RMDIR:
		line(title, fp, NULL);
		break;
	case REF_SEND_C_MKNOD:
		if (ref_send_u64(c, REF_SEND_A_MODE, &a) || ref_send_u64(c, REF_SEND_A_RDEV, &b))
			return missing(c, "mode or rdev");
		line(title, fp, "mode=%llo dev=0x%llx", (unsigned long long)a, (unsigned long long)b);
		break;
	case REF_SEND_C_SYMLINK:
	case REF_SEND_C_LINK:
		line(title, fp, "dest=%s",
		     escaped(str(c, REF_SEND_A_PATH_LINK, other, sizeof(other)), of, sizeof(of)));
		break;
	case REF_SEND_C_RENAME:
		full(d, str(c, REF_SEND_A_PATH_TO, other, sizeof(other)), of, sizeof(of));
		line(title, fp, "dest=%s", escaped(of, esc, sizeof(esc)));
		break;
	case REF_SEND_C_SET_XATTR: {
		const uint8_t *v;
		uint32_t vl = 0;
		if (ref_send_bytes(c, REF_SEND_A_XATTR_DATA, &v, &vl))
			v = (const uint8_t *)"";
		line(title, fp, "name=%s data=%.*s len=%d",
		     str(c, REF_SEND_A_XATTR_NAME, name, sizeof(name)), (int)vl, (const char *)v, (int)vl);
		break;
	}
	case REF_SEND_C_REMOVE_XATTR:
		line(title, fp, "name=%s", str(c, REF_SEND_A_XATTR_NAME, name, sizeof(name)));
		break;
	case REF_SEND_C_WRITE: {
		const uint8_t *v;
		uint32_t vl = 0;
		if (ref_send_u64(c, REF_SEND_A_FILE_OFFSET, &a) || ref_send_bytes(c, REF_SEND_A_DATA, &v, &vl))
			return missing(c, "offset or data");
		line(title, fp, "offset=%llu len=%u", (unsigned long long)a, vl);
		break;
	}
	case REF_SEND_C_CLONE:
		if (ref_send_u64(c, REF_SEND_A_FILE_OFFSET, &a) || ref_send_u64(c, REF_SEND_A_CLONE_LEN, &b) ||
		    ref_send_u64(c, REF_SEND_A_CLONE_OFFSET, &x))
			return missing(c, "offsets or length");
		full(d, str(c, REF_SEND_A_CLONE_PATH, other, sizeof(other)), of, sizeof(of));
		line(title, fp, "offset=%llu len=%llu from=%s clone_offset=%llu", (unsigned long long)a,
		     (unsigned long long)b, escaped(of, esc, sizeof(esc)), (unsigned long long)x);
		break;
	case REF_SEND_C_TRUNCATE:
		if (ref_send_u64(c, REF_SEND_A_SIZE, &a))
			return missing(c, "size");
		line(title, fp, "size=%llu", (unsigned long long)a);
		break;
	case REF_SEND_C_CHMOD:
		if (ref_send_u64(c, REF_SEND_A_MODE, &a))
			return missing(c, "mode");
		line(title, fp, "mode=%llo", (unsigned long long)a);
		break;
	case REF_SEND_C_CHOWN:
		if (ref_send_u64(c, REF_SEND_A_UID, &a) || ref_send_u64(c, REF_SEND_A_GID, &b))
			return missing(c, "uid or gid");
		line(title, fp, "gid=%llu uid=%llu", (unsigned long long)b, (unsigned long long)a);
		break;
	case REF_SEND_C_UTIMES: {
		int64_t s[3];
		uint32_t ns;
		char t[3][64];
		static const int types[] = { REF_SEND_A_ATIME, REF_SEND_A_MTIME, REF_SEND_A_CTIME };
		for (int i = 0; i < 3; i++) {
			if (ref_send_time(c, types[i], &s[i], &ns))
				return missing(c, "atime, mtime or ctime");
			time_str(s[i], t[i], sizeof(t[i]));
		}
		line(title, fp, "atime=%s mtime=%s ctime=%s", t[0], t[1], t[2]);
		break;
	}
	case REF_SEND_C_UPDATE_EXTENT:
		if (ref_send_u64(c, REF_SEND_A_FILE_OFFSET, &a) || ref_send_u64(c, REF_SEND_A_SIZE, &b))
			return missing(c, "offset or size");
		line(title, fp, "offset=%llu len=%llu", (unsigned long long)a, (unsigned long long)b);
		break;
	case REF_SEND_C_FALLOCATE: {
		uint32_t mode;
		if (ref_send_u32(c, REF_SEND_A_FALLOCATE_MODE, &mode) ||
		    ref_send_u64(c, REF_SEND_A_FILE_OFFSET, &a) || ref_send_u64(c, REF_SEND_A_SIZE, &b))
			return missing(c, "mode, offset or size");
		line(title, fp, "mode=%u offset=%llu len=%llu", mode, (unsigned long long)a,
		     (unsigned long long)b);
		break;
	}
	case REF_SEND_C_FILEATTR:
		if (ref_send_u64(c, REF_SEND_A_FILEATTR, &a))
			return missing(c, "fileattr");
		line(title, fp, "fileattr=0x%llx", (unsigned long long)a);
		break;
	case REF_SEND_C_ENCODED_WRITE: {
		uint64_t ufl = 0, ul = 0, uo = 0;
		uint32_t comp = 0, enc = 0;
		const uint8_t *v;
		uint32_t vl = 0;
		if (ref_send_u64(c, REF_SEND_A_FILE_OFFSET, &a) ||
		    ref_send_u64(c, REF_SEND_A_UNENCODED_FILE_LEN, &ufl) ||
		    ref_send_u64(c, REF_SEND_A_UNENCODED_LEN, &ul) ||
		    ref_send_u64(c, REF_SEND_A_UNENCODED_OFFSET, &uo) ||
		    ref_send_bytes(c, REF_SEND_A_DATA, &v, &vl))
			return missing(c, "offset, lengths or data");
		ref_send_u32(c, REF_SEND_A_COMPRESSION, &comp);
		ref_send_u32(c, REF_SEND_A_ENCRYPTION, &enc);
		line(title, fp,
		     "offset=%llu len=%u, unencoded_file_len=%llu, unencoded_len=%llu, "
		     "unencoded_offset=%llu, compression=%u, encryption=%u",
		     (unsigned long long)a, vl, (unsigned long long)ufl, (unsigned long long)ul,
		     (unsigned long long)uo, comp, enc);
		break;
	}
	case REF_SEND_C_ENABLE_VERITY:
		line(title, fp, NULL);
		break;
	default:
		break;
	}
	return 0;
}

static uint8_t *slurp(const char *file, size_t *len)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "rb") : stdin;
	if (!f)
		return NULL;
	size_t cap = 1 << 20, n = 0;
	uint8_t *b = malloc(cap);
	while (b) {
		size_t got = fread(b + n, 1, cap - n, f);
		n += got;
		if (n < cap) {
			if (ferror(f)) {
				free(b);
				b = NULL;
			}
			break;
		}
		uint8_t *nb = realloc(b, cap * 2);
		if (!nb) {
			free(b);
			b = NULL;
			errno = ENOMEM;
		}
		b = nb;
		cap *= 2;
	}
	if (f != stdin)
		fclose(f);
	*len = n;
	return b;
}

/* btrfs-progs 6.2 says "At subvol" on stderr, "At snapshot" on stdout. */
static void at_subvol(void *ctx, bool snapshot, const char *name)
{
	(void)ctx;
	fprintf(snapshot ? stdout : stderr, "At %s %s\n", snapshot ? "snapshot" : "subvol", name);
	fflush(stdout);
}

static int apply_streams(char **imgs, int n, const char *dir, const uint8_t *buf, size_t len,
			 const struct ref_receive_opts *o)
{
	struct cli_mount m;
	int rc = cli_mount(&cli_cmd_receive, imgs, n, &m);
	if (rc)
		return rc;
	char err[1024];
	struct ref_receive_stats st = { 0 };
	int r = ref_receive(m.fs, dir, buf, len, o, &st, err, sizeof(err));
	if (r) {
		fprintf(stderr, "btrsim receive: %s\n", err);
		return cli_abort(&m);
	}
	return cli_umount(&m);
}

static int cmd_receive(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dump", no_argument, NULL, 'd' }, { "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	const char *file = "-";
	bool dump = false;
	struct ref_receive_opts ro = { .at = at_subvol };
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:eqh", opts, NULL)) != -1) {
		switch (c) {
		case 'f': file = optarg; break;
		case 'e': ro.honor_end = true; break;
		case 'q': ro.at = NULL; break;
		case 'd': dump = true; break;
		case 'h': return cli_help(&cli_cmd_receive);
		default: return cli_usage_error(&cli_cmd_receive, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (dump && optind != argc)
		return cli_usage_error(&cli_cmd_receive, "--dump takes no operands (the stream: -f)");
	if (!dump && argc - optind < 2)
		return cli_usage_error(&cli_cmd_receive, "needs at least one image and the directory DIR");
	size_t len;
	uint8_t *buf = slurp(file, &len);
	if (!buf)
		return cli_fail(&cli_cmd_receive, "%s: %s", file, strerror(errno));
	if (len == 0) {
		free(buf);
		return cli_fail(&cli_cmd_receive, "%s: not a send stream (no data)", file);
	}
	if (!dump) {
		int rc = apply_streams(argv + optind, argc - optind - 1, argv[argc - 1], buf, len, &ro);
		free(buf);
		return rc;
	}
	struct dump d = { .subvol = "." };
	char err[256];
	uint64_t off = 0;
	int rc = 0;
	bool ended = false;
	/* btrfs-progs 6.2's --dump stops at the first end command: a file of
	 * several streams (btrfs send SUBVOL SUBVOL) dumps its first */
	while (!rc && !ended && off < len) { /* a stream: a header, commands, END */
		uint32_t version;
		if (ref_send_header(buf + off, len - off, &version, err, sizeof(err))) {
			rc = cli_fail(&cli_cmd_receive, "offset %llu: %s", (unsigned long long)off, err);
			break;
		}
		uint64_t base = off;
		uint64_t at = REF_SEND_HEADER;
		struct ref_send_cmd cmd;
		int r;
		while ((r = ref_send_next(buf + base, len - base, version, &at, &cmd, err, sizeof(err))) == 0) {
			if (cmd.cmd == REF_SEND_C_END) {
				ended = true;
				break;
			}
			if ((rc = dump_cmd(&d, &cmd)))
				break;
		}
		if (r < 0)
			rc = cli_fail(&cli_cmd_receive, "%s (stream at offset %llu)", err,
				      (unsigned long long)base);
		else if (r == 1 && !rc)
			rc = cli_fail(&cli_cmd_receive, "offset %llu: the stream ends without an end command",
				      (unsigned long long)(base + at));
		off = base + at;
	}
	free(buf);
	fflush(stdout);
	return rc;
}

const struct cli_cmd cli_cmd_receive = {
	.name = "receive",
	.summary = "apply send streams to a file system, or print them (--dump)",
	.usage = usage_text,
	.run = cmd_receive,
};
