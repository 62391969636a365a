// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Names are searched among the top-level DIEs of each unit: C types and
 * file-scope variables live there.  A lookup walks the units once; the
 * unit of the last variable found is tried first, since the types a
 * variable's readers need (glibc's malloc_chunk beside main_arena) are
 * defined in the same unit, and another unit's type of the same name may
 * differ.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>

#include "dwlayout.h"

/* nesting of member paths and anonymous members looked into */
#define MAX_FIELD_DEPTH 8
/* typedefs and qualifiers peeled at most: a loop in corrupt DWARF must end */
#define MAX_PEEL 16

struct dwlayout {
	Dwarf *dw;
	Dwarf_Die near_cu;	/* unit of the last variable found */
	bool has_near;
};

struct dwlayout *dwlayout__new(Elf *elf)
{
	struct dwlayout *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!l->dw) {
		free(l);
		errno = ENODATA;
		return NULL;
	}
	return l;
}

void dwlayout__free(struct dwlayout *l)
{
	if (!l)
		return;
	dwarf_end(l->dw);
	free(l);
}

/* typedefs, const, volatile, restrict and _Atomic peeled off */
static int peel(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute attr;
	Dwarf_Die cur = *die;
	int i;

	for (i = 0; i < MAX_PEEL; i++) {
		switch (dwarf_tag(&cur)) {
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
		case DW_TAG_restrict_type:
		case DW_TAG_atomic_type:
			if (!dwarf_formref_die(dwarf_attr_integrate(&cur, DW_AT_type, &attr), &cur))
				return -ENOENT;
			break;
		default:
			*out = cur;
			return 0;
		}
	}
	return -ELOOP;
}

static int type_of(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute attr;
	Dwarf_Die t;

	if (!dwarf_formref_die(dwarf_attr_integrate(die, DW_AT_type, &attr), &t))
		return -ENOENT;
	return peel(&t, out);
}

static bool named(Dwarf_Die *die, const char *name)
{
	const char *n = dwarf_diename(die);

	return n && !strcmp(n, name);
}

typedef bool (*die_match_fn)(Dwarf_Die *die, const char *name);

