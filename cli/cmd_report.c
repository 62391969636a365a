// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * culpert report FILE: where the bytes went, by span (a tree, or flat), or
 * by callsite inside one span, outside any span, or among old live objects.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "empty.h"
#include "escape.h"
#include "exact.h"
#include "json.h"
#include "log.h"
#include "losses.h"
#include "machinery.h"
#include "shorten.h"
#include "table.h"
#include "units.h"
#include "view.h"

#define CMD "report"
/* wrappers named on the "callsites skip wrappers" line; the rest are counted */
#define WRAPPERS_SHOWN 5
/* functions named on the line of those whose inclusive bytes are far from their own */
#define CUM_SHOWN 3
/* objects named on the line of unnamed callsites */
#define UNNAMED_SHOWN 3

enum report_mode { MODE_TREE, MODE_FLAT, MODE_CALLSITES, MODE_PROCESSES };

struct report {
	const char *file;
	enum report_mode mode;
	const char *span;	/* --span NAME */
	bool no_span;
	bool leaks;
	bool inuse;		/* load in-use values: --inuse, or --leaks */
	uint64_t min_age_ns;
	uint64_t top;
	bool json;
	bool wide;		/* --wide: full names, however long */
	bool by_caller;		/* --by caller: rows by each callsite's first caller */
	char **skip;		/* --skip GLOB */
	size_t n_skip;
	struct view *v;
	struct json j;
};

static const struct opt_spec report_specs[] = {
	OPT_LFLAG("flat", 'F',
		 "spans sorted by their own bytes: span samples bytes bytes%"),
	OPT_LFLAG("by-process", 'P',
		 "bytes by process (pid and comm), as attach --children records"),
	OPT_LARG("span", 's', "NAME",
		 "top callsites inside span NAME (or a ';'-joined span path)"),
	OPT_LFLAG("no-span", 'N',
		 "top callsites outside any span"),
	OPT_LARG("top", 't', "N",
		 "rows per list, children per node in the tree (default 20)"),
	OPT_LFLAG("inuse", 'i',
		 "live heap (inuse_space) instead of allocated bytes"),
	OPT_LFLAG("leaks", 'l',
		 "live allocations by callsite, with their age"),
	OPT_LARG("min-age", 'a', "D",
		 "with --leaks: only allocations at least D old (e.g. 30s)"),
	OPT_LARG("skip", 'S', "GLOB",
		 "look through functions matching GLOB (repeatable) as\n"
		 "allocation wrappers, beside the built-in list; an\n"
		 "unnamed frame by its name: 'nginx+0x278c4', 'nginx+*'"),
	OPT_LARG("by", 'B', "WHAT",
		 "callsite (default) or caller: each callsite's bytes\n"
		 "under its first named caller outside the wrappers and\n"
		 "--skip (a constructor's under the code calling it)"),
	OPT_LFLAG("wide", 'W',
		 "full names: no shortened C++ templates, no cut rows"),
	OPT_LARG("format", 'f', "FMT",
		 "text (default) or json"),
	OPT_FLAG("help", 'h',
		 "this help"),
	OPT_END,
};

static const struct opt_spec *const report_tables[] = { report_specs, NULL };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: culpert report FILE [OPTIONS]\n"
		"\n"
		"Where a profile's allocations went: the span tree by default.\n"
		"\n"
		"Options:\n");
	opt_spec_help(f, report_tables, 2, 21);
	fprintf(f,
		"\n"
		"EXAMPLES:\n"
		"  culpert report prof.pb.gz\n"
		"  culpert report prof.pb.gz --flat --top 10\n"
		"  culpert report prof.pb.gz --by-process\n"
		"  culpert report prof.pb.gz --span handle_request\n"
		"  culpert report prof.pb.gz --no-span --skip 'my_alloc*'\n"
		"  culpert report prof.pb.gz --by caller\n"
		"  culpert report prof.pb.gz --no-span --skip 'create*Object' --skip _sdsnewlen\n"
		"  culpert report prof.pb.gz --leaks --min-age 30s\n"
		"  culpert report prof.pb.gz --format json | jq .total_bytes\n");
}

static const char *value_name(const struct report *r)
{
	const struct pprof_profile *p = r->v->p;

	return pprof_profile__str(p, p->sample_types[r->v->bytes_idx].type);
}

static char *age_str(char *buf, size_t len, int64_t ns)
{
	/* ages are power-of-two buckets of seconds, lower bounds: say so */
	if (ns < 0)
		snprintf(buf, len, "-");
	else if (ns < 1000000000LL)
		snprintf(buf, len, "<1s");
	else {
		char d[32];

		snprintf(buf, len, ">=%s", format_duration(d, sizeof(d), (uint64_t)ns));
	}
	return buf;
}

/* --- text --------------------------------------------------------------------------- */

