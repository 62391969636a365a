// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Cut the kernel's BTF out of a raw kernel image (arm64's Image, which
 * Debian ships uncompressed as its signed vmlinuz).  The image keeps the
 * .BTF section's bytes as they are, but no section table: the blob is found
 * by its header (magic 0xeB9F, version 1) and accepted only if that header
 * describes a blob that fits, whose string section starts and ends with a
 * NUL, and if exactly one such blob exists.  bpftool then parses every type
 * of it, which is the real validation.  This avoids the -dbg package's
 * unstripped vmlinux (a ~1 GiB download) for the same bytes.
 *
 *   btf_extract IMAGE OUT
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BTF_MAGIC	0xeB9F
#define BTF_HDR_LEN	24
/* a vmlinux's BTF is megabytes; a stray match of the magic is rarely even kilobytes */
#define BTF_MIN_TYPES	(64 * 1024)

struct btf_hdr {
	uint16_t magic;
	uint8_t version;
	uint8_t flags;
	uint32_t hdr_len;
	uint32_t type_off;
	uint32_t type_len;
	uint32_t str_off;
	uint32_t str_len;
};

static int read_file(const char *path, unsigned char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 20, n = 0, got;
	unsigned char *p = NULL, *np;

	if (!f)
		return -errno;
	do {
		cap *= 2;
		np = realloc(p, cap);
		if (!np) {
			free(p);
			fclose(f);
			return -ENOMEM;
		}
		p = np;
		got = fread(p + n, 1, cap - n, f);
		n += got;
	} while (n == cap);
	fclose(f);
	*buf = p;
	*len = n;
	return 0;
}

/* the blob's total length if a plausible vmlinux BTF starts at `at`, else 0 */
static size_t btf_at(const unsigned char *img, size_t len, size_t at)
{
	struct btf_hdr h;
	const unsigned char *str;
	size_t total;

	if (len - at < sizeof(h))
		return 0;
	memcpy(&h, img + at, sizeof(h));
	if (h.magic != BTF_MAGIC || h.version != 1 || h.hdr_len != BTF_HDR_LEN)
		return 0;
	/* pahole writes the types, then the strings, right after the header */
	if (h.type_off != 0 || h.str_off != h.type_len || h.type_len < BTF_MIN_TYPES || !h.str_len)
		return 0;
	total = (size_t)h.hdr_len + h.str_off + h.str_len;
	if (total > len - at)
		return 0;
	str = img + at + h.hdr_len + h.str_off;
	if (str[0] != '\0' || str[h.str_len - 1] != '\0')
		return 0;
	return total;
}

int main(int argc, char **argv)
{
	size_t len = 0, at, found_at = 0, found_len = 0, n, count = 0;
	unsigned char *img = NULL;
	FILE *out;
	int err;

	if (argc != 3) {
		fprintf(stderr, "usage: btf_extract IMAGE OUT\n");
		return 2;
	}
	err = read_file(argv[1], &img, &len);
	if (err) {
		fprintf(stderr, "error: cannot read %s: %s\n", argv[1], strerror(-err));
		return 1;
	}
	/* the section is 4-byte aligned in the image */
	for (at = 0; at + BTF_HDR_LEN <= len; at += 4) {
		n = btf_at(img, len, at);
		if (!n)
			continue;
		count++;
		found_at = at;
		found_len = n;
		at += (n & ~(size_t)3) - 4;
	}
	if (count != 1) {
		fprintf(stderr, "error: %s holds %zu BTF blobs, expected exactly one: is it an "
			"uncompressed kernel Image built with CONFIG_DEBUG_INFO_BTF?\n", argv[1],
			count);
		free(img);
		return 1;
	}
	out = fopen(argv[2], "wb");
	err = !out || fwrite(img + found_at, 1, found_len, out) != found_len;
	if ((out && fclose(out)) || err) {
		fprintf(stderr, "error: cannot write %s: %s\n", argv[2], strerror(errno));
		free(img);
		return 1;
	}
	fprintf(stderr, "  BTF       %zu bytes at offset %#zx of %s\n", found_len, found_at,
		argv[1]);
	free(img);
	return 0;
}
