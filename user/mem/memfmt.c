// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocfmt.h"
#include "json.h"
#include "memcg.h"
#include "memfmt.h"
#include "units.h"
#include "vec.h"

/* components of an item path ("cgroup.memory.stat.anon_bytes") */
#define ITEM_MAX_DEPTH 8

struct mem_item *mem_items__add(struct mem_items *items, const char *path, enum mem_item_type type)
{
	struct mem_item *it;

	if (vec_reserve(&items->v, &items->cap, items->n + 1, sizeof(*items->v)))
		return NULL;
	it = &items->v[items->n++];
	memset(it, 0, sizeof(*it));
	snprintf(it->path, sizeof(it->path), "%s", path);
	it->type = type;
	return it;
}

int mem_items__add_plain(struct mem_items *items, const char *path, const char *s,
			 const uint64_t *u)
{
	struct mem_item *it = mem_items__add(items, path,
					     s ? MEM_ITEM_STR : u ? MEM_ITEM_U64 : MEM_ITEM_NULL);

	if (!it)
		return -ENOMEM;
	it->s = s;
	it->u = u ? *u : 0;
	return 0;
}

/*
 * The values of one section: path "<dir>.<name>", metric "<prom><name>"
 * (counters get "_total"), with an optional extra label.
 */
static int add_section(struct mem_items *items, const char *dir, const char *prom,
		       const char *label_key, const char *label_val, const struct mem_section *s,
		       const struct mem_values *v)
{
	char path[128];
	size_t i;

	for (i = 0; i < s->n; i++) {
		const struct mem_field *f = &s->fields[i];
		struct mem_item *it;

		if (!mem_has(v, (int)i))
			continue;
		snprintf(path, sizeof(path), "%s.%s", dir, f->name);
		it = mem_items__add(items, path, MEM_ITEM_U64);
		if (!it)
			return -ENOMEM;
		it->u = v->v[i];
		it->help = f->help;
		it->counter = f->unit == MEM_UNIT_EVENTS;
		it->label_key = label_key;
		it->label_val = label_val;
		/* "_count" is a histogram's count to Prometheus: promtool refuses it elsewhere */
		if (f->unit == MEM_UNIT_COUNT && !strcmp(f->name, "count"))
			snprintf(it->prom, sizeof(it->prom), "%.*ss", (int)strlen(prom) - 1, prom);
		else
			snprintf(it->prom, sizeof(it->prom), "%s%s%s", prom, f->name,
				 it->counter ? "_total" : "");
	}
	return 0;
}

static int add_pressure(struct mem_items *items, const struct mem_pressure *p)
{
	static const char *const which[] = { "some", "full" };
	static const char *const avg[] = { "avg10", "avg60", "avg300" };
	static const char *const help[] = {
		"Time at least one task of the cgroup was stalled on memory (memory.pressure some).",
		"Time all non-idle tasks of the cgroup were stalled on memory (memory.pressure full).",
	};
	char path[128];
	struct mem_item *it;
	int w, a;

	if (!p->present)
		return mem_items__add_plain(items, "cgroup.pressure", NULL, NULL);
	for (w = 0; w < (p->has_full ? 2 : 1); w++) {
		for (a = 0; a < 3; a++) {
			snprintf(path, sizeof(path), "cgroup.pressure.%s.%s_pct", which[w], avg[a]);
			it = mem_items__add(items, path, MEM_ITEM_F64);
			if (!it)
				return -ENOMEM;
			it->f = p->avg[w][a];
		}
		snprintf(path, sizeof(path), "cgroup.pressure.%s.total_us", which[w]);
		it = mem_items__add(items, path, MEM_ITEM_U64);
		if (!it)
			return -ENOMEM;
		it->u = p->total_us[w];
		it->usec = true;
		it->counter = true;
		it->help = help[w];
		/* Prometheus wants base units: seconds, as node_exporter's PSI metrics */
		snprintf(it->prom, sizeof(it->prom), "culpert_cgroup_memory_pressure_%s_seconds_total",
			 which[w]);
	}
	return 0;
}

