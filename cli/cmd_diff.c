// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * culpert diff BEFORE AFTER: span by span, what grew and what shrank, and
 * an exit code a CI job can gate on.  A row is a span's own bytes (those
 * allocated while it was the innermost open span, as in `report --flat`), so
 * one change shows up in one row; --tree shows inclusive totals per node.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "diff_rows.h"
#include "escape.h"
#include "json.h"
#include "log.h"
#include "losses.h"
#include "shorten.h"
#include "table.h"
#include "units.h"
#include "view.h"

#define CMD "diff"
#define DIFF_SCHEMA_VERSION 1

enum diff_format { FMT_TEXT, FMT_MARKDOWN, FMT_JSON };

struct diff {
	const char *files[2];
	struct view *v[2];
	struct diff_opts o;
	uint64_t top;
	bool no_fail, tree, inuse;
	bool wide;		/* --wide: callsites' full names */
	char **skip;		/* --skip GLOB: wrappers to look through (--by callsite) */
	size_t n_skip;
	enum diff_format format;
	struct diff_result res;
	char *key;		/* a row's key as printed: VIEW_PATH_MAX bytes */
};

static const struct opt_spec diff_specs[] = {
	OPT_LARG("threshold-bytes", 'b', "SIZE",
		 "smallest change that counts (default 4096)"),
	OPT_LARG("threshold-pct", 'p', "P",
		 "smallest relative change that counts (default 5)"),
	OPT_LARG("min-span-bytes", 'm', "SIZE",
		 "spans under this on both sides are quiet (default 0,\n"
		 "or $CULPERT_MIN_SPAN_BYTES; the option wins)"),
	OPT_LARG("min-confidence", 'c', "K",
		 "changes under K standard errors are quiet\n"
		 "(e.g. 3sigma; default 0: off)"),
	OPT_LARG("threshold-p99-pct", 'P', "P",
		 "exact totals: p99 bytes per instance grown by P%\n"
		 "is a regression (default 0: off)"),
	OPT_LARG("by", 'y', "path|name|callsite",
		 "match spans by path (default) or innermost name, or\n"
		 "compare callsites over all spans"),
	OPT_LARG("skip", 'S', "GLOB",
		 "with --by callsite: look through functions matching\n"
		 "GLOB as allocation wrappers (repeatable)"),
	OPT_LFLAG("wide", 'W',
		 "full callsite names, no shortened C++ templates"),
	OPT_LARG("top", 't', "N",
		 "rows per table, children per node (--tree); default 20"),
	OPT_LFLAG("tree", 'T',
		 "the span tree with before/after/delta per node"),
	OPT_LFLAG("inuse", 'i',
		 "compare live heap (inuse_space) instead of allocations"),
	OPT_LFLAG("no-fail", 'n',
		 "exit 0 even when something regressed"),
	OPT_LARG("format", 'f', "FMT",
		 "text (default), markdown, json"),
	OPT_FLAG("help", 'h',
		 "this help"),
	OPT_END,
};

static const struct opt_spec *const diff_tables[] = { diff_specs, NULL };

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: culpert diff BEFORE AFTER [OPTIONS]\n"
		"\n"
		"Compare two profiles span by span.  Each span (matched by span path, or by\n"
		"innermost name with --by name) is classified, in this order:\n"
		"  quiet        max(before, after) < --min-span-bytes\n"
		"  new          before = 0 and after >= --threshold-bytes (else quiet)\n"
		"  gone         after = 0 and before >= --threshold-bytes (else quiet)\n"
		"  regression   |delta| >= --threshold-bytes and |delta%%| >= --threshold-pct,\n"
		"               and it grew\n"
		"  improvement  the same, shrank; anything else is quiet\n"
		"A change within --min-confidence standard errors of sampling noise is quiet too.\n"
		"When both profiles carry exact span totals (culpert-bpf), span rows compare\n"
		"those: no noise, --min-confidence applies to sampled rows only, and a span\n"
		"whose p99 bytes per instance grew by --threshold-p99-pct is a regression.\n"
		"Exit status: 0 no regression, 1 a regression or a new span (unless --no-fail),\n"
		"2 an error.  The profiles must have the same sampling rate.\n"
		"\n"
		"Options:\n");
	opt_spec_help(f, diff_tables, 2, 26);
	fprintf(f,
		"\n"
		"EXAMPLES:\n"
		"  culpert diff base.pb.gz new.pb.gz\n"
		"  culpert diff base.pb.gz new.pb.gz --min-span-bytes 1MiB --threshold-pct 10\n"
		"  culpert diff base.pb.gz new.pb.gz --format markdown >>\"$GITHUB_STEP_SUMMARY\"\n"
		"  culpert diff base.pb.gz new.pb.gz --by callsite --skip 'my_alloc*'\n"
		"  culpert diff base.pb.gz new.pb.gz --format json --no-fail | jq .summary\n");
}

