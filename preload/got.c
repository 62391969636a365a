// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Rewriting the allocator's GOT slots of the loaded objects, and writing
 * them back (docs/sampler.md, "Taken over late").
 *
 * A slot is a JUMP_SLOT or GLOB_DAT relocation of a symbol of the table.
 * It is rewritten only while it holds the function the process is bound
 * to now, or (lazy binding, not resolved yet) an address inside its own
 * object, its PLT: a slot bound elsewhere (another namespace's libc, a
 * library opened with RTLD_DEEPBIND) keeps its allocator, whose blocks
 * ours must not meet.  Only the base namespace is visited, for the same
 * reason.
 *
 * Every write is one compare-and-swap of an aligned 8-byte word: a thread
 * calling through the slot meanwhile reads the old or the new target,
 * never half of one, and a slot someone else changed in between is left
 * alone.  A slot in a RELRO page gets its page writable for the write and
 * its protection as /proc/self/maps gave it back right after.
 *
 * The callers serialise (late.c's lock).  The visit runs inside
 * dl_iterate_phdr, whose lock keeps every object it lists mapped and the
 * namespace's list still; it takes no other loader lock.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "got.h"

#if defined(__x86_64__)
#define R_JUMP_SLOT	R_X86_64_JUMP_SLOT
#define R_GLOB_DAT	R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define R_JUMP_SLOT	R_AARCH64_JUMP_SLOT
#define R_GLOB_DAT	R_AARCH64_GLOB_DAT
#endif

/* --- the slots' values before we wrote them: open addressing, grown by doubling --- */

struct saved {
	uintptr_t slot;
	uintptr_t orig;
};

static struct saved *saved;
static size_t saved_cap, saved_n;

static size_t saved_home(uintptr_t slot, size_t cap)
{
	return (size_t)(((uint64_t)(slot >> 3) * 0x9e3779b97f4a7c15ULL) >> 20) & (cap - 1);
}

static struct saved *saved_find(struct saved *tab, size_t cap, uintptr_t slot)
{
	size_t i;

	for (i = saved_home(slot, cap); tab[i].slot && tab[i].slot != slot; i = (i + 1) & (cap - 1))
		;
	return &tab[i];
}

/* its own mapping, not the process's allocator: we may be called from within its GOT */
static int saved_grow(void)
{
	size_t cap = saved_cap ? saved_cap * 2 : 1024, i;
	struct saved *tab;

	tab = mmap(NULL, cap * sizeof(*tab), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (tab == MAP_FAILED)
		return -ENOMEM;
	for (i = 0; i < saved_cap; i++)
		if (saved[i].slot)
			*saved_find(tab, cap, saved[i].slot) = saved[i];
	if (saved)
		munmap(saved, saved_cap * sizeof(*saved));
	saved = tab;
	saved_cap = cap;
	return 0;
}

static int saved_put(uintptr_t slot, uintptr_t orig)
{
	struct saved *s;

	if ((saved_n + 1) * 2 > saved_cap && saved_grow())
		return -ENOMEM;
	s = saved_find(saved, saved_cap, slot);
	if (!s->slot)
		saved_n++;
	s->slot = slot;
	s->orig = orig;
	return 0;
}

static uintptr_t saved_get(uintptr_t slot)
{
	struct saved *s;

	if (!saved)
		return 0;
	s = saved_find(saved, saved_cap, slot);
	return s->slot ? s->orig : 0;
}

/* --- page protection --- */

/*
 * /proc/self/maps, read once per walk when a RELRO page is first met: a
 * read of it per page costs more than the rest of the walk.  The pages the
 * walk itself makes writable get their old protection back before the
 * next lookup, so the snapshot stays right for them.
 */
static char *maps;
static size_t maps_len, maps_cap;
static int maps_state;			/* 0 not read in this walk, 1 read, -1 unreadable */

static int maps_read(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	ssize_t r = 0;

	if (fd < 0)
		return -1;
	maps_len = 0;
	for (;;) {
		if (maps_len + 4096 > maps_cap) {
			size_t cap = maps_cap ? maps_cap * 2 : 64 * 1024;
			char *m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				       -1, 0);

			if (m == MAP_FAILED)
				break;
			if (maps) {
				memcpy(m, maps, maps_len);
				munmap(maps, maps_cap);
			}
			maps = m;
			maps_cap = cap;
		}
		r = read(fd, maps + maps_len, maps_cap - maps_len - 1);
		if (r <= 0)
			break;
		maps_len += (size_t)r;
	}
	close(fd);
	if (r < 0 || !maps)
		return -1;
	maps[maps_len] = '\0';
	return 1;
}

static void maps_drop(void)
{
	if (maps)
		munmap(maps, maps_cap);
	maps = NULL;
	maps_len = maps_cap = 0;
	maps_state = 0;
}

/* the protection of the page at `addr` as the kernel has it; -1 if unknown */
static int page_prot(uintptr_t addr)
{
	const char *line, *next;

	if (!maps_state)
		maps_state = maps_read();
	if (maps_state < 0)
		return -1;
	for (line = maps; line && *line; line = next) {
		char *p;
		unsigned long lo = strtoul(line, &p, 16), hi = 0;

		next = strchr(line, '\n');
		if (next)
			next++;
		if (*p == '-')
			hi = strtoul(p + 1, &p, 16);
		if (lo > addr)
			break;
		if (*p == ' ' && addr < hi && p[1] && p[2] && p[3])
			return (p[1] == 'r' ? PROT_READ : 0) | (p[2] == 'w' ? PROT_WRITE : 0) |
			       (p[3] == 'x' ? PROT_EXEC : 0);
	}
	return -1;
}

/* --- one object --- */

struct object {
	uintptr_t base;
	const ElfW(Phdr) *phdr;
	size_t phnum;
	uintptr_t relro_lo, relro_hi;	/* what the loader made read-only, pages */
	uintptr_t open_page;		/* a RELRO page we made writable, or 0 */
	int open_prot;
};

struct walk {
	const struct got_target *t;
	size_t n;
	const uintptr_t *skip;		/* addresses inside the objects to leave alone */
	size_t nskip;
	int restore;
	struct got_stats *stats;
	uint64_t lead[256];		/* first byte -> the targets' second bytes, mod 64 */
};

static uintptr_t page_of(uintptr_t a)
{
	return a & ~((uintptr_t)getpagesize() - 1);
}

static int in_object(const struct object *o, uintptr_t a)
{
	size_t i;

	for (i = 0; i < o->phnum; i++) {
		const ElfW(Phdr) *ph = &o->phdr[i];

		if (ph->p_type == PT_LOAD && a >= o->base + ph->p_vaddr &&
		    a < o->base + ph->p_vaddr + ph->p_memsz)
			return 1;
	}
	return 0;
}

static void close_page(struct object *o)
{
	if (!o->open_page)
		return;
	mprotect((void *)o->open_page, (size_t)getpagesize(), o->open_prot);
	o->open_page = 0;
}

/* the slot's page writable, if the loader protected it; 0 or -errno */
static int open_page(struct object *o, uintptr_t slot)
{
	uintptr_t page = page_of(slot);
	int prot;

	if (slot < o->relro_lo || slot >= o->relro_hi || page == o->open_page)
		return 0;
	close_page(o);
	prot = page_prot(page);
	if (prot < 0)
		prot = PROT_READ;	/* what the loader leaves RELRO with */
	if (prot & PROT_WRITE)
		return 0;
	if (mprotect((void *)page, (size_t)getpagesize(), prot | PROT_WRITE))
		return -errno;
	o->open_page = page;
	o->open_prot = prot;
	return 0;
}

static const struct got_target *target_of(const struct walk *w, const char *name)
{
	size_t i;

	/* most symbols differ from every target in their first two bytes: no strcmp for them */
	if (!name[0] || !(w->lead[(unsigned char)name[0]] & (1ULL << (name[1] & 63))))
		return NULL;
	for (i = 0; i < w->n; i++)
		if (!strcmp(w->t[i].name, name))
			return &w->t[i];
	return NULL;
}

/*
 * Bound to the function the process uses now, or not bound yet: a lazy
 * JUMP_SLOT still points into its object's PLT (never at the object's
 * own definition of the symbol, which would be another allocator).
 */
static int bound_to_real(const struct object *o, const struct got_target *t, uintptr_t v,
			 unsigned long type, const ElfW(Sym) *sym)
{
	if (v == (uintptr_t)t->real)
		return 1;
	if (type != R_JUMP_SLOT || !in_object(o, v))
		return 0;
	return sym->st_shndx == SHN_UNDEF || o->base + sym->st_value != v;
}

static void patch_slot(const struct walk *w, struct object *o, const struct got_target *t,
		       uintptr_t slot, unsigned long type, const ElfW(Sym) *sym)
{
	uintptr_t v = __atomic_load_n((uintptr_t *)slot, __ATOMIC_RELAXED), to;

	if (w->restore) {
		if (v != (uintptr_t)t->wrapper)
			return;
		to = saved_get(slot) ?: (uintptr_t)t->real;
	} else {
		if (v == (uintptr_t)t->wrapper)
			return;
		if (!bound_to_real(o, t, v, type, sym))
			return;
		if (saved_put(slot, v)) {
			w->stats->failed++;
			return;
		}
		to = (uintptr_t)t->wrapper;
	}
	if (open_page(o, slot)) {
		w->stats->failed++;
		return;
	}
	if (__atomic_compare_exchange_n((uintptr_t *)slot, &v, to, 0, __ATOMIC_SEQ_CST,
					__ATOMIC_RELAXED))
		w->stats->written++;
}

/* a link-time address of the dynamic section, as the loader left it */
static uintptr_t dyn_addr(uintptr_t base, ElfW(Addr) v)
{
	/* glibc adjusts the entries of the objects it loaded; the vDSO's stay relative */
	return v < base ? base + v : v;
}

/*
 * A slot patch_slot could write: it holds a target's function or wrapper, or is a lazy
 * JUMP_SLOT.  Any other is passed over before its symbol is read: the symbol and string
 * tables of a large library are most of the pages a walk would fault into the target's RSS
 * (libcrypto's 240 KiB, bound at start-up to functions of its own).
 */
static int may_be_ours(const struct walk *w, const struct object *o, uintptr_t slot,
		       unsigned long type)
{
	uintptr_t v = __atomic_load_n((uintptr_t *)slot, __ATOMIC_RELAXED);
	size_t i;

	for (i = 0; i < w->n; i++)
		if (v == (uintptr_t)w->t[i].real || v == (uintptr_t)w->t[i].wrapper)
			return 1;
	return type == R_JUMP_SLOT && in_object(o, v);
}

static void visit_relocs(const struct walk *w, struct object *o, const ElfW(Rela) *rel,
			 size_t bytes, const ElfW(Sym) *symtab, const char *strtab)
{
	size_t i;

	for (i = 0; i < bytes / sizeof(*rel); i++) {
		unsigned long type = ELF64_R_TYPE(rel[i].r_info);
		const ElfW(Sym) *sym;
		const struct got_target *t;
		uintptr_t slot = o->base + rel[i].r_offset;

		if ((type != R_JUMP_SLOT && type != R_GLOB_DAT) || (slot & 7) ||
		    !may_be_ours(w, o, slot, type))
			continue;
		sym = &symtab[ELF64_R_SYM(rel[i].r_info)];
		t = target_of(w, strtab + sym->st_name);
		if (t)
			patch_slot(w, o, t, slot, type, sym);
	}
}

/* this object's dynamic section is one of the base namespace's */
static int in_base_namespace(uintptr_t dynamic)
{
	const struct link_map *lm;

	for (lm = _r_debug.r_map; lm; lm = lm->l_next)
		if ((uintptr_t)lm->l_ld == dynamic)
			return 1;
	return 0;
}

/* what the walk and the lookup need of an object's dynamic section */
struct dynamic {
	const ElfW(Sym) *symtab;
	const char *strtab;
	const ElfW(Rela) *jmprel, *rela;
	size_t jmprel_sz, rela_sz;
	size_t relacount;		/* DT_RELACOUNT: the leading R_*_RELATIVE entries of rela */
	long pltrel;
	const uint32_t *gnu_hash, *hash;
	const char *soname;		/* DT_SONAME, or NULL */
};

/* the object's dynamic section, if it has one in the base namespace; RELRO into `o` */
static int parse_object(struct dl_phdr_info *info, struct object *o, struct dynamic *dy)
{
	const ElfW(Dyn) *dyn = NULL, *d;
	size_t i;

	*o = (struct object){ .base = info->dlpi_addr, .phdr = info->dlpi_phdr,
			      .phnum = info->dlpi_phnum };
	uintptr_t soname = 0;

	*dy = (struct dynamic){ .pltrel = DT_RELA };
	for (i = 0; i < o->phnum; i++) {
		const ElfW(Phdr) *ph = &o->phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(o->base + ph->p_vaddr);
		if (ph->p_type == PT_GNU_RELRO) {
			o->relro_lo = page_of(o->base + ph->p_vaddr);
			o->relro_hi = page_of(o->base + ph->p_vaddr + ph->p_memsz);
		}
	}
	if (!dyn || !in_base_namespace((uintptr_t)dyn))
		return 0;
	for (d = dyn; d->d_tag != DT_NULL; d++) {
		uintptr_t a = dyn_addr(o->base, d->d_un.d_ptr);

		switch (d->d_tag) {
		case DT_SYMTAB:
			dy->symtab = (const ElfW(Sym) *)a;
			break;
		case DT_STRTAB:
			dy->strtab = (const char *)a;
			break;
		case DT_JMPREL:
			dy->jmprel = (const ElfW(Rela) *)a;
			break;
		case DT_PLTRELSZ:
			dy->jmprel_sz = d->d_un.d_val;
			break;
		case DT_PLTREL:
			dy->pltrel = (long)d->d_un.d_val;
			break;
		case DT_RELA:
			dy->rela = (const ElfW(Rela) *)a;
			break;
		case DT_RELASZ:
			dy->rela_sz = d->d_un.d_val;
			break;
		case DT_RELACOUNT:
			dy->relacount = d->d_un.d_val;
			break;
		case DT_GNU_HASH:
			dy->gnu_hash = (const uint32_t *)a;
			break;
		case DT_HASH:
			dy->hash = (const uint32_t *)a;
			break;
		case DT_SONAME:
			soname = d->d_un.d_val;
			break;
		}
	}
	if (dy->strtab && soname)
		dy->soname = dy->strtab + soname;
	return dy->symtab && dy->strtab;
}

static int skipped(const struct object *o, const uintptr_t *skip, size_t nskip)
{
	size_t i;

	for (i = 0; i < nskip; i++)
		if (in_object(o, skip[i]))
			return 1;
	return 0;
}

static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
	const struct walk *w = data;
	struct object o;
	struct dynamic dy;

	if (!parse_object(info, &o, &dy) || skipped(&o, w->skip, w->nskip))
		return 0;
	w->stats->objects++;
	/* x86-64 and arm64 use RELA throughout */
	if (dy.jmprel && dy.pltrel == DT_RELA)
		visit_relocs(w, &o, dy.jmprel, dy.jmprel_sz, dy.symtab, dy.strtab);
	/*
	 * The relative relocations come first and name no symbol: not read, their pages (most
	 * of .rela.dyn in a large library: 400 KiB of libcrypto's) are not faulted into the
	 * target's RSS (docs/inject.md, "What it costs")
	 */
	if (dy.rela) {
		size_t skip = dy.relacount <= dy.rela_sz / sizeof(*dy.rela) ? dy.relacount : 0;

		visit_relocs(w, &o, dy.rela + skip, dy.rela_sz - skip * sizeof(*dy.rela),
			     dy.symtab, dy.strtab);
	}
	close_page(&o);
	return 0;
}

