// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bsearch.h"
#include "elfobj.h"
#include "log.h"
#include "vec.h"

struct load_seg {
	uint64_t vaddr, offset, filesz;
	uint32_t flags;			/* p_flags: PF_X, PF_W, PF_R */
};

struct elfobj {
	char *path;
	int fd;
	Elf *elf;
	int type;
	char build_id[2 * 64 + 1];
	struct load_seg *segs;
	size_t n_segs;
	uint64_t eh_frame_hdr;		/* PT_GNU_EH_FRAME's p_vaddr, if has_eh_frame_hdr */
	bool has_eh_frame_hdr;
	struct elf_symbol *syms;	/* sorted by value; loaded on first use */
	size_t n_syms;
	uint32_t *by_name;		/* syms' indices by name, then index; built on first use */
	bool syms_loaded;
	bool has_symtab;		/* an SHT_SYMTAB section, from the headers alone */
	Elf_Cmd how;			/* ELF_C_READ_MMAP, or ELF_C_READ (elfobj__open_unmapped) */
};

static bool libelf_ready(void)
{
	static int ready = -1;

	if (ready < 0)
		ready = elf_version(EV_CURRENT) != EV_NONE;
	return ready;
}

void hex_encode(char *out, const unsigned char *b, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = 0;
}

/* find NT_GNU_BUILD_ID in one block of notes */
static bool build_id_in_notes(struct elfobj *obj, Elf_Data *data)
{
	GElf_Nhdr nhdr;
	size_t off = 0, name_off, desc_off;

	while (data && (off = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", 4) && nhdr.n_descsz <= 64) {
			hex_encode(obj->build_id, (unsigned char *)data->d_buf + desc_off, nhdr.n_descsz);
			return true;
		}
	}
	return false;
}

static void read_build_id(struct elfobj *obj)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Phdr phdr;
	size_t i, n;

	while ((scn = elf_nextscn(obj->elf, scn))) {
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_NOTE &&
		    build_id_in_notes(obj, elf_getdata(scn, NULL)))
			return;
	}
	/* section headers can be stripped away; the program headers cannot */
	if (elf_getphdrnum(obj->elf, &n))
		return;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(obj->elf, (int)i, &phdr) || phdr.p_type != PT_NOTE)
			continue;
		if (build_id_in_notes(obj, elf_getdata_rawchunk(obj->elf, (int64_t)phdr.p_offset,
								 phdr.p_filesz, ELF_T_NHDR)))
			return;
	}
}

/* the section headers say whether there is a .symtab: no need to load it to know */
static bool find_symtab(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB)
			return true;
	return false;
}

/* one pass over the program headers: what later questions about segments need */
static int read_segments(struct elfobj *obj)
{
	size_t i, n, cap = 0;
	GElf_Phdr phdr;

	if (elf_getphdrnum(obj->elf, &n))
		return -ENOEXEC;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(obj->elf, (int)i, &phdr))
			continue;
		if (phdr.p_type == PT_GNU_EH_FRAME && !obj->has_eh_frame_hdr) {
			obj->eh_frame_hdr = phdr.p_vaddr;
			obj->has_eh_frame_hdr = true;
		}
		if (phdr.p_type != PT_LOAD)
			continue;
		if (vec_reserve(&obj->segs, &cap, obj->n_segs + 1, sizeof(*obj->segs)))
			return -ENOMEM;
		obj->segs[obj->n_segs++] = (struct load_seg){ phdr.p_vaddr, phdr.p_offset,
							      phdr.p_filesz, phdr.p_flags };
	}
	return 0;
}

static struct elfobj *open_as(const char *path, Elf_Cmd how)
{
	struct elfobj *obj;
	GElf_Ehdr ehdr;
	int err;