static void print_header(const struct report *r, const char *what, double total)
{
	char rate[48], b[32], name[4096], counts[96];

	printf("File:    %s\n", esc_text(name, sizeof(name), r->file));
	if (r->v->has_sampled)
		printf("Samples: %s", format_counts(counts, sizeof(counts), r->v));
	else
		printf("Records: %" PRIu64, r->v->n_value_samples);
	printf("  Rate: %s\n", format_rate(rate, sizeof(rate), r->v->rate));
	/* what the profile says it could not see, before any total is read */
	losses__print_of(stdout, r->v->p, NULL, false);
	printf("%-8s %s %s\n\n", what, format_bytes(b, sizeof(b), total),
	       esc_text(name, sizeof(name), value_name(r)));
}

/*
 * `buf` holds a span's children; deeper levels use the room after them.  A
 * span is the child of one parent only, so the levels down any path fit in
 * the n_spans of the whole buffer.
 */
static int tree_rows(const struct report *r, struct table *t, uint32_t parent, uint32_t *buf)
{
	const struct view *v = r->v;
	uint32_t *kids = buf;
	size_t n = view__children(v, parent, kids), i;
	double rest = 0;
	int ret = 0;

	for (i = 0; i < n && !ret; i++) {
		const struct view_span *s = &v->spans[kids[i]];
		char name[512], bytes[32], pct[32], self[48], sb[32];

		if (i >= r->top) {
			rest += s->total;
			continue;
		}
		snprintf(name, sizeof(name), "%*s%s", 2 * s->depth, "", s->name);
		snprintf(self, sizeof(self), "(%s)", format_bytes(sb, sizeof(sb), s->self));
		ret = table__add(t, (const char *const[]){ name, format_bytes(bytes, 32, s->total),
			format_pct(pct, 32, s->total, v->total_bytes), self });
		if (!ret)
			ret = tree_rows(r, t, kids[i], buf + n);
	}
	if (!ret && n > r->top) {
		char name[512], bytes[32], pct[32];
		uint32_t depth = parent == VIEW_NONE ? 0 : v->spans[parent].depth + 1;

		snprintf(name, sizeof(name), "%*s... %zu more", 2 * depth, "", n - (size_t)r->top);
		ret = table__add(t, (const char *const[]){ name, format_bytes(bytes, 32, rest),
			format_pct(pct, 32, rest, v->total_bytes), "" });
	}
	return ret;
}

static int print_tree(const struct report *r, uint32_t *buf)
{
	struct table *t = table__new("lrrl",
				     (const char *const[]){ "SPAN", "BYTES", "PCT", "(SELF)" });
	int ret = t ? tree_rows(r, t, VIEW_NONE, buf) : -1;
	char file[4096];

	if (t)
		cli_fit_names(t, 0, r->wide);
	print_header(r, "Total:", r->v->total_bytes);
	if (!ret)
		table__print(t, stdout);
	if (!ret)
		ret = exact_print(r->v, r->wide, stdout);
	/* a tree of one row: say where the detail is */
	if (!ret && !r->v->has_spans && r->v->n_value_samples)
		printf("\nNo span labels in this profile, so the tree is one row: "
		       "'culpert report %s --no-span' lists its callsites.\n"
		       "Spans come from span probes (include/culpert/span.h) or "
		       "'culpert-bpf attach --span-fn PATTERN'.\n",
		       esc_text(file, sizeof(file), r->file));
	table__free(t);
	return ret;
}

static int print_flat(const struct report *r, uint32_t *buf)
{
	const struct view *v = r->v;
	struct table *t = table__new("lrrr", (const char *const[]){ "SPAN", cli_count_heading(v),
				     "BYTES", "BYTES%" });
	size_t n = view__flat_spans(v, buf), i;
	char samples[32], bytes[32], pct[32], more[64];
	double rest = 0;
	int ret = t ? 0 : -1;

	for (i = 0; i < n && !ret; i++) {
		const struct view_span *s = &v->spans[buf[i]];

		if (i >= r->top) {
			rest += s->self;
			continue;
		}
		snprintf(samples, sizeof(samples), "%" PRIu64,
			 cli_count(v, s->self_samples, s->self_sampled));
		ret = table__add(t, (const char *const[]){ view__path(v, buf[i]), samples,
			format_bytes(bytes, 32, s->self),
			format_pct(pct, 32, s->self, v->total_bytes) });
	}
	if (!ret && n > r->top) {
		snprintf(more, sizeof(more), "... %zu more", n - (size_t)r->top);
		ret = table__add(t, (const char *const[]){ more, "", format_bytes(bytes, 32, rest),
			format_pct(pct, 32, rest, v->total_bytes) });
	}
	if (t)
		cli_fit_names(t, 0, r->wide);
	print_header(r, "Total:", v->total_bytes);
	if (!ret)
		table__print(t, stdout);
	table__free(t);
	return ret;
}

/* --- processes --------------------------------------------------------------------- */

/*
 * A row's pid and comm: its labels; without them (not attach --children)
 * the profile's target, whose samples they all are
 */
