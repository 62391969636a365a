// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test tool: write pprof profiles with our own writer (proto/pprof.h), from
 * a small text description for golden tests, or large random ones for the
 * benchmarks.
 *
 *   mkprof -o OUT.pb.gz [SPEC]     SPEC (default stdin), one directive a line:
 *     types alloc_objects/count alloc_space/bytes ...   (default: these two)
 *     rate 524288                  period, space/bytes
 *     time NANOS | duration NANOS
 *     comment key=value
 *     mapping PATH [BUILD_ID [START LIMIT OFFSET]]      (hex numbers; first one = id 1)
 *     sample V1 V2 ... [stack=FRAMES] [KEY=VALUE ...]
 *   Values accept size units (20MiB).  FRAMES are leaf first, ';'-separated;
 *   a frame is FUNC[@FILE[:LINE]], several inline frames of one location are
 *   '|'-joined (innermost first), 0xADDR[@MAPPING] is an unsymbolized address.
 *   A label VALUE starting with '#' is numeric ("age_ns=#4000000000").
 *
 *   mkprof -o OUT.pb.gz --large SAMPLES LOCATIONS SPANS [SEED]
 *     a culpert-bpf-like profile: 4 sample types, span and thread labels.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"
#include "units.h"

#define MAX_TYPES 8
#define MAX_FRAMES 256
#define MAX_LABELS 32

struct spec {
	char *types[MAX_TYPES];
	size_t n_types;
	int64_t rate, time_ns, duration_ns;
	char **lines;
	size_t n_lines;
};

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "mkprof: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

static uint64_t parse_location(struct pprof_writer *w, char *frame)
{
	struct pprof_line lines[16];
	size_t n = 0;
	char *save, *tok;

	if (!strncmp(frame, "0x", 2)) {
		char *at = strchr(frame, '@');

		return pprof_writer__add_location(w, at ? strtoull(at + 1, NULL, 10) : 1,
						  strtoull(frame, NULL, 16), NULL, 0);
	}
	for (tok = strtok_r(frame, "|", &save); tok && n < 16; tok = strtok_r(NULL, "|", &save)) {
		char *file = strchr(tok, '@'), *line = NULL;

		if (file) {
			*file++ = '\0';
			line = strchr(file, ':');
			if (line)
				*line++ = '\0';
		}
		lines[n].function_id = pprof_writer__add_function(w, tok, NULL, file ? file : "",
								  0);
		lines[n].line = line ? strtoll(line, NULL, 10) : 0;
		lines[n].column = 0;
		n++;
	}
	/* one address per distinct location, as a real profile has */
	return pprof_writer__add_location(w, 1, 0x1000 + 0x10 * (uint64_t)lines[0].function_id,
					  lines, n);
}

/* like strtok_r on blanks, but KEY="a b" is one token (quotes dropped): names have spaces */
static char *next_token(char *s, char **save)
{
	char *start, *w;
	bool quoted = false;

	s = s ? s : *save;
	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s)
		return NULL;
	start = w = s;
	for (; *s && (quoted || (*s != ' ' && *s != '\t')); s++) {
		if (*s == '"')
			quoted = !quoted;
		else
			*w++ = *s;
	}
	*save = *s ? s + 1 : s;
	*w = '\0';
	return start;
}

static void add_sample(struct pprof_writer *w, size_t n_types, char *line)
{
	uint64_t locs[MAX_FRAMES];
	int64_t values[MAX_TYPES] = { 0 };
	struct pprof_label labels[MAX_LABELS];
	size_t n_locs = 0, n_labels = 0, n_values = 0;
	char *save = NULL, *tok;

	for (tok = next_token(line, &save); tok; tok = next_token(NULL, &save)) {
		char *eq = strchr(tok, '=');
		uint64_t v;

		if (!eq) {
			if (n_values >= n_types || parse_size(tok, &v))
				die("bad sample value '%s'", tok);
			values[n_values++] = (int64_t)v;
		} else if (!strncmp(tok, "stack=", 6)) {
			char *fsave, *f;

			for (f = strtok_r(eq + 1, ";", &fsave); f && n_locs < MAX_FRAMES;
			     f = strtok_r(NULL, ";", &fsave))
				locs[n_locs++] = parse_location(w, f);
		} else if (n_labels < MAX_LABELS) {
			struct pprof_label *l = &labels[n_labels++];

			*eq = '\0';
			memset(l, 0, sizeof(*l));
			l->key = pprof_writer__str(w, tok);
			if (eq[1] == '#') {
				l->num = strtoll(eq + 2, NULL, 10);
				if (!strcmp(tok, "age_ns"))
					l->num_unit = pprof_writer__str(w, "nanoseconds");
			} else {
				l->str = pprof_writer__str(w, eq + 1);
			}
		}
	}
	if (n_values != n_types)
		die("a sample needs one value per sample type: '%s'", line);
	if (pprof_writer__add_sample(w, locs, n_locs, values, labels, n_labels))
		die("%s", "out of memory");
}

