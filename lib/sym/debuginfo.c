// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>

#include "debuginfo.h"
#include "elfobj.h"
#include "hashtab.h"
#include "log.h"
#include "vec.h"

/* --binary-dir trees are walked this deep, no deeper: a stray '/' must not scan the disk */
#define BINDIR_MAX_DEPTH 8

struct bin_entry {
	char *build_id;
	char *path;
};

struct debuginfo {
	char **debug_dirs;		/* the user's, then the system's */
	size_t n_debug_dirs;
	char **binary_dirs;
	size_t n_binary_dirs;
	struct bin_entry *bins;		/* build ID index of the binary dirs, built on first use */
	size_t n_bins, cap_bins;
	struct hashtab bin_ht;
	bool bins_indexed;
	bool no_debuginfod;
	debuginfod_client *dfd;
	bool dfd_started;
	bool dfd_broken;		/* a server failed: stop asking for this run */
};

void search_notes__add(struct search_notes *n, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (n->len >= sizeof(n->buf) - 1)
		return;
	if (n->len) {
		w = snprintf(n->buf + n->len, sizeof(n->buf) - n->len, "; ");
		n->len += (size_t)w;
		if (n->len >= sizeof(n->buf) - 1)
			return;
	}
	va_start(ap, fmt);
	w = vsnprintf(n->buf + n->len, sizeof(n->buf) - n->len, fmt, ap);
	va_end(ap);
	n->len += w > 0 ? (size_t)w : 0;
	if (n->len > sizeof(n->buf) - 1)
		n->len = sizeof(n->buf) - 1;
}

/* a path built from parts; false when it does not fit (it then names nothing to open) */
static bool __attribute__((format(printf, 3, 4))) path_fmt(char *buf, size_t len,
							    const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < len;
}

static char **copy_dirs(const char *const *dirs, size_t n, const char *extra, size_t *out_n)
{
	char **v = calloc(n + 2, sizeof(*v));
	size_t i, k = 0;

	if (!v)
		return NULL;
	for (i = 0; i < n; i++)
		if (!(v[k++] = strdup(dirs[i])))
			goto err;
	if (extra && !(v[k++] = strdup(extra)))
		goto err;
	*out_n = k;
	return v;
err:
	while (k)
		free(v[--k]);
	free(v);
	return NULL;
}

struct debuginfo *debuginfo__new(const struct debuginfo_opts *o)
{
	struct debuginfo *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->no_debuginfod = o->no_debuginfod;
	d->debug_dirs = copy_dirs(o->debug_dirs, o->n_debug_dirs, DEBUGINFO_SYSTEM_DIR,
				  &d->n_debug_dirs);
	d->binary_dirs = copy_dirs(o->binary_dirs, o->n_binary_dirs, NULL, &d->n_binary_dirs);
	if (!d->debug_dirs || !d->binary_dirs) {
		debuginfo__free(d);
		errno = ENOMEM;
		return NULL;
	}
	return d;
}