/* --- text and markdown ---------------------------------------------------------------- */

/* what a row is, in the words of the output */
static const char *noun(const struct diff *d)
{
	return d->o.by == DIFF_BY_CALLSITE ? "callsite" : "span";
}

/* a row's key as printed, unescaped: a callsite shortened unless --wide; in d->key or buf */
static const char *row_label(const struct diff *d, const struct diff_row *r, char *buf,
			     size_t len)
{
	size_t at;

	if (!r->name_len || d->wide)
		return diff_row__key(&d->res, r, d->key, VIEW_PATH_MAX);
	shorten_name(r->name, r->name_len, buf, len);
	at = strlen(buf);
	snprintf(buf + at, len - at, "%s", r->name + r->name_len);
	return buf;
}

static char *pct_str(char *buf, size_t len, const struct diff_row *r)
{
	if (r->delta == 0)
		snprintf(buf, len, "0.00%%");
	else if (r->before == 0)
		/* from nothing to below zero (a -diff_base profile) is no new span */
		snprintf(buf, len, r->after > 0 ? "new" : "-");
	else
		snprintf(buf, len, "%+.2f%%", r->pct);
	return buf;
}

/* a row's noise: "exact" when it has none to speak of */
static char *noise_str(char *buf, size_t len, const struct diff_row *r)
{
	char b[32];

	if (r->exact)
		snprintf(buf, len, "exact");
	else
		snprintf(buf, len, "±%s", format_bytes(b, sizeof(b), r->se_delta));
	return buf;
}

/* "1.50 KiB -> 1.75 KiB (+16.67%)", "-" without closed instances on a side */
static char *p99_str(char *buf, size_t len, const struct diff_row *r)
{
	char b[32], a[32];

	if (!r->p99[0] && !r->p99[1])
		snprintf(buf, len, "-");
	else if (isnan(r->p99_pct))
		snprintf(buf, len, "%s -> %s", format_bytes(b, 32, r->p99[0]),
			 format_bytes(a, 32, r->p99[1]));
	else
		snprintf(buf, len, "%s -> %s (%+.2f%%)", format_bytes(b, 32, r->p99[0]),
			 format_bytes(a, 32, r->p99[1]), r->p99_pct);
	return buf;
}

/* the change of the whole profile, in percent of before; NaN when before is empty */
static double net_pct(const struct diff_result *r)
{
	return diff_pct(r->total[0], r->total[1]);
}

/* before, after, net and settings: text lines, or markdown bullets */
static void print_summary(const struct diff *d, bool md)
{
	const struct diff_result *r = &d->res;
	static const char *const label[] = { "Before:", "After:" };
	char b[32], n[32], rate[48], thr[32], mins[32], counts[96];
	int i;

	for (i = 0; i < 2; i++) {
		printf(md ? "- **%s** %s (" : "%-8s %s (", label[i],
		       format_bytes(b, 32, r->total[i]));
		if (md)
			esc_md_code(d->files[i], false, stdout);
		else
			esc_text_fputs(d->files[i], stdout);
		printf(", %s)\n", format_counts(counts, sizeof(counts), d->v[i]));
	}
	printf(md ? "- **Net Δ:** %s" : "Net:     %s",
	       format_bytes_signed(n, 32, r->total[1] - r->total[0]));
	if (r->total[0] && r->total[1] != r->total[0])
		printf(" (%+.2f%%)", net_pct(r));
	printf(md ? "\n- Rate %s; " : "\nRate:    %s; ", format_rate(rate, sizeof(rate), d->v[0]->rate));
	printf("thresholds %s and %.2f%%; min span %s",
	       format_bytes(thr, 32, (double)d->o.threshold_bytes), d->o.threshold_pct,
	       format_bytes(mins, 32, (double)d->o.min_span_bytes));
	if (d->o.min_confidence > 0)
		printf("; min confidence %.2g sigma", d->o.min_confidence);
	if (d->o.threshold_p99_pct > 0)
		printf("; p99 per instance %.2f%%", d->o.threshold_p99_pct);
	if (r->exact)
		printf(md ? "\n- Spans compared by their exact totals (every allocator call, no "
			    "sampling noise)" :
			    "\nExact:   spans compared by their exact totals (every allocator call, "
			    "no sampling noise)");
	printf("\n\n");
}