static void proc_names(const struct report *r, const struct view_proc *pr, char *pid, size_t plen,
		       const char **comm)
{
	const struct pprof_profile *p = r->v->p;
	const char *tpid = pprof_profile__comment(p, "target.pid");

	*comm = pprof_profile__str(p, pr->comm);
	if (pr->pid >= 0) {
		snprintf(pid, plen, "%" PRId64, pr->pid);
		return;
	}
	snprintf(pid, plen, "%s", !r->v->has_procs && tpid ? tpid : "?");
	*comm = !r->v->has_procs ? pprof_profile__comment(p, "target.comm") : "(no pid label)";
	if (!*comm)
		*comm = "?";
}

static int print_processes(const struct report *r)
{
	const struct view *v = r->v;
	struct table *t = table__new("rlrrr", (const char *const[]){ "PID", "COMM",
				     cli_count_heading(v), "BYTES", "BYTES%" });
	size_t n = 0, i;
	struct view_proc *rows = view__process_rows(v, &n);
	char samples[32], bytes[32], pct[32], more[64], pid[24], comm[256];
	const char *c;
	double rest = 0;
	int ret = t && rows ? 0 : -1;

	for (i = 0; i < n && !ret; i++) {
		if (i >= r->top) {
			rest += rows[i].bytes;
			continue;
		}
		proc_names(r, &rows[i], pid, sizeof(pid), &c);
		snprintf(samples, sizeof(samples), "%" PRIu64,
			 cli_count(v, rows[i].samples, rows[i].sampled));
		ret = table__add(t, (const char *const[]){ pid, esc_text(comm, sizeof(comm), c),
			samples, format_bytes(bytes, 32, rows[i].bytes),
			format_pct(pct, 32, rows[i].bytes, v->total_bytes) });
	}
	if (!ret && n > r->top) {
		snprintf(more, sizeof(more), "... %zu more", n - (size_t)r->top);
		ret = table__add(t, (const char *const[]){ more, "", "", format_bytes(bytes, 32, rest),
			format_pct(pct, 32, rest, v->total_bytes) });
	}
	print_header(r, "Total:", v->total_bytes);
	if (!ret)
		table__print(t, stdout);
	if (!ret && !v->has_procs)
		puts("\nThe profile has no pid labels: it is one process's "
		     "('culpert-bpf attach --children' labels each process of a tree).");
	table__free(t);
	free(rows);
	return ret;
}

/* --- callsites ---------------------------------------------------------------------- */

static bool rec_selected(const struct view_rec *rec, void *ctx)
{
	const struct report *r = ctx;
	const struct view_span *s = &r->v->spans[rec->span];

	if (r->no_span && !s->no_span)
		return false;
	if (r->span && !view__span_within(r->v, rec->span, r->span))
		return false;
	if (r->leaks && r->min_age_ns && (rec->age_ns < 0 || (uint64_t)rec->age_ns < r->min_age_ns))
		return false;
	return true;
}

/* sum the selected records by callsite (or caller); rows sorted by bytes; *total their sum */
static struct view_cs_row *callsite_rows(const struct report *r, size_t *n, double *total)
{
	if (r->by_caller)
		return view__caller_rows(r->v, rec_selected, (void *)r, n, total);
	return view__callsite_rows(r->v, rec_selected, (void *)r, n, total);
}

/* a row's inclusive bytes: its function's, from view__inclusive() (cum, of nf) */
static double row_cum(const struct report *r, const struct view_cs_row *row, const double *cum,
		      size_t nf)
{
	uint64_t fid = r->v->callsite_fid[row->callsite];

	return fid < nf && cum[fid] >= row->bytes ? cum[fid] : row->bytes;
}

/* the bytes of the rows whose callsite is unnamed */
static double unnamed_bytes(const struct report *r, const struct view_cs_row *rows, size_t n)
{
	double b = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (view__callsite_unnamed(r->v, rows[i].callsite))
			b += rows[i].bytes;
	return b;
}

static const char *selection_name(const struct report *r, char *buf, size_t len)
{
	char d[32];

	if (r->span)
		snprintf(buf, len, "span %s", r->span);
	else if (r->no_span)
		snprintf(buf, len, "outside any span");
	else
		snprintf(buf, len, "all spans");
	if (r->leaks && r->min_age_ns) {
		size_t l = strlen(buf);

		snprintf(buf + l, len - l, ", live for at least %s",
			 format_duration(d, sizeof(d), r->min_age_ns));
	}
	return buf;
}

/* one item of a comma-separated line; on a terminal, wrapped to its width */
static void line_item(const char *item, bool first, size_t *col, size_t width)
{
	size_t len = strlen(item);

	if (width && *col + 2 + len > width) {
		printf("%s\n  ", first ? "" : ",");
		*col = 2;
	} else {
		printf("%s", first ? " " : ", ");
		*col += first ? 1 : 2;
	}
	fputs(item, stdout);
	*col += len;
}

