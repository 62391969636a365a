// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "argfile.h"
#include "log.h"

/* FILE's whole content, NUL-terminated, if it is a regular file within the bound */
static int slurp(const char *path, char **out)
{
	struct stat st;
	ssize_t n = 0, r;
	char *buf;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -EINVAL;
	else if (st.st_size > ARGFILE_MAX_BYTES)
		err = -EFBIG;
	else
		err = 0;
	if (err) {
		close(fd);
		return err;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	/* it may shrink or grow while read: stop at the size seen (the bound) */
	while (n < st.st_size && (r = read(fd, buf + n, (size_t)(st.st_size - n))) > 0)
		n += r;
	close(fd);
	buf[n] = '\0';
	*out = buf;
	return 0;
}

/* split text into lines, appended to args[*n] (at most ARGFILE_MAX_ARGS) */
static int add_lines(char *text, char **args, int *n)
{
	char *line, *next, *end;

	for (line = text; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		end = line + strlen(line);
		while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			*--end = '\0';
		while (*line == ' ' || *line == '\t')
			line++;
		if (!*line || *line == '#')
			continue;
		if (*n >= ARGFILE_MAX_ARGS)
			return -E2BIG;
		args[(*n)++] = line;
	}
	return 0;
}

static const char *why(int err)
{
	switch (err) {
	case -EFBIG:
		return "it is larger than 64 KiB";
	case -EINVAL:
		return "it is not a regular file";
	case -E2BIG:
		return "more than 4096 arguments";
	default:
		return strerror(-err);
	}
}

int argfile_expand(int *argcp, char ***argvp)
{
	char **argv = *argvp, **args, **texts;
	int argc = *argcp, i, n = 0, err, n_texts = 0;
	bool any = false;

	for (i = 1; i < argc; i++)
		any |= argv[i][0] == '@' && argv[i][1];
	if (!any)
		return 0;
	args = calloc(ARGFILE_MAX_ARGS + 1, sizeof(*args));
	/* the files' texts: the arguments point into them, freed only on an error */
	texts = calloc((size_t)argc, sizeof(*texts));
	if (!args || !texts) {
		free(args);
		free(texts);
		return -ENOMEM;
	}
	args[n++] = argv[0];
	for (i = 1; i < argc; i++) {
		if (argv[i][0] != '@' || !argv[i][1]) {
			err = n < ARGFILE_MAX_ARGS ? 0 : -E2BIG;
			if (!err)
				args[n++] = argv[i];
		} else {
			err = slurp(argv[i] + 1, &texts[n_texts]);
			if (!err)
				err = add_lines(texts[n_texts++], args, &n);
		}
		if (err) {
			pr_error("argument file %s: %s; @FILE reads arguments from a regular file of "
				 "at most 64 KiB, one per line\n", argv[i] + 1, why(err));
			while (n_texts)
				free(texts[--n_texts]);
			free(texts);
			free(args);
			return err;
		}
	}
	free(texts);
	*argcp = n;
	*argvp = args;
	return 0;
}
