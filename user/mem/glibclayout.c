// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>

#include "elfobj.h"
#include "glibclayout.h"
#include "log.h"

/* the symbol versions libc defines: this many at most are looked at */
#define MAX_VERDEFS 256

struct field_spec {
	enum glibc_struct st;
	const char *names[2];	/* the member's name; another glibc's name for it */
	bool required;		/* without it the arenas cannot be read */
};

static const struct field_spec fields[GF__MAX] = {
	[GF_AR_FLAGS] = { GS_STATE, { "flags" } },
	[GF_AR_FASTBINS] = { GS_STATE, { "fastbinsY" }, true },
	[GF_AR_TOP] = { GS_STATE, { "top" }, true },
	[GF_AR_LAST_REMAINDER] = { GS_STATE, { "last_remainder" } },
	[GF_AR_BINS] = { GS_STATE, { "bins" }, true },
	[GF_AR_NEXT] = { GS_STATE, { "next" }, true },
	[GF_AR_NEXT_FREE] = { GS_STATE, { "next_free" } },
	[GF_AR_ATTACHED] = { GS_STATE, { "attached_threads" } },
	[GF_AR_SYSTEM_MEM] = { GS_STATE, { "system_mem" }, true },
	[GF_AR_MAX_SYSTEM_MEM] = { GS_STATE, { "max_system_mem" } },
	[GF_MP_TRIM_THRESHOLD] = { GS_PAR, { "trim_threshold" } },
	[GF_MP_TOP_PAD] = { GS_PAR, { "top_pad" } },
	[GF_MP_MMAP_THRESHOLD] = { GS_PAR, { "mmap_threshold" } },
	[GF_MP_ARENA_TEST] = { GS_PAR, { "arena_test" } },
	[GF_MP_ARENA_MAX] = { GS_PAR, { "arena_max" } },
	[GF_MP_HP_PAGESIZE] = { GS_PAR, { "hp_pagesize", "thp_pagesize" } },
	[GF_MP_N_MMAPS] = { GS_PAR, { "n_mmaps" }, true },
	[GF_MP_N_MMAPS_MAX] = { GS_PAR, { "n_mmaps_max" } },
	[GF_MP_MAX_N_MMAPS] = { GS_PAR, { "max_n_mmaps" } },
	[GF_MP_NO_DYN_THRESHOLD] = { GS_PAR, { "no_dyn_threshold" } },
	[GF_MP_MMAPPED_MEM] = { GS_PAR, { "mmapped_mem" }, true },
	[GF_MP_MAX_MMAPPED_MEM] = { GS_PAR, { "max_mmapped_mem" } },
	[GF_MP_SBRK_BASE] = { GS_PAR, { "sbrk_base" } },
	[GF_MP_TCACHE_BINS] = { GS_PAR, { "tcache_bins" } },
	[GF_MP_TCACHE_MAX_BYTES] = { GS_PAR, { "tcache_max_bytes" } },
	[GF_MP_TCACHE_COUNT] = { GS_PAR, { "tcache_count" } },
	[GF_MP_TCACHE_UNSORTED_LIMIT] = { GS_PAR, { "tcache_unsorted_limit" } },
	[GF_CH_SIZE] = { GS_CHUNK, { "mchunk_size", "size" }, true },
	[GF_CH_FD] = { GS_CHUNK, { "fd" }, true },
	[GF_CH_BK] = { GS_CHUNK, { "bk" }, true },
	[GF_CH_FD_NEXTSIZE] = { GS_CHUNK, { "fd_nextsize" }, true },
	[GF_HI_AR_PTR] = { GS_HEAP_INFO, { "ar_ptr" } },
	[GF_HI_PREV] = { GS_HEAP_INFO, { "prev" } },
	[GF_HI_SIZE] = { GS_HEAP_INFO, { "size" } },
	[GF_HI_MPROTECT_SIZE] = { GS_HEAP_INFO, { "mprotect_size" } },
	[GF_TC_COUNTS] = { GS_TCACHE, { "counts" } },
	[GF_TC_ENTRIES] = { GS_TCACHE, { "entries" } },
	[GF_TE_NEXT] = { GS_TCACHE_ENTRY, { "next" } },
};

/* how each struct is found: through a variable of its type, or by its name */
static const struct {
	const char *var;
	const char *type;
	const char *what;	/* for the user */
} structs[GS__MAX] = {
	[GS_STATE] = { "main_arena", NULL, "struct malloc_state (main_arena)" },
	[GS_PAR] = { "mp_", NULL, "struct malloc_par (mp_)" },
	[GS_CHUNK] = { NULL, "malloc_chunk", "struct malloc_chunk" },
	[GS_HEAP_INFO] = { NULL, "heap_info", "heap_info" },
	[GS_TCACHE] = { NULL, "tcache_perthread_struct", "struct tcache_perthread_struct" },
	[GS_TCACHE_ENTRY] = { NULL, "tcache_entry", "tcache_entry" },
};

/* "GLIBC_2.36" -> 2, 36 */
static bool parse_version(const char *name, int *major, int *minor)
{
	return name && sscanf(name, "GLIBC_%d.%d", major, minor) == 2;
}

