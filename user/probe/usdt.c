// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "objcache.h"
#include "procmaps.h"
#include "usdt.h"
#include "vec.h"

#define NT_STAPSDT 3

/* address of .stapsdt.base: notes record where it was at link time, prelink may move it */
static uint64_t stapsdt_base(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t shstrndx;
	const char *name;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr))
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && !strcmp(name, ".stapsdt.base"))
			return shdr.sh_addr;
	}
	return 0;
}

/* desc: pc, base, semaphore (8 bytes each), then "provider\0name\0args\0" */
static int parse_note(const char *desc, size_t len, uint64_t base_now, struct usdt_site *s)
{
	const char *prov, *name, *args, *end = desc + len;
	uint64_t base;

	if (len < 3 * 8 + 3)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	memcpy(&s->pc, desc, 8);
	memcpy(&base, desc + 8, 8);
	memcpy(&s->semaphore, desc + 16, 8);
	prov = desc + 24;
	name = memchr(prov, 0, (size_t)(end - prov));
	args = name ? memchr(name + 1, 0, (size_t)(end - name - 1)) : NULL;
	if (!name || !args || !memchr(args + 1, 0, (size_t)(end - args - 1)))
		return -EINVAL;
	name++;
	args++;
	if (base && base_now)
		s->pc += base_now - base;
	snprintf(s->provider, sizeof(s->provider), "%s", prov);
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->args, sizeof(s->args), "%s", args);
	return 0;
}

int usdt_sites(struct elfobj *obj, const char *provider, struct usdt_site **out)
{
	Elf *elf = elfobj__elf(obj);
	uint64_t base_now = stapsdt_base(elf);
	struct usdt_site *v = NULL, site;
	size_t n = 0, cap = 0, off, name_off, desc_off;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Nhdr nhdr;
	Elf_Data *data;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		for (off = 0; data && (off = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0;) {
			const char *d = (const char *)data->d_buf;

			if (nhdr.n_type != NT_STAPSDT || nhdr.n_namesz != 8 ||
			    memcmp(d + name_off, "stapsdt", 8))
				continue;
			if (parse_note(d + desc_off, nhdr.n_descsz, base_now, &site))
				continue;
			if (provider && strcmp(site.provider, provider))
				continue;
			if (vec_reserve(&v, &cap, n + 1, sizeof(*v))) {
				free(v);
				return -ENOMEM;
			}
			v[n++] = site;
		}
	}
	*out = v;
	return (int)n;
}

static bool seen_obj(struct elfobj *const *seen, size_t n, const struct elfobj *obj)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (seen[i] == obj)
			return true;
	return false;
}

int usdt_objects(const struct procmaps *maps, struct objcache *objs, const char *provider,
		 usdt_object_fn cb, void *ctx)
{
	/* the cache hands out one elfobj per file: a second mapping finds it again */
	struct elfobj **seen = NULL, *obj;
	struct usdt_site *sites;
	size_t i, n_seen = 0, cap = 0;
	int n, ret = 0;

	for (i = 0; i < maps->n && !ret; i++) {
		const struct procmap *m = &maps->v[i];

		/* objcache__get() turns away mappings without a file */
		if (!m->executable || !(obj = objcache__get(objs, m)) ||
		    seen_obj(seen, n_seen, obj))
			continue;
		n = usdt_sites(obj, provider, &sites);
		if (n <= 0)
			continue;
		if (vec_reserve(&seen, &cap, n_seen + 1, sizeof(*seen)))
			ret = -ENOMEM;
		else {
			seen[n_seen++] = obj;
			ret = cb(ctx, m, obj, sites, n);
		}
		free(sites);
	}
	free(seen);
	return ret;
}
