/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pprof profiles: the in-memory model both binaries work with, a writer that
 * builds one with deduplicated strings, functions, locations and mappings,
 * and the gzip'd protobuf encoding and decoding of it.
 *
 * Strings are indices into `strings` (strings[0] is ""), exactly as on the
 * wire; ids of mappings, locations and functions are those of the file.
 */
#ifndef CULPERT_PPROF_H
#define CULPERT_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashtab.h"

struct pprof_value_type {
	int64_t type;
	int64_t unit;
};

struct pprof_label {
	int64_t key;
	int64_t str;		/* string label when non-zero */
	int64_t num;
	int64_t num_unit;
};

struct pprof_line {
	uint64_t function_id;
	int64_t line;
	int64_t column;
};

struct pprof_location {
	uint64_t id;
	uint64_t mapping_id;
	uint64_t address;
	uint32_t line_off;	/* into pprof_profile.lines */
	uint32_t n_lines;
	bool is_folded;
};

struct pprof_mapping {
	uint64_t id;
	uint64_t memory_start;
	uint64_t memory_limit;
	uint64_t file_offset;
	int64_t filename;
	int64_t build_id;
	bool has_functions;
	bool has_filenames;
	bool has_line_numbers;
	bool has_inline_frames;
};

struct pprof_function {
	uint64_t id;
	int64_t name;
	int64_t system_name;
	int64_t filename;
	int64_t start_line;
};

struct pprof_sample {
	uint32_t loc_off;	/* into pprof_profile.loc_ids, leaf first */
	uint32_t n_locs;
	uint32_t label_off;	/* into pprof_profile.labels */
	uint32_t n_labels;
};

struct pprof_profile {
	struct pprof_value_type *sample_types;
	size_t n_sample_types;
	struct pprof_sample *samples;
	size_t n_samples;
	int64_t *values;	/* n_samples * n_sample_types, row per sample */
	uint64_t *loc_ids;
	size_t n_loc_ids;
	struct pprof_label *labels;
	size_t n_labels;
	struct pprof_mapping *mappings;
	size_t n_mappings;
	struct pprof_location *locations;
	size_t n_locations;
	struct pprof_line *lines;
	size_t n_lines;
	struct pprof_function *functions;
	size_t n_functions;
	char **strings;
	size_t n_strings;
	char *string_block;	/* when set, strings point into it (decoded profiles) */
	int64_t *comments;
	size_t n_comments;
	int64_t drop_frames;
	int64_t keep_frames;
	int64_t time_nanos;
	int64_t duration_nanos;
	struct pprof_value_type period_type;
	int64_t period;
	int64_t default_sample_type;
	int64_t doc_url;

	/* id -> index lookups, kept by pprof_profile__index() */
	struct hashtab loc_ht;
	struct hashtab func_ht;
	struct hashtab map_ht;
	/* ids are 1..n in order (most writers number them so): the lookup is an index */
	bool loc_dense, func_dense, map_dense;
};

/* --- reading ---------------------------------------------------------------- */

/* upper bound of a decompressed profile; larger files are refused, not read */
#define PPROF_MAX_DECODED	(2ULL << 30)
/* upper bound of the string table: 8 bytes of index per string, each 2 bytes on the wire */
#define PPROF_MAX_STRINGS	(1U << 26)
/* upper bound of each of the location, function, mapping and line tables (indices are 32-bit) */
#define PPROF_MAX_TABLE		(1U << 28)

/*
 * Memory that reading a profile may take, the decoder's tables and what the
 * reader builds from the samples together.  A gzip'd file decompresses up to
 * ~1000x and its smallest messages become structures several times their
 * size, so a limit on the decompressed size alone lets a 2 MB file ask for
 * tens of GB.  The default is relative to the file's own size, with a floor
 * for small files and an absolute ceiling.  Charges are the capacities of
 * the large arrays and hash tables, not every small allocation.
 */
#define PPROF_MEM_RATIO		32
#define PPROF_MEM_FLOOR		(256ULL << 20)
#define PPROF_MEM_CEILING	(4ULL << 30)