	if (!libelf_ready()) {
		errno = ENOSYS;
		return NULL;
	}
	obj = calloc(1, sizeof(*obj));
	if (!obj)
		return NULL;
	obj->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (obj->fd < 0) {
		err = errno;
		goto err;
	}
	obj->path = strdup(path);
	obj->how = how;
	obj->elf = elf_begin(obj->fd, how, NULL);
	if (!obj->path || !obj->elf || elf_kind(obj->elf) != ELF_K_ELF ||
	    !gelf_getehdr(obj->elf, &ehdr)) {
		err = obj->path ? ENOEXEC : ENOMEM;
		goto err;
	}
	obj->type = ehdr.e_type;
	err = -read_segments(obj);
	if (err)
		goto err;
	read_build_id(obj);
	obj->has_symtab = find_symtab(obj->elf);
	return obj;
err:
	elfobj__free(obj);
	errno = err;
	return NULL;
}

struct elfobj *elfobj__open(const char *path)
{
	return open_as(path, ELF_C_READ_MMAP);
}

struct elfobj *elfobj__open_unmapped(const char *path)
{
	return open_as(path, ELF_C_READ);
}

void elfobj__trim(struct elfobj *obj)
{
	Elf *fresh;

	if (!obj || (!obj->syms_loaded && obj->how != ELF_C_READ))
		return;
	/* the symbols' names point into the sections read: both go */
	free(obj->syms);
	free(obj->by_name);
	obj->syms = NULL;
	obj->by_name = NULL;
	obj->n_syms = 0;
	obj->syms_loaded = false;
	if (obj->how != ELF_C_READ)
		return;
	/* a handle of its own is the only way to make libelf forget the sections it read */
	fresh = elf_begin(obj->fd, obj->how, NULL);
	if (!fresh)
		return;
	elf_end(obj->elf);
	obj->elf = fresh;
}

void elfobj__free(struct elfobj *obj)
{
	if (!obj)
		return;
	if (obj->elf)
		elf_end(obj->elf);
	if (obj->fd >= 0)
		close(obj->fd);
	free(obj->path);
	free(obj->segs);
	free(obj->syms);
	free(obj->by_name);
	free(obj);
}

const char *elfobj__path(const struct elfobj *obj)
{
	return obj->path;
}

const char *elfobj__build_id(const struct elfobj *obj)
{
	return obj->build_id;
}

int elfobj__type(const struct elfobj *obj)
{
	return obj->type;
}

int elfobj__machine(const struct elfobj *obj)
{
	GElf_Ehdr ehdr;

	return gelf_getehdr(obj->elf, &ehdr) ? ehdr.e_machine : EM_NONE;
}

void *elfobj__elf(const struct elfobj *obj)
{
	return obj->elf;
}

int elfobj__fd(const struct elfobj *obj)
{
	return obj->fd;
}

/* --- symbols -------------------------------------------------------------------------- */

static int add_symtab(struct elfobj *obj, Elf_Scn *scn, const GElf_Shdr *shdr, size_t *cap)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n;
	GElf_Sym sym;

	if (!data || !shdr->sh_entsize)
		return 0;
	n = shdr->sh_size / shdr->sh_entsize;
	for (i = 1; i < n; i++) {
		int type;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    !sym.st_value)
			continue;
		name = elf_strptr(obj->elf, shdr->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (vec_reserve(&obj->syms, cap, obj->n_syms + 1, sizeof(*obj->syms)))
			return -ENOMEM;
		obj->syms[obj->n_syms++] = (struct elf_symbol){
			.name = name,
			.value = sym.st_value,
			.size = sym.st_size,
			.type = (uint8_t)type,
			.bind = (uint8_t)GELF_ST_BIND(sym.st_info),
			.order = (uint32_t)i | (shdr->sh_type == SHT_DYNSYM ? 1U << 31 : 0),
		};
	}
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct elf_symbol *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	/* at one address: the symbol tables' own order (binutils reads them that way) */
	return x->order < y->order ? -1 : x->order > y->order;
}

static int load_symbols(struct elfobj *obj)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t cap = 0;
	int err;

	if (obj->syms_loaded)
		return 0;
	obj->syms_loaded = true;
	while ((scn = elf_nextscn(obj->elf, scn))) {
		if (!gelf_getshdr(scn, &shdr))
			continue;
		if (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM)
			continue;
		err = add_symtab(obj, scn, &shdr, &cap);
		if (err)
			return err;
	}
	/* an object without function symbols has no array: qsort() takes no NULL */
	if (obj->n_syms)
		qsort(obj->syms, obj->n_syms, sizeof(*obj->syms), sym_cmp);
	return 0;
}

