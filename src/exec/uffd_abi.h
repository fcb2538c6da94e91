/* SPDX-License-Identifier: GPL-2.0-or-later */
/* userfaultfd definitions newer than the headers Debian bookworm builds with
 * (linux-libc-dev 6.1): UFFDIO_MOVE came in Linux 6.8. The values are the
 * kernel's ABI; a kernel without them refuses the feature at UFFDIO_API. */
#ifndef TB_UFFD_ABI_H
#define TB_UFFD_ABI_H

#include <linux/types.h>
#include <linux/userfaultfd.h>

#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE (1 << 16)
#endif

#ifndef _UFFDIO_MOVE
#define _UFFDIO_MOVE (0x05)
struct uffdio_move {
	__u64 dst;
	__u64 src;
	__u64 len;
#define UFFDIO_MOVE_MODE_DONTWAKE ((__u64)1 << 0)
#define UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES ((__u64)1 << 1)
	__u64 mode;
	__s64 move; /* bytes moved, or a negative errno */
};
#define UFFDIO_MOVE _IOWR(UFFDIO, _UFFDIO_MOVE, struct uffdio_move)
#endif

/* what tierbal exec asks for when it parks pages to see reads */
#define TB_UFFD_PARK_FEATURES                                                                                          \
	(UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_EVENT_REMOVE |                       \
	 UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_MOVE)

#endif