static int add_cgroup(struct mem_items *items, const struct mem_cgroup *cg)
{
	int err;

	err = mem_items__add_plain(items, "cgroup.path", cg->path, NULL);
	err = err ?: mem_items__add_plain(items, "cgroup.container_id", cg->container_id, NULL);
	err = err ?: add_pressure(items, &cg->pressure);
	if (err)
		return err;
	if (!cg->memory) {
		err = mem_items__add_plain(items, "cgroup.memory", NULL, NULL);
		return err ?: mem_items__add_plain(items, "cgroup.memory_absent", cg->absent, NULL);
	}
	err = add_section(items, "cgroup.memory", "culpert_cgroup_memory_", NULL, NULL,
			  &memcg_memory_section, &cg->mem);
	err = err ?: add_section(items, "cgroup.memory.stat", "culpert_cgroup_memory_stat_", NULL,
				 NULL, &memcg_stat_section, &cg->stat);
	return err ?: add_section(items, "cgroup.memory.events", "culpert_cgroup_memory_events_",
				  NULL, NULL, &memcg_events_section, &cg->events);
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct mem_item *)a)->path, ((const struct mem_item *)b)->path);
}

static void mem_items__free(struct mem_items *items)
{
	free(items->v);
	memset(items, 0, sizeof(*items));
}

/* every value of m as items sorted by path; 0 or -ENOMEM */
static int mem_items__build(const struct memstats *m, struct mem_items *out)
{
	uint64_t pid = (uint64_t)m->pid, schema = MEMFMT_SCHEMA_VERSION, t = (uint64_t)m->time_ns;
	char dir[64];
	int err, k;

	memset(out, 0, sizeof(*out));
	err = mem_items__add_plain(out, "pid", NULL, &pid);
	err = err ?: mem_items__add_plain(out, "comm", m->comm, NULL);
	err = err ?: mem_items__add_plain(out, "schema_version", NULL, &schema);
	err = err ?: mem_items__add_plain(out, "time_unix_ns", NULL, &t);
	err = err ?: add_section(out, "rollup", "culpert_process_", NULL, NULL, &mem_rollup_section,
				 &m->rollup);
	err = err ?: add_section(out, "status", "culpert_process_", NULL, NULL, &mem_status_section,
				 &m->status);
	for (k = 0; !err && k < MEM_KIND__MAX; k++) {
		snprintf(dir, sizeof(dir), "mappings.%s", mem_kind_names[k]);
		err = add_section(out, dir, "culpert_process_mapping_", "kind", mem_kind_names[k],
				  &mem_kind_section, &m->kinds[k]);
	}
	err = err ?: add_cgroup(out, &m->cg);
	err = err ?: allocfmt_items(out, &m->alloc);
	if (err) {
		mem_items__free(out);
		return err;
	}
	/* '.' sorts before every character of a name, so this is the order of the components */
	qsort(out->v, out->n, sizeof(*out->v), cmp_path);
	return 0;
}

static void json_value(FILE *f, const struct mem_item *it)
{
	switch (it->type) {
	case MEM_ITEM_U64:
		if (it->u == MEM_UNLIMITED)
			fputs("\"max\"", f);
		else
			fprintf(f, "%" PRIu64, it->u);
		break;
	case MEM_ITEM_F64:
		fprintf(f, "%.2f", it->f);
		break;
	case MEM_ITEM_STR:
		json_put_str(f, it->s);
		break;
	case MEM_ITEM_NULL:
		fputs("null", f);
		break;
	}
}