static int walk(const struct got_target *t, size_t n, const uintptr_t *skip, size_t nskip,
		int restore, struct got_stats *stats)
{
	struct walk w = { t, n, skip, nskip, restore, stats, { 0 } };
	size_t i;

	for (i = 0; i < n; i++)
		w.lead[(unsigned char)t[i].name[0]] |= 1ULL << (t[i].name[1] & 63);
	memset(stats, 0, sizeof(*stats));
	dl_iterate_phdr(visit, &w);
	maps_drop();
	return stats->failed ? -EIO : 0;
}

int got_patch(const struct got_target *t, size_t n, const uintptr_t *skip, size_t nskip,
	      struct got_stats *stats)
{
	return walk(t, n, skip, nskip, 0, stats);
}

int got_restore(const struct got_target *t, size_t n, struct got_stats *stats)
{
	return walk(t, n, NULL, 0, 1, stats);
}

/* --- definitions --- */

/* the object's own definition of `name` through its DT_GNU_HASH or DT_HASH table */
static const ElfW(Sym) *defined_in(const struct dynamic *dy, const char *name)
{
	const ElfW(Sym) *sym;
	uint32_t i;

	if (dy->gnu_hash) {
		const uint32_t *h = dy->gnu_hash, *buckets, *chain;
		uint32_t nbuckets = h[0], symoffset = h[1], bloom = h[2], hv = 5381;
		const unsigned char *c;

		for (c = (const unsigned char *)name; *c; c++)
			hv = hv * 33 + *c;
		buckets = (const uint32_t *)((const ElfW(Addr) *)&h[4] + bloom);
		chain = buckets + nbuckets;
		if (!nbuckets)
			return NULL;
		for (i = buckets[hv % nbuckets]; i >= symoffset; i++) {
			uint32_t ch = chain[i - symoffset];

			sym = &dy->symtab[i];
			if ((ch | 1) == (hv | 1) && !strcmp(dy->strtab + sym->st_name, name))
				return sym;
			if (ch & 1)
				break;
		}
		return NULL;
	}
	if (dy->hash) {
		uint32_t nbucket = dy->hash[0], hv = 0, g;
		const uint32_t *bucket = &dy->hash[2], *chain = bucket + nbucket;
		const unsigned char *c;

		for (c = (const unsigned char *)name; *c; c++) {
			hv = (hv << 4) + *c;
			g = hv & 0xf0000000;
			hv ^= g >> 24;
			hv &= ~g;
		}
		for (i = nbucket ? bucket[hv % nbucket] : 0; i; i = chain[i]) {
			sym = &dy->symtab[i];
			if (!strcmp(dy->strtab + sym->st_name, name))
				return sym;
		}
	}
	return NULL;
}