/* the first top-level DIE of the unit that matches */
static bool find_in_unit(Dwarf_Die *cudie, die_match_fn match, const char *name, Dwarf_Die *out)
{
	Dwarf_Die child;

	if (dwarf_child(cudie, &child) != 0)
		return false;
	do {
		if (match(&child, name)) {
			*out = child;
			return true;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* the near unit, then every unit; *cu gets the unit it was found in */
static bool find_die(struct dwlayout *l, die_match_fn match, const char *name, Dwarf_Die *out,
		     Dwarf_Die *cu)
{
	Dwarf_CU *unit = NULL, *next;
	Dwarf_Die cudie, subdie;
	uint8_t type;
	Dwarf_Half version;

	if (l->has_near && find_in_unit(&l->near_cu, match, name, out)) {
		*cu = l->near_cu;
		return true;
	}
	while (dwarf_get_units(l->dw, unit, &next, &version, &type, &cudie, &subdie) == 0) {
		unit = next;
		if (find_in_unit(&cudie, match, name, out)) {
			*cu = cudie;
			return true;
		}
	}
	return false;
}

static bool is_var_definition(Dwarf_Die *die, const char *name)
{
	return dwarf_tag(die) == DW_TAG_variable && named(die, name) &&
	       !dwarf_hasattr(die, DW_AT_declaration) && dwarf_hasattr_integrate(die, DW_AT_type);
}

int dwlayout__var_type(struct dwlayout *l, const char *name, Dwarf_Die *type)
{
	Dwarf_Die die, cu;

	if (!find_die(l, is_var_definition, name, &die, &cu))
		return -ENOENT;
	l->near_cu = cu;
	l->has_near = true;
	return type_of(&die, type);
}

static bool is_type_definition(Dwarf_Die *die, const char *name)
{
	int tag = dwarf_tag(die);

	if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type && tag != DW_TAG_typedef)
		return false;
	return named(die, name) && !dwarf_hasattr(die, DW_AT_declaration);
}

int dwlayout__type(struct dwlayout *l, const char *name, Dwarf_Die *type)
{
	Dwarf_Die die, cu;

	if (!find_die(l, is_type_definition, name, &die, &cu))
		return -ENOENT;
	return peel(&die, type);
}

int dw_type_size(Dwarf_Die *type, uint64_t *size)
{
	Dwarf_Word w;

	if (dwarf_aggregate_size(type, &w) != 0)
		return -EINVAL;
	*size = w;
	return 0;
}

/* elements of an array type, all dimensions multiplied */
static int array_count(Dwarf_Die *arr, uint64_t *count)
{
	Dwarf_Attribute attr;
	Dwarf_Word w;
	Dwarf_Die sub;
	uint64_t n = 1;

	if (dwarf_child(arr, &sub) != 0)
		return -EINVAL;
	do {
		if (dwarf_tag(&sub) != DW_TAG_subrange_type)
			continue;
		if (dwarf_formudata(dwarf_attr_integrate(&sub, DW_AT_count, &attr), &w) == 0)
			n *= w;
		else if (!dwarf_formudata(dwarf_attr_integrate(&sub, DW_AT_upper_bound, &attr), &w))
			n *= w + 1;
		else
			return -EINVAL;	/* a flexible array member: no count to give */
	} while (dwarf_siblingof(&sub, &sub) == 0);
	*count = n;
	return 0;
}

/* offset, size and element count of member DIE m */
static int describe(Dwarf_Die *m, uint64_t base, struct dw_field *f)
{
	Dwarf_Attribute attr;
	Dwarf_Word off = 0;
	Dwarf_Die t, elem;
	int err;

	if (dwarf_hasattr(m, DW_AT_bit_size) || dwarf_hasattr(m, DW_AT_data_bit_offset))
		return -EINVAL;
	/* a union's members may have no location: they all start at 0 */
	if (dwarf_hasattr(m, DW_AT_data_member_location) &&
	    dwarf_formudata(dwarf_attr(m, DW_AT_data_member_location, &attr), &off) != 0)
		return -EINVAL;
	err = type_of(m, &t);
	if (err)
		return err;
	f->offset = base + off;
	f->count = 1;
	if (dwarf_tag(&t) == DW_TAG_array_type) {
		err = array_count(&t, &f->count);
		err = err ?: type_of(&t, &elem);
		err = err ?: dw_type_size(&elem, &f->elem_size);
		f->size = f->count * f->elem_size;
		return err;
	}
	err = dw_type_size(&t, &f->size);
	f->elem_size = f->size;
	return err;
}

/* the member called name[0..len) of type, looking into anonymous members too */
static int find_member(Dwarf_Die *type, const char *name, size_t len, uint64_t base, int depth,
		       Dwarf_Die *out, uint64_t *out_base)
{
	Dwarf_Attribute attr;
	Dwarf_Word off;
	Dwarf_Die m, t;
	const char *n;

	if (depth > MAX_FIELD_DEPTH || dwarf_child(type, &m) != 0)
		return -ENOENT;
	do {
		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		n = dwarf_diename(&m);
		if (n && strlen(n) == len && !strncmp(n, name, len)) {
			*out = m;
			*out_base = base;
			return 0;
		}
		if (n || type_of(&m, &t))
			continue;
		off = 0;
		if (dwarf_hasattr(&m, DW_AT_data_member_location) &&
		    dwarf_formudata(dwarf_attr(&m, DW_AT_data_member_location, &attr), &off) != 0)
			continue;
		if (!find_member(&t, name, len, base + off, depth + 1, out, out_base))
			return 0;
	} while (dwarf_siblingof(&m, &m) == 0);
	return -ENOENT;
}

int dw_type_field(Dwarf_Die *type, const char *path, struct dw_field *f)
{
	Dwarf_Die cur = *type, m;
	uint64_t base = 0;
	const char *p = path;
	int depth, err;

	for (depth = 0; depth < MAX_FIELD_DEPTH; depth++) {
		size_t len = strcspn(p, ".");
		int tag = dwarf_tag(&cur);

		if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type)
			return -ENOENT;
		err = find_member(&cur, p, len, base, 0, &m, &base);
		err = err ?: describe(&m, base, f);
		if (err || !p[len])
			return err;
		/* a member of a member: its offset is where the inner struct starts */
		base = f->offset;
		err = type_of(&m, &cur);
		/* of an array, element 0's */
		if (!err && dwarf_tag(&cur) == DW_TAG_array_type)
			err = type_of(&cur, &cur);
		if (err)
			return err;
		p += len + 1;
	}
	return -ENOENT;
}