/* split "a.b.c" into at most max components (pointers into buf) */
static int split_path(const char *path, char *buf, size_t len, char **comp, int max)
{
	int n = 0;
	char *p, *save;

	snprintf(buf, len, "%s", path);
	for (p = strtok_r(buf, ".", &save); p && n < max; p = strtok_r(NULL, ".", &save))
		comp[n++] = p;
	return n;
}

/* nested objects from the sorted paths: close and open objects where the path prefix changes */
int memfmt_json(FILE *f, const struct memstats *m)
{
	char open[ITEM_MAX_DEPTH][128], buf[128], *comp[ITEM_MAX_DEPTH];
	bool first[ITEM_MAX_DEPTH + 1] = { true };
	struct mem_items items;
	int depth = 0, n, k, err;
	size_t i;

	err = mem_items__build(m, &items);
	if (err)
		return err;
	fputc('{', f);
	for (i = 0; i < items.n; i++) {
		n = split_path(items.v[i].path, buf, sizeof(buf), comp, ITEM_MAX_DEPTH);
		for (k = 0; k < depth && k < n - 1 && !strcmp(open[k], comp[k]); k++)
			;
		for (; depth > k; depth--)
			fputc('}', f);
		for (; depth < n - 1; depth++) {
			fputs(first[depth] ? "" : ",", f);
			first[depth] = false;
			json_put_str(f, comp[depth]);
			fputs(":{", f);
			snprintf(open[depth], sizeof(open[depth]), "%s", comp[depth]);
			first[depth + 1] = true;
		}
		fputs(first[depth] ? "" : ",", f);
		first[depth] = false;
		json_put_str(f, comp[n - 1]);
		fputc(':', f);
		json_value(f, &items.v[i]);
	}
	for (; depth > 0; depth--)
		fputc('}', f);
	fputs("}\n", f);
	mem_items__free(&items);
	return ferror(f) ? -EIO : 0;
}

/* label values escape backslash, double quote and newline; HELP text only backslash and newline */
static void prom_escape(FILE *f, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '"' && quote)
			fputs("\\\"", f);
		else
			fputc(*s, f);
	}
}

void memfmt_prom_label(FILE *f, const char *key, const char *val, bool comma)
{
	fprintf(f, "%s%s=\"", comma ? "," : "", key);
	prom_escape(f, val, true);
	fputc('"', f);
}

/* one sample of one process: families sort by name, then the processes in the caller's order */
struct prom_ref {
	const struct mem_item *it;
	size_t proc;
};

static int cmp_prom(const void *a, const void *b)
{
	const struct prom_ref *x = a, *y = b;
	int c = strcmp(x->it->prom, y->it->prom);

	if (c)
		return c;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	return strcmp(x->it->label_val ?: "", y->it->label_val ?: "");
}

static void prom_value(FILE *f, const struct mem_item *it)
{
	if (it->u == MEM_UNLIMITED)
		fputs("+Inf", f);
	else if (it->usec)
		fprintf(f, "%.6f", (double)it->u / 1e6);
	else
		fprintf(f, "%" PRIu64, it->u);
}

static void prom_sample(FILE *f, const struct mem_item *it, const struct memstats *m,
			const struct mem_prom_labels *extra)
{
	char pid[16];
	size_t k;

	snprintf(pid, sizeof(pid), "%d", (int)m->pid);
	fprintf(f, "%s{", it->prom);
	memfmt_prom_label(f, "pid", pid, false);
	memfmt_prom_label(f, "comm", m->comm, true);
	memfmt_prom_label(f, "container_id", m->cg.container_id, true);
	for (k = 0; extra && k < extra->n; k++)
		memfmt_prom_label(f, extra->key[k], extra->val[k], true);
	if (it->label_key)
		memfmt_prom_label(f, it->label_key, it->label_val, true);
	fputs("} ", f);
	prom_value(f, it);
	fputc('\n', f);
}

/* the items of every process, and one reference per exported sample */
static int prom_refs(const struct memstats *const *m, size_t n, struct mem_items *items,
		     struct prom_ref **refs, size_t *n_refs)
{
	size_t p, i, cap = 0;
	int err = 0;

