/* The daemon's parts that need no second NUMA node: configuration, /proc
 * parsing, the id map, memory stretches, the control socket, and the DAMON
 * sampler's sysfs protocol against a fake sysfs tree. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include "access/access.h"
#include "exec/exec.h"
#include "exec/rt_proto.h"
#include "linux/pagemap.h"
#include "exec/uffd.h"
#include "exec/park.h"
#include "exec/uffd_abi.h"
#include "daemon/ctl.h"
#include "daemon/dconfig.h"
#include "daemon/idmap.h"
#include "linux/procfs.h"
#include "daemon/target.h"

static void test_config(void **state)
{
	(void)state;
	struct tb_dconfig c;
	char err[512];
	tb_dconfig_default(&c);
	assert_int_equal(c.knobs.demote_scale_factor, 200);
	assert_int_equal(c.sample_ms, 200);
	const char *good = "[daemon]\npolicy = adaptive\nsampler = softdirty\nsample_ms = 50\n"
			   "socket = /tmp/s.sock\n[targets]\npid = 42\ncgroup = /sys/fs/cgroup/app\n"
			   "[knobs]\nnuma_balancing_hot_threshold_ms = 300\n[node 1]\ntier = 2\n";
	assert_int_equal(tb_dconfig_parse(&c, "good.ini", good, err, sizeof(err)), 0);
	assert_int_equal(c.policy, TB_POLICY_PROMOTE | TB_POLICY_HOT | TB_POLICY_ADAPTIVE);
	assert_int_equal(c.sampler, TB_SAMPLER_SOFTDIRTY);
	assert_int_equal(c.sample_ms, 50);
	assert_string_equal(c.socket, "/tmp/s.sock");
	assert_int_equal(c.nr_pids, 1);
	assert_int_equal(c.pids[0], 42);
	assert_string_equal(c.cgroup, "/sys/fs/cgroup/app");
	assert_int_equal(c.knobs.hot_threshold_ms, 300);
	assert_int_equal(c.tier_override[1], 2);
	assert_int_equal(c.tier_override[0], -1);
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{"[daemon]\nsample_ms = fast\n", "bad.ini:2: [daemon] sample_ms: 'fast' is not a whole number"},
		{"[daemon]\npolicy = nonsense\n", "bad.ini:2: [daemon] policy: unknown policy 'nonsense'"},
		{"[daemon]\nsocket = relative\n", "bad.ini:2: [daemon] socket: 'relative' is not an absolute path"},
		{"[knobs]\nno_such_knob = 1\n", "bad.ini:2: [knobs] no_such_knob: "},
		{"[node x]\ntier = 1\n", "bad.ini:1: [node x]: 'x' is not a node number"},
		{"[elsewhere]\na = 1\n", "bad.ini:1: [elsewhere]: unknown section"},
		{"[daemon]\nsample_ms = 50\n[targets]\n", "bad.ini:3: [targets]: empty section"},
		{"just text\n", "bad.ini:1: not an INI line"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tb_dconfig before = c;
		assert_int_equal(tb_dconfig_parse(&c, "bad.ini", bad[i].text, err, sizeof(err)), -EINVAL);
		if (strncmp(err, bad[i].msg, strlen(bad[i].msg)))
			fail_msg("'%s' gave '%s', expected '%s...'", bad[i].text, err, bad[i].msg);
		assert_memory_equal(&before, &c, sizeof(c)); /* a rejected file changes nothing */
	}
}

static void test_proc_stat(void **state)
{
	(void)state;
	struct tb_proc_stat st;
	/* a comm with spaces and a parenthesis, then fields 3.. */
	const char *line = "1234 (my (odd) prog) S 1 1234 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 "
			   "987654 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
	assert_int_equal(tb_proc_stat_parse(line, &st), 0);
	assert_string_equal(st.comm, "my (odd) prog");
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 1);
	assert_int_equal(st.starttime, 987654);
	assert_int_equal(st.processor, 1);
	assert_false(st.kernel_thread);
	const char *kt = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0 "
			 "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 0 0 0 0 0 0\n";
	assert_int_equal(tb_proc_stat_parse(kt, &st), 0);
	assert_true(st.kernel_thread);
	assert_int_equal(tb_proc_stat_parse("1 (short) S 1 2\n", &st), -EINVAL);
	assert_int_equal(tb_proc_stat_parse("no parens at all", &st), -EINVAL);
	assert_int_equal(tb_proc_stat(getpid(), &st), 0);
	assert_false(st.kernel_thread);
	assert_int_equal(tb_proc_stat(4194304 + 1, &st), -ESRCH);
}