static struct pprof_writer *new_writer(char *const *types, size_t n, int64_t rate, int64_t t,
				       int64_t dur)
{
	const char *names[MAX_TYPES], *units[MAX_TYPES];
	struct pprof_writer_opts o = {
		.sz = sizeof(o),
		.n_sample_types = n,
		.sample_type_names = names,
		.sample_type_units = units,
		.default_sample_type = "alloc_space",
		.period_type = "space",
		.period_unit = "bytes",
		.period = rate,
		.time_nanos = t,
		.duration_nanos = dur,
	};
	static char buf[MAX_TYPES][64];
	size_t i;

	for (i = 0; i < n; i++) {
		char *slash;

		snprintf(buf[i], sizeof(buf[i]), "%s", types[i]);
		slash = strchr(buf[i], '/');
		if (slash)
			*slash++ = '\0';
		names[i] = buf[i];
		units[i] = slash ? slash : "count";
	}
	return pprof_writer__new(&o);
}

static void add_mapping(struct pprof_writer *w, char *args)
{
	struct pprof_mapping_desc m = { .has_functions = true, .has_filenames = true,
					.has_line_numbers = true };
	char *save, *path, *bid, *s;

	path = strtok_r(args, " \t", &save);
	bid = strtok_r(NULL, " \t", &save);
	m.filename = path ? path : "";
	m.build_id = bid ? bid : "";
	m.memory_start = (s = strtok_r(NULL, " \t", &save)) ? strtoull(s, NULL, 16) : 0x1000;
	m.memory_limit = (s = strtok_r(NULL, " \t", &save)) ? strtoull(s, NULL, 16) : 0x100000;
	m.file_offset = (s = strtok_r(NULL, " \t", &save)) ? strtoull(s, NULL, 16) : 0;
	if (!pprof_writer__add_mapping(w, &m))
		die("%s", "out of memory");
}

static int from_spec(FILE *in, const char *out)
{
	char *defaults[] = { "alloc_objects/count", "alloc_space/bytes" };
	char *types[MAX_TYPES], *line = NULL;
	size_t n_types = 0, cap = 0, n = 0, i;
	char **body = NULL;
	int64_t rate = 524288, t = 0, dur = 0;
	struct pprof_writer *w;
	bool mapped = false;
	int ret;

	/* header directives first: the writer needs the sample types up front */
	while (getline(&line, &cap, in) > 0) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		if (!strncmp(line, "types ", 6)) {
			char *save, *tok;

			for (tok = strtok_r(line + 6, " \t", &save); tok && n_types < MAX_TYPES;
			     tok = strtok_r(NULL, " \t", &save))
				types[n_types++] = strdup(tok);
		} else if (!strncmp(line, "rate ", 5)) {
			rate = strtoll(line + 5, NULL, 10);
		} else if (!strncmp(line, "time ", 5)) {
			t = strtoll(line + 5, NULL, 10);
		} else if (!strncmp(line, "duration ", 9)) {
			dur = strtoll(line + 9, NULL, 10);
		} else {
			body = realloc(body, (n + 1) * sizeof(*body));
			body[n++] = strdup(line);
		}
	}
	free(line);
	w = n_types ? new_writer(types, n_types, rate, t, dur) :
		      new_writer(defaults, 2, rate, t, dur);
	if (!w)
		die("%s", "out of memory");
	for (i = 0; i < n; i++) {
		if (!strncmp(body[i], "mapping ", 8)) {
			add_mapping(w, body[i] + 8);
			mapped = true;
		} else if (!strncmp(body[i], "comment ", 8)) {
			pprof_writer__add_comment(w, body[i] + 8);
		} else if (!strncmp(body[i], "sample ", 7)) {
			if (!mapped) {
				char def[] = "/usr/bin/app 0123456789abcdef";

				add_mapping(w, def);
				mapped = true;
			}
			add_sample(w, n_types ? n_types : 2, body[i] + 7);
		} else {
			die("unknown directive '%s'", body[i]);
		}
		free(body[i]);
	}
	free(body);
	for (i = 0; i < n_types; i++)
		free(types[i]);
	ret = pprof_writer__write(w, out);
	pprof_writer__free(w);
	return ret;
}