static const char *verdict(const struct diff *d, char *buf, size_t len)
{
	const size_t *c = d->res.count;

	if (!diff_result__failed(&d->res))
		snprintf(buf, len, "no regression");
	else
		snprintf(buf, len, "%zu regression%s, %zu new %s%s",
			 c[KIND_REGRESSION], c[KIND_REGRESSION] == 1 ? "" : "s",
			 c[KIND_NEW], noun(d), c[KIND_NEW] == 1 ? "" : "s");
	return buf;
}

/* the rows of one group (growth: regression and new; shrink: improvement and gone) */
static size_t group_rows(const struct diff *d, bool growth, const struct diff_row **out)
{
	size_t i, n = 0;

	for (i = 0; i < d->res.n_rows; i++) {
		const struct diff_row *r = &d->res.rows[d->res.order[i]];
		bool g = r->kind == KIND_REGRESSION || r->kind == KIND_NEW;
		bool s = r->kind == KIND_IMPROVEMENT || r->kind == KIND_GONE;

		if (growth ? g : s)
			out[n++] = r;
	}
	return n;
}

static int print_text(const struct diff *d, const struct diff_row **buf)
{
	struct table *t = table__new(d->res.exact ? "llrrrrrr" : "llrrrrr", (const char *const[]){ "KIND",
		d->o.by == DIFF_BY_CALLSITE ? "CALLSITE" : "SPAN", "BEFORE", "AFTER", "DELTA",
		"DELTA%", "NOISE", d->res.exact ? "P99/INSTANCE" : NULL });
	char b[32], a[32], dl[32], pc[32], se[48], v[96], label[8192], p99[128];
	size_t g, i, n, hidden = 0;
	int ret = t ? 0 : -ENOMEM;

	print_summary(d, false);
	for (g = 0; g < 2 && !ret; g++) {
		n = group_rows(d, g == 0, buf);
		for (i = 0; i < n && !ret; i++) {
			const struct diff_row *r = buf[i];

			if (i >= d->top) {
				hidden++;
				continue;
			}
			ret = table__add(t, (const char *const[]){ diff_kind_name(r->kind),
				row_label(d, r, label, sizeof(label)),
				format_bytes(b, 32, r->before), format_bytes(a, 32, r->after),
				format_bytes_signed(dl, 32, r->delta), pct_str(pc, 32, r),
				noise_str(se, sizeof(se), r), p99_str(p99, sizeof(p99), r) });
		}
	}
	if (ret)
		return ret;
	cli_fit_names(t, 1, d->wide);
	if (d->res.n_rows - d->res.count[KIND_QUIET])
		table__print(t, stdout);
	else
		printf("No %s changed beyond the thresholds.\n", noun(d));
	table__free(t);
	if (hidden)
		printf("... %zu more changes not shown (--top %llu)\n", hidden,
		       (unsigned long long)d->top);
	printf("%zu quiet %s%s (below the thresholds or within sampling noise)\n",
	       d->res.count[KIND_QUIET], noun(d), d->res.count[KIND_QUIET] == 1 ? "" : "s");
	printf("Result:  %s\n", verdict(d, v, sizeof(v)));
	return 0;
}

