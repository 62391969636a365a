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
	size_t n;

	/* runs of plain characters at once: a large /metrics is mostly label values */
	for (;;) {
		n = strcspn(s, quote ? "\\\n\"" : "\\\n");
		fwrite_unlocked(s, 1, n, f);
		s += n;
		if (!*s)
			return;
		fputs_unlocked(*s == '\\' ? "\\\\" : *s == '\n' ? "\\n" : "\\\"", f);
		s++;
	}
}

void memfmt_prom_label(FILE *f, const char *key, const char *val, bool comma)
{
	if (comma)
		fputc_unlocked(',', f);
	fputs_unlocked(key, f);
	fputs_unlocked("=\"", f);
	prom_escape(f, val, true);
	fputc_unlocked('"', f);
}

/*
 * One process's samples of one family.  A process's picture is rendered
 * once into its families (memfmt_prom__add()), and an exposition of many
 * processes is a merge of those by family name: n processes need one
 * picture at a time, and a writer kept from scrape to scrape is written
 * again at the cost of its bytes (docs/agent.md).
 */
struct prom_family {
	char name[128];
	const char *help;	/* the sections' static text */
	bool counter;
	char *buf;
	size_t len;
	FILE *f;		/* open_memstream() on buf while the process is added */
};

struct memfmt_prom {
	/* sorted by name; each family stays where it is: its stream writes to its buf and len */
	struct prom_family **v;
	size_t n, cap;
};

struct memfmt_prom *memfmt_prom__new(void)
{
	return calloc(1, sizeof(struct memfmt_prom));
}

void memfmt_prom__free(struct memfmt_prom *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->n; i++) {
		if (w->v[i]->f)
			fclose(w->v[i]->f);
		free(w->v[i]->buf);
		free(w->v[i]);
	}
	free(w->v);
	free(w);
}

/* within one process, a family's samples by their extra label */
static int cmp_prom(const void *a, const void *b)
{
	const struct mem_item *x = *(const struct mem_item *const *)a;
	const struct mem_item *y = *(const struct mem_item *const *)b;
	int c = strcmp(x->prom, y->prom);

	return c ?: strcmp(x->label_val ?: "", y->label_val ?: "");
}

/* a new family of it at the end of w (the items come sorted); NULL when out of memory */
static struct prom_family *prom_family_add(struct memfmt_prom *w, const struct mem_item *it)
{
	struct prom_family *fam;

	if (vec_reserve(&w->v, &w->cap, w->n + 1, sizeof(*w->v)))
		return NULL;
	fam = calloc(1, sizeof(*fam));
	if (!fam)
		return NULL;
	snprintf(fam->name, sizeof(fam->name), "%s", it->prom);
	fam->help = it->help;
	fam->counter = it->counter;
	fam->f = open_memstream(&fam->buf, &fam->len);
	if (!fam->f) {
		free(fam);
		return NULL;
	}
	w->v[w->n++] = fam;
	return fam;
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

/* the families' streams closed: their text final in buf and len */
static int prom_seal(struct memfmt_prom *w)
{
	int err = 0;
	size_t i;

	for (i = 0; i < w->n; i++) {
		if (w->v[i]->f && fclose(w->v[i]->f))
			err = -ENOMEM;
		w->v[i]->f = NULL;
	}
	return err;
}

int memfmt_prom__add(struct memfmt_prom *w, const struct memstats *m,
		     const struct mem_prom_labels *extra)
{
	const struct mem_item **refs = NULL;
	struct prom_family *fam = NULL;
	struct mem_items items;
	size_t i, n = 0;
	int err;

	if (w->n)
		return -EEXIST;
	err = mem_items__build(m, &items);
	if (err)
		return err;
	refs = calloc(items.n ?: 1, sizeof(*refs));
	if (!refs)
		err = -ENOMEM;
	for (i = 0; !err && i < items.n; i++)
		if (items.v[i].prom[0])
			refs[n++] = &items.v[i];
	if (!err)
		qsort(refs, n, sizeof(*refs), cmp_prom);
	for (i = 0; !err && i < n; i++) {
		if (!fam || strcmp(fam->name, refs[i]->prom))
			fam = prom_family_add(w, refs[i]);
		if (!fam)
			err = -ENOMEM;
		else
			prom_sample(fam->f, refs[i], m, extra);
	}
	free(refs);
	mem_items__free(&items);
	return prom_seal(w) ?: err;
}

/* the families of every writer by name, each name once; NULL when out of memory */
static const struct prom_family **prom_union(struct memfmt_prom *const *w, size_t n, size_t *out_n)
{
	const struct prom_family **u = NULL, **merged;
	size_t nu = 0, p, i, j, k;
	int c;

	for (p = 0; p < n; p++) {
		/* one merge of two sorted lists; the processes mostly have the same families */
		merged = malloc((nu + w[p]->n ?: 1) * sizeof(*merged));
		if (!merged) {
			free(u);
			return NULL;
		}
		for (i = 0, j = 0, k = 0; i < nu || j < w[p]->n;) {
			c = i == nu ? 1 : j == w[p]->n ? -1 : strcmp(u[i]->name, w[p]->v[j]->name);
			merged[k++] = c <= 0 ? u[i] : w[p]->v[j];
			i += c <= 0;
			j += c >= 0;
		}
		free(u);
		u = merged;
		nu = k;
	}
	*out_n = nu;
	return u;
}

int memfmt_prom__write(FILE *f, struct memfmt_prom *const *w, size_t n)
{
	const struct prom_family **u, *fam;
	size_t nu, i, p, *at;

	/* no process (none live, or none yet): no family, and no error */
	if (!n)
		return 0;
	at = calloc(n, sizeof(*at));
	u = at ? prom_union(w, n, &nu) : NULL;
	if (!u) {
		free(at);
		return -ENOMEM;
	}
	for (i = 0; i < nu; i++) {
		fprintf(f, "# HELP %s ", u[i]->name);
		prom_escape(f, u[i]->help ?: "", false);
		fprintf(f, "\n# TYPE %s %s\n", u[i]->name, u[i]->counter ? "counter" : "gauge");
		/* each writer's families are in the same order: a cursor each */
		for (p = 0; p < n; p++) {
			if (at[p] == w[p]->n || strcmp((fam = w[p]->v[at[p]])->name, u[i]->name))
				continue;
			fwrite_unlocked(fam->buf, 1, fam->len, f);
			at[p]++;
		}
	}
	free(u);
	free(at);
	return ferror(f) ? -EIO : 0;
}

int memfmt_prometheus_many(FILE *f, const struct memstats *const *m,
			   const struct mem_prom_labels *extra, size_t n)
{
	struct memfmt_prom **w = calloc(n ?: 1, sizeof(*w));
	size_t i;
	int err = w ? 0 : -ENOMEM;

	for (i = 0; !err && i < n; i++) {
		w[i] = memfmt_prom__new();
		err = w[i] ? memfmt_prom__add(w[i], m[i], extra ? &extra[i] : NULL) : -ENOMEM;
	}
	err = err ?: memfmt_prom__write(f, w, n);
	for (i = 0; w && i < n; i++)
		memfmt_prom__free(w[i]);
	free(w);
	return err;
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