/* the wrappers the callsites were found past: "callsites skip wrappers: zmalloc (93.10% ...)" */
static int print_wrappers(const struct report *r, double total)
{
	struct view_wrap_row *w;
	/* the name through the text rule (escape.h), cut between characters: item holds it whole */
	char name[512], esc[2048], pct[32], item[sizeof(esc) + 64];
	size_t n, i, col = 0, width = cli_term_width();
	double rest = 0;

	w = view__wrapper_rows(r->v, rec_selected, (void *)r, &n);
	if (!w)
		return -1;
	if (n) {
		fputs("callsites skip wrappers:", stdout);
		col = strlen("callsites skip wrappers:");
	}
	for (i = 0; i < n; i++) {
		const char *full = r->v->wrappers[w[i].wrapper];

		if (i >= WRAPPERS_SHOWN) {
			rest += w[i].bytes;
			continue;
		}
		esc_text(esc, sizeof(esc),
			 r->wide ? full : shorten_name(full, strlen(full), name, sizeof(name)));
		snprintf(item, sizeof(item), "%s (%s%s)", esc,
			 format_pct(pct, sizeof(pct), w[i].bytes, total), i ? "" : " of the bytes");
		line_item(item, !i, &col, width);
	}
	if (n > WRAPPERS_SHOWN) {
		snprintf(item, sizeof(item), "%zu more (%s)", n - WRAPPERS_SHOWN,
			 format_pct(pct, sizeof(pct), rest, total));
		line_item(item, false, &col, width);
	}
	if (n)
		printf("\n\n");
	free(w);
	return 0;
}

/* is a function (by view__frame_fid()) the program's own, and named? */
static bool own_function(const struct view *v, uint64_t fid)
{
	const char *name;

	if (fid >= v->p->n_strings)
		return false;
	name = pprof_profile__str(v->p, (int64_t)fid);
	return name[0] && strcmp(name, "??") && !machinery__classify(name, v->opts.skip,
								      v->opts.n_skip);
}

struct cum_pick {
	uint64_t fid;
	double cum, self, depth;	/* depth: mean frames from the leaf */
};

static int cmp_pick(const void *a, const void *b)
{
	const struct cum_pick *x = a, *y = b;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->fid < y->fid ? -1 : x->fid > y->fid;
}

/*
 * The functions whose inclusive bytes exceed their own by more than half of
 * the selection (processMultibulkBuffer above redis' string constructors),
 * innermost (nearest the leaves on average) first: where the table's top
 * rows are not the code to change.
 */
static int print_cum_far(const struct report *r, const struct view_cs_row *rows, size_t n,
			 const double *cum, const double *depth, size_t nf, double total)
{
	const struct view *v = r->v;
	double *self = calloc(nf ?: 1, sizeof(*self));
	struct cum_pick *pick = NULL;
	char name[512], esc[2048], a[32], b[32], item[sizeof(esc) + 96];
	size_t i, k = 0, col, width = cli_term_width();

	if (!self)
		return -1;
	for (i = 0; i < n; i++)
		if (v->callsite_fid[rows[i].callsite] < nf)
			self[v->callsite_fid[rows[i].callsite]] += rows[i].bytes;
	for (i = 0; i < nf; i++)
		k += cum[i] - self[i] > total / 2 && own_function(v, i);
	pick = malloc((k ?: 1) * sizeof(*pick));
	if (!pick) {
		free(self);
		return -1;
	}
	k = 0;
	for (i = 0; i < nf; i++)
		if (cum[i] - self[i] > total / 2 && own_function(v, i))
			pick[k++] = (struct cum_pick){ i, cum[i], self[i], depth[i] / cum[i] };
	qsort(pick, k, sizeof(*pick), cmp_pick);
	if (k) {
		fputs("\nCUM beyond self by more than half of the bytes:", stdout);
		col = strlen("CUM beyond self by more than half of the bytes:");
		for (i = 0; i < k && i < CUM_SHOWN; i++) {
			const char *full = pprof_profile__str(v->p, (int64_t)pick[i].fid);

			esc_text(esc, sizeof(esc), r->wide ? full :
				 shorten_name(full, strlen(full), name, sizeof(name)));
			snprintf(item, sizeof(item), "%s (CUM %s, self %s)", esc,
				 format_pct(a, sizeof(a), pick[i].cum, total),
				 format_pct(b, sizeof(b), pick[i].self, total));
			line_item(item, !i, &col, width);
		}
		printf("\n'--by caller' sums each callsite under its first caller past the "
		       "wrappers.\n");
	}
	free(pick);
	free(self);
	return 0;
}

