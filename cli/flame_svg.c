// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "escape.h"
#include "flame_svg.h"
#include "hashtab.h"
#include "units.h"

#define SVG_WIDTH	1200.0
#define SVG_PAD		10.0
#define FRAME_H		16
#define HEAD_H		40
#define FOOT_H		24
/* mean advance of 12px sans-serif: labels are cut to fit */
#define CHAR_W		7.0
/* narrower frames are invisible and bloat the file: not drawn */
#define MIN_W		0.1

/* at most this many frames are drawn: more is megabytes no browser shows; the narrowest go */
#define MAX_FRAMES	100000
/* width classes of frames, by powers of two above MIN_W */
#define N_CLASSES	64

/* warm colours for code, blue for spans; from the name, so a frame keeps its colour */
static void color(char *buf, size_t len, const struct flame_node *n)
{
	uint64_t h = hash_bytes(n->name, strlen(n->name), 0);
	unsigned int a = (unsigned int)(h & 0xff), b = (unsigned int)((h >> 8) & 0xff);

	if (n->is_span)
		snprintf(buf, len, "rgb(%u,%u,%u)", 80 + a % 60, 140 + b % 60, 230);
	else
		snprintf(buf, len, "rgb(%u,%u,%u)", 205 + a % 50, 80 + b % 150, 40 + (a ^ b) % 50);
}

struct svg {
	FILE *f;
	double scale, height, root_total, min_w;
	/* first walk: frames of each width class, and the deepest of each */
	size_t count[N_CLASSES];
	uint32_t depth[N_CLASSES];
	size_t drawn;
};

static int width_class(double w)
{
	int c = (int)floor(log2(w / MIN_W));

	return c < 0 ? 0 : c >= N_CLASSES ? N_CLASSES - 1 : c;
}

static void measure(const struct flame_node *n, void *ctx)
{
	struct svg *g = ctx;
	double w = n->total * g->scale;
	int c;

	if (w < MIN_W)
		return;
	c = width_class(w);
	g->count[c]++;
	if (n->depth > g->depth[c])
		g->depth[c] = n->depth;
}

/* the label that fits w pixels: the name, or its first characters and "..", or nothing */
static void label(FILE *f, const char *name, double w)
{
	size_t fit = w > 6 ? (size_t)((w - 6) / CHAR_W) : 0, chars = 0, keep = 0, i;
	char cut[1024];

	for (i = 0; name[i]; i++) {
		if (((unsigned char)name[i] & 0xc0) == 0x80)
			continue;
		if (chars + 2 == fit)
			keep = i;
		chars++;
	}
	if (fit >= chars) {
		esc_xml_fputs(name, f);
	} else if (fit >= 3) {
		/* names are valid UTF-8 (the folded rule): cut before a character */
		snprintf(cut, sizeof(cut), "%.*s..", (int)(keep < sizeof(cut) - 3 ? keep :
							  sizeof(cut) - 3), name);
		esc_xml_fputs(cut, f);
	}
}

static void frame(const struct flame_node *n, void *ctx)
{
	struct svg *g = ctx;
	FILE *f = g->f;
	double w = n->total * g->scale;
	char fill[32], bytes[32];

	if (w < g->min_w && n->depth)
		return;
	g->drawn++;
	color(fill, sizeof(fill), n);
	format_bytes(bytes, sizeof(bytes), n->total);
	fprintf(f, "<g class=\"f\" data-x=\"%.6f\" data-w=\"%.6f\" data-d=\"%u\"><title>",
		n->x * g->scale, w, n->depth);
	esc_xml_fputs(n->name, f);
	fprintf(f, " (%s, %.2f%%)</title>", bytes, 100.0 * n->total / g->root_total);
	fprintf(f, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
		"rx=\"2\"/>", SVG_PAD + n->x * g->scale,
		g->height - FOOT_H - (n->depth + 1) * FRAME_H, w, FRAME_H - 1, fill);
	fprintf(f, "<text x=\"%.2f\" y=\"%.0f\">", SVG_PAD + n->x * g->scale + 3,
		g->height - FOOT_H - n->depth * FRAME_H - 4);
	label(f, n->name, w);
	fputs("</text></g>\n", f);
}

/*
 * The narrowest width drawn: MIN_W, or the smallest class boundary that keeps
 * the frames under MAX_FRAMES; and the depth of the deepest frame drawn.
 */
static uint32_t pick_min_width(struct svg *g, size_t *left_out)
{
	size_t above = 0;
	uint32_t depth = 0;
	int c, lo = 0;

	for (c = N_CLASSES - 1; c >= 0; c--) {
		if (above + g->count[c] > MAX_FRAMES) {
			lo = c + 1;
			break;
		}
		above += g->count[c];
	}
	*left_out = 0;
	for (c = 0; c < N_CLASSES; c++) {
		if (c < lo)
			*left_out += g->count[c];
		else if (g->depth[c] > depth)
			depth = g->depth[c];
	}
	g->min_w = lo ? MIN_W * pow(2, lo) : MIN_W;
	return depth;
}