struct lookup {
	const char *name;
	const uintptr_t *skip;
	size_t nskip;
	void *found;
};

static int lookup_one(struct dl_phdr_info *info, size_t size, void *data)
{
	struct lookup *l = data;
	const ElfW(Sym) *sym;
	struct object o;
	struct dynamic dy;
	unsigned int type;

	if (!parse_object(info, &o, &dy) || skipped(&o, l->skip, l->nskip))
		return 0;
	sym = defined_in(&dy, l->name);
	if (!sym || sym->st_shndx == SHN_UNDEF || !sym->st_value)
		return 0;
	/* no IFUNC: none of the entry points is one, and its resolver is not the function */
	type = ELF64_ST_TYPE(sym->st_info);
	if (type != STT_FUNC)
		return 0;
	if (ELF64_ST_BIND(sym->st_info) != STB_GLOBAL && ELF64_ST_BIND(sym->st_info) != STB_WEAK)
		return 0;
	l->found = (void *)(o.base + sym->st_value);
	return 1;
}

void *got_definition(const char *name, const uintptr_t *skip, size_t nskip)
{
	struct lookup l = { name, skip, nskip, NULL };

	dl_iterate_phdr(lookup_one, &l);
	return l.found;
}

/* a loaded object answers to `name`: its file's name or its DT_SONAME */
static int named(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *name = data, *base = strrchr(info->dlpi_name, '/');
	struct object o;
	struct dynamic dy;

	if (!strcmp(base ? base + 1 : info->dlpi_name, name))
		return 1;
	return parse_object(info, &o, &dy) && dy.soname && !strcmp(dy.soname, name);
}

int got_loaded(const char *name)
{
	return dl_iterate_phdr(named, (void *)name);
}