bool elfobj__mentions_any(const struct elfobj *obj, const char *const *names, size_t n_names)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Sym sym;
	Elf_Data *data;
	size_t i, j, n;

	while ((scn = elf_nextscn(obj->elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || !shdr.sh_entsize ||
		    (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM))
			continue;
		data = elf_getdata(scn, NULL);
		n = shdr.sh_size / shdr.sh_entsize;
		for (i = 1; data && i < n; i++) {
			const char *s;

			if (!gelf_getsym(data, (int)i, &sym))
				continue;
			s = elf_strptr(obj->elf, shdr.sh_link, sym.st_name);
			for (j = 0; s && j < n_names; j++)
				if (!strcmp(s, names[j]))
					return true;
		}
	}
	return false;
}

/* a defined data or TLS symbol named `name` of one symbol table, or -ENOENT */
static int data_sym_in(const struct elfobj *obj, Elf_Scn *scn, const GElf_Shdr *shdr,
		       const char *name, struct elf_symbol *out)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n = shdr->sh_size / shdr->sh_entsize;
	int found = -ENOENT;
	GElf_Sym sym;

	for (i = 1; data && i < n; i++) {
		const char *s;
		int type;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_OBJECT && type != STT_TLS)
			continue;
		s = elf_strptr(obj->elf, shdr->sh_link, sym.st_name);
		if (!s || strcmp(s, name))
			continue;
		/* a global definition is what the dynamic linker binds to */
		if (!found && out->bind != STB_LOCAL)
			continue;
		*out = (struct elf_symbol){ .name = name, .value = sym.st_value, .size = sym.st_size,
					    .type = (uint8_t)type,
					    .bind = (uint8_t)GELF_ST_BIND(sym.st_info),
					    .order = (uint32_t)i };
		found = 0;
	}
	return found;
}

