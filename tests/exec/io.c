/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel writing into the program's memory (read, pread, recv into
 * buffers tierbal has write-protected) and a timer signal arriving all the
 * time: every call must return what it would without tierbal, not EFAULT. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define LEN (8u << 20)
/* at least this long, at least 200 rounds: on huge pages 200 rounds take a
 * fifth of a second, less than tierbal exec needs to register new mappings */
#define MIN_NS 1500000000ll

static long long mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static volatile sig_atomic_t ticks;
static uint64_t *tickbuf;

static void on_alarm(int sig)
{
	(void)sig;
	tickbuf[(ticks++ * 512) % (LEN / 8)]++; /* a write from a signal handler, into armed pages */
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "io.dat";
	unsigned char *src = malloc(LEN), *dst = malloc(LEN);
	tickbuf = calloc(LEN / 8, 8);
	if (!src || !dst || !tickbuf)
		return 2;
	for (size_t i = 0; i < LEN; i++)
		src[i] = (unsigned char)(i * 7 + i / 4096);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, src, LEN) != (ssize_t)LEN)
		return 2;
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 1000}, {0, 1000}};
	setitimer(ITIMER_REAL, &it, NULL);
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 2;
	long errors = 0, mismatches = 0;
	long long t0 = mono_ns();
	for (int round = 0; round < 200 || mono_ns() - t0 < MIN_NS; round++) {
		memset(dst, 0, LEN); /* the whole buffer is written, then the kernel overwrites it */
		size_t got = 0;
		lseek(fd, 0, SEEK_SET);
		while (got < LEN) {
			ssize_t r = round % 2 ? pread(fd, dst + got, LEN - got, (off_t)got)
					      : read(fd, dst + got, LEN - got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				errors++;
				break;
			}
			got += (size_t)r;
		}
		mismatches += memcmp(src, dst, LEN) != 0;
		/* through a socket, 64 KiB at a time, into the middle of dst */
		for (size_t off = 0; off < (1u << 20); off += 65536) {
			if (send(sv[0], src + off, 65536, 0) != 65536)
				errors++;
			size_t in = 0;
			while (in < 65536) {
				ssize_t r = recv(sv[1], dst + (LEN / 2) + off + in, 65536 - in, 0);
				if (r < 0 && errno == EINTR)
					continue;
				if (r <= 0) {
					errors++;
					break;
				}
				in += (size_t)r;
			}
		}
		mismatches += memcmp(src, dst + LEN / 2, 1u << 20) != 0;
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	close(fd);
	unlink(path);
	printf("system calls failed: %ld, buffers wrong: %ld, timer signals: %s\n", errors, mismatches,
	       ticks > 0 ? "some" : "none");
	return errors || mismatches;
}