	*refs = NULL;
	*n_refs = 0;
	for (p = 0; p < n && !err; p++) {
		err = mem_items__build(m[p], &items[p]);
		for (i = 0; !err && i < items[p].n; i++) {
			if (!items[p].v[i].prom[0])
				continue;
			err = vec_reserve(refs, &cap, *n_refs + 1, sizeof(**refs));
			if (!err)
				(*refs)[(*n_refs)++] = (struct prom_ref){ &items[p].v[i], p };
		}
	}
	return err;
}

int memfmt_prometheus_many(FILE *f, const struct memstats *const *m,
			   const struct mem_prom_labels *extra, size_t n)
{
	struct mem_items *items = calloc(n ? n : 1, sizeof(*items));
	struct prom_ref *refs;
	const char *prev = "";
	size_t i, n_refs;
	int err;

	if (!items)
		return -ENOMEM;
	err = prom_refs(m, n, items, &refs, &n_refs);
	/* one family's samples must be together, under one HELP and TYPE */
	if (!err)
		qsort(refs, n_refs, sizeof(*refs), cmp_prom);
	for (i = 0; !err && i < n_refs; i++) {
		const struct mem_item *it = refs[i].it;

		if (strcmp(prev, it->prom)) {
			fprintf(f, "# HELP %s ", it->prom);
			prom_escape(f, it->help ?: "", false);
			fprintf(f, "\n# TYPE %s %s\n", it->prom, it->counter ? "counter" : "gauge");
			prev = it->prom;
		}
		prom_sample(f, it, m[refs[i].proc], extra ? &extra[refs[i].proc] : NULL);
	}
	for (i = 0; i < n; i++)
		mem_items__free(&items[i]);
	free(items);
	free(refs);
	return err ?: ferror(f) ? -EIO : 0;
}

int memfmt_prometheus(FILE *f, const struct memstats *m)
{
	return memfmt_prometheus_many(f, &m, NULL, 1);
}

static void text_value(FILE *f, const struct mem_field *fd, uint64_t v)
{
	char buf[32];

	if (v == MEM_UNLIMITED && fd->unit == MEM_UNIT_BYTES)
		snprintf(buf, sizeof(buf), "max (no limit)");
	else if (fd->unit == MEM_UNIT_KB || fd->unit == MEM_UNIT_BYTES)
		format_bytes(buf, sizeof(buf), (double)v);
	else
		snprintf(buf, sizeof(buf), "%" PRIu64, v);
	fprintf(f, "%16s", buf);
}

/* a field's name for people: "rss_bytes" reads "rss", the value says the unit */
static int text_len(const char *name)
{
	size_t n = strlen(name);

	return (int)(n > 6 && !strcmp(name + n - 6, "_bytes") ? n - 6 : n);
}

static void text_name(FILE *f, const char *name)
{
	fprintf(f, "  %-24.*s", text_len(name), name);
}

static void text_section(FILE *f, const char *title, const struct mem_section *s,
			 const struct mem_values *v)
{
	size_t i;

	fprintf(f, "%s\n", title);
	for (i = 0; i < s->n; i++) {
		if (!mem_has(v, (int)i))
			continue;
		text_name(f, s->fields[i].name);
		text_value(f, &s->fields[i], v->v[i]);
		fputc('\n', f);
	}
}

static void text_kinds(FILE *f, const struct memstats *m)
{
	const struct mem_section *s = &mem_kind_section;
	size_t i;
	int k;

	fprintf(f, "mappings by kind (/proc/%d/smaps)\n  %-10s", (int)m->pid, "kind");
	for (i = 0; i < s->n; i++)
		fprintf(f, "%16.*s", text_len(s->fields[i].name), s->fields[i].name);
	fputc('\n', f);
	for (k = 0; k < MEM_KIND__MAX; k++) {
		fprintf(f, "  %-10s", mem_kind_names[k]);
		for (i = 0; i < s->n; i++) {
			if (mem_has(&m->kinds[k], (int)i))
				text_value(f, &s->fields[i], m->kinds[k].v[i]);
			else
				fprintf(f, "%16s", "-");
		}
		fputc('\n', f);
	}
}