/* how much of the selection has unnamed callsites, in which objects, and how to name them */
static void print_unnamed(const struct report *r, const struct view_cs_row *rows, size_t n,
			  double total)
{
	char objs[UNNAMED_SHOWN][256], pct[32], esc[1024], file[4096], item[32];
	size_t i, k = 0, m, more = 0, col, width = cli_term_width();
	double b = unnamed_bytes(r, rows, n);

	if (b <= 0)
		return;
	for (i = 0; i < n; i++) {
		const char *cs = r->v->callsites[rows[i].callsite], *plus = strrchr(cs, '+');
		size_t len = plus ? (size_t)(plus - cs) : strlen(cs);

		if (!view__callsite_unnamed(r->v, rows[i].callsite))
			continue;
		for (m = 0; m < k && (strlen(objs[m]) != len || strncmp(objs[m], cs, len)); m++)
			;
		if (m < k)
			continue;
		if (k == UNNAMED_SHOWN) {
			more++;
			continue;
		}
		snprintf(objs[k++], sizeof(objs[0]), "%.*s", (int)len, cs);
	}
	printf("\nUnnamed callsites (no symbol at the address) hold %s of the bytes, in",
	       format_pct(pct, sizeof(pct), b, total));
	col = strlen("Unnamed callsites (no symbol at the address) hold 100.00% of the bytes, in");
	for (i = 0; i < k; i++)
		line_item(esc_text(esc, sizeof(esc), objs[i]), !i, &col, width);
	if (more) {
		snprintf(item, sizeof(item), "%zu more", more);
		line_item(item, false, &col, width);
	}
	printf(".\nTo name them, install their debug symbols (Debian: the package's -dbgsym\n"
	       "package) or set DEBUGINFOD_URLS, then run 'culpert symbolize %s'.\n",
	       esc_text(file, sizeof(file), r->file));
}

static int print_callsites(const struct report *r, const struct view_cs_row *rows, size_t n,
			   double total)
{
	const char *what = r->by_caller ? "CALLER" : "CALLSITE";
	const char *const leak_cols[] = { what, "OBJECTS", "BYTES", "PCT", "CUM", "OLDEST" };
	const char *const cols[] = { what, cli_count_heading(r->v), "OBJECTS", "BYTES", "PCT",
				     "CUM" };
	struct table *t = table__new("lrrrrr", r->leaks ? leak_cols : cols);
	char sel[512], esc[2048], c1[32], c2[32], bytes[32], pct[32], more[64], label[8192];
	char cp[32];
	double rest_b = 0, rest_o = 0;
	size_t i, nf = 0;
	double *depth = NULL, *cum = view__inclusive(r->v, rec_selected, (void *)r, &nf, &depth);
	int ret = t && cum ? 0 : -1;

	for (i = 0; i < n && !ret; i++) {
		if (i >= r->top) {
			rest_b += rows[i].bytes;
			rest_o += rows[i].objects;
			continue;
		}
		format_bytes(bytes, sizeof(bytes), rows[i].bytes);
		format_pct(pct, sizeof(pct), rows[i].bytes, total);
		format_pct(cp, sizeof(cp), row_cum(r, &rows[i], cum, nf), total);
		format_count(c1, sizeof(c1), rows[i].objects);
		view__callsite_label(r->v, rows[i].callsite, r->wide, label, sizeof(label));
		if (r->leaks)
			ret = table__add(t, (const char *const[]){ label, c1, bytes, pct, cp,
				age_str(c2, sizeof(c2), rows[i].oldest_ns) });
		else {
			snprintf(c2, sizeof(c2), "%" PRIu64,
				 cli_count(r->v, rows[i].samples, rows[i].sampled));
			ret = table__add(t, (const char *const[]){ label, c2, c1, bytes, pct, cp });
		}
	}
	if (!ret && n > r->top) {
		snprintf(more, sizeof(more), "... %zu more", n - (size_t)r->top);
		format_count(c1, sizeof(c1), rest_o);
		format_bytes(bytes, sizeof(bytes), rest_b);
		format_pct(pct, sizeof(pct), rest_b, total);
		if (r->leaks)
			ret = table__add(t, (const char *const[]){ more, c1, bytes, pct, "", "" });
		else
			ret = table__add(t, (const char *const[]){ more, "", c1, bytes, pct, "" });
	}
	if (t)
		cli_fit_names(t, 0, r->wide);
	print_header(r, "Total:", r->v->total_bytes);
	printf("%s: %s in %zu %s\n\n",
	       esc_text(esc, sizeof(esc), selection_name(r, sel, sizeof(sel))),
	       format_bytes(bytes, sizeof(bytes), total), n,
	       r->by_caller ? "callers" : "callsites");
	if (!ret)
		ret = print_wrappers(r, total);
	if (!ret)
		table__print(t, stdout);
	if (!ret && !r->by_caller)
		ret = print_cum_far(r, rows, n, cum, depth, nf, total);
	if (!ret)
		print_unnamed(r, rows, n, total);
	table__free(t);
	free(cum);
	free(depth);
	return ret;
}

/* a profile without one record: why, when the profile's comments say (empty.h) */
static bool empty_reason(const struct report *r, char *buf, size_t len)
{
	struct empty_facts f;

	if (r->v->n_samples)
		return false;
	empty_facts__from_profile(r->v->p, 0, &f);
	return empty__explain(&f, buf, len);
}

/* --- json ------------------------------------------------------------------------ */

/* what --top left out of the list before it: "<list>_more", which sorts right after "<list>" */
static void json_more(struct json *j, const char *list, size_t count, double bytes)
{
	char key[64];

	snprintf(key, sizeof(key), "%s_more", list);
	json_key(j, key);
	json_begin(j, '{');
	json_key(j, "bytes");
	json_round(j, bytes);
	json_kv_int(j, "count", (int64_t)count);
	json_end(j, '}');
}

