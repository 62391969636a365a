// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test tool: an unsymbolized profile over real objects, without a process.
 * Each object is "mapped" at a base of its own (its executable segment,
 * with the file offset the kernel would use); its locations are addresses
 * inside its function symbols: the first byte, the middle and the last
 * byte of each function, at most --per-object of them, spread evenly.
 * Samples are stacks of 1..8 of those locations, drawn with a fixed seed.
 * Prints "OBJECT VADDR" for every location, for addr2line.
 *
 *   objprof OUT.pb.gz [--per-object N] [--samples N] OBJECT...
 */
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "pprof.h"
#include "vec.h"

#define BASE 0x7f0000000000ULL
#define STRIDE 0x100000000ULL
#define PAGE 4096ULL

struct seg {
	uint64_t vaddr, offset, memsz;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	/* xorshift64: fixed seed, the same profile every run */
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int exec_segment(struct elfobj *obj, struct seg *s)
{
	Elf *elf = elfobj__elf(obj);
	size_t i, n;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n))
		return -1;
	for (i = 0; i < n; i++) {
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			*s = (struct seg){ ph.p_vaddr, ph.p_offset, ph.p_memsz };
			return 0;
		}
	}
	return -1;
}

/* candidate addresses: first, middle and last byte of every distinct function in the segment */
static size_t candidates(struct elfobj *obj, const struct seg *s, uint64_t **out)
{
	size_t n, i, k = 0, cap = 0;
	const struct elf_symbol *sym = elfobj__symbols(obj, &n);
	uint64_t *v = NULL, prev = 0;

	for (i = 0; i < n; i++) {
		uint64_t a = sym[i].value, sz = sym[i].size, c[3] = { a, a + sz / 2, a + sz - 1 };
		int j;

		if (a == prev || sz < 3 || a < s->vaddr || a + sz > s->vaddr + s->memsz)
			continue;
		prev = a;
		if (vec_reserve(&v, &cap, k + 3, sizeof(*v)))
			exit(2);
		for (j = 0; j < 3; j++)
			if (!k || c[j] != v[k - 1])
				v[k++] = c[j];
	}
	*out = v;
	return k;
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "alloc_objects", "alloc_space" };
	static const char *const units[] = { "count", "bytes" };
	struct pprof_writer_opts wo = {
		.sz = sizeof(wo), .n_sample_types = 2, .sample_type_names = names,
		.sample_type_units = units, .default_sample_type = "alloc_space",
		.period_type = "space", .period_unit = "bytes", .period = 1,
	};
	uint64_t *locs = NULL, ids[8];
	size_t n_locs = 0, cap = 0, per_object = 3000, n_samples = 20000, i;
	struct pprof_writer *w;
	const char *out;
	int a = 2, obj_i = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: objprof OUT.pb.gz [--per-object N] [--samples N] OBJECT...\n");
		return 2;
	}
	out = argv[1];
	for (; a + 1 < argc && !strncmp(argv[a], "--", 2); a += 2) {
		if (!strcmp(argv[a], "--per-object"))
			per_object = strtoul(argv[a + 1], NULL, 10);
		else if (!strcmp(argv[a], "--samples"))
			n_samples = strtoul(argv[a + 1], NULL, 10);
	}
	w = pprof_writer__new(&wo);
	if (!w)
		return 2;
	for (; a < argc; a++, obj_i++) {
		struct elfobj *obj = elfobj__open(argv[a]);
		uint64_t base = BASE + STRIDE * (uint64_t)obj_i, *cand, map_id;
		size_t n_cand, step, k;
		struct seg s;

		if (!obj || exec_segment(obj, &s)) {
			fprintf(stderr, "objprof: %s: not an ELF object with code\n", argv[a]);
			return 2;
		}
		n_cand = candidates(obj, &s, &cand);
		map_id = pprof_writer__add_mapping(w, &(struct pprof_mapping_desc){
			.memory_start = base + (s.vaddr & ~(PAGE - 1)),
			.memory_limit = base + ((s.vaddr + s.memsz + PAGE - 1) & ~(PAGE - 1)),
			.file_offset = s.offset & ~(PAGE - 1),
			.filename = argv[a],
			.build_id = elfobj__build_id(obj),
		});
		step = n_cand > per_object ? n_cand / per_object : 1;
		for (k = 0; k < n_cand && k / step < per_object; k += step) {
			struct pprof_line none = { 0 };

			if (vec_reserve(&locs, &cap, n_locs + 1, sizeof(*locs)))
				return 2;
			locs[n_locs++] = pprof_writer__add_location(w, map_id, base + cand[k], &none, 0);
			printf("%s 0x%" PRIx64 "\n", argv[a], cand[k]);
		}
		free(cand);
		elfobj__free(obj);
	}
	for (i = 0; i < n_samples && n_locs; i++) {
		int64_t values[2] = { 1, (int64_t)(rng() % 4096) + 1 };
		size_t depth = 1 + rng() % 8, j;

		for (j = 0; j < depth; j++)
			ids[j] = locs[rng() % n_locs];
		/* every location at least once: the first samples walk them in order */
		if (i < n_locs)
			ids[0] = locs[i];
		if (pprof_writer__add_sample(w, ids, depth, values, NULL, 0))
			return 2;
	}
	if (pprof_writer__add_comment(w, "rate=1") || pprof_writer__write(w, out))
		return 2;
	pprof_writer__free(w);
	free(locs);
	return 0;
}