int elfobj__data_sym(const struct elfobj *obj, const char *name, struct elf_symbol *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	int ret = -ENOENT;

	while ((scn = elf_nextscn(obj->elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || !shdr.sh_entsize ||
		    (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM))
			continue;
		if (!data_sym_in(obj, scn, &shdr, name, out)) {
			ret = 0;
			if (out->bind != STB_LOCAL)
				break;
		}
	}
	return ret;
}

bool elfobj__has_symtab(const struct elfobj *obj)
{
	return obj->has_symtab;
}

const struct elf_symbol *elfobj__symbols(struct elfobj *obj, size_t *n)
{
	*n = 0;
	if (load_symbols(obj))
		return NULL;
	*n = obj->n_syms;
	return obj->syms;
}

/* the symbols of one elfobj, for sorting its name index (qsort_r has no const context) */
static int by_name_cmp(const void *a, const void *b, void *ctx)
{
	const struct elf_symbol *syms = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(syms[x].name, syms[y].name);

	return c ?: (x > y) - (x < y);
}

/*
 * Looked up by name many times per object (an allocator's entry points at
 * every plan, each /metrics scrape's look for glibc): a sorted index, 4
 * bytes a symbol, instead of a walk of every symbol per name.
 */
static int name_index(struct elfobj *obj)
{
	size_t i;

	if (obj->by_name || !obj->n_syms)
		return 0;
	obj->by_name = malloc(obj->n_syms * sizeof(*obj->by_name));
	if (!obj->by_name)
		return -ENOMEM;
	for (i = 0; i < obj->n_syms; i++)
		obj->by_name[i] = (uint32_t)i;
	qsort_r(obj->by_name, obj->n_syms, sizeof(*obj->by_name), by_name_cmp, obj->syms);
	return 0;
}

struct name_key {
	const struct elfobj *obj;
	const char *name;
};

static bool name_before(size_t i, void *ctx)
{
	const struct name_key *k = ctx;

	return strcmp(k->obj->syms[k->obj->by_name[i]].name, k->name) < 0;
}

const struct elf_symbol *elfobj__sym_by_name(struct elfobj *obj, const char *name)
{
	const struct elf_symbol *best = NULL;
	struct name_key key = { obj, name };
	size_t i;

	if (load_symbols(obj) || name_index(obj))
		return NULL;
	/* the equal names in the order of syms, as a walk of syms would meet them */
	for (i = lower_bound_at(obj->n_syms, name_before, &key); i < obj->n_syms; i++) {
		const struct elf_symbol *s = &obj->syms[obj->by_name[i]];

		if (strcmp(s->name, name))
			break;
		/* a global definition is what the dynamic linker binds to */
		if (!best || (best->bind == STB_LOCAL && s->bind != STB_LOCAL))
			best = s;
	}
	return best;
}

static bool covers(const struct elf_symbol *s, uint64_t vaddr)
{
	return !s->size || vaddr < s->value + s->size;
}

static bool sym_starts_by(const void *elem, const void *key)
{
	return ((const struct elf_symbol *)elem)->value <= *(const uint64_t *)key;
}

const struct elf_symbol *elfobj__sym_by_addr(struct elfobj *obj, uint64_t vaddr)
{
	const struct elf_symbol *best = NULL;
	size_t lo, i;

	if (load_symbols(obj) || !obj->n_syms)
		return NULL;
	/* last symbol starting at or before vaddr: the one before lo */
	lo = lower_bound(&vaddr, obj->syms, obj->n_syms, sizeof(*obj->syms), sym_starts_by);
	if (!lo)
		return NULL;
	/*
	 * Of the aliases at that address (C1/C2 constructors, local aliases), as
	 * binutils chooses: one that covers vaddr, the smallest, the first in
	 * table order.  A sized symbol that ends before vaddr leaves it in a gap
	 * (padding, unnamed code).
	 */
	for (i = lo; i > 0 && obj->syms[i - 1].value == obj->syms[lo - 1].value; i--) {
		const struct elf_symbol *s = &obj->syms[i - 1];

		if (covers(s, vaddr) && (!best || s->size <= best->size))
			best = s;
	}
	return best;
}

/* --- addresses ------------------------------------------------------------------------ */

int elfobj__vaddr_to_offset(const struct elfobj *obj, uint64_t vaddr, uint64_t *off)
{
	size_t i;

	for (i = 0; i < obj->n_segs; i++) {
		const struct load_seg *s = &obj->segs[i];

		if (vaddr >= s->vaddr && vaddr < s->vaddr + s->filesz) {
			*off = vaddr - s->vaddr + s->offset;
			return 0;
		}
	}
	return -ENOENT;
}

int elfobj__offset_to_vaddr(const struct elfobj *obj, uint64_t off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < obj->n_segs; i++) {
		const struct load_seg *s = &obj->segs[i];

		if (off >= s->offset && off < s->offset + s->filesz) {
			*vaddr = off - s->offset + s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

int elfobj__eh_frame_hdr(const struct elfobj *obj, uint64_t *vaddr)
{
	if (!obj->has_eh_frame_hdr)
		return -ENOENT;
	*vaddr = obj->eh_frame_hdr;
	return 0;
}

int elfobj__exec_segment(const struct elfobj *obj, uint64_t *vaddr)
{
	size_t i, n_exec = 0;

	for (i = 0; i < obj->n_segs; i++) {
		if (obj->segs[i].flags & PF_X) {
			*vaddr = obj->segs[i].vaddr;
			n_exec++;
		}
	}
	return n_exec == 1 ? 0 : -ENOENT;
}

long elfobj__read(const struct elfobj *obj, uint64_t vaddr, void *buf, size_t len)
{
	uint64_t off;
	ssize_t n;

	if (elfobj__vaddr_to_offset(obj, vaddr, &off))
		return -ENOENT;
	n = pread(obj->fd, buf, len, (off_t)off);
	return n < 0 ? -errno : n;
}