struct pprof_budget {
	size_t used;
	size_t max;		/* 0: pprof_budget_for() the input's size, set by the reader */
	size_t input;		/* the size it was derived from, for the message */
	bool exceeded;
};

/* the default limit for an input (compressed file) of `input` bytes */
size_t pprof_budget_for(size_t input);
/* account `bytes` more; 0, or -E2BIG past the limit */
int pprof_budget__charge(struct pprof_budget *b, size_t bytes);
/* vec_reserve() with the growth charged (b may be NULL: nothing charged) */
int pprof_budget__reserve(struct pprof_budget *b, void *ptrp, size_t *cap, size_t need,
			  size_t elem);
/* hashtab__insert() with the growth of the table charged */
int pprof_budget__insert(struct pprof_budget *b, struct hashtab *h, uint64_t hash, uint32_t idx);
/*
 * The whole malloc heap of the process against b's limit, for work whose
 * memory is not all charged (culpert symbolize: libdw and libelf allocate
 * for themselves): 0, or -E2BIG (b->exceeded set) when the heap is past it.
 * Mapped files (an object's sections) are page cache, not counted.
 */
int pprof_budget__check_heap(struct pprof_budget *b);
/* "DOING it takes more than 256.00 MiB of memory (...)": why a charge failed, DOING "reading" */
void pprof_budget__explain(const struct pprof_budget *b, const char *doing, char *buf,
			   size_t len);

/* one sample as read, valid only during the call */
struct pprof_sample_ref {
	const uint64_t *loc_ids;	/* leaf first; every id exists */
	size_t n_locs;
	const int64_t *values;		/* n_sample_types of them */
	const struct pprof_label *labels;
	size_t n_labels;
};

/* 0 to go on, -errno to stop reading (the read then fails with that errno) */
typedef int (*pprof_sample_fn)(const struct pprof_profile *p, const struct pprof_sample_ref *s,
			       void *ctx);

struct pprof_read_opts {
	size_t sz;
	/*
	 * When set, samples are not stored in the profile (n_samples stays 0):
	 * each is handed to on_sample, in file order, once every string,
	 * mapping, location and function is known.  A reader that aggregates
	 * then needs memory for its aggregate only.
	 */
	pprof_sample_fn on_sample;
	void *ctx;
	size_t max_decoded;		/* 0: PPROF_MAX_DECODED */
	/* shared with on_sample's own allocations; NULL: the reader's own, by the input size */
	struct pprof_budget *budget;
};

/*
 * Read a gzip'd pprof file ("-" for stdin).  On failure returns NULL, sets
 * errno and writes a one-line reason (without the path) to err.
 */
struct pprof_profile *pprof_read_file(const char *path, char *err, size_t errlen);
struct pprof_profile *pprof_read_file_opts(const char *path, const struct pprof_read_opts *opts,
					   char *err, size_t errlen);
/* decode from memory: gzip'd bytes */
struct pprof_profile *pprof_decode_gzip(const void *buf, size_t len, char *err, size_t errlen);
struct pprof_profile *pprof_decode_gzip_opts(const void *buf, size_t len,
					     const struct pprof_read_opts *opts, char *err,
					     size_t errlen);
/* decode from memory: raw protobuf */
struct pprof_profile *pprof_decode(const void *buf, size_t len, char *err, size_t errlen);
struct pprof_profile *pprof_decode_opts(const void *buf, size_t len,
					const struct pprof_read_opts *opts, char *err,
					size_t errlen);
void pprof_profile__free(struct pprof_profile *p);
/* release what p owns, not p itself */
void pprof_profile__clear(struct pprof_profile *p);
/* (re)build the id lookups after locations, functions or mappings changed; 0 or -errno */
int pprof_profile__index(struct pprof_profile *p);

