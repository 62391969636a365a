// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdint.h>
#include <string.h>

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

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			/* XML 1.0 forbids most control characters, even escaped */
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, f);
		}
	}
}

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

static void frame(const struct flame_tree *t, FILE *f, uint32_t node, double x, double scale,
		  double height)
{
	const struct flame_node *n = &t->nodes[node];
	double w = n->total * scale, cx = x;
	char fill[32], bytes[32];
	uint32_t c;
	size_t fit;

	if (w < MIN_W)
		return;
	color(fill, sizeof(fill), n);
	format_bytes(bytes, sizeof(bytes), n->total);
	fprintf(f, "<g class=\"f\" data-x=\"%.6f\" data-w=\"%.6f\" data-d=\"%u\"><title>", x, w,
		n->depth);
	xml_text(f, n->name);
	fprintf(f, " (%s, %.2f%%)</title>", bytes, 100.0 * n->total / t->nodes[0].total);
	fprintf(f, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
		"rx=\"2\"/>", SVG_PAD + x, height - FOOT_H - (n->depth + 1) * FRAME_H, w,
		FRAME_H - 1, fill);
	fprintf(f, "<text x=\"%.2f\" y=\"%.0f\">", SVG_PAD + x + 3,
		height - FOOT_H - n->depth * FRAME_H - 4);
	fit = (size_t)((w - 6) / CHAR_W);
	if (fit >= strlen(n->name)) {
		xml_text(f, n->name);
	} else if (fit >= 3) {
		char s[512];
		size_t keep = fit - 2 < sizeof(s) - 3 ? fit - 2 : sizeof(s) - 3;

		snprintf(s, sizeof(s), "%.*s..", (int)keep, n->name);
		xml_text(f, s);
	}
	fputs("</text></g>\n", f);
	for (c = n->first_child; c != UINT32_MAX; c = t->nodes[c].next_sibling) {
		frame(t, f, c, cx, scale, height);
		cx += t->nodes[c].total * scale;
	}
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

void flame_svg__write(const struct flame_tree *t, FILE *f, const char *title_file,
		      const char *span)
{
	double width = SVG_WIDTH - 2 * SVG_PAD;
	double height = HEAD_H + FOOT_H + (t->max_depth + 1) * FRAME_H;
	double total = t->nodes[0].total;
	char bytes[32];

	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n", SVG_WIDTH, height, SVG_WIDTH, height);
	fputs("<style>text{font:12px sans-serif;fill:#000;pointer-events:none}"
	      "g.f rect{stroke:#fff;stroke-width:0.5;cursor:pointer}"
	      ".b{font:12px sans-serif;cursor:pointer;fill:#00c}</style>\n", f);
	fprintf(f, "<script><![CDATA[\n");
	fprintf(f, script, width, SVG_PAD, CHAR_W);
	fprintf(f, "]]></script>\n");
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f8\"/>\n");
	fprintf(f, "<text x=\"%.0f\" y=\"20\" text-anchor=\"middle\" style=\"font-size:16px\">",
		SVG_WIDTH / 2);
	xml_text(f, "Allocations: ");
	xml_text(f, title_file);
	if (span) {
		xml_text(f, ", span ");
		xml_text(f, span);
	}
	fprintf(f, " (%s)</text>\n", format_bytes(bytes, sizeof(bytes), total));
	fprintf(f, "<text id=\"reset\" class=\"b\" x=\"%.0f\" y=\"20\" onclick=\"reset()\" "
		"style=\"display:none;pointer-events:auto\">Reset zoom</text>\n", SVG_PAD);
	fprintf(f, "<text class=\"b\" x=\"%.0f\" y=\"20\" text-anchor=\"end\" onclick=\"search()\" "
		"style=\"pointer-events:auto\">Search</text>\n", SVG_WIDTH - SVG_PAD);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" style=\"fill:#555\">blue: spans; "
		"warm: code, root at the bottom; width: bytes</text>\n", SVG_PAD, height - 6);
	if (total > 0)
		frame(t, f, 0, 0, width / total, height);
	fprintf(f, "</svg>\n");
}