/* xorshift64*: reproducible without depending on the libc's rand() */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static int large(const char *out, size_t n_samples, size_t n_locs, size_t n_spans, uint64_t seed)
{
	char *types[] = { "alloc_objects/count", "alloc_space/bytes", "inuse_objects/count",
			  "inuse_space/bytes" };
	struct pprof_writer *w = new_writer(types, 4, 524288, 1700000000000000000LL, 30000000000LL);
	struct pprof_mapping_desc m = { .filename = "/usr/bin/bench_service",
					.build_id = "00112233445566778899aabbccddeeff00112233",
					.memory_start = 0x400000, .memory_limit = 0x4000000,
					.has_functions = true, .has_filenames = true,
					.has_line_numbers = true };
	uint64_t *locs = calloc(n_locs, sizeof(*locs)), stack[64];
	size_t *parent = calloc(n_spans, sizeof(*parent)), i, j;
	char **paths = calloc(n_spans, sizeof(*paths));
	char name[64], file[64];
	int ret;

	if (!w || !locs || !parent || !paths || !pprof_writer__add_mapping(w, &m))
		die("%s", "out of memory");
	for (i = 0; i < n_locs; i++) {
		struct pprof_line l = { 0 };

		snprintf(name, sizeof(name), "bench::module%zu::function_%zu", i % 97, i);
		snprintf(file, sizeof(file), "src/module%zu.cc", i % 97);
		l.function_id = pprof_writer__add_function(w, name, NULL, file, 10);
		l.line = 10 + (int64_t)(i % 50);
		locs[i] = pprof_writer__add_location(w, 1, 0x400000 + 16 * i, &l, 1);
	}
	/* span i's parent is an earlier span: a random tree, a tenth of them roots */
	for (i = 0; i < n_spans; i++) {
		parent[i] = i && rnd(&seed) % 10 ? rnd(&seed) % i : SIZE_MAX;
		snprintf(name, sizeof(name), "span_%zu", i);
		if (parent[i] == SIZE_MAX) {
			paths[i] = strdup(name);
		} else if (asprintf(&paths[i], "%s;%s", paths[parent[i]], name) < 0) {
			die("%s", "out of memory");
		}
	}
	for (i = 0; i < n_samples; i++) {
		size_t depth = 8 + rnd(&seed) % 24, sp = rnd(&seed) % (n_spans + 1);
		int64_t size = (int64_t)(1 + rnd(&seed) % (1 << 20));
		int64_t v[4] = { 1, size, (int64_t)(rnd(&seed) % 2), 0 };
		struct pprof_label l[5];
		size_t nl = 0;

		v[3] = v[2] ? size : 0;
		for (j = 0; j < depth; j++)
			stack[j] = locs[rnd(&seed) % n_locs];
		l[nl++] = (struct pprof_label){ .key = pprof_writer__str(w, "thread_id"),
						.num = 1000 + (int64_t)(rnd(&seed) % 16) };
		if (sp < n_spans) {
			const char *nm = strrchr(paths[sp], ';');
			int64_t inner = pprof_writer__str(w, nm ? nm + 1 : paths[sp]);

			l[nl++] = (struct pprof_label){ .key = pprof_writer__str(w, "span_name"),
							.str = inner };
			l[nl++] = (struct pprof_label){ .key = pprof_writer__str(w, "span_id"),
							.num = (int64_t)sp + 1 };
			if (parent[sp] != SIZE_MAX)
				l[nl++] = (struct pprof_label){
					.key = pprof_writer__str(w, "span_parent_id"),
					.num = (int64_t)parent[sp] + 1 };
			l[nl++] = (struct pprof_label){ .key = pprof_writer__str(w, "span_path"),
							.str = pprof_writer__str(w, paths[sp]) };
		}
		if (pprof_writer__add_sample(w, stack, depth, v, l, nl))
			die("%s", "out of memory");
	}
	pprof_writer__add_comment(w, "rate=524288");
	pprof_writer__add_comment(w, "target.comm=bench_service");
	ret = pprof_writer__write(w, out);
	for (i = 0; i < n_spans; i++)
		free(paths[i]);
	free(paths);
	free(parent);
	free(locs);
	pprof_writer__free(w);
	return ret;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	FILE *in = stdin;
	int ret;

	if (argc >= 3 && !strcmp(argv[1], "-o")) {
		out = argv[2];
		argc -= 2;
		argv += 2;
	}
	if (!out) {
		fprintf(stderr, "usage: mkprof -o OUT [SPEC | --large SAMPLES LOCATIONS SPANS [SEED]]\n");
		return 2;
	}
	if (argc >= 5 && !strcmp(argv[1], "--large")) {
		ret = large(out, strtoull(argv[2], NULL, 10), strtoull(argv[3], NULL, 10),
			    strtoull(argv[4], NULL, 10),
			    argc > 5 ? strtoull(argv[5], NULL, 10) : 42);
	} else {
		if (argc > 1 && !(in = fopen(argv[1], "r")))
			die("cannot open %s", argv[1]);
		ret = from_spec(in, out);
	}
	if (ret) {
		fprintf(stderr, "mkprof: writing %s: %s\n", out, strerror(-ret));
		return 2;
	}
	return 0;
}