static void json_pct(struct json *j, double part, double whole)
{
	if (whole)
		json_num(j, 100.0 * part / whole, 2);
	else
		json_null(j);
}

/* "sampled_allocs": the sampled allocations, null where the profile does not count them */
static void json_sampled(struct report *r, uint64_t sampled)
{
	json_key(&r->j, "sampled_allocs");
	if (r->v->has_sampled)
		json_int(&r->j, (int64_t)sampled);
	else
		json_null(&r->j);
}

static void json_span(struct report *r, uint32_t i, bool tree, uint32_t *buf);

/* `buf` as for tree_rows() */
static void json_children(struct report *r, uint32_t parent, uint32_t *buf)
{
	const struct view *v = r->v;
	const char *list = parent == VIEW_NONE ? "spans" : "children";
	uint32_t *kids = buf;
	size_t n = view__children(v, parent, kids), i;
	double rest = 0;

	json_key(&r->j, list);
	json_begin(&r->j, '[');
	for (i = 0; i < n; i++) {
		if (i < r->top)
			json_span(r, kids[i], true, buf + n);
		else
			rest += v->spans[kids[i]].total;
	}
	json_end(&r->j, ']');
	if (n > r->top)
		json_more(&r->j, list, n - (size_t)r->top, rest);
}

/* "exact": the span path's exact totals, null when the profile has some but not this path's */
static void json_exact_of(struct report *r, uint32_t i)
{
	const struct span_total *t;

	if (!r->v->totals.present || r->v->spans[i].no_span)
		return;
	t = span_totals__find(&r->v->totals, view__path(r->v, i));
	json_key(&r->j, "exact");
	if (t)
		exact_json_span(&r->j, t);
	else
		json_null(&r->j);
}

static void json_span(struct report *r, uint32_t i, bool tree, uint32_t *buf)
{
	const struct view_span *s = &r->v->spans[i];
	struct json *j = &r->j;

	json_begin(j, '{');
	json_key(j, "bytes");
	json_round(j, tree ? s->total : s->self);
	if (tree)
		json_children(r, i, buf);
	json_key(j, "name");
	json_str(j, s->name);
	json_key(j, "no_span");
	json_bool(j, s->no_span);
	json_key(j, "objects");
	json_round(j, tree ? s->total_objects : s->self_objects);
	json_key(j, "path");
	json_str(j, view__path(r->v, i));
	json_key(j, "pct");
	json_pct(j, tree ? s->total : s->self, r->v->total_bytes);
	json_kv_int(j, "records", (int64_t)(tree ? s->total_samples : s->self_samples));
	json_sampled(r, tree ? s->total_sampled : s->self_sampled);
	if (tree) {
		json_key(j, "self_bytes");
		json_round(j, s->self);
	}
	json_exact_of(r, i);
	json_end(j, '}');
}

static void json_flat(struct report *r, uint32_t *buf)
{
	size_t n = view__flat_spans(r->v, buf), i;
	double rest = 0;

	json_key(&r->j, "spans");
	json_begin(&r->j, '[');
	for (i = 0; i < n; i++) {
		if (i < r->top)
			json_span(r, buf[i], false, NULL);
		else
			rest += r->v->spans[buf[i]].self;
	}
	json_end(&r->j, ']');
	if (n > r->top)
		json_more(&r->j, "spans", n - (size_t)r->top, rest);
}

static int json_callsites(struct report *r, const struct view_cs_row *rows, size_t n,
			  double total)
{
	struct json *j = &r->j;
	double rest = 0;
	size_t i, nf = 0;
	double *depth = NULL, *cum = view__inclusive(r->v, rec_selected, (void *)r, &nf, &depth);

	free(depth);
	if (!cum)
		return -1;
	json_key(j, "by");
	json_str(j, r->by_caller ? "caller" : "callsite");

	json_key(j, "callsites");
	json_begin(j, '[');
	for (i = 0; i < n; i++) {
		if (i >= r->top) {
			rest += rows[i].bytes;
			continue;
		}
		json_begin(j, '{');
		json_key(j, "bytes");
		json_round(j, rows[i].bytes);
		json_key(j, "callsite");
		json_str(j, r->v->callsites[rows[i].callsite]);
		json_key(j, "cum_bytes");
		json_round(j, row_cum(r, &rows[i], cum, nf));
		json_key(j, "objects");
		json_round(j, rows[i].objects);
		if (r->leaks) {
			json_key(j, "oldest_age_ns");
			if (rows[i].oldest_ns >= 0)
				json_int(j, rows[i].oldest_ns);
			else
				json_null(j);
		}
		json_key(j, "pct");
		json_pct(j, rows[i].bytes, total);
		json_kv_int(j, "records", (int64_t)rows[i].samples);
		json_sampled(r, rows[i].sampled);
		json_end(j, '}');
	}
	json_end(j, ']');
	if (n > r->top)
		json_more(j, "callsites", n - (size_t)r->top, rest);
	free(cum);
	return 0;
}