static void text_pressure(FILE *f, const struct mem_pressure *p)
{
	static const char *const which[] = { "some", "full" };
	int w;

	if (!p->present) {
		fprintf(f, "cgroup memory.pressure: absent\n");
		return;
	}
	fprintf(f, "cgroup memory.pressure\n");
	for (w = 0; w < (p->has_full ? 2 : 1); w++)
		fprintf(f, "  %-24s  avg10=%.2f%% avg60=%.2f%% avg300=%.2f%%, stalled %.6fs\n", which[w],
			p->avg[w][0], p->avg[w][1], p->avg[w][2], (double)p->total_us[w] / 1e6);
}

static void text_cgroup(FILE *f, const struct mem_cgroup *cg)
{
	if (cg->path[0])
		fprintf(f, "cgroup %s (cgroup v2)%s%s\n", cg->path,
			cg->container_id[0] ? ", container " : "", cg->container_id);
	if (!cg->memory) {
		fprintf(f, "cgroup memory: absent: %s\n", cg->absent);
	} else {
		text_section(f, "cgroup memory", &memcg_memory_section, &cg->mem);
		text_section(f, "cgroup memory.stat", &memcg_stat_section, &cg->stat);
		text_section(f, "cgroup memory.events", &memcg_events_section, &cg->events);
	}
	if (cg->path[0])
		text_pressure(f, &cg->pressure);
}

int memfmt_text(FILE *f, const struct memstats *m)
{
	time_t secs = (time_t)(m->time_ns / 1000000000LL);
	char title[64], ts[32];
	struct tm tm;

	gmtime_r(&secs, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(f, "pid %d (%s), %s\n", (int)m->pid, m->comm, ts);
	snprintf(title, sizeof(title), "process (/proc/%d/smaps_rollup)", (int)m->pid);
	text_section(f, title, &mem_rollup_section, &m->rollup);
	snprintf(title, sizeof(title), "process (/proc/%d/status)", (int)m->pid);
	text_section(f, title, &mem_status_section, &m->status);
	text_kinds(f, m);
	text_cgroup(f, &m->cg);
	allocfmt_text(f, &m->alloc);
	return ferror(f) ? -EIO : 0;
}

int memfmt_comments(const struct memstats *m, const char *prefix,
		    int (*add)(void *ctx, const char *comment), void *ctx)
{
	struct mem_items items;
	/* room for a cgroup path of PATH_MAX */
	char c[4352], v[64];
	size_t i;
	int err;

	err = mem_items__build(m, &items);
	for (i = 0; !err && i < items.n; i++) {
		const struct mem_item *it = &items.v[i];

		/* target.pid and target.comm say these already */
		if (!strcmp(it->path, "pid") || !strcmp(it->path, "comm"))
			continue;
		if (it->type == MEM_ITEM_U64 && it->u == MEM_UNLIMITED)
			snprintf(v, sizeof(v), "max");
		else if (it->type == MEM_ITEM_U64)
			snprintf(v, sizeof(v), "%" PRIu64, it->u);
		else if (it->type == MEM_ITEM_F64)
			snprintf(v, sizeof(v), "%.2f", it->f);
		else
			snprintf(v, sizeof(v), "%s", it->type == MEM_ITEM_NULL ? "absent" : "");
		snprintf(c, sizeof(c), "%s.%s=%s", prefix, it->path,
			 it->type == MEM_ITEM_STR ? it->s : v);
		err = add(ctx, c);
	}
	mem_items__free(&items);
	return err;
}
