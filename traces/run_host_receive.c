/*
 * run_host_receive.c - the host target's `receive`: btrfs-progs' own
 * `btrfs receive` run on the stream's bytes into a directory of the host's
 * mount, since receiving is a program's work (a sequence of system calls and
 * ioctls), not one system call.  The stream goes through a memfd; the
 * directory is the O_PATH fd that run_host.c resolved inside the root, named
 * to the child as /proc/self/fd/N.  The result is btrfs receive's: 0, or the
 * errno its last "ERROR: ..." line names by its strerror text (EIO when it
 * names none, such as a bad stream).
 */
#include "traces/run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define ERRTEXT_MAX 4096

/* Messages of btrfs-progs 6.2's receive that name no strerror text, with
 * the errno its code returns there. */
static const struct {
	const char *text;
	int e;
} known[] = {
	{ "cannot find parent subvolume", ENOENT },
	{ "clone: did not find source subvol", ENOENT },
	{ "empty stream is not considered valid", EINVAL },
};

/* The errno whose strerror text ends the line (btrfs-progs prints
 * "ERROR: WHAT: %m" for failed calls); 0 when none does. */
static int errno_of_line(const char *line, size_t len)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (memmem(line, len, known[i].text, strlen(known[i].text)))
			return known[i].e;
	for (int e = 1; e < 134; e++) {
		const char *t = strerror(e);
		size_t tl = strlen(t);
		if (!strncmp(t, "Unknown error", 13))
			continue;
		if (tl <= len && !memcmp(line + len - tl, t, tl))
			return e;
	}
	return 0;
}

/* The errno of btrfs receive's report: its last ERROR line's. */
static int errno_of_report(const char *text, const char **line, size_t *linelen)
{
	int e = EIO;
	*line = NULL;
	*linelen = 0;
	for (const char *p = text; *p;) {
		size_t l = strcspn(p, "\n");
		if (!strncmp(p, "ERROR: ", 7)) {
			int le = errno_of_line(p, l);
			e = le ? le : EIO;
			*line = p;
			*linelen = l;
		}
		p += l + (p[l] == '\n');
	}
	return e;
}

static int write_all(int fd, const uint8_t *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -errno;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

int wl_host_receive(int dirfd, const uint8_t *stream, size_t len, char *err, size_t errlen)
{
	int sfd = memfd_create("btrsim-stream", 0), pfd[2] = { -1, -1 };
	if (sfd < 0 || write_all(sfd, stream, len) || lseek(sfd, 0, SEEK_SET) < 0 ||
	    pipe2(pfd, O_CLOEXEC)) {
		int r = -errno;
		if (errlen)
			snprintf(err, errlen, "btrfs receive: preparing the stream: %s", strerror(-r));
		if (sfd >= 0)
			close(sfd);
		return r;
	}
	char from[64], to[64];
	snprintf(from, sizeof(from), "/proc/self/fd/%d", sfd);
	snprintf(to, sizeof(to), "/proc/self/fd/%d", dirfd);
	pid_t pid = fork();
	if (pid == 0) {
		/* the stream and directory fds stay open across exec: they are
		 * not O_CLOEXEC in the child (dup2 onto themselves clears it) */
		int fl = fcntl(dirfd, F_GETFD);
		if (fl >= 0)
			fcntl(dirfd, F_SETFD, fl & ~FD_CLOEXEC);
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			dup2(devnull, STDOUT_FILENO);
		}
		dup2(pfd[1], STDERR_FILENO);
		execlp("btrfs", "btrfs", "receive", "-q", "-f", from, to, (char *)NULL);
		dprintf(STDERR_FILENO, "ERROR: cannot run btrfs: %s\n", strerror(errno));
		_exit(127);
	}
	int fe = errno;
	close(pfd[1]);
	close(sfd);
	if (pid < 0) {
		close(pfd[0]);
		if (errlen)
			snprintf(err, errlen, "btrfs receive: fork: %s", strerror(fe));
		return -fe;
	}
	char text[ERRTEXT_MAX];
	size_t n = 0;
	for (;;) {
		char chunk[512];
		ssize_t got = read(pfd[0], chunk, sizeof(chunk));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		size_t keep = (size_t)got < sizeof(text) - 1 - n ? (size_t)got : sizeof(text) - 1 - n;
		memcpy(text + n, chunk, keep);
		n += keep;
	}
	text[n] = 0;
	close(pfd[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	const char *line;
	size_t ll;
	int e = errno_of_report(text, &line, &ll);
	if (errlen) {
		if (line)
			snprintf(err, errlen, "btrfs receive: %.*s", (int)(ll > 400 ? 400 : ll), line);
		else if (WIFSIGNALED(status))
			snprintf(err, errlen, "btrfs receive: killed by signal %d", WTERMSIG(status));
		else
			snprintf(err, errlen, "btrfs receive: exit %d: %.400s", WEXITSTATUS(status), text);
	}
	return -e;
}