/* "wrappers": what the callsites were found past, by bytes */
static int json_wrappers(struct report *r, double total)
{
	struct json *j = &r->j;
	struct view_wrap_row *w;
	size_t n, i;

	w = view__wrapper_rows(r->v, rec_selected, (void *)r, &n);
	if (!w)
		return -1;
	json_key(j, "wrappers");
	json_begin(j, '[');
	for (i = 0; i < n; i++) {
		json_begin(j, '{');
		json_key(j, "bytes");
		json_round(j, w[i].bytes);
		json_key(j, "name");
		json_str(j, r->v->wrappers[w[i].wrapper]);
		json_key(j, "pct");
		json_pct(j, w[i].bytes, total);
		json_end(j, '}');
	}
	json_end(j, ']');
	free(w);
	return 0;
}

static int json_processes(struct report *r)
{
	struct json *j = &r->j;
	size_t n = 0, i;
	struct view_proc *rows = view__process_rows(r->v, &n);
	char pid[24];
	const char *c;
	double rest = 0;

	if (!rows)
		return -1;
	for (i = r->top; i < n; i++)
		rest += rows[i].bytes;
	json_key(j, "processes");
	json_begin(j, '[');
	for (i = 0; i < n && i < r->top; i++) {
		proc_names(r, &rows[i], pid, sizeof(pid), &c);
		json_begin(j, '{');
		json_key(j, "bytes");
		json_round(j, rows[i].bytes);
		json_key(j, "comm");
		json_str(j, c);
		json_key(j, "objects");
		json_round(j, rows[i].objects);
		json_key(j, "pct");
		json_pct(j, rows[i].bytes, r->v->total_bytes);
		json_kv_int(j, "pid", strtoll(pid, NULL, 10));
		json_sampled(r, rows[i].sampled);
		json_end(j, '}');
	}
	json_end(j, ']');
	if (n > r->top)
		json_more(j, "processes", n - (size_t)r->top, rest);
	free(rows);
	return 0;
}

static int print_json(struct report *r, uint32_t *buf)
{
	static const char *const modes[] = { "tree", "flat", "callsites", "processes" };
	struct json *j = &r->j;
	struct view_cs_row *rows = NULL;
	double total = 0;
	char why[1024];
	size_t n = 0;

	if (r->mode == MODE_CALLSITES && !(rows = callsite_rows(r, &n, &total)))
		return -1;
	json_init(j, stdout);
	json_begin(j, '{');
	if (r->mode == MODE_CALLSITES && json_callsites(r, rows, n, total)) {
		free(rows);
		return -1;
	}
	if (r->mode == MODE_PROCESSES && json_processes(r))
		return -1;
	if (empty_reason(r, why, sizeof(why))) {
		json_key(j, "empty_reason");
		json_str(j, why);
	}
	exact_json(j, r->v);
	json_key(j, "file");
	json_str(j, r->file);
	if (r->mode == MODE_CALLSITES) {
		json_key(j, "leaks");
		json_bool(j, r->leaks);
		if (r->leaks) {
			json_kv_int(j, "min_age_ns", (int64_t)r->min_age_ns);
		}
	}
	losses__json_of(j, r->v->p);
	json_key(j, "mode");
	json_str(j, modes[r->mode]);
	/* an unknown rate (none, or not positive, as the text says) is null */
	json_key(j, "rate");
	if (r->v->rate > 0)
		json_int(j, r->v->rate);
	else
		json_null(j);
	json_kv_int(j, "records", (int64_t)r->v->n_value_samples);
	json_key(j, "sample_type");
	json_str(j, value_name(r));
	json_sampled(r, r->v->n_sampled);
	if (r->mode == MODE_CALLSITES) {
		json_key(j, "selected_bytes");
		json_round(j, total);
		json_key(j, "span");
		if (r->span)
			json_str(j, r->span);
		else if (r->no_span)
			json_str(j, VIEW_NO_SPAN);
		else
			json_null(j);
	}
	if (r->mode == MODE_TREE)
		json_children(r, VIEW_NONE, buf);
	else if (r->mode == MODE_FLAT)
		json_flat(r, buf);
	json_key(j, "total_bytes");
	json_round(j, r->v->total_bytes);
	json_key(j, "total_objects");
	json_round(j, r->v->total_objects);
	if (r->mode == MODE_CALLSITES) {
		json_key(j, "unnamed_bytes");
		json_round(j, unnamed_bytes(r, rows, n));
	}
	if (r->mode == MODE_CALLSITES && json_wrappers(r, total)) {
		free(rows);
		return -1;
	}
	json_end(j, '}');
	free(rows);
	return 0;
}

/* --- command ---------------------------------------------------------------------- */


