/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE /* mkostemp */
#include "util/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The temporary file a signal must remove: one output at a time per process. */
static char sig_tmp[4096];
static volatile sig_atomic_t sig_armed;

static void on_signal(int sig)
{
	if (sig_armed)
		unlink(sig_tmp);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void arm(const char *tmp)
{
	sig_armed = 0;
	memcpy(sig_tmp, tmp, strlen(tmp) + 1);
	sig_armed = 1;
	const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa = {.sa_handler = on_signal};
		sigemptyset(&sa.sa_mask);
		struct sigaction old;
		/* a signal the caller ignores stays ignored */
		if (!sigaction(sigs[i], NULL, &old) && old.sa_handler == SIG_DFL)
			sigaction(sigs[i], &sa, NULL);
	}
}

static void disarm(void)
{
	sig_armed = 0;
}

int tb_outfile_open(struct tb_outfile *o, const char *path, char *err, size_t len)
{
	memset(o, 0, sizeof(*o));
	struct stat sb;
	bool exists = !lstat(path, &sb);
	if (!exists && errno != ENOENT) {
		snprintf(err, len, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (exists && S_ISLNK(sb.st_mode)) {
		snprintf(err, len,
			 "%s: a symbolic link; output is never written through links: give the file's own path", path);
		return -EEXIST;
	}
	if (exists && !S_ISREG(sb.st_mode)) {
		snprintf(err, len, "%s: not a regular file (a directory, device, FIFO or socket); give a file's path",
			 path);
		return -EEXIST;
	}
	const char *slash = strrchr(path, '/');
	size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
	if (strlen(path) >= sizeof(o->path) || dir + strlen(path + dir) + 16 >= sizeof(o->tmp)) {
		snprintf(err, len, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	memcpy(o->path, path, strlen(path) + 1);
	/* beside the target, so that the rename stays in one file system */
	snprintf(o->tmp, sizeof(o->tmp), "%.*s.%s.XXXXXX", (int)dir, path, path + dir);
	int fd = mkostemp(o->tmp, O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, len, "%s: cannot create a file beside it (%s): %s", path, o->tmp, strerror(errno));
		return -errno;
	}
	mode_t mask = umask(0);
	umask(mask);
	/* an existing file keeps its permissions; a new one gets the usual 0666 & ~umask */
	if (fchmod(fd, exists ? sb.st_mode & 07777 : 0666 & ~mask)) {
		int e = errno;
		close(fd);
		unlink(o->tmp);
		snprintf(err, len, "%s: %s", o->tmp, strerror(e));
		return -e;
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int e = errno;
		close(fd);
		unlink(o->tmp);
		snprintf(err, len, "%s: %s", o->tmp, strerror(e));
		return -e;
	}
	arm(o->tmp);
	return 0;
}

int tb_outfile_commit(struct tb_outfile *o, char *err, size_t len)
{
	if (!o->f)
		return -EBADF;
	int e = 0;
	if (fflush(o->f) || ferror(o->f) || fsync(fileno(o->f)))
		e = errno ? errno : EIO;
	if (fclose(o->f) && !e)
		e = errno;
	o->f = NULL;
	if (!e && rename(o->tmp, o->path))
		e = errno;
	if (e) {
		unlink(o->tmp);
		snprintf(err, len, "writing %s failed: %s; the file is as it was", o->path, strerror(e));
	}
	disarm();
	return -e;
}

void tb_outfile_abort(struct tb_outfile *o)
{
	if (!o->f)
		return;
	fclose(o->f);
	o->f = NULL;
	unlink(o->tmp);
	disarm();
}

bool tb_same_file(const char *a, const char *b)
{
	struct stat x, y;
	return a && b && !stat(a, &x) && !stat(b, &y) && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}
