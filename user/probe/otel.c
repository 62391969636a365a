// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "objcache.h"
#include "otel.h"
#include "procmaps.h"
#include "remotemem.h"
#include "samplerpage.h"
#include "target.h"
#include "usdt.h"
#include "vec.h"

const char *const otel_mode_names[] = { "auto", "usdt", "uprobes", "inject", NULL };

struct plan_ctx {
	const struct target *t;
	const struct procmaps *maps;
	struct otel_plan *plan;
	size_t cap;
	enum otel_mode mode;
};

/*
 * libculpert-sampler.so as the injector maps it (docs/inject.md): dormant
 * once released, its probes then see nothing, and its state cannot be
 * read from outside.  Only an injection (which switches it on) takes it.
 */
static bool injected_copy(const char *path)
{
	return !strncmp(path, "/memfd:libculpert-sampler", 25);
}

/* libculpert-sampler's page: its symbol, moved by the load bias m shows */
static uint64_t page_address(const struct procmap *m, struct elfobj *obj)
{
	struct elf_symbol sym;
	uint64_t vaddr;

	if (elfobj__data_sym(obj, "culpert_sampler_page", &sym) ||
	    elfobj__offset_to_vaddr(obj, m->offset, &vaddr))
		return 0;
	return elfobj__type(obj) == ET_EXEC ? sym.value : sym.value + (m->start - vaddr);
}

static void count_sites(struct otel_object *o, const struct usdt_site *sites, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (!strcmp(sites[i].name, "alloc")) {
			o->n_alloc++;
			o->alloc_sem |= sites[i].semaphore != 0;
		} else if (!strcmp(sites[i].name, "free")) {
			o->n_free++;
			o->free_sem |= sites[i].semaphore != 0;
		}
	}
}

static int add_object(void *ctx, const struct procmap *m, struct elfobj *obj,
		      const struct usdt_site *sites, int n)
{
	struct plan_ctx *c = ctx;
	struct otel_plan *p = c->plan;
	struct otel_object *o;
	char path[PATH_MAX];

	if (target__object_path(c->t, m, path, sizeof(path)) ||
	    (c->mode != OTEL_MODE_INJECT && injected_copy(m->path)))
		return 0;
	if (vec_reserve(&p->objects, &c->cap, p->n + 1, sizeof(*p->objects)))
		return -ENOMEM;
	o = &p->objects[p->n];
	memset(o, 0, sizeof(*o));
	o->path = strdup(m->path);
	o->open_path = strdup(path);
	if (!o->path || !o->open_path) {
		free(o->path);
		free(o->open_path);
		return -ENOMEM;
	}
	p->n++;
	count_sites(o, sites, n);
	o->is_exe = !strcmp(m->path, c->t->exe);
	if (!o->is_exe)
		procmaps__text_range(c->maps, m, &o->text_lo, &o->text_hi);
	o->page = page_address(m, obj);
	return 0;
}

static size_t sites_of(const struct otel_plan *p, bool free_sites)
{
	size_t i, n = 0;

	for (i = 0; i < p->n; i++)
		n += free_sites ? p->objects[i].n_free : p->objects[i].n_alloc;
	return n;
}

/* the choice for mode, in p->use and p->why; 0 or -ENOENT */
static int choose(struct otel_plan *p, enum otel_mode mode, bool need_free)
{
	size_t alloc = sites_of(p, false), frees = sites_of(p, true);
	const char *lack = !alloc ? "no mapped object has otel_memory:alloc probes" :
			   need_free && !frees ? "--inuse needs otel_memory:free, and no mapped "
						 "object has it" : NULL;

	if (mode == OTEL_MODE_UPROBES) {
		snprintf(p->why, sizeof(p->why), "uprobes on the allocator (as asked; %s)",
			 alloc ? "otel_memory probes are there" : "no otel_memory probes either");
		return 0;
	}
	if (lack) {
		snprintf(p->why, sizeof(p->why), "%s: %s", mode == OTEL_MODE_AUTO ?
			 "uprobes on the allocator (auto)" : mode == OTEL_MODE_USDT ?
			 "--sampler usdt cannot be had" : "--sampler inject cannot be had", lack);
		return mode == OTEL_MODE_AUTO ? 0 : -ENOENT;
	}
	p->use = true;
	p->with_free = need_free;
	snprintf(p->why, sizeof(p->why), "otel_memory probes (%s): %zu alloc%s site%s in %zu "
		 "object%s, no probe on the allocator", mode == OTEL_MODE_AUTO ? "auto" :
		 mode == OTEL_MODE_INJECT ? "injected" : "as asked",
		 alloc, need_free ? " and free" : "", alloc + (need_free ? frees : 0) > 1 ? "s" : "",
		 p->n, p->n > 1 ? "s" : "");
	return 0;
}

int otel__plan(const struct target *t, const struct procmaps *maps, struct objcache *objs,
	       enum otel_mode mode, bool need_free, struct otel_plan *plan)
{
	struct plan_ctx c = { .t = t, .maps = maps, .plan = plan, .mode = mode };
	int ret;

	memset(plan, 0, sizeof(*plan));
	ret = usdt_objects(maps, objs, "otel_memory", add_object, &c);
	if (ret) {
		snprintf(plan->why, sizeof(plan->why), "out of memory");
		otel_plan__free(plan);
		return ret;
	}
	return choose(plan, mode, need_free);
}

void otel_plan__free(struct otel_plan *plan)
{
	size_t i;

	for (i = 0; i < plan->n; i++) {
		free(plan->objects[i].path);
		free(plan->objects[i].open_path);
	}
	free(plan->objects);
	plan->objects = NULL;
	plan->n = 0;
}

int otel_plan__rate(const struct otel_plan *plan, int pid, uint64_t *rate)
{
	struct sampler_stats ss = { 0 };
	struct remotemem rm;
	size_t i;
	int ret = -ENOENT;

	for (i = 0; i < plan->n && ret == -ENOENT; i++) {
		if (!plan->objects[i].page)
			continue;
		ret = remotemem__open(&rm, pid);
		if (ret)
			return ret;
		ret = sampler_page__read(&rm, plan->objects[i].page, &ss);
		remotemem__close(&rm);
	}
	if (!ret && !ss.rate)
		ret = -EINVAL;
	if (!ret)
		*rate = ss.rate;
	return ret;
}

static bool in_sampler(const struct otel_plan *plan, uint64_t ret_addr)
{
	size_t i;

	/* a return address: the call is the instruction before it */
	for (i = 0; i < plan->n; i++)
		if (ret_addr - 1 >= plan->objects[i].text_lo && ret_addr - 1 < plan->objects[i].text_hi)
			return true;
	return false;
}

size_t otel_plan__trim(const struct otel_plan *plan, uint64_t *frames, size_t n)
{
	size_t skip = 0;

	while (skip < n && in_sampler(plan, frames[skip]))
		skip++;
	if (skip)
		memmove(frames, frames + skip, (n - skip) * sizeof(*frames));
	return n - skip;
}
