#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

int tb_proc_open(pid_t pid, const char *file, int flags)
{
	char path[96];
	int n = pid ? snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file)
		    : snprintf(path, sizeof(path), "/proc/self/%s", file);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	int fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}