static void md_table(const struct diff *d, bool growth, const struct diff_row **buf)
{
	size_t n = group_rows(d, growth, buf), i;
	char b[32], a[32], dl[32], pc[32], se[48], label[8192], p99[128];
	bool exact = d->res.exact;

	printf("### %s\n\n", growth ? "Regressions" : "Improvements");
	if (!n) {
		printf("_None._\n\n");
		return;
	}
	printf("| %s | Before | After | Δ | Δ%% | Noise (1σ) |%s\n",
	       d->o.by == DIFF_BY_CALLSITE ? "Callsite" : "Span", exact ? " p99 / instance |" : "");
	printf("|:-----|-------:|------:|--:|---:|-----------:|%s\n", exact ? "---------------:|" : "");
	for (i = 0; i < n && i < d->top; i++) {
		const struct diff_row *r = buf[i];

		printf("| ");
		esc_md_code(row_label(d, r, label, sizeof(label)), true, stdout);
		if (r->kind == KIND_NEW || r->kind == KIND_GONE)
			printf(" _%s_", diff_kind_name(r->kind));
		printf(" | %s | %s | %s | %s | %s |", format_bytes(b, 32, r->before),
		       format_bytes(a, 32, r->after), format_bytes_signed(dl, 32, r->delta),
		       pct_str(pc, 32, r), noise_str(se, sizeof(se), r));
		if (exact)
			printf(" %s |", p99_str(p99, sizeof(p99), r));
		printf("\n");
	}
	if (n > d->top)
		printf("\n_%zu more not shown (--top %llu)._\n", n - (size_t)d->top,
		       (unsigned long long)d->top);
	printf("\n");
}

static void print_markdown_head(const struct diff *d)
{
	char v[96];

	printf("## culpert allocation diff: %s\n\n", verdict(d, v, sizeof(v)));
	print_summary(d, true);
}

static int print_markdown(const struct diff *d, const struct diff_row **buf)
{
	print_markdown_head(d);
	md_table(d, true, buf);
	md_table(d, false, buf);
	printf("_%zu quiet %s%s suppressed (below the thresholds or within sampling noise)._\n",
	       d->res.count[KIND_QUIET], noun(d), d->res.count[KIND_QUIET] == 1 ? "" : "s");
	return 0;
}

/* --- tree ---------------------------------------------------------------------------- */

static int tree_rows(const struct diff *d, const struct diff_tree *t, uint32_t node,
		     struct table *tab, bool md)
{
	uint32_t *kids = NULL;
	size_t n = diff_tree__children(t, node, &kids), i;
	double rest[2] = { 0, 0 };
	int ret = kids ? 0 : -ENOMEM;

	for (i = 0; i < n && !ret; i++) {
		const struct diff_node *x = &t->nodes[kids[i]];
		char name[4096], b[32], a[32], dl[32], pc[32];
		struct diff_row r;

		if (i >= d->top) {
			rest[0] += x->total[0];
			rest[1] += x->total[1];
			continue;
		}
		diff_row__set(&r, x->total[0], x->total[1]);
		if (md) {
			size_t off = 0, k;

			/*
			 * markdown collapses leading blanks: indent with non-breaking
			 * spaces (12 bytes a level, 128 levels at most), then the name
			 * as a code span (at most 4x its 255 bytes escaped, and fences)
			 */
			for (k = 0; k < x->depth && off + 13 < sizeof(name); k++)
				off += (size_t)snprintf(name + off, sizeof(name) - off,
							"&nbsp;&nbsp;");
			esc_md_code_str(name + off, sizeof(name) - off, x->name, true);
		} else {
			snprintf(name, sizeof(name), "%*s%s", 2 * x->depth, "", x->name);
		}
		ret = table__add(tab, (const char *const[]){ name, format_bytes(b, 32, r.before),
			format_bytes(a, 32, r.after), format_bytes_signed(dl, 32, r.delta),
			pct_str(pc, 32, &r) });
		if (!ret)
			ret = tree_rows(d, t, kids[i], tab, md);
	}
	if (!ret && n > d->top) {
		char name[1024], b[32], a[32], dl[32];
		uint32_t depth = node == VIEW_NONE ? 0 : t->nodes[node].depth + 1;

		snprintf(name, sizeof(name), "%*s... %zu more", md ? 0 : 2 * depth, "",
			 n - (size_t)d->top);
		ret = table__add(tab, (const char *const[]){ name, format_bytes(b, 32, rest[0]),
			format_bytes(a, 32, rest[1]),
			format_bytes_signed(dl, 32, rest[1] - rest[0]), "" });
	}
	free(kids);
	return ret;
}

/* markdown tables are the text table's cells between pipes */
static void print_md_table(const struct table *t)
{
	char *text = NULL, *line, *save;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	bool head = true;

	if (!mem)
		return;
	table__print_sep(t, mem, " | ");
	fclose(mem);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		printf("| %s |\n", line);
		if (head) {
			printf("|:-----|-------:|------:|--:|---:|\n");
			head = false;
		}
	}
	free(text);
}