/* zoom and search: plain DOM, the data-* attributes hold each frame's unzoomed geometry */
static const char script[] =
	"var W=%.1f,P=%.1f,C=%.1f;\n"
	"function fs(){return document.querySelectorAll('g.f');}\n"
	"function label(g,w){var t=g.querySelector('title').textContent;"
	"t=t.substring(0,t.lastIndexOf(' ('));var n=Math.floor((w-6)/C);"
	"g.querySelector('text').textContent=n>=t.length?t:(n>=3?t.substring(0,n-2)+'..':'');}\n"
	"function place(g,x,w){var r=g.querySelector('rect');r.setAttribute('x',P+x);"
	"r.setAttribute('width',w);g.querySelector('text').setAttribute('x',P+x+3);label(g,w);}\n"
	"function zoom(z){var zx=+z.dataset.x,zw=+z.dataset.w,zd=+z.dataset.d,s=W/zw;"
	"fs().forEach(function(g){var x=+g.dataset.x,w=+g.dataset.w,d=+g.dataset.d;"
	"var inside=x>=zx-1e-6&&x+w<=zx+zw+1e-6&&d>=zd,below=d<zd&&x<=zx+1e-6&&x+w>=zx+zw-1e-6;"
	"if(inside){g.style.display='';g.style.opacity='';place(g,(x-zx)*s,w*s);}"
	"else if(below){g.style.display='';g.style.opacity='0.5';place(g,0,W);}"
	"else g.style.display='none';});"
	"document.getElementById('reset').style.display='';}\n"
	"function reset(){fs().forEach(function(g){g.style.display='';g.style.opacity='';"
	"place(g,+g.dataset.x,+g.dataset.w);});"
	"document.getElementById('reset').style.display='none';}\n"
	"function search(){var q=prompt('Highlight frames matching (regular expression):');"
	"if(q===null)return;var re;try{re=new RegExp(q);}catch(e){alert(e);return;}"
	"fs().forEach(function(g){var r=g.querySelector('rect');"
	"if(!r.dataset.fill)r.dataset.fill=r.getAttribute('fill');"
	"var hit=q&&re.test(g.querySelector('title').textContent);"
	"r.setAttribute('fill',hit?'rgb(230,0,230)':r.dataset.fill);});}\n"
	"document.addEventListener('click',function(e){"
	"var g=e.target.closest('g.f');if(g)zoom(g);});\n"
	"document.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&e.key=='f')"
	"{e.preventDefault();search();}});\n";

int flame_svg__write(const struct flame_tree *t, FILE *f, const char *title_file,
		     const char *span)
{
	double width = SVG_WIDTH - 2 * SVG_PAD, total = flame_tree__total(t);
	struct svg g = { .f = f, .root_total = total, .scale = total > 0 ? width / total : 0 };
	struct flame_walk w = { .leave = measure, .ctx = &g };
	size_t left = 0;
	uint32_t depth = 0;
	char bytes[32];
	int ret = total > 0 ? flame_tree__walk(t, &w) : 0;

	if (ret)
		return ret;
	if (total > 0)
		depth = pick_min_width(&g, &left);
	g.height = HEAD_H + FOOT_H + (depth + 1) * FRAME_H;
	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n", SVG_WIDTH, g.height, SVG_WIDTH,
		g.height);
	fputs("<style>text{font:12px sans-serif;fill:#000;pointer-events:none}"
	      "g.f rect{stroke:#fff;stroke-width:0.5;cursor:pointer}"
	      ".b{font:12px sans-serif;cursor:pointer;fill:#00c}</style>\n", f);
	fprintf(f, "<script><![CDATA[\n");
	fprintf(f, script, width, SVG_PAD, CHAR_W);
	fprintf(f, "]]></script>\n");
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f8\"/>\n");
	fprintf(f, "<text x=\"%.0f\" y=\"20\" text-anchor=\"middle\" style=\"font-size:16px\">",
		SVG_WIDTH / 2);
	esc_xml_fputs("Allocations: ", f);
	esc_xml_fputs(title_file, f);
	if (span) {
		esc_xml_fputs(", span ", f);
		esc_xml_fputs(span, f);
	}
	fprintf(f, " (%s)</text>\n", format_bytes(bytes, sizeof(bytes), total));
	fprintf(f, "<text id=\"reset\" class=\"b\" x=\"%.0f\" y=\"20\" onclick=\"reset()\" "
		"style=\"display:none;pointer-events:auto\">Reset zoom</text>\n", SVG_PAD);
	fprintf(f, "<text class=\"b\" x=\"%.0f\" y=\"20\" text-anchor=\"end\" onclick=\"search()\" "
		"style=\"pointer-events:auto\">Search</text>\n", SVG_WIDTH - SVG_PAD);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" style=\"fill:#555\">blue: spans; "
		"warm: code, root at the bottom; width: bytes", SVG_PAD, g.height - 6);
	if (left)
		fprintf(f, "; %zu frames narrower than %.2f px not drawn (at most %d are)", left,
			g.min_w, MAX_FRAMES);
	fprintf(f, "</text>\n");
	w.leave = frame;
	if (total > 0)
		ret = flame_tree__walk(t, &w);
	fprintf(f, "</svg>\n");
	return ret;
}