static void free_dirs(char **v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void debuginfo__free(struct debuginfo *d)
{
	size_t i;

	if (!d)
		return;
	free_dirs(d->debug_dirs, d->n_debug_dirs);
	free_dirs(d->binary_dirs, d->n_binary_dirs);
	for (i = 0; i < d->n_bins; i++) {
		free(d->bins[i].build_id);
		free(d->bins[i].path);
	}
	free(d->bins);
	hashtab__free(&d->bin_ht);
	if (d->dfd)
		debuginfod_end(d->dfd);
	free(d);
}

/*
 * path as an object with exactly this build ID.  A file that exists with
 * another build ID is a different build of the object: say so, it is the
 * mistake a user most needs to hear about.
 */
static struct elfobj *open_matching(const char *path, const char *build_id,
				    struct search_notes *notes)
{
	struct elfobj *obj = elfobj__open(path);

	if (!obj) {
		if (errno != ENOENT && errno != ENOTDIR)
			search_notes__add(notes, "cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	if (!strcmp(elfobj__build_id(obj), build_id))
		return obj;
	search_notes__add(notes, "%s has build ID %s, a different build", path,
			  *elfobj__build_id(obj) ? elfobj__build_id(obj) : "(none)");
	elfobj__free(obj);
	return NULL;
}

static bool build_id_path(char *buf, size_t len, const char *dir, const char *build_id,
			  const char *suffix)
{
	return path_fmt(buf, len, "%s/.build-id/%.2s/%s%s", dir, build_id, build_id + 2, suffix);
}

/* --- the --binary-dir index ------------------------------------------------------------ */

static bool bin_eq(uint32_t idx, const void *key, void *ctx)
{
	return !strcmp(((struct debuginfo *)ctx)->bins[idx].build_id, key);
}

static void index_file(struct debuginfo *d, const char *path)
{
	struct elfobj *obj = elfobj__open(path);
	const char *bid;
	uint64_t h;
	uint32_t idx;

	if (!obj)
		return;
	bid = elfobj__build_id(obj);
	h = hash_bytes(bid, strlen(bid), 0);
	/* the first file found with a build ID wins; the others are copies of it */
	if (*bid && !hashtab__find(&d->bin_ht, h, bid, bin_eq, d, &idx) &&
	    !vec_reserve(&d->bins, &d->cap_bins, d->n_bins + 1, sizeof(*d->bins))) {
		struct bin_entry *e = &d->bins[d->n_bins];

		e->build_id = strdup(bid);
		e->path = strdup(path);
		if (e->build_id && e->path && !hashtab__insert(&d->bin_ht, h, (uint32_t)d->n_bins)) {
			d->n_bins++;
		} else {
			free(e->build_id);
			free(e->path);
		}
	}
	elfobj__free(obj);
}

static void index_dir(struct debuginfo *d, const char *dir, int depth)
{
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *dp;

	dp = opendir(dir);
	if (!dp) {
		if (!depth)
			pr_warn("cannot read --binary-dir %s: %s\n", dir, strerror(errno));
		return;
	}
	while ((de = readdir(dp))) {
		if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
			continue;
		if (!path_fmt(path, sizeof(path), "%s/%s", dir, de->d_name))
			continue;
		/* lstat: a symlinked directory could loop; a symlinked file is followed by open */
		if (lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode) && depth < BINDIR_MAX_DEPTH)
			index_dir(d, path, depth + 1);
		else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
			index_file(d, path);
	}
	closedir(dp);
}

static const char *indexed_binary(struct debuginfo *d, const char *build_id)
{
	uint32_t idx;
	size_t i;

	if (!d->bins_indexed) {
		d->bins_indexed = true;
		for (i = 0; i < d->n_binary_dirs; i++)
			index_dir(d, d->binary_dirs[i], 0);
		pr_debug("--binary-dir: %zu objects with build IDs\n", d->n_bins);
	}
	if (!hashtab__find(&d->bin_ht, hash_bytes(build_id, strlen(build_id), 0), build_id,
			   bin_eq, d, &idx))
		return NULL;
	return d->bins[idx].path;
}

/* --- binaries ------------------------------------------------------------------------- */

struct elfobj *debuginfo__find_binary(struct debuginfo *d, const char *build_id, const char *path,
				      struct search_notes *notes)
{
	char buf[PATH_MAX];
	struct elfobj *obj;
	const char *p;
	size_t i;

	if (path && *path) {
		obj = open_matching(path, build_id, notes);
		if (obj)
			return obj;
	}
	p = indexed_binary(d, build_id);
	if (p) {
		obj = open_matching(p, build_id, notes);
		if (obj)
			return obj;
	}
	for (i = 0; i < d->n_debug_dirs; i++) {
		if (!build_id_path(buf, sizeof(buf), d->debug_dirs[i], build_id, ""))
			continue;
		obj = open_matching(buf, build_id, notes);
		if (obj)
			return obj;
	}
	if (d->n_binary_dirs)
		search_notes__add(notes, "not in --binary-dir");
	return NULL;
}

/* --- separate debug info ------------------------------------------------------------------ */

static int file_crc32(const char *path, uint32_t *out)
{
	unsigned char buf[65536];
	uLong crc = crc32(0, NULL, 0);
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		crc = crc32(crc, buf, (uInt)n);
	close(fd);
	if (n < 0)
		return -EIO;
	*out = (uint32_t)crc;
	return 0;
}

/* a .gnu_debuglink target: the build ID must match, or without one the CRC */
static struct elfobj *open_debuglink(const char *path, const char *build_id, uint32_t crc,
				     struct search_notes *notes)
{
	uint32_t got;

	if (*build_id)
		return open_matching(path, build_id, notes);
	if (file_crc32(path, &got))
		return NULL;
	if (got != crc) {
		search_notes__add(notes, "%s does not match the .gnu_debuglink CRC", path);
		return NULL;
	}
	return elfobj__open(path);
}

static void dir_of(char *buf, size_t len, const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	if (!slash)
		snprintf(buf, len, ".");
	else
		snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

/* where GDB looks for a debuglink name: next to the object, in .debug/, under each debug dir */
static struct elfobj *find_debuglink(struct debuginfo *d, const char *build_id, struct elfobj *bin,
				     const char *orig_path, struct search_notes *notes)
{
	char bin_dir[PATH_MAX], orig_dir[PATH_MAX], buf[PATH_MAX];
	struct elfobj *obj = NULL;
	const char *name;
	GElf_Word crc;
	size_t i;

	name = dwelf_elf_gnu_debuglink(elfobj__elf(bin), &crc);
	if (!name || strchr(name, '/'))
		return NULL;
	dir_of(bin_dir, sizeof(bin_dir), elfobj__path(bin));
	dir_of(orig_dir, sizeof(orig_dir), orig_path);
	/* the object may name itself as its debuglink: that is no debug info */
	if (path_fmt(buf, sizeof(buf), "%s/%s", bin_dir, name) && strcmp(buf, elfobj__path(bin)))
		obj = open_debuglink(buf, build_id, crc, notes);
	if (!obj && path_fmt(buf, sizeof(buf), "%s/.debug/%s", bin_dir, name))
		obj = open_debuglink(buf, build_id, crc, notes);
	for (i = 0; !obj && i < d->n_debug_dirs; i++) {
		if (path_fmt(buf, sizeof(buf), "%s%s/%s", d->debug_dirs[i],
			     *orig_dir == '/' ? orig_dir : "", name))
			obj = open_debuglink(buf, build_id, crc, notes);
	}
	if (!obj)
		search_notes__add(notes, "no .gnu_debuglink file %s", name);
	return obj;
}

struct elfobj *debuginfo__find_debug(struct debuginfo *d, const char *build_id, struct elfobj *bin,
				     const char *orig_path, struct search_notes *notes)
{
	char buf[PATH_MAX];
	struct elfobj *obj;
	size_t i;

	for (i = 0; *build_id && i < d->n_debug_dirs; i++) {
		if (!build_id_path(buf, sizeof(buf), d->debug_dirs[i], build_id, ".debug"))
			continue;
		obj = open_matching(buf, build_id, notes);
		if (obj)
			return obj;
	}
	if (*build_id)
		search_notes__add(notes, "no .build-id/%.2s/%s.debug under %s%s", build_id,
				  build_id + 2, d->n_debug_dirs > 1 ? "--debug-dir or " : "",
				  DEBUGINFO_SYSTEM_DIR);
	return bin ? find_debuglink(d, build_id, bin, orig_path, notes) : NULL;
}

/* --- debuginfod ----------------------------------------------------------------------------- */

bool debuginfo__urls_set(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return urls && *urls;
}

/* true when debuginfod servers are configured and still answering */
static bool debuginfo__servers(struct debuginfo *d)
{
	if (d->no_debuginfod || d->dfd_broken || !debuginfo__urls_set())
		return false;
	if (!d->dfd_started) {
		d->dfd_started = true;
		d->dfd = debuginfod_begin();
		if (!d->dfd)
			pr_warn("debuginfod: cannot start the client: %s\n", strerror(errno));
	}
	return d->dfd != NULL;
}

struct elfobj *debuginfo__fetch(struct debuginfo *d, const char *build_id, bool debug,
				struct search_notes *notes)
{
	const char *what = debug ? "debug info" : "executable";
	struct elfobj *obj;
	char *path = NULL;
	int fd;

	if (!*build_id || !debuginfo__servers(d))
		return NULL;
	fd = debug ? debuginfod_find_debuginfo(d->dfd, (const unsigned char *)build_id, 0, &path)
		   : debuginfod_find_executable(d->dfd, (const unsigned char *)build_id, 0, &path);
	if (fd < 0) {
		if (fd == -ENOENT) {
			search_notes__add(notes, "no %s on the debuginfod servers", what);
			return NULL;
		}
		/* a server that is down fails every lookup the same way: say it once, stop asking */
		pr_warn("debuginfod (DEBUGINFOD_URLS=%s): cannot fetch the %s of build ID %s: %s; "
			"continuing without debuginfod\n", getenv("DEBUGINFOD_URLS"), what, build_id,
			strerror(-fd));
		search_notes__add(notes, "debuginfod failed: %s", strerror(-fd));
		d->dfd_broken = true;
		return NULL;
	}
	close(fd);
	obj = open_matching(path, build_id, notes);
	if (obj)
		pr_debug("debuginfod: %s of %s is %s\n", what, build_id, path);
	free(path);
	return obj;
}
