// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "container.h"

#define ID_HEX 64

/* the container components of the runtimes: systemd's scopes and the cgroupfs driver's names */
static const struct layout {
	const char *prefix;
	const char *runtime;
} layouts[] = {
	{ "cri-containerd-", "containerd" },	/* containerd's CRI plugin, systemd driver */
	{ "crio-", "cri-o" },			/* both drivers */
	{ "docker-", "docker" },		/* systemd driver (cgroupfs: /docker/ID) */
	{ "libpod-", "podman" },		/* both (cgroupfs: /libpod_parent/libpod-ID) */
};

/* the runtimes' monitor processes sit beside the container: they are not in it */
static const char *const monitors[] = { "crio-conmon-", "libpod-conmon-" };

static bool is_hex_run(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
			return false;
	return true;
}

/* the component [c, c+n) is exactly ID, or ID followed by ".scope" */
static bool is_id(const char *c, size_t n, bool scope)
{
	if (scope)
		return n == ID_HEX + 6 && !memcmp(c + ID_HEX, ".scope", 6) && is_hex_run(c, ID_HEX);
	return n == ID_HEX && is_hex_run(c, ID_HEX);
}

/* a pod UID, 8-4-4-4-12 hex digits; systemd's slice names write '-' as '_' */
static bool parse_uid(const char *s, size_t n, char *out)
{
	static const int groups[] = { 8, 4, 4, 4, 12 };
	size_t i, o = 0;
	int g;

	if (n != 36)
		return false;
	for (g = 0, i = 0; g < 5; g++) {
		if (g) {
			if (s[i] != '-' && s[i] != '_')
				return false;
			out[o++] = '-';
			i++;
		}
		if (!is_hex_run(s + i, (size_t)groups[g]))
			return false;
		memcpy(out + o, s + i, (size_t)groups[g]);
		o += (size_t)groups[g];
		i += (size_t)groups[g];
	}
	out[o] = 0;
	return true;
}

/* "pod<UID>" (cgroupfs); "kubepods-pod<UID>.slice", "kubepods-<qos>-pod<UID>.slice" (systemd) */
static bool pod_component(const char *c, size_t n, char *uid)
{
	const char *p;

	if (n > 3 && !strncmp(c, "pod", 3))
		return parse_uid(c + 3, n - 3, uid);
	if (n < 6 || strncmp(c, "kubepods", 8) || memcmp(c + n - 6, ".slice", 6))
		return false;
	for (p = c + n - 6 - 36 - 4; p > c; p--)
		if (!strncmp(p, "-pod", 4))
			return parse_uid(p + 4, (size_t)(c + n - 6 - (p + 4)), uid);
	return false;
}

static bool has_prefix_n(const char *c, size_t n, const char *prefix)
{
	size_t l = strlen(prefix);

	return n > l && !strncmp(c, prefix, l);
}

static bool is_monitor(const char *c, size_t n)
{
	size_t i;

	for (i = 0; i < sizeof(monitors) / sizeof(monitors[0]); i++)
		if (has_prefix_n(c, n, monitors[i]))
			return true;
	return false;
}

/* the runtime and id of one component, given its parent component; NULL if it names none */
static const char *container_component(const char *c, size_t n, const char *parent, size_t pn,
				       bool in_pod, char *id)
{
	size_t i, l;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		l = strlen(layouts[i].prefix);
		if (has_prefix_n(c, n, layouts[i].prefix) &&
		    (is_id(c + l, n - l, true) || is_id(c + l, n - l, false))) {
			snprintf(id, CONTAINER_ID_LEN, "%.64s", c + l);
			return layouts[i].runtime;
		}
	}
	if (!is_id(c, n, false))
		return NULL;
	snprintf(id, CONTAINER_ID_LEN, "%.64s", c);
	if (pn == 6 && !strncmp(parent, "docker", 6))
		return "docker";
	/* cgroupfs names a pod's containers by id alone: containerd, since dockershim is gone */
	return in_pod ? "containerd" : "";
}