/* the newest GLIBC_x.y version libc defines: the release it belongs to */
static void read_version(struct elfobj *obj, struct glibc_layout *l)
{
	Elf *elf = elfobj__elf(obj);
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Verdef vd;
	GElf_Verdaux vda;
	Elf_Data *data;
	const char *name;
	size_t off, i;
	int maj, min;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_GNU_verdef)
			continue;
		data = elf_getdata(scn, NULL);
		for (i = 0, off = 0; data && i < shdr.sh_info && i < MAX_VERDEFS; i++) {
			if (!gelf_getverdef(data, (int)off, &vd) ||
			    !gelf_getverdaux(data, (int)(off + vd.vd_aux), &vda))
				break;
			name = elf_strptr(elf, shdr.sh_link, vda.vda_name);
			if (parse_version(name, &maj, &min) &&
			    (maj > l->version_major ||
			     (maj == l->version_major && min > l->version_minor))) {
				l->version_major = maj;
				l->version_minor = min;
			}
			if (!vd.vd_next)
				break;
			off += vd.vd_next;
		}
	}
}

static int load_fields(struct glibc_layout *l, enum glibc_struct st, Dwarf_Die *type)
{
	size_t i, k;

	if (dw_type_size(type, &l->size[st]))
		return -ENODATA;
	for (i = 0; i < GF__MAX; i++) {
		if (fields[i].st != st)
			continue;
		for (k = 0; k < 2 && fields[i].names[k]; k++) {
			struct dw_field *f = &l->f[i];

			/* a field that does not fit its struct, or of an odd size, is not read */
			if (dw_type_field(type, fields[i].names[k], f) == 0 &&
			    f->offset + f->size <= l->size[st] &&
			    (f->elem_size == 1 || f->elem_size == 2 || f->elem_size == 4 ||
			     f->elem_size == 8)) {
				l->present |= 1ULL << i;
				break;
			}
		}
	}
	return 0;
}

static int load_types(struct dwlayout *dl, struct glibc_layout *l, char *err, size_t errlen)
{
	Dwarf_Die type;
	size_t i;
	int ret;

	for (i = 0; i < GS__MAX; i++) {
		ret = structs[i].var ? dwlayout__var_type(dl, structs[i].var, &type)
				     : dwlayout__type(dl, structs[i].type, &type);
		if (!ret)
			ret = load_fields(l, (enum glibc_struct)i, &type);
		if (ret)
			pr_debug("glibc layout: no %s in the DWARF\n", structs[i].what);
	}
	for (i = 0; i < GF__MAX; i++) {
		if (fields[i].required && !glibc_has(l, (enum glibc_field)i)) {
			snprintf(err, errlen, "the DWARF of libc has no %s.%s: not a glibc this "
				 "version of culpert-bpf can read", structs[fields[i].st].what,
				 fields[i].names[0]);
			return -ENODATA;
		}
	}
	return 0;
}

static int load_symbols(struct elfobj *debug, struct glibc_layout *l, char *err, size_t errlen)
{
	struct elf_symbol s;

	if (elfobj__data_sym(debug, "main_arena", &s) || !s.value) {
		snprintf(err, errlen, "no symbol main_arena in %s", elfobj__path(debug));
		return -ENODATA;
	}
	l->main_arena = s.value;
	if (elfobj__data_sym(debug, "mp_", &s) || !s.value) {
		snprintf(err, errlen, "no symbol mp_ in %s", elfobj__path(debug));
		return -ENODATA;
	}
	l->mp = s.value;
	l->has_narenas = !elfobj__data_sym(debug, "narenas", &s) && s.value;
	l->narenas = l->has_narenas ? s.value : 0;
	l->has_tcache_tls = !elfobj__data_sym(debug, "tcache", &s) && s.type == STT_TLS;
	l->tcache_tls = l->has_tcache_tls ? s.value : 0;
	return 0;
}

int glibc_layout__load(struct elfobj *debug, struct elfobj *bin, struct glibc_layout *l,
		       char *err, size_t errlen)
{
	struct dwlayout *dl;
	int ret;

	memset(l, 0, sizeof(*l));
	read_version(bin ? bin : debug, l);
	/* PROTECT_PTR came with 2.32; an unknown version is taken as a current one */
	l->safe_linking = !l->version_major || l->version_major > 2 || l->version_minor >= 32;
	ret = load_symbols(debug, l, err, errlen);
	if (ret)
		return ret;
	dl = dwlayout__new(elfobj__elf(debug));
	if (!dl) {
		snprintf(err, errlen, "%s has no DWARF", elfobj__path(debug));
		return -ENODATA;
	}
	ret = load_types(dl, l, err, errlen);
	dwlayout__free(dl);
	if (ret)
		return ret;
	/* MALLOC_ALIGNMENT is 2 * SIZE_SZ on every 64-bit glibc port */
	l->align = 2 * l->f[GF_CH_SIZE].size;
	l->min_chunk = l->f[GF_CH_FD_NEXTSIZE].offset;
	return 0;
}

uint64_t glibc_get(const struct glibc_layout *l, enum glibc_field f, const void *buf, size_t i)
{
	const unsigned char *p;
	uint64_t v8;
	uint32_t v4;
	uint16_t v2;

	if (!glibc_has(l, f) || i >= l->f[f].count)
		return 0;
	p = (const unsigned char *)buf + l->f[f].offset + i * l->f[f].elem_size;
	switch (l->f[f].elem_size) {
	case 8:
		memcpy(&v8, p, 8);
		return v8;
	case 4:
		memcpy(&v4, p, 4);
		return v4;
	case 2:
		memcpy(&v2, p, 2);
		return v2;
	default:
		return *p;
	}
}
