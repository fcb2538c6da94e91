/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "daemon/dconfig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cfg.h"
#include "util/number.h"

void tb_dconfig_default(struct tb_dconfig *c)
{
	memset(c, 0, sizeof(*c));
	c->policy = TB_POLICY_PROMOTE | TB_POLICY_HOT;
	c->sampler = TB_SAMPLER_AUTO;
	c->sample_ms = 200;
	c->refresh_ms = 1000;
	c->demote_rate_mb = 1024;
	snprintf(c->socket, sizeof(c->socket), "%s", TB_DEFAULT_SOCKET);
	for (size_t i = 0; i < TB_DCFG_MAX_NODES; i++)
		c->tier_override[i] = -1;
	tb_knobs_default(&c->knobs);
	/* A live fast node also serves allocations tierbal never sees: keep TPP's
	 * headroom (2% of the node above high) instead of the kernel's thin one. */
	c->knobs.demote_scale_factor = 200;
	/* and moves a hot page it had no room for once kswapd has made room, instead
	 * of a scan pass later (seconds, in which the page keeps running slow) */
	c->knobs.promote_retry_ms = 1000;
}

const char *tb_sampler_choice_name(enum tb_sampler_choice s)
{
	return s == TB_SAMPLER_DAMON       ? "damon"
	       : s == TB_SAMPLER_SOFTDIRTY ? "softdirty"
	       : s == TB_SAMPLER_NONE      ? "none"
					   : "auto";
}

int tb_sampler_choice_parse(const char *s, enum tb_sampler_choice *out)
{
	if (!strcmp(s, "auto"))
		*out = TB_SAMPLER_AUTO;
	else if (!strcmp(s, "damon"))
		*out = TB_SAMPLER_DAMON;
	else if (!strcmp(s, "softdirty") || !strcmp(s, "soft-dirty"))
		*out = TB_SAMPLER_SOFTDIRTY;
	else if (!strcmp(s, "none"))
		*out = TB_SAMPLER_NONE;
	else
		return -EINVAL;
	return 0;
}

static bool on_daemon(struct tb_cfg *cf, struct tb_dconfig *c, const char *sec, const char *key, const char *val)
{
	uint64_t v;
	if (!strcmp(key, "policy")) {
		if (tb_policy_parse(val, &c->policy))
			return tb_cfg_error(cf, sec, key, "unknown policy '%s' (try 'tierbal sim --list')", val);
		return true;
	}
	if (!strcmp(key, "sampler")) {
		if (tb_sampler_choice_parse(val, &c->sampler))
			return tb_cfg_error(cf, sec, key, "'%s' is not auto, damon, softdirty or none", val);
		return true;
	}
	if (!strcmp(key, "sample_ms")) {
		if (!tb_cfg_u64(cf, sec, key, val, 10, 60000, &v))
			return false;
		c->sample_ms = (uint32_t)v;
		return true;
	}
	if (!strcmp(key, "refresh_ms")) {
		if (!tb_cfg_u64(cf, sec, key, val, 10, 600000, &v))
			return false;
		c->refresh_ms = (uint32_t)v;
		return true;
	}
	if (!strcmp(key, "max_managed_mb"))
		return tb_cfg_u64(cf, sec, key, val, 0, 1ull << 40, &c->max_managed_mb);
	if (!strcmp(key, "demote_rate_mb"))
		return tb_cfg_u64(cf, sec, key, val, 1, 1ull << 20, &c->demote_rate_mb);
	if (!strcmp(key, "dry_run"))
		return tb_cfg_bool(cf, sec, key, val, &c->dry_run);
	if (!strcmp(key, "socket")) {
		if (val[0] != '/')
			return tb_cfg_error(cf, sec, key, "'%s' is not an absolute path", val);
		return tb_cfg_string(cf, sec, key, val, c->socket, sizeof(c->socket));
	}
	return tb_cfg_error(cf, sec, key,
			    "unknown key (known: policy, sampler, sample_ms, refresh_ms, max_managed_mb, "
			    "demote_rate_mb, dry_run, socket)");
}