static int print_tree(const struct diff *d)
{
	const struct diff_tree *t = d->res.tree;
	bool md = d->format == FMT_MARKDOWN;
	struct table *tab = table__new("lrrrr", (const char *const[]){
		md ? "Span" : "SPAN", md ? "Before" : "BEFORE", md ? "After" : "AFTER",
		md ? "Δ" : "DELTA", md ? "Δ%" : "DELTA%" });
	char v[96];
	int ret = t && tab ? 0 : -ENOMEM;

	if (!ret)
		ret = tree_rows(d, t, VIEW_NONE, tab, md);
	if (!ret && md) {
		print_markdown_head(d);
		printf("### Span tree\n\n");
		print_md_table(tab);
		printf("\n_%zu regression%s, %zu new, %zu improvement%s, %zu gone, %zu quiet._\n",
		       d->res.count[KIND_REGRESSION], d->res.count[KIND_REGRESSION] == 1 ? "" : "s",
		       d->res.count[KIND_NEW], d->res.count[KIND_IMPROVEMENT],
		       d->res.count[KIND_IMPROVEMENT] == 1 ? "" : "s", d->res.count[KIND_GONE],
		       d->res.count[KIND_QUIET]);
	} else if (!ret) {
		print_summary(d, false);
		table__print(tab, stdout);
		printf("Result:  %s\n", verdict(d, v, sizeof(v)));
	}
	table__free(tab);
	return ret;
}

/* --- json ------------------------------------------------------------------------ */

static void json_side(struct json *j, const char *key, const char *file, const struct view *v,
		      double total)
{
	json_key(j, key);
	json_begin(j, '{');
	json_key(j, "file");
	json_str(j, file);
	losses__json_of(j, v->p);
	json_key(j, "sampled_allocs");
	if (v->has_sampled)
		json_int(j, (int64_t)v->n_sampled);
	else
		json_null(j);
	json_kv_int(j, "samples", (int64_t)v->n_value_samples);
	json_key(j, "total_bytes");
	json_round(j, total);
	json_end(j, '}');
}

static void json_row(struct json *j, const struct diff *d, const struct diff_row *r)
{
	json_begin(j, '{');
	json_key(j, "after");
	json_round(j, r->after);
	json_key(j, "before");
	json_round(j, r->before);
	json_key(j, "delta");
	json_round(j, r->delta);
	json_key(j, "exact");
	json_bool(j, r->exact);
	json_key(j, "key");
	json_str(j, diff_row__key(&d->res, r, d->key, VIEW_PATH_MAX));
	json_key(j, "kind");
	json_str(j, diff_kind_name(r->kind));
	if (r->exact) {
		json_key(j, "p99_after");
		json_round(j, r->p99[1]);
		json_key(j, "p99_before");
		json_round(j, r->p99[0]);
		json_key(j, "p99_pct");
		json_num(j, r->p99_pct, 2);
		json_key(j, "p99_regressed");
		json_bool(j, r->p99_regressed);
	}
	json_key(j, "pct");
	json_num(j, r->pct, 2);		/* NaN (before = 0) is null */
	json_key(j, "quiet_reason");
	if (r->reason)
		json_str(j, r->reason);
	else
		json_null(j);
	json_key(j, "stderr_after");
	json_round(j, r->se_after);
	json_key(j, "stderr_before");
	json_round(j, r->se_before);
	json_key(j, "stderr_delta");
	json_round(j, r->se_delta);
	json_key(j, "z");
	json_num(j, r->se_delta ? r->delta / r->se_delta : NAN, 2);
	json_end(j, '}');
}