static void test_target_checks(void **state)
{
	(void)state;
	struct tb_proc_stat st;
	char err[256];
	assert_int_equal(tb_target_check(getpid(), &st, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "tierbal itself"));
	assert_int_equal(tb_target_check(4194304 + 1, &st, err, sizeof(err)), -ESRCH);
	assert_non_null(strstr(err, "no such process"));
	assert_int_equal(tb_target_check(0, &st, err, sizeof(err)), -EINVAL);
	pid_t child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(tb_target_check(child, &st, err, sizeof(err)), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

/* an unprivileged caller: no CAP_SYS_NICE, and no ptrace access to a root process */
static void test_privileges(void **state)
{
	(void)state;
	char err[512];
	if (geteuid() != 0)
		skip(); /* needs root to drop to nobody; reported as skipped */
	assert_int_equal(tb_target_check_caps("tierbal run", err, sizeof(err)), 0);
	pid_t root_proc = fork();
	if (root_proc == 0) {
		pause();
		_exit(0);
	}
	pid_t c = fork();
	if (c == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		struct tb_proc_stat st;
		int caps = tb_target_check_caps("tierbal run", err, sizeof(err));
		if (caps != -EPERM || !strstr(err, "needs CAP_SYS_NICE"))
			_exit(11);
		int rc = tb_target_check(root_proc, &st, err, sizeof(err));
		if ((rc != -EACCES && rc != -EPERM) || !strstr(err, "no permission to ptrace it"))
			_exit(12);
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	kill(root_proc, SIGKILL);
	waitpid(root_proc, NULL, 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_cgroup_pids(void **state)
{
	(void)state;
	char dir[] = "/tmp/tb-cg-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "w");
	fputs("12\n345\n6789\n", f);
	fclose(f);
	pid_t *v;
	size_t n;
	assert_int_equal(tb_cgroup_pids(dir, &v, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(v[2], 6789);
	free(v);
	unlink(path);
	rmdir(dir);
	assert_int_equal(tb_cgroup_pids(dir, &v, &n), -ENOENT);
}

static void test_idmap(void **state)
{
	(void)state;
	struct tb_idmap m;
	assert_int_equal(tb_idmap_init(&m, 2, 3), 0);
	uint32_t c[4];
	assert_int_equal(tb_idmap_extent(&m, 1), 0);
	assert_int_equal(tb_idmap_get(&m, 1, 7, 0x200000, &c[0]), 0);
	assert_int_equal(c[0], 3); /* pool 1 holds chunks 3..5, lowest first */
	assert_int_equal(tb_idmap_extent(&m, 1), 1);
	assert_int_equal(tb_idmap_extent(&m, 0), 0);
	assert_int_equal(tb_idmap_get(&m, 1, 7, 0x400000, &c[1]), 0);
	assert_int_equal(tb_idmap_get(&m, 1, 8, 0x600000, &c[2]), 0);
	assert_int_equal(tb_idmap_extent(&m, 1), 3);
	assert_int_equal(tb_idmap_get(&m, 1, 8, 0x800000, &c[3]), -ENOSPC);
	uint32_t page = tb_idmap_page(c[1], 5);
	assert_true(tb_idmap_addr(&m, page) == 0x400000 + 5 * 4096);
	assert_int_equal(m.owner[c[2]], 8);
	tb_idmap_put(&m, c[1]);
	assert_int_equal(m.owner[c[1]], TB_NO_OWNER);
	assert_int_equal(tb_idmap_extent(&m, 1), 3); /* a hole below the highest chunk in use */
	tb_idmap_put(&m, c[2]);
	assert_int_equal(tb_idmap_extent(&m, 1), 1);
	assert_int_equal(tb_idmap_get(&m, 1, 8, 0x600000, &c[2]), 0);
	assert_int_equal(tb_idmap_get(&m, 1, 9, 0xa00000, &c[3]), 0);
	assert_int_equal(c[3], c[1]); /* reused */
	assert_int_equal(tb_idmap_extent(&m, 5), 0);
	assert_int_equal(tb_idmap_get(&m, 2, 9, 0, &c[3]), -EINVAL);
	tb_idmap_destroy(&m);
}

static void test_stretches(void **state)
{
	(void)state;
	/* 3 pages of anonymous memory starting 1 page into a 2 MiB stretch */
	char *big = mmap(NULL, 3 * TB_CHUNK_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(big != MAP_FAILED);
	uintptr_t base = ((uintptr_t)big + TB_CHUNK_BYTES - 1) & ~(TB_CHUNK_BYTES - 1);
	char *p = mmap((void *)(base + 4096), 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		       -1, 0);
	assert_true(p == (char *)(base + 4096));
	struct tb_target t = {.pid = getpid(), .pagemap_fd = -1};
	struct tb_tchunk *s;
	size_t n;
	assert_int_equal(tb_target_stretches(&t, &s, &n, NULL, NULL), 0);
	const struct tb_tchunk *found = NULL;
	for (size_t i = 0; i < n; i++) {
		if (i)
			assert_true(s[i].base > s[i - 1].base);
		if (s[i].base == base)
			found = &s[i];
	}
	assert_non_null(found);
	assert_true(found->elig[0] == 0xeull); /* pages 1, 2, 3 */
	for (int w = 1; w < 8; w++)
		assert_true(found->elig[w] == 0);
	free(s);
	/* a limit below the 3-page mapping: it is left alone and counted */
	t.max_vma_bytes = 2 * 4096;
	assert_int_equal(tb_target_stretches(&t, &s, &n, NULL, NULL), 0);
	assert_true(t.skipped_vmas >= 1);
	for (size_t i = 0; i < n; i++)
		assert_true(s[i].base != base);
	free(s);
	munmap(big, 3 * TB_CHUNK_BYTES);
}

static size_t fake_report(void *ctx, char *buf, size_t len)
{
	(void)ctx;
	return (size_t)snprintf(buf, len, "pgpromote_success 7\nsampler softdirty\n");
}

static void wait_readable(int fd)
{
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(fd, &rd);
	assert_true(select(fd + 1, &rd, NULL, NULL, NULL) == 1);
}

/* Accepts the next client and answers it once its request is complete. */
static void serve_one(int lfd)
{
	wait_readable(lfd);
	int fd = tb_ctl_accept(lfd);
	assert_true(fd >= 0);
	struct tb_ctl_client cc = {.fd = fd};
	do
		wait_readable(fd); /* the request, or the rest of its line */
	while (!tb_ctl_handle(&cc, fake_report, NULL));
}

static void test_ctl(void **state)
{
	(void)state;
	char path[64], err[256];
	snprintf(path, sizeof(path), "/tmp/tb-ctl-%d.sock", (int)getpid());
	struct tb_ctl_sock cs, cs2;
	int lfd = tb_ctl_listen(&cs, path, err, sizeof(err));
	assert_true(lfd >= 0);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(tb_ctl_listen(&cs2, path, err, sizeof(err)), -EADDRINUSE);
	assert_non_null(strstr(err, "another tierbal daemon"));
	int probe = tb_ctl_accept(lfd); /* that check connected once: its hung-up connection is first in line */
	assert_true(probe >= 0);
	struct tb_ctl_client pc = {.fd = probe};
	assert_int_equal(tb_ctl_handle(&pc, fake_report, NULL), 1);
	for (int round = 0; round < 2; round++) {
		pid_t c = fork();
		if (c == 0) {
			char *ans = NULL, e[256];
			int rc = tb_ctl_request(path, round ? "bogus" : "stat", &ans, e, sizeof(e));
			int ok = round ? rc == -EPERM && strstr(e, "unknown request") : rc == 0 &&
				 !strcmp(ans, "pgpromote_success 7\nsampler softdirty\n");
			if (!ok)
				fprintf(stderr, "round %d: rc %d, err '%s', answer '%s'\n", round, rc, e, ans ? ans : "");
			_exit(ok ? 0 : 1);
		}
		/* the client's connection waits in the backlog until served */
		serve_one(lfd);
		int st;
		waitpid(c, &st, 0);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	close(lfd);
	/* a stale socket (nobody listening) is replaced, and removed at the end */
	lfd = tb_ctl_listen(&cs, path, err, sizeof(err));
	assert_true(lfd >= 0);
	/* a request ended by the end of the input, without a newline, is answered */
	pid_t c = fork();
	if (c == 0) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) || write(fd, "stat", 4) != 4 ||
		    shutdown(fd, SHUT_WR))
			_exit(2);
		char buf[128];
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		_exit(n > 0 && !strncmp(buf, "pgpromote_success 7", 19) ? 0 : 1);
	}
	serve_one(lfd);
	int st;
	waitpid(c, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	tb_ctl_unlisten(&cs);
	assert_int_equal(lstat(path, &sb), -1);
	char *ans;
	assert_int_equal(tb_ctl_request(path, "stat", &ans, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no tierbal daemon"));

	/* anything at the path that is not a stale socket is refused and left as it was */
	FILE *f = fopen(path, "w");
	fputs("IMPORTANT\n", f);
	fclose(f);
	assert_int_equal(tb_ctl_listen(&cs, path, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "not a socket"));
	char link[80];
	snprintf(link, sizeof(link), "%s.link", path);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(tb_ctl_listen(&cs, link, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "symbolic link"));
	assert_int_equal(lstat(link, &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	unlink(link);
	char text[32] = "";
	f = fopen(path, "r");
	assert_non_null(fgets(text, sizeof(text), f));
	fclose(f);
	assert_string_equal(text, "IMPORTANT\n");
	unlink(path);

	/* a file that replaced the socket while the daemon ran stays at the end */
	lfd = tb_ctl_listen(&cs, path, err, sizeof(err));
	assert_true(lfd >= 0);
	unlink(path);
	f = fopen(path, "w");
	fputs("IMPORTANT\n", f);
	fclose(f);
	tb_ctl_unlisten(&cs);
	assert_int_equal(lstat(path, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	unlink(path);
}

/* ---- DAMON against a fake sysfs tree ---- */

static char root[64];

static void mkfile(const char *rel, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/sys/kernel/mm/damon/admin/kdamonds/%s", root, rel);
	for (char *s = p + strlen(root) + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *readrel(const char *rel)
{
	static char buf[128];
	char p[512];
	snprintf(p, sizeof(p), "%s/sys/kernel/mm/damon/admin/kdamonds/%s", root, rel);
	FILE *f = fopen(p, "r");
	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	return buf;
}

static void fake_tree(bool tried, const char *state)
{
	snprintf(root, sizeof(root), "/tmp/tb-damon-XXXXXX");
	assert_non_null(mkdtemp(root));
	mkfile("nr_kdamonds", "1\n");
	mkfile("0/state", state);
	mkfile("0/contexts/nr_contexts", "1\n");
	mkfile("0/contexts/0/avail_operations", "vaddr\nfvaddr\npaddr\n");
	mkfile("0/contexts/0/schemes/nr_schemes", "1\n");
	/* the files a kdamond directory has, which the sampler writes */
	static const char *const files[] = {
		"0/contexts/0/operations", "0/contexts/0/monitoring_attrs/intervals/sample_us",
		"0/contexts/0/monitoring_attrs/intervals/aggr_us", "0/contexts/0/monitoring_attrs/intervals/update_us",
		"0/contexts/0/monitoring_attrs/nr_regions/min", "0/contexts/0/monitoring_attrs/nr_regions/max",
		"0/contexts/0/targets/nr_targets", "0/contexts/0/targets/0/pid_target", "0/contexts/0/schemes/0/action",
		"0/contexts/0/schemes/0/access_pattern/sz/min", "0/contexts/0/schemes/0/access_pattern/sz/max",
		"0/contexts/0/schemes/0/access_pattern/nr_accesses/min",
		"0/contexts/0/schemes/0/access_pattern/nr_accesses/max",
		"0/contexts/0/schemes/0/access_pattern/age/min", "0/contexts/0/schemes/0/access_pattern/age/max",
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		mkfile(files[i], "");
	if (tried) {
		mkfile("0/contexts/0/schemes/0/tried_regions/total_bytes", "0\n");
		mkfile("0/contexts/0/schemes/0/tried_regions/0/start", "4096\n");
		mkfile("0/contexts/0/schemes/0/tried_regions/0/end", "16384\n");
		mkfile("0/contexts/0/schemes/0/tried_regions/0/nr_accesses", "5\n");
		mkfile("0/contexts/0/schemes/0/tried_regions/1/start", "16384\n");
		mkfile("0/contexts/0/schemes/0/tried_regions/1/end", "32768\n");
		mkfile("0/contexts/0/schemes/0/tried_regions/1/nr_accesses", "0\n");
	}
}

static void rm_tree(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	assert_int_equal(system(cmd), 0);
}

/* The fault path of tierbal exec, in this process: a write to a protected
 * page blocks until the fault thread opens its window, and the event names
 * the window; the rest of the region stays protected (pagemap says so). */
static void test_uffd(void **state)
{
	(void)state;
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		fail_msg("userfaultfd: %s (tierbal exec needs it: run the tests as root)", strerror(errno));
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP};
	assert_int_equal(ioctl(fd, UFFDIO_API, &api), 0);
	struct tb_uffd *u;
	char err[256];
	assert_int_equal(tb_uffd_new(&u, 3, NULL, err, sizeof(err)), -EINVAL); /* not a power of two */
	assert_int_equal(tb_uffd_new(&u, 4, NULL, err, sizeof(err)), 0);
	pid_t me = getpid();
	assert_int_equal(tb_uffd_attach(u, me, fd, NULL), 0);
	assert_true(tb_uffd_has(u, me));
	size_t n = 64;
	/* windows are aligned in the address space: align the region so that they are in it too */
	char *m = mmap(NULL, 4u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	char *r = (char *)(((uintptr_t)m + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
	madvise(r, n * 4096, MADV_NOHUGEPAGE);
	memset(r, 1, n * 4096);
	struct tb_vma v = {.start = (uintptr_t)m, .end = (uintptr_t)m + (4u << 20), .readable = true, .writable = true,
			   .private = true, .anon = true};
	assert_int_equal(tb_uffd_sync(u, me, &v, 1), 0);
	assert_int_equal(tb_uffd_sync(u, me, &v, 1), 0); /* known: not registered twice */
	assert_int_equal(tb_uffd_arm(u, me, (uintptr_t)r, n * 4096, 0), 0);
	/* a mapping the last sync did not register is left alone: the kernel
	 * would move a page out of it, and the program read a fresh zero page */
	char *other = mmap(NULL, 16 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(other != MAP_FAILED);
	memset(other, 5, 16 * 4096);
	assert_int_equal(tb_uffd_arm(u, me, (uintptr_t)other, 16 * 4096, 0), 0);

	r[10 * 4096] = 2; /* blocks until the fault thread lifts the protection */
	r[9 * 4096] = 2;  /* same window of 4 pages: no second fault */
	r[20 * 4096] = 2;
	struct tb_uffd_event ev[8];
	size_t got = 0;
	for (int i = 0; i < 50 && got < 2; i++) {
		struct pollfd pf = {tb_uffd_wake_fd(u), POLLIN, 0};
		poll(&pf, 1, 100);
		got += tb_uffd_drain(u, ev + got, 8 - got);
	}
	assert_int_equal(got, 2);
	assert_int_equal(ev[0].pid, me);
	assert_true(ev[0].addr == (uintptr_t)r + 8 * 4096 && ev[0].pages == 4 && ev[0].write);
	assert_true(ev[1].addr == (uintptr_t)r + 20 * 4096 && ev[1].pages == 4);
	assert_true(ev[1].t_ns >= ev[0].t_ns);

	int pm = tb_proc_open(0, "pagemap", O_RDONLY);
	assert_true(pm >= 0);
	uint64_t e[64];
	assert_int_equal(tb_pagemap_read(pm, (uintptr_t)r, n, e), 0);
	close(pm);
	assert_false(e[9] & TB_PM_UFFD_WP);
	assert_false(e[11] & TB_PM_UFFD_WP);
	assert_true(e[12] & TB_PM_UFFD_WP); /* outside the opened window: still protected */
	assert_true(e[63] & TB_PM_UFFD_WP);
	struct tb_uffd_stats st;
	tb_uffd_stats(u, &st);
	assert_int_equal(st.faults, 2);
	assert_int_equal(st.resolve_errors, 0);
	assert_int_equal(st.registered, 1);
	assert_int_equal(st.protected_pages, n);
	assert_int_equal(st.arm_skipped, 16);
	other[3 * 4096] = 6; /* not protected: no fault, no wait */
	assert_int_equal(other[3 * 4096], 6);
	munmap(other, 16 * 4096);
	/* freeing drops the registration: writes go through without anyone answering */
	tb_uffd_free(u);
	r[40 * 4096] = 3;
	assert_int_equal(r[40 * 4096], 3);
	munmap(m, 4u << 20);
}

/* The park table with moves done in this process (the kernel moves a
 * process's pages only at its own request): pages away are absent, come
 * back intact, and a page armed again while away stays away (the move of
 * it is not tried again: it failed with EEXIST once, and the slot was
 * forgotten, so that its next access read zeros). */
static int self_move(void *ctx, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode, int64_t *moved)
{
	struct uffdio_move m = {.dst = dst, .src = src, .len = len, .mode = mode};
	int rc = ioctl(*(int *)ctx, UFFDIO_MOVE, &m) ? -errno : 0;
	*moved = m.move > 0 ? m.move : 0;
	return rc;
}

static int self_move_many(void *ctx, struct tb_park_move *m, size_t n, uint64_t mode)
{
	for (size_t i = 0; i < n; i++)
		m[i].rc = self_move(ctx, m[i].dst, m[i].src, m[i].len, mode, &m[i].moved);
	return 0;
}

static unsigned discarded;
static void self_discard(void *ctx, uintptr_t addr, size_t len)
{
	(void)ctx;
	(void)addr;
	discarded += (unsigned)(len / 4096);
}

static bool present(int pm, uintptr_t a)
{
	uint64_t e;
	assert_int_equal(tb_pagemap_read(pm, a, 1, &e), 0);
	return e & TB_PM_PRESENT;
}

/* A process that exits with pages parked: its mover is gone, the copy
 * fallback finds no memory to read, and no page counts as lost (they went
 * with the memory). */
static int gone_move(void *ctx, uintptr_t dst, uintptr_t src, size_t len, uint64_t mode, int64_t *moved)
{
	(void)ctx, (void)dst, (void)src, (void)len, (void)mode;
	*moved = 0;
	return -ESRCH;
}

static int parked_move_many(void *ctx, struct tb_park_move *m, size_t n, uint64_t mode)
{
	(void)ctx, (void)mode;
	for (size_t i = 0; i < n; i++) {
		m[i].rc = 0;
		m[i].moved = (int64_t)m[i].len;
	}
	return 0;
}

static void no_discard(void *ctx, uintptr_t addr, size_t len)
{
	(void)ctx, (void)addr, (void)len;
}

static void test_park_exited(void **state)
{
	(void)state;
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t c = fork();
	if (c == 0) {
		char b;
		close(go[1]);
		_exit(read(go[0], &b, 1) < 0); /* until the parent closes its end */
	}
	static const struct tb_park_ops ops = {.move = gone_move, .move_many = parked_move_many, .discard = no_discard};
	struct tb_park p;
	const unsigned win = 4;
	assert_int_equal(tb_park_init(&p, -1, c, &ops, NULL, 0x10000000, 16 * win * 4096, win, 16), 0);
	assert_true(p.pagemap_fd >= 0 && p.mem_fd >= 0);
	assert_int_equal(tb_park_window(&p, 0x20000000, win * 4096, 1), (long)(win * 4096));
	close(go[1]);
	int st;
	assert_int_equal(waitpid(c, &st, 0), c);
	int s = tb_park_find(&p, 0x20000000);
	assert_true(s >= 0);
	assert_int_equal(tb_park_restore(&p, (uint32_t)s, true), 0);
	assert_int_equal(p.st.lost, 0);
	assert_int_equal(tb_park_find(&p, 0x20000000), -1);
	tb_park_fini(&p);
	close(go[0]);
}

static void test_uffd_park(void **state)
{
	(void)state;
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		fail_msg("userfaultfd: %s (tierbal exec needs it: run the tests as root)", strerror(errno));
	struct uffdio_api api = {.api = UFFD_API, .features = TB_UFFD_PARK_FEATURES};
	if (ioctl(fd, UFFDIO_API, &api)) {
		close(fd);
		skip(); /* a kernel before 6.8: no UFFDIO_MOVE, no parking (reported as skipped, not passed) */
	}
	const size_t win = 16, n = 64;
	char *m = mmap(NULL, (n + win) * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *pa = mmap(NULL, 64 * win * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(m != MAP_FAILED && pa != MAP_FAILED);
	char *r = (char *)(((uintptr_t)m + win * 4096 - 1) & ~(uintptr_t)(win * 4096 - 1)); /* window-aligned */
	madvise(m, (n + win) * 4096, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < n; i++)
		memset(r + i * 4096, (int)(i + 1), 4096);
	struct uffdio_register rg = {.range = {(uintptr_t)m, (n + win) * 4096},
				     .mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP};
	assert_int_equal(ioctl(fd, UFFDIO_REGISTER, &rg), 0);
	rg = (struct uffdio_register){.range = {(uintptr_t)pa, 64 * win * 4096}, .mode = UFFDIO_REGISTER_MODE_WP};
	assert_int_equal(ioctl(fd, UFFDIO_REGISTER, &rg), 0);
	static const struct tb_park_ops ops = {.move = self_move, .move_many = self_move_many, .discard = self_discard};
	struct tb_park p;
	assert_int_equal(tb_park_init(&p, fd, getpid(), &ops, &fd, (uintptr_t)pa, 64 * win * 4096, win, 64), 0);
	int pm = tb_proc_open(0, "pagemap", O_RDONLY);
	assert_true(pm >= 0);

	uintptr_t w0 = (uintptr_t)r, w1 = w0 + win * 4096, w2 = w1 + win * 4096, w3 = w2 + win * 4096;
	assert_int_equal(tb_park_window(&p, w0, win * 4096, 100), (long)(win * 4096));
	assert_int_equal(tb_park_window(&p, w1 + 2 * 4096, 4 * 4096, 200), 4 * 4096);
	assert_int_equal(tb_park_window(&p, w0, win * 4096, 300), (long)(win * 4096)); /* armed again while away */
	assert_int_equal(tb_park_window(&p, w1 + 4 * 4096, 4 * 4096, 300), 4 * 4096); /* half away already */
	for (size_t i = 0; i < win; i++)
		assert_false(present(pm, w0 + i * 4096));
	assert_true(present(pm, w1 + 1 * 4096));
	for (size_t i = 2; i < 8; i++)
		assert_false(present(pm, w1 + i * 4096));
	assert_true(present(pm, w1 + 8 * 4096));
	assert_true(tb_park_find(&p, w0 + 5 * 4096) >= 0);
	assert_int_equal(tb_park_find(&p, w2), -1);
	uint64_t bits[1];
	tb_park_mask(&p, w0, 64, bits);
	assert_true(bits[0] == (0xffffull | (0x3full << (win + 2))));

	/* back, intact */
	int s = tb_park_find(&p, w0);
	assert_int_equal(tb_park_restore(&p, (uint32_t)s, true), 0);
	for (size_t i = 0; i < win; i++) {
		assert_true(present(pm, w0 + i * 4096));
		assert_int_equal(r[i * 4096 + 7], (char)(i + 1));
	}
	assert_int_equal(tb_park_find(&p, w0), -1);

	/* discarded while away (MADV_DONTNEED, munmap): junk, never put back; the rest is */
	discarded = 0;
	tb_park_discard(&p, w1 + 2 * 4096, w1 + 4 * 4096);
	assert_int_equal(discarded, 2);
	s = tb_park_find(&p, w1);
	assert_int_equal(tb_park_restore(&p, (uint32_t)s, true), 0);
	assert_false(present(pm, w1 + 2 * 4096));
	assert_false(present(pm, w1 + 3 * 4096));
	for (size_t i = 4; i < 8; i++)
		assert_int_equal(r[win * 4096 + i * 4096 + 9], (char)(win + i + 1));
	assert_int_equal(p.st.junk, 2);
	assert_int_equal(p.junk_slots, 1); /* its slot is not used again */

	/* expiry: only what waited long enough */
	assert_int_equal(tb_park_window(&p, w2, win * 4096, 1000), (long)(win * 4096));
	assert_int_equal(tb_park_window(&p, w3, win * 4096, 5000), (long)(win * 4096));
	assert_int_equal(tb_park_expire(&p, 2000, NULL, NULL), 0);
	assert_true(present(pm, w2));
	assert_false(present(pm, w3));
	assert_int_equal(p.st.expired, 1);
	assert_int_equal(tb_park_restore_all(&p), 0);
	assert_int_equal(r[(3 * win + 5) * 4096], (char)(3 * win + 6));
	assert_int_equal(p.nparked, 0);
	tb_park_fini(&p);

	/* the window table under churn: one-page windows parked and put back in a
	 * scrambled order, every lookup right (deletion shifts entries back) */
	assert_int_equal(tb_park_init(&p, fd, getpid(), &ops, &fd, (uintptr_t)pa, 64 * win * 4096, 1, 48), 0);
	uint32_t seed = 12345;
	bool away[64] = {0};
	for (int step = 0; step < 4000; step++) {
		seed = seed * 1103515245u + 12345u;
		size_t i = (seed >> 16) % n;
		uintptr_t a = w0 + i * 4096;
		if (away[i]) {
			assert_int_equal(tb_park_restore(&p, (uint32_t)tb_park_find(&p, a), true), 0);
			away[i] = false;
		} else if (tb_park_window(&p, a, 4096, (uint64_t)step) == 4096) {
			away[i] = true;
		}
		if (step % 97 == 0)
			for (size_t k = 0; k < n; k++)
				assert_int_equal(tb_park_find(&p, w0 + k * 4096) >= 0, away[k]);
	}
	assert_int_equal(tb_park_restore_all(&p), 0);
	for (size_t i = 0; i < n; i++)
		if (i < win + 2 || i >= win + 4) /* the two discarded pages stay absent */
			assert_int_equal(r[i * 4096 + 100], (char)(i + 1));
	tb_park_fini(&p);
	close(pm);
	close(fd);
	munmap(m, (n + win) * 4096);
	munmap(pa, 64 * win * 4096);
}

static int connect_to(const char *name)
{
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t l = strlen(name);
	memcpy(sa.sun_path, name, l);
	sa.sun_path[0] = '\0';
	assert_int_equal(connect(s, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + l)), 0);
	return s;
}

/* tierbal exec's helpers: static programs, the runtime's hello, descendants */
static void test_exec_helpers(void **state)
{
	(void)state;
	assert_false(tb_exec_is_static("sh"));
	assert_false(tb_exec_is_static("/nonexistent/prog"));
	char name[108], err[256];
	int l = tb_exec_listen(name, sizeof(name), err, sizeof(err));
	assert_true(l >= 0);
	assert_true(name[0] == '@');
	pid_t pid;
	int uffd, chan;
	struct tb_rt_hello got;
	assert_int_equal(tb_exec_accept(l, &pid, &uffd, &chan, &got), -EAGAIN); /* nobody there */
	int c = connect_to(name);
	assert_int_equal(send(c, "hello", 5, 0), 5);
	assert_int_equal(tb_exec_accept(l, &pid, &uffd, &chan, &got), -EPROTO);
	close(c);
	c = connect_to(name);
	struct tb_rt_hello h = {.magic = TB_RT_MAGIC, .version = TB_RT_VERSION, .err = EPERM, .park_err = EINVAL};
	assert_int_equal(send(c, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	assert_int_equal(tb_exec_accept(l, &pid, &uffd, &chan, &got), 0);
	assert_int_equal(pid, getpid());
	assert_int_equal(uffd, -1);
	assert_int_equal(got.err, EPERM);
	assert_int_equal(got.park_err, EINVAL);
	close(c);
	close(l);
	assert_true(tb_exec_descends(getpid(), getpid()));
	assert_true(tb_exec_descends(getpid(), getppid()));
	assert_false(tb_exec_descends(getppid(), getpid()));
}

static void test_damon_sysfs(void **state)
{
	(void)state;
	struct tb_access a;
	char why[512];
	fake_tree(false, "off\n");
	assert_int_equal(tb_access_damon_open(&a, root, why, sizeof(why)), -ENOTSUP);
	assert_non_null(strstr(why, "tried_regions"));
	rm_tree();
	fake_tree(true, "on\n");
	assert_int_equal(tb_access_damon_open(&a, root, why, sizeof(why)), -EBUSY);
	assert_non_null(strstr(why, "already running"));
	rm_tree();
	fake_tree(true, "off\n");
	assert_int_equal(tb_access_damon_open(&a, root, why, sizeof(why)), 0);
	assert_string_equal(a.ops->name, "damon");
	assert_int_equal(a.ops->attach(a.ctx, 4321), 0);
	assert_string_equal(readrel("0/contexts/0/operations"), "vaddr");
	assert_string_equal(readrel("0/contexts/0/targets/0/pid_target"), "4321");
	assert_string_equal(readrel("0/contexts/0/schemes/0/action"), "stat");
	assert_string_equal(readrel("0/state"), "on");
	assert_int_equal(a.ops->round_begin(a.ctx), 0);
	assert_string_equal(readrel("0/state"), "update_schemes_tried_regions");
	uint8_t acc[8];
	a.ops->mark(a.ctx, 4321, 0, 8, NULL, acc);
	/* page 0: no region; 1-3: accessed region; 4-7: idle region */
	static const uint8_t want[8] = {0, TB_ACC_READ, TB_ACC_READ, TB_ACC_READ, 0, 0, 0, 0};
	assert_memory_equal(acc, want, 8);
	a.ops->mark(a.ctx, 999, 0, 8, NULL, acc); /* a pid it does not watch: nothing */
	assert_memory_equal(acc, (uint8_t[8]){0}, 8);
	a.ops->detach(a.ctx, 4321);
	assert_string_equal(readrel("nr_kdamonds"), "0");
	a.ops->destroy(a.ctx);
	rm_tree();
}

int main(void)
{
	/* scripts/valgrind.sh leaves out what valgrind cannot run (userfaultfd) */
	if (getenv("TB_TEST_SKIP"))
		cmocka_set_skip_filter(getenv("TB_TEST_SKIP"));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),       cmocka_unit_test(test_proc_stat), cmocka_unit_test(test_target_checks),
		cmocka_unit_test(test_privileges),
		cmocka_unit_test(test_cgroup_pids),  cmocka_unit_test(test_idmap),     cmocka_unit_test(test_stretches),
		cmocka_unit_test(test_ctl),          cmocka_unit_test(test_damon_sysfs), cmocka_unit_test(test_uffd), cmocka_unit_test(test_uffd_park), cmocka_unit_test(test_park_exited),
		cmocka_unit_test(test_exec_helpers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
