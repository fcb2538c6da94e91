/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "linux/softdirty.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "linux/procfs.h"

#define PM_PRESENT TB_PM_PRESENT
#define PM_SOFT_DIRTY TB_PM_SOFT_DIRTY

int tb_sd_clear(pid_t pid)
{
	int fd = tb_proc_open(pid, "clear_refs", O_WRONLY);
	if (fd < 0)
		return fd;
	int rc = write(fd, "4", 1) == 1 ? 0 : -errno;
	close(fd);
	return rc;
}

int tb_sd_scan(pid_t pid, uintptr_t start, size_t npages, uint8_t *written, uint8_t *present)
{
	int fd = tb_proc_open(pid, "pagemap", O_RDONLY), rc = 0;
	if (fd < 0)
		return fd;
	long psz = sysconf(_SC_PAGESIZE);
	uint64_t buf[512];
	for (size_t done = 0; done < npages && !rc;) {
		size_t k = npages - done < 512 ? npages - done : 512;
		off_t off = (off_t)((start / (uintptr_t)psz + done) * sizeof(uint64_t));
		ssize_t got = pread(fd, buf, k * sizeof(uint64_t), off);
		if (got < 0) {
			rc = -errno;
			break;
		}
		if ((size_t)got < k * sizeof(uint64_t)) {
			rc = -EIO;
			break;
		}
		for (size_t i = 0; i < k; i++) {
			if (written)
				written[done + i] = (buf[i] & PM_SOFT_DIRTY) != 0;
			if (present)
				present[done + i] = (buf[i] & PM_PRESENT) != 0;
		}
		done += k;
	}
	close(fd);
	return rc;
}

int tb_sd_probe(void)
{
	long psz = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, (size_t)psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	p[0] = 1;
	uint8_t w = 0;
	int rc = tb_sd_clear(0);
	if (!rc) {
		p[0] = 2; /* a write after the clear must set the bit */
		rc = tb_sd_scan(0, (uintptr_t)p, 1, &w, NULL);
	}
	munmap((void *)p, (size_t)psz);
	return rc ? rc : (w ? 0 : -ENOTSUP);
}