/* any 64-hex-digit run bounded by non-alphanumerics: an id in a layout we do not know */
static bool generic_id(const char *path, char *out)
{
	const char *p;
	size_t n;

	for (p = path; *p; p++) {
		if (p != path && isalnum((unsigned char)p[-1]))
			continue;
		n = strspn(p, "0123456789abcdef");
		if (n == ID_HEX && !isalnum((unsigned char)p[n])) {
			snprintf(out, CONTAINER_ID_LEN, "%.64s", p);
			return true;
		}
		if (n)
			p += n - 1;
	}
	return false;
}

bool container_parse_path(const char *path, struct container_info *ci)
{
	const char *c = path, *parent = "", *rt;
	size_t n, pn = 0;
	char id[CONTAINER_ID_LEN], uid[POD_UID_LEN];
	bool found = false, monitor = false;

	memset(ci, 0, sizeof(*ci));
	snprintf(ci->cgroup, sizeof(ci->cgroup), "%s", path);
	/* the last container component wins: docker-in-docker nests them */
	for (; *c; c += n) {
		c += strspn(c, "/");
		n = strcspn(c, "/");
		if (!n)
			break;
		if (pod_component(c, n, uid))
			memcpy(ci->pod_uid, uid, sizeof(uid));
		monitor |= is_monitor(c, n);
		rt = monitor ? NULL : container_component(c, n, parent, pn, ci->pod_uid[0], id);
		if (rt) {
			snprintf(ci->runtime, sizeof(ci->runtime), "%s", rt);
			memcpy(ci->id, id, sizeof(id));
			found = true;
		}
		parent = c;
		pn = n;
	}
	if (!found && !monitor && generic_id(path, ci->id))
		found = true;
	if (!found)
		ci->pod_uid[0] = 0;
	return found;
}

void container_id_of_path(const char *path, char *out, size_t len)
{
	struct container_info ci;

	container_parse_path(path, &ci);
	snprintf(out, len, "%s", ci.id);
}

/* the path of one "N:controllers:path" line, and whether its controllers include memory */
static bool cgroup_line(const char *line, size_t n, char *path, size_t len, bool *v2, bool *mem)
{
	const char *a = memchr(line, ':', n), *b;

	if (!a || !(b = memchr(a + 1, ':', (size_t)(line + n - a - 1))))
		return false;
	*v2 = a - line == 1 && line[0] == '0' && b == a + 1;
	*mem = false;
	for (const char *c = a + 1; c < b; c += strcspn(c, ",:") + 1)
		if (!strncmp(c, "memory", 6) && (c[6] == ',' || c[6] == ':'))
			*mem = true;
	snprintf(path, len, "%.*s", (int)(line + n - b - 1), b + 1);
	return true;
}

void container_parse_proc_cgroup(const char *text, struct container_info *ci)
{
	char path[sizeof(ci->cgroup)], first[sizeof(ci->cgroup)] = "";
	struct container_info best, cand;
	const char *line;
	int best_rank = 0, rank;
	bool v2, mem;
	size_t n;

	memset(&best, 0, sizeof(best));
	/* rank: v2 first, then v1 memory, then any v1 line; the first of a rank wins */
	for (line = text; line && *line; line += n + (line[n] == '\n')) {
		n = strcspn(line, "\n");
		if (!cgroup_line(line, n, path, sizeof(path), &v2, &mem))
			continue;
		if (!first[0] || v2)
			snprintf(first, sizeof(first), "%s", path);
		rank = v2 ? 3 : mem ? 2 : 1;
		if (rank > best_rank && container_parse_path(path, &cand)) {
			best = cand;
			best_rank = rank;
		}
	}
	if (!best_rank)
		snprintf(best.cgroup, sizeof(best.cgroup), "%s", first);
	*ci = best;
}

bool container_cgroup_has_prefix(const char *text, const char *prefix)
{
	char path[4096];
	size_t n, pl = strlen(prefix);
	const char *line;
	bool v2, mem;

	while (pl > 1 && prefix[pl - 1] == '/')
		pl--;
	for (line = text; line && *line; line += n + (line[n] == '\n')) {
		n = strcspn(line, "\n");
		if (!cgroup_line(line, n, path, sizeof(path), &v2, &mem))
			continue;
		if (!strncmp(path, prefix, pl) &&
		    (path[pl] == '/' || !path[pl] || (pl == 1 && prefix[0] == '/')))
			return true;
	}
	return false;
}

