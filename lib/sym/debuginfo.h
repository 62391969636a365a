/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Finding an object's files by GNU build ID: the binary (where the profile
 * says it was mapped, --binary-dir, .build-id trees) and its separate debug
 * info (.build-id trees under --debug-dir and /usr/lib/debug,
 * .gnu_debuglink, and debuginfod servers when DEBUGINFOD_URLS is set).
 * Every file is checked against the build ID: a path alone never matches.
 */
#ifndef CULPERT_DEBUGINFO_H
#define CULPERT_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>

struct debuginfo;
struct elfobj;

/* the default debug directory of Debian, Fedora and GDB */
#define DEBUGINFO_SYSTEM_DIR "/usr/lib/debug"

struct debuginfo_opts {
	size_t sz;
	const char *const *debug_dirs;	/* searched in order, before /usr/lib/debug */
	size_t n_debug_dirs;
	const char *const *binary_dirs;	/* searched recursively for files by build ID */
	size_t n_binary_dirs;
	bool no_debuginfod;		/* do not ask servers even when DEBUGINFOD_URLS is set */
};

/* what a search tried, for the user: phrases joined with "; " */
struct search_notes {
	char buf[1024];
	size_t len;
};

void search_notes__add(struct search_notes *n, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* NULL and errno set on failure */
struct debuginfo *debuginfo__new(const struct debuginfo_opts *o);
void debuginfo__free(struct debuginfo *d);

/*
 * The binary with lower-case hex build ID `build_id` on this machine: `path`
 * (where the profile says it was mapped) when its build ID matches, else a
 * file of a --binary-dir, else DIR/.build-id/xx/rest of a debug directory.
 * NULL when nothing matches; notes then say what was tried.
 */
struct elfobj *debuginfo__find_binary(struct debuginfo *d, const char *build_id, const char *path,
				      struct search_notes *notes);
/*
 * Separate debug info of the object: DIR/.build-id/xx/rest.debug of each
 * debug directory, then the .gnu_debuglink of bin (may be NULL) next to
 * bin_path and under the debug directories.  With an empty build_id only
 * the debuglink (checked by its CRC) can match.
 */
struct elfobj *debuginfo__find_debug(struct debuginfo *d, const char *build_id, struct elfobj *bin,
				     const char *orig_path, struct search_notes *notes);
/* DEBUGINFOD_URLS names servers (whether or not this run may use them) */
bool debuginfo__urls_set(void);
/* ask the debuginfod servers for the debug info (debug = true) or the executable */
struct elfobj *debuginfo__fetch(struct debuginfo *d, const char *build_id, bool debug,
				struct search_notes *notes);

#endif /* CULPERT_DEBUGINFO_H */
