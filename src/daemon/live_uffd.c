/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tierbal exec's hint faults: a process hands over its userfaultfd, and the
 * faults it reports are fed to the engine at the time they happened. */
#include "daemon/live_internal.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static void feed_faults(struct tb_live *l, const struct tb_uffd_event *ev, size_t n)
{
	tb_engine_batch_begin(l->e);
	for (size_t k = 0; k < n; k++) {
		struct tb_target *t = NULL;
		for (size_t i = 0; i < l->nr_t && !t; i++)
			if (l->t[i] && l->t[i]->pid == ev[k].pid && !l->t[i]->dead)
				t = l->t[i];
		uintptr_t base = ev[k].addr & ~((uintptr_t)TB_CHUNK_BYTES - 1);
		struct tb_tchunk *ch = t ? tb_target_find(t, base) : NULL;
		if (!ch)
			continue;
		l->c[TB_L_uffd_faults]++;
		/* every armed page of the window the fault opened: as the kernel's
		 * fault on a huge page stands for all of its pages */
		unsigned first = (unsigned)((ev[k].addr - base) >> TB_PAGE_SHIFT);
		for (unsigned i = first; i < first + ev[k].pages && i < TB_CHUNK_PAGES; i++) {
			uint32_t id = tb_idmap_page(ch->chunk, i);
			if (tb_engine_page_node(l->e, id) == TB_NO_NODE)
				continue; /* not discovered yet: the next round places it */
			l->ps[id] |= PS_YOUNG;
			l->now_override = ev[k].t_ns; /* the latency is from the scan to the fault, not to now */
			tb_engine_hint_fault(l->e, id, ev[k].write);
			l->now_override = 0;
		}
	}
	tb_engine_batch_end(l->e);
}

int tb_live_attach_uffd(struct tb_live *l, pid_t pid, int fd, const struct tb_uffd_rt *rt, char *err, size_t len)
{
	int chan = rt ? rt->chan : -1;
	if (!l->uffd) {
		close(fd);
		if (chan >= 0)
			close(chan);
		snprintf(err, len, "pid %d: no userfaultfd hint faults in this daemon", (int)pid);
		return -EINVAL;
	}
	for (size_t i = 0; i < l->nr_t; i++)
		if (l->t[i] && l->t[i]->pid == pid && tb_uffd_has(l->uffd, pid))
			tb_live_drop_target(l, i, NULL); /* it ran exec: a new memory image, a new start */
	int rc = tb_live_add(l, pid, false, err, len);
	if (rc && rc != -EEXIST) {
		close(fd);
		if (chan >= 0)
			close(chan);
		return rc;
	}
	rc = tb_uffd_attach(l->uffd, pid, fd, rt);
	if (rc) {
		snprintf(err, len, "pid %d: cannot watch its userfaultfd: %s", (int)pid, strerror(-rc));
		return rc;
	}
	uintptr_t pa;
	size_t pl;
	bool parks = tb_uffd_park_area(l->uffd, pid, &pa, &pl);
	for (size_t i = 0; i < l->nr_t; i++) {
		if (!l->t[i] || l->t[i]->pid != pid)
			continue;
		if (parks) {
			l->t[i]->hide_start = pa;
			l->t[i]->hide_end = pa + pl;
		}
		if (tb_live_update_chunks(l, i))
			l->c[TB_L_sample_errors]++; /* the next refresh tries again */
	}
	return 0;
}

void tb_live_hint_faults(struct tb_live *l)
{
	if (!l->uffd)
		return;
	struct tb_uffd_event ev[64]; /* up to 1024 pages at the default window between two reads of free memory */
	size_t n, fed = 0;
	/* A bounded share per call: the queue refills as fast as promotions free
	 * the program, and the main loop must come back to its other work. */
	while (fed < TB_LIVE_FAULTS_PER_CALL && (n = tb_uffd_drain(l->uffd, ev, sizeof(ev) / sizeof(ev[0]))) > 0) {
		/* promotions are refused at the watermarks of what the nodes really
		 * have free now, not of what they had at the last round */
		tb_live_update_external(l);
		feed_faults(l, ev, n);
		fed += n;
	}
	if (fed) /* kswapd makes room for the next faults now, not at the next round */
		tb_engine_tick(l->e);
	tb_live_forget_gone(l);
}