/* lookups by id; NULL when the id is 0 or unknown */
const struct pprof_location *pprof_profile__location(const struct pprof_profile *p, uint64_t id);
const struct pprof_function *pprof_profile__function(const struct pprof_profile *p, uint64_t id);
const struct pprof_mapping *pprof_profile__mapping(const struct pprof_profile *p, uint64_t id);
/* the string at index i, "" when out of range */
const char *pprof_profile__str(const struct pprof_profile *p, int64_t i);
/* index of the sample type named `type`, or -1 */
int pprof_profile__sample_type(const struct pprof_profile *p, const char *type);
/* the label `key` of sample s, or NULL */
const struct pprof_label *pprof_profile__label(const struct pprof_profile *p,
					       const struct pprof_sample *s, const char *key);
/* value of comment "key=value", or NULL */
const char *pprof_profile__comment(const struct pprof_profile *p, const char *key);

/* --- writing ------------------------------------------------------------------ */

struct pprof_writer;

struct pprof_writer_opts {
	size_t sz;
	size_t n_sample_types;
	const char *const *sample_type_names;	/* e.g. "alloc_objects" */
	const char *const *sample_type_units;	/* e.g. "count" */
	const char *default_sample_type;	/* optional */
	const char *period_type;		/* optional, e.g. "space" */
	const char *period_unit;		/* e.g. "bytes" */
	int64_t period;
	int64_t time_nanos;
	int64_t duration_nanos;
	const char *drop_frames;		/* optional regexps for pprof */
	const char *keep_frames;
	const char *doc_url;			/* optional */
};

/* what a mapping is, with strings instead of string indices */
struct pprof_mapping_desc {
	uint64_t memory_start;
	uint64_t memory_limit;
	uint64_t file_offset;
	const char *filename;
	const char *build_id;
	bool has_functions;
	bool has_filenames;
	bool has_line_numbers;
	bool has_inline_frames;
};

struct pprof_writer *pprof_writer__new(const struct pprof_writer_opts *opts);
/* intern a string; returns its index or -ENOMEM */
int64_t pprof_writer__str(struct pprof_writer *w, const char *s);
/* the following return the new (or existing, equal) entry's id, 0 on ENOMEM */
uint64_t pprof_writer__add_mapping(struct pprof_writer *w, const struct pprof_mapping_desc *m);
uint64_t pprof_writer__add_function(struct pprof_writer *w, const char *name,
				    const char *system_name, const char *filename,
				    int64_t start_line);
/* a location is identified by (mapping_id, address, lines): equal ones are shared */
uint64_t pprof_writer__add_location(struct pprof_writer *w, uint64_t mapping_id, uint64_t address,
				    const struct pprof_line *lines, size_t n_lines);
/* labels carry string indices from pprof_writer__str() */
int pprof_writer__add_sample(struct pprof_writer *w, const uint64_t *loc_ids, size_t n_locs,
			     const int64_t *values, const struct pprof_label *labels,
			     size_t n_labels);
int pprof_writer__add_comment(struct pprof_writer *w, const char *comment);
/*
 * room for that many more samples, location ids and labels, exactly: a
 * writer told its size holds it once, not up to twice over (docs/agent.md,
 * "Memory"); 0 or -ENOMEM
 */
int pprof_writer__reserve(struct pprof_writer *w, size_t n_samples, size_t n_loc_ids,
			  size_t n_labels);
/* the profile built so far (comments are sorted when written) */
const struct pprof_profile *pprof_writer__profile(struct pprof_writer *w);
/* write gzip'd ("-" = stdout); 0 or -errno */
int pprof_writer__write(struct pprof_writer *w, const char *path);
void pprof_writer__free(struct pprof_writer *w);

/* --- encoding ------------------------------------------------------------------ */

/* encode p as gzip'd protobuf into a malloc'd buffer; 0 or -errno */
int pprof_encode_gzip(const struct pprof_profile *p, void **out, size_t *out_len);
/* write p gzip'd to path ("-" = stdout), atomically via a temporary file; 0 or -errno */
int pprof_profile__write(const struct pprof_profile *p, const char *path);

#endif /* CULPERT_PPROF_H */