static bool on_targets(struct tb_cfg *cf, struct tb_dconfig *c, const char *sec, const char *key, const char *val)
{
	if (!strcmp(key, "pid")) {
		uint64_t v;
		if (!tb_cfg_u64(cf, sec, key, val, 1, 4194304, &v))
			return false;
		if (c->nr_pids == TB_DCFG_MAX_PIDS)
			return tb_cfg_error(cf, sec, key, "more than %d pids", TB_DCFG_MAX_PIDS);
		c->pids[c->nr_pids++] = (pid_t)v;
		return true;
	}
	if (!strcmp(key, "cgroup"))
		return tb_cfg_string(cf, sec, key, val, c->cgroup, sizeof(c->cgroup));
	return tb_cfg_error(cf, sec, key, "unknown key (known: pid, cgroup)");
}

static bool on_section(struct tb_cfg *cf, const char *sec)
{
	const char *rest;
	if (!strcmp(sec, "daemon") || !strcmp(sec, "targets") || !strcmp(sec, "knobs"))
		return true;
	if (tb_cfg_section_is(sec, "node", &rest)) {
		unsigned long long n;
		if (tb_parse_whole(rest, 0, TB_DCFG_MAX_NODES - 1, &n))
			return tb_cfg_error(cf, sec, NULL, "'%s' is not a node number 0..%d", rest,
					    TB_DCFG_MAX_NODES - 1);
		return true;
	}
	return tb_cfg_error(cf, sec, NULL, "unknown section (known: [daemon], [targets], [knobs], [node N])");
}

static bool on_entry(struct tb_cfg *cf, const char *sec, const char *key, const char *val)
{
	struct tb_dconfig *c = cf->user;
	const char *rest;
	if (!strcmp(sec, "daemon"))
		return on_daemon(cf, c, sec, key, val);
	if (!strcmp(sec, "targets"))
		return on_targets(cf, c, sec, key, val);
	if (!strcmp(sec, "knobs")) {
		char a[256], msg[256];
		snprintf(a, sizeof(a), "%s=%s", key, val);
		if (tb_knob_set(&c->knobs, a, msg, sizeof(msg)))
			return tb_cfg_error(cf, sec, key, "%s", msg);
		return true;
	}
	if (tb_cfg_section_is(sec, "node", &rest)) {
		unsigned long long n;
		if (tb_parse_whole(rest, 0, TB_DCFG_MAX_NODES - 1, &n))
			return tb_cfg_error(cf, sec, NULL, "'%s' is not a node number 0..%d", rest,
					    TB_DCFG_MAX_NODES - 1);
		if (strcmp(key, "tier"))
			return tb_cfg_error(cf, sec, key, "unknown key (known: tier)");
		uint64_t t;
		if (!tb_cfg_u64(cf, sec, key, val, 0, 6, &t))
			return false;
		c->tier_override[n] = (int)t;
		return true;
	}
	return tb_cfg_error(cf, sec, NULL, "unknown section (known: [daemon], [targets], [knobs], [node N])");
}

int tb_dconfig_parse(struct tb_dconfig *c, const char *label, const char *text, char *err, size_t errlen)
{
	struct tb_dconfig tmp = *c; /* a bad file leaves c as it was */
	tmp.nr_pids = 0;
	tmp.cgroup[0] = '\0';
	int rc = tb_cfg_parse(label, text, on_entry, on_section, &tmp, err, errlen);
	if (!rc)
		*c = tmp;
	return rc;
}

int tb_dconfig_load(struct tb_dconfig *c, const char *path, char *err, size_t errlen)
{
	size_t len;
	char *text = tb_cfg_read_file(path, &len, err, errlen);
	if (!text)
		return -ENOENT;
	if (memchr(text, '\0', len)) {
		snprintf(err, errlen, "%s: binary data, not an INI file", path);
		free(text);
		return -EINVAL;
	}
	int rc = tb_dconfig_parse(c, path, text, err, errlen);
	free(text);
	return rc;
}