static void print_json(const struct diff *d)
{
	const struct diff_result *r = &d->res;
	/* sorted by name, as the keys are, around failed, net_delta and net_pct */
	static const enum diff_kind kinds[] = { KIND_GONE, KIND_IMPROVEMENT, KIND_NEW, KIND_QUIET,
						KIND_REGRESSION };
	struct json j;
	size_t i;

	json_init(&j, stdout);
	json_begin(&j, '{');
	json_side(&j, "after", d->files[1], d->v[1], r->total[1]);
	json_side(&j, "before", d->files[0], d->v[0], r->total[0]);
	json_key(&j, "by");
	json_str(&j, d->o.by == DIFF_BY_CALLSITE ? "callsite" : d->o.by == DIFF_BY_NAME ? "name" :
		     "path");
	/* what the text calls an unknown rate (none, or not positive) is null */
	json_key(&j, "rate");
	if (d->v[0]->rate > 0)
		json_int(&j, d->v[0]->rate);
	else
		json_null(&j);
	json_key(&j, "rows");
	json_begin(&j, '[');
	for (i = 0; i < r->n_rows; i++)
		json_row(&j, d, &r->rows[r->order[i]]);
	json_end(&j, ']');
	json_key(&j, "sample_type");
	json_str(&j, d->inuse ? "inuse_space" : "alloc_space");
	json_key(&j, "schema_version");
	json_int(&j, DIFF_SCHEMA_VERSION);
	json_key(&j, "summary");
	json_begin(&j, '{');
	json_key(&j, "failed");
	json_bool(&j, diff_result__failed(r));
	for (i = 0; i < 2; i++) {
		json_key(&j, diff_kind_name(kinds[i]));
		json_int(&j, (int64_t)r->count[kinds[i]]);
	}
	json_key(&j, "net_delta");
	json_round(&j, r->total[1] - r->total[0]);
	json_key(&j, "net_pct");
	json_num(&j, net_pct(r), 2);
	for (i = 2; i < 5; i++) {
		json_key(&j, diff_kind_name(kinds[i]));
		json_int(&j, (int64_t)r->count[kinds[i]]);
	}
	json_end(&j, '}');
	json_key(&j, "thresholds");
	json_begin(&j, '{');
	json_key(&j, "min_confidence");
	json_num(&j, d->o.min_confidence, 2);
	json_key(&j, "min_span_bytes");
	json_int(&j, (int64_t)d->o.min_span_bytes);
	json_key(&j, "threshold_bytes");
	json_int(&j, (int64_t)d->o.threshold_bytes);
	json_key(&j, "threshold_p99_pct");
	json_num(&j, d->o.threshold_p99_pct, 2);
	json_key(&j, "threshold_pct");
	json_num(&j, d->o.threshold_pct, 2);
	json_end(&j, '}');
	json_end(&j, '}');
}

/* --- command ---------------------------------------------------------------------- */

static const char *const pct_suffixes[] = { "%", NULL };
static const char *const sigma_suffixes[] = { "sigma", "σ", NULL };

static int parse_opt(struct diff *d, int c, bool *min_span_set)
{
	static const char *const bys[] = { "path", "name", "callsite", NULL };
	static const char *const formats[] = { "text", "markdown", "json", NULL };
	int i;

	switch (c) {
	case 'b':
		return opt_size("--threshold-bytes", optarg, 0, UINT64_MAX, &d->o.threshold_bytes);
	case 'p':
		return opt_number("--threshold-pct", optarg, pct_suffixes,
				      &d->o.threshold_pct);
	case 'm':
		*min_span_set = true;
		return opt_size("--min-span-bytes", optarg, 0, UINT64_MAX, &d->o.min_span_bytes);
	case 'c':
		return opt_number("--min-confidence", optarg, sigma_suffixes,
				      &d->o.min_confidence);
	case 'P':
		return opt_number("--threshold-p99-pct", optarg, pct_suffixes,
				      &d->o.threshold_p99_pct);
	case 't':
		return opt_count("--top", optarg, 0, INT32_MAX, &d->top);
	case 'y':
		if ((i = opt_choice("--by", optarg, bys)) < 0)
			return i;
		d->o.by = i == 1 ? DIFF_BY_NAME : i == 2 ? DIFF_BY_CALLSITE : DIFF_BY_PATH;
		return 0;
	case 'S':
		return opt_append(&d->skip, &d->n_skip, optarg);
	case 'W': d->wide = true; return 0;
	case 'f':
		/* "md" is markdown too */
		if ((i = opt_choice("--format", strcmp(optarg, "md") ? optarg : "markdown",
				    formats)) < 0)
			return i;
		d->format = i == 0 ? FMT_TEXT : i == 1 ? FMT_MARKDOWN : FMT_JSON;
		return 0;
	case 'T': d->tree = true; return 0;
	case 'n': d->no_fail = true; return 0;
	case 'i': d->inuse = true; return 0;
	default: return -EINVAL;
	}
}