/* "NAMESPACE_POD_UID": namespaces and pod names hold no '_', so the split is unambiguous */
static bool split_pod_dir(const char *name, const char *uid, struct container_info *ci)
{
	size_t n = strlen(name), ul = strlen(uid);
	const char *us;

	if (n <= ul + 3 || name[n - ul - 1] != '_' || strcmp(name + n - ul, uid))
		return false;
	us = strchr(name, '_');
	if (!us || us >= name + n - ul - 1 || (size_t)(us - name) >= sizeof(ci->pod_namespace))
		return false;
	snprintf(ci->pod_namespace, sizeof(ci->pod_namespace), "%.*s", (int)(us - name), name);
	snprintf(ci->pod_name, sizeof(ci->pod_name), "%.*s", (int)(name + n - ul - 1 - us - 1),
		 us + 1);
	return true;
}

static bool find_pod_dir(const char *pods_dir, const char *uid, struct container_info *ci,
			 char *dirname, size_t len)
{
	struct dirent *de;
	bool found = false;
	DIR *d = opendir(pods_dir);

	if (!d)
		return false;
	while (!found && (de = readdir(d)))
		if (split_pod_dir(de->d_name, uid, ci)) {
			snprintf(dirname, len, "%s", de->d_name);
			found = true;
		}
	closedir(d);
	return found;
}

/* the kubelet's /var/log/containers/POD_NAMESPACE_CONTAINER-ID.log beside the pods directory */
static bool name_from_containers_dir(const char *pods_dir, struct container_info *ci)
{
	char dir[PATH_MAX], want[POD_NAME_LEN + POD_NS_LEN + 2], tail[CONTAINER_ID_LEN + 8];
	const char *slash = strrchr(pods_dir, '/');
	size_t wl, tl, n;
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (!ci->id[0])
		return false;
	snprintf(dir, sizeof(dir), "%.*s/containers", slash ? (int)(slash - pods_dir) : 1,
		 slash ? pods_dir : ".");
	snprintf(want, sizeof(want), "%s_%s_", ci->pod_name, ci->pod_namespace);
	snprintf(tail, sizeof(tail), "-%s.log", ci->id);
	wl = strlen(want);
	tl = strlen(tail);
	d = opendir(dir);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		n = strlen(de->d_name);
		if (n <= wl + tl || strncmp(de->d_name, want, wl) ||
		    strcmp(de->d_name + n - tl, tail) || n - wl - tl >= sizeof(ci->container_name))
			continue;
		snprintf(ci->container_name, sizeof(ci->container_name), "%.*s", (int)(n - wl - tl),
			 de->d_name + wl);
		found = true;
	}
	closedir(d);
	return found;
}

/* a pod of one container needs no id to name it */
static void only_container(const char *pods_dir, const char *pod_dir, struct container_info *ci)
{
	char path[PATH_MAX], name[CONTAINER_NAME_LEN] = "";
	struct dirent *de;
	int count = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", pods_dir, pod_dir);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && (de->d_type != DT_UNKNOWN ||
		    fstatat(dirfd(d), de->d_name, &st, 0) || !S_ISDIR(st.st_mode))))
			continue;
		/* a name past Kubernetes' 63 bytes is no container directory */
		if (count++ == 0 &&
		    snprintf(name, sizeof(name), "%s", de->d_name) >= (int)sizeof(name))
			count = 2;
	}
	closedir(d);
	if (count == 1)
		snprintf(ci->container_name, sizeof(ci->container_name), "%s", name);
}

bool container_names_from_logs(const char *pods_dir, struct container_info *ci)
{
	char pod_dir[NAME_MAX + 1];

	if (!ci->pod_uid[0] || !find_pod_dir(pods_dir, ci->pod_uid, ci, pod_dir, sizeof(pod_dir)))
		return false;
	if (!name_from_containers_dir(pods_dir, ci))
		only_container(pods_dir, pod_dir, ci);
	return true;
}

void container_service_name(struct container_info *ci, const char *annotation)
{
	if (annotation && annotation[0])
		snprintf(ci->service_name, sizeof(ci->service_name), "%s", annotation);
	else if (ci->pod_namespace[0] && ci->container_name[0])
		snprintf(ci->service_name, sizeof(ci->service_name), "%s/%s", ci->pod_namespace,
			 ci->container_name);
	else
		ci->service_name[0] = 0;
}