static int parse_args(struct report *r, int argc, char **argv)
{
	static const char *const formats[] = { "text", "json", NULL };
	static const char *const bys[] = { "callsite", "caller", NULL };
	bool flat = false, min_age = false, by = false, procs = false;
	int c;

	r->top = 20;
	while ((c = opt_spec_next(argc, argv, report_tables)) != -1) {
		switch (c) {
		case 'F': flat = true; break;
		case 'P': procs = true; break;
		case 's': r->span = optarg; break;
		case 'N': r->no_span = true; break;
		case 'i': r->inuse = true; break;
		case 'l': r->leaks = true; break;
		case 'W': r->wide = true; break;
		case 'B':
			if ((c = opt_choice("--by", optarg, bys)) < 0)
				return CMD_ERROR;
			r->by_caller = c == 1;
			by = true;
			break;
		case 'S':
			if (opt_append(&r->skip, &r->n_skip, optarg))
				return CMD_ERROR;
			break;
		case 't':
			if (opt_count("--top", optarg, 0, INT32_MAX, &r->top))
				return CMD_ERROR;
			break;
		case 'a':
			if (opt_duration("--min-age", optarg, 0, &r->min_age_ns))
				return CMD_ERROR;
			min_age = true;
			break;
		case 'f':
			if ((c = opt_choice("--format", optarg, formats)) < 0)
				return CMD_ERROR;
			r->json = c == 1;
			break;
		case 'h':
			usage(stdout);
			return CMD_HELP;
		default:
			return CMD_ERROR;
		}
	}
	if (cli_one_file(argc, argv, &r->file))
		return CMD_ERROR;
	if (r->span && r->no_span)
		return opt_error("--span and --no-span exclude each other");
	if (flat && (r->span || r->no_span || r->leaks))
		return opt_error("--flat lists spans; --span, --no-span and --leaks "
				 "list callsites");
	if (flat && by)
		return opt_error("--flat lists spans; --by groups callsites");
	if (procs && (flat || by || r->span || r->no_span || r->leaks))
		return opt_error("--by-process lists processes; --flat, --by, --span, --no-span and "
				 "--leaks list spans or callsites");
	if (min_age && !r->leaks)
		return opt_error("--min-age goes with --leaks");
	if (r->inuse && r->leaks)
		pr_info("--leaks reads in-use values already\n");
	r->inuse |= r->leaks;
	r->mode = flat ? MODE_FLAT :
		  r->span || r->no_span || r->leaks || by ? MODE_CALLSITES :
		  procs ? MODE_PROCESSES : MODE_TREE;
	return CMD_OK;
}

/* the profile's view, and why the mode asked for cannot be had from it; 0 or CMD_ERROR */
static int load(struct report *r)
{
	struct view_opts vo = { .value = r->inuse ? VIEW_INUSE : VIEW_ALLOC };

	vo.skip = (const char *const *)r->skip;
	vo.n_skip = r->n_skip;
	/* the callsite table's CUM column walks each record's stack */
	vo.stacks = r->mode == MODE_CALLSITES;
	vo.callers = r->by_caller;
	r->v = cli_load(r->file, &vo);
	if (!r->v)
		return CMD_ERROR;
	if (r->leaks && losses__refuse_leaks(r->v->p, r->file))
		return CMD_ERROR;
	if (r->leaks && r->min_age_ns && !r->v->has_age) {
		pr_error("%s: the profile has in-use data but no age_ns labels, so --min-age cannot "
			 "select by age; drop --min-age to list every live allocation\n", r->file);
		return CMD_ERROR;
	}
	if (r->span && !r->v->has_spans) {
		pr_error("%s: the profile has no spans; 'culpert report %s --no-span' lists its callsites\n",
			 r->file, r->file);
		return CMD_ERROR;
	}
	if (r->span && !view__has_span(r->v, r->span)) {
		pr_error("%s: no span named '%s'; 'culpert report %s --flat' lists the spans\n",
			 r->file, r->span, r->file);
		return CMD_ERROR;
	}
	return 0;
}

int cmd_report(int argc, char **argv)
{
	struct report r = { 0 };
	struct view_cs_row *rows = NULL;
	uint32_t *buf = NULL;
	double total = 0;
	char why[1024];
	size_t n = 0;
	int ret;

	ret = parse_args(&r, argc, argv);
	if (ret) {
		free(r.skip);
		return ret == CMD_HELP ? CMD_OK : CMD_ERROR;
	}
	if (load(&r)) {
		view__free(r.v);
		free(r.skip);
		return CMD_ERROR;
	}
	buf = malloc((r.v->n_spans ?: 1) * sizeof(*buf));
	if (!buf)
		ret = -1;
	else if (r.json)
		ret = print_json(&r, buf);
	else if (r.mode == MODE_TREE)
		ret = print_tree(&r, buf);
	else if (r.mode == MODE_FLAT)
		ret = print_flat(&r, buf);
	else if (r.mode == MODE_PROCESSES)
		ret = print_processes(&r);
	else if (!(rows = callsite_rows(&r, &n, &total)))
		ret = -1;
	else
		ret = print_callsites(&r, rows, n, total);
	if (!ret && !r.json && empty_reason(&r, why, sizeof(why))) {
		fputs("\nThe profile is empty: ", stdout);
		esc_text_fputs(why, stdout);
		puts(".");
	}
	if (ret)
		pr_error("out of memory formatting the report\n");
	free(rows);
	free(buf);
	view__free(r.v);
	free(r.skip);
	return ret ? CMD_ERROR : CMD_OK;
}