static int parse_args(struct diff *d, int argc, char **argv)
{
	const char *env = getenv("CULPERT_MIN_SPAN_BYTES");
	bool min_span_set = false;
	int c;

	d->o.threshold_bytes = 4096;
	d->o.threshold_pct = 5;
	d->top = 20;
	while ((c = opt_spec_next(argc, argv, diff_tables)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return CMD_HELP;
		}
		if (parse_opt(d, c, &min_span_set))
			return CMD_ERROR;
	}
	/* the environment is a default: an explicit option, 0 included, wins */
	if (!min_span_set && env && env[0] && parse_size(env, &d->o.min_span_bytes)) {
		pr_error("CULPERT_MIN_SPAN_BYTES='%s' is not a size (e.g. 1MiB); fix or unset it\n",
			 env);
		return CMD_ERROR;
	}
	if (argc - optind != 2)
		return opt_error("diff takes two profiles, BEFORE and AFTER (got %d)",
				       argc - optind);
	d->files[0] = argv[optind];
	d->files[1] = argv[optind + 1];
	if (d->tree && d->o.by == DIFF_BY_CALLSITE)
		return opt_error("--tree shows the span tree; --by callsite lists callsites");
	if (d->n_skip && d->o.by != DIFF_BY_CALLSITE)
		pr_info("--skip changes callsites, which only --by callsite compares\n");
	if (d->tree && d->format == FMT_JSON)
		pr_info("--tree shapes text and markdown; JSON always lists every row\n");
	return CMD_OK;
}

int cmd_diff(int argc, char **argv)
{
	struct diff d = { 0 };
	struct view_opts vo = { .value = VIEW_ALLOC };
	const struct diff_row **buf = NULL;
	char r0[48], r1[48];
	int ret, i;

	ret = parse_args(&d, argc, argv);
	if (ret) {
		free(d.skip);
		return ret == CMD_HELP ? CMD_OK : CMD_ERROR;
	}
	if (d.inuse)
		vo.value = VIEW_INUSE;
	vo.skip = (const char *const *)d.skip;
	vo.n_skip = d.n_skip;
	if (!strcmp(d.files[0], "-") && !strcmp(d.files[1], "-")) {
		opt_error("only one of BEFORE and AFTER can be stdin ('-')");
		free(d.skip);
		return CMD_ERROR;
	}
	for (i = 0; i < 2; i++) {
		d.v[i] = cli_load(d.files[i], &vo);
		if (!d.v[i]) {
			ret = CMD_ERROR;
			goto out;
		}
	}
	if (d.v[0]->rate != d.v[1]->rate) {
		pr_error("sample rates differ: %s has %s, %s has %s; capture both with the same --rate\n",
			 d.files[0], format_rate(r0, sizeof(r0), d.v[0]->rate), d.files[1],
			 format_rate(r1, sizeof(r1), d.v[1]->rate));
		ret = CMD_ERROR;
		goto out;
	}
	d.o.rate = d.v[0]->rate;
	/* spans one profile shows nested and the other as roots: one grouping for both */
	ret = view__orphans_from(d.v[0], d.v[1]);
	if (!ret)
		ret = view__orphans_from(d.v[1], d.v[0]);
	if (!ret)
		ret = diff_result__build(&d.res, d.v[0], d.v[1], &d.o);
	buf = calloc(d.res.n_rows ?: 1, sizeof(*buf));
	d.key = malloc(VIEW_PATH_MAX);
	if (ret || !buf || !d.key) {
		pr_error("out of memory comparing the profiles\n");
		ret = CMD_ERROR;
		goto out;
	}
	if (d.format == FMT_JSON)
		print_json(&d);
	else if (d.tree)
		ret = print_tree(&d);
	else if (d.format == FMT_MARKDOWN)
		ret = print_markdown(&d, buf);
	else
		ret = print_text(&d, buf);
	for (i = 0; i < 2 && d.format != FMT_JSON; i++)
		losses__print_of(stdout, d.v[i]->p, d.files[i], d.format == FMT_MARKDOWN);
	if (ret) {
		pr_error("out of memory formatting the diff\n");
		ret = CMD_ERROR;
	} else {
		ret = !d.no_fail && diff_result__failed(&d.res) ? CMD_FAIL : CMD_OK;
	}
out:
	free(buf);
	free(d.key);
	diff_result__clear(&d.res);
	view__free(d.v[0]);
	view__free(d.v[1]);
	free(d.skip);
	return ret;
}
