// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness of the pprof reader (`make fuzz`).  The input is taken as
 * a raw protobuf (gzip's CRC would reject nearly every mutation of a gzip'd
 * one) and read five ways: raw into the model, gzip'd in memory into the
 * model, gzip'd from a file descriptor into the model, gzip'd through the
 * CLI's streaming view, and as if it were a gzip file.  Beyond "no crash, no
 * leak", whatever decodes must survive a round trip: encode, decode, and get
 * the same model back.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pprof.h"
#include "view.h"

#define FUZZ_MAX_DECODED (16u << 20)

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz_pprof: %s\n", what);
		abort();
	}
}

static void same(const struct pprof_profile *a, const struct pprof_profile *b)
{
	size_t i;

	check(a->n_samples == b->n_samples && a->n_locations == b->n_locations &&
	      a->n_functions == b->n_functions && a->n_mappings == b->n_mappings &&
	      a->n_strings == b->n_strings && a->n_loc_ids == b->n_loc_ids &&
	      a->n_labels == b->n_labels && a->n_lines == b->n_lines &&
	      a->n_sample_types == b->n_sample_types && a->n_comments == b->n_comments,
	      "round trip changed a count");
	for (i = 0; i < a->n_strings; i++)
		check(!strcmp(a->strings[i], b->strings[i]), "round trip changed a string");
	check(!a->n_loc_ids || !memcmp(a->loc_ids, b->loc_ids, a->n_loc_ids * sizeof(*a->loc_ids)),
	      "round trip changed a stack");
	check(!a->n_samples || !a->n_sample_types || !memcmp(a->values, b->values,
				       a->n_samples * a->n_sample_types * sizeof(*a->values)),
	      "round trip changed a value");
	check(!a->n_labels || !memcmp(a->labels, b->labels, a->n_labels * sizeof(*a->labels)),
	      "round trip changed a label");
	check(a->period == b->period && a->time_nanos == b->time_nanos,
	      "round trip changed the header");
}

static int gzip_mem(const uint8_t *in, size_t len, void **out, size_t *out_len)
{
	uLongf cap = compressBound(len) + 32;
	z_stream zs = { 0 };
	uint8_t *buf = malloc(cap);
	int ok;

	if (!buf || deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(buf);
		return -1;
	}
	zs.next_in = (uint8_t *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = buf;
	zs.avail_out = (uInt)cap;
	ok = deflate(&zs, Z_FINISH) == Z_STREAM_END;
	*out_len = zs.total_out;
	deflateEnd(&zs);
	if (!ok) {
		free(buf);
		return -1;
	}
	*out = buf;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pprof_read_opts ro = { .sz = sizeof(ro), .max_decoded = FUZZ_MAX_DECODED };
	struct view_opts vo = { .value = VIEW_ALLOC, .stacks = true };
	struct pprof_profile *p, *q;
	struct view *v;
	void *gz = NULL, *again = NULL;
	size_t gz_len, again_len;
	char err[256];

	pprof_profile__free(pprof_decode_gzip_opts(data, size, &ro, err, sizeof(err)));
	p = pprof_decode_opts(data, size, &ro, err, sizeof(err));
	if (gzip_mem(data, size, &gz, &gz_len))
		return 0;
	q = pprof_decode_gzip_opts(gz, gz_len, &ro, err, sizeof(err));
	check(!p == !q, "raw and gzip'd decoding disagree");
	{
		/* the file path: inflated from the descriptor in windows, not in memory */
		int fd = memfd_create("fuzz", 0);
		char path[64];
		struct pprof_profile *f;

		check(fd >= 0 && write(fd, gz, gz_len) == (ssize_t)gz_len, "memfd");
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		f = pprof_read_file_opts(path, &ro, err, sizeof(err));
		check(!f == !q, "reading from a file and from memory disagree");
		if (f)
			same(q, f);
		pprof_profile__free(f);
		close(fd);
	}
	v = view__decode(gz, gz_len, &vo, err, sizeof(err));
	/* the view may refuse what the model takes (no sample types), never the reverse */
	check(p || !v, "the view read a profile the model refused");
	if (v)
		check(v->n_samples == p->n_samples, "the view saw another number of samples");
	if (p && !pprof_encode_gzip(p, &again, &again_len)) {
		struct pprof_profile *r = pprof_decode_gzip(again, again_len, err, sizeof(err));

		check(r != NULL, "our own encoding of a decoded profile does not decode");
		same(p, r);
		pprof_profile__free(r);
	}
	free(again);
	view__free(v);
	pprof_profile__free(q);
	pprof_profile__free(p);
	free(gz);
	return 0;
}
