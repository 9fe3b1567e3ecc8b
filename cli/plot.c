/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plot.c - line plots as PNG files (plot.h). Four parts: the canvas (an RGB framebuffer
 * laid out as PNG scanlines, each behind a filter byte), drawing (Bresenham lines with a
 * square brush, the 5x7 font), the layout (margins from the text, ticks of 1, 2 or 5 x
 * 10^k) and the PNG file, which libpng writes (zlib-compressed: a 1000 x 600 trace chart
 * is some 15 KiB where stored blocks took 1.8 MB).
 * No libm: the few roundings it needs are done by hand on values known to be finite.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <png.h>

#include "plot.h"

/* ---- the font: 5x7 glyphs of ASCII 32..126, one byte per row, bit 4 the leftmost ---- */

#define GLYPH_W 5
#define GLYPH_H 7
#define CELL_W 6	/* glyph and one column of space */
#define CELL_H 8

static const uint8_t font5x7[95][GLYPH_H] = {
	{ 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 }, /* ' ' */
	{ 0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04 }, /* '!' */
	{ 0x0a, 0x0a, 0x0a, 0x00, 0x00, 0x00, 0x00 }, /* '"' */
	{ 0x0a, 0x0a, 0x1f, 0x0a, 0x1f, 0x0a, 0x0a }, /* '#' */
	{ 0x04, 0x0f, 0x14, 0x0e, 0x05, 0x1e, 0x04 }, /* '$' */
	{ 0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03 }, /* '%' */
	{ 0x0c, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0d }, /* '&' */
	{ 0x04, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00 }, /* quote */
	{ 0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02 }, /* '(' */
	{ 0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08 }, /* ')' */
	{ 0x00, 0x04, 0x15, 0x0e, 0x15, 0x04, 0x00 }, /* '*' */
	{ 0x00, 0x04, 0x04, 0x1f, 0x04, 0x04, 0x00 }, /* '+' */
	{ 0x00, 0x00, 0x00, 0x00, 0x0c, 0x04, 0x08 }, /* ',' */
	{ 0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00 }, /* '-' */
	{ 0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c }, /* '.' */
	{ 0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00 }, /* '/' */
	{ 0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e }, /* '0' */
	{ 0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e }, /* '1' */
	{ 0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f }, /* '2' */
	{ 0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e }, /* '3' */
	{ 0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02 }, /* '4' */
	{ 0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e }, /* '5' */
	{ 0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e }, /* '6' */
	{ 0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08 }, /* '7' */
	{ 0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e }, /* '8' */
	{ 0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c }, /* '9' */
	{ 0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00 }, /* ':' */
	{ 0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x04, 0x08 }, /* ';' */
	{ 0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02 }, /* '<' */
	{ 0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00 }, /* '=' */
	{ 0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08 }, /* '>' */
	{ 0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04 }, /* '?' */
	{ 0x0e, 0x11, 0x01, 0x0d, 0x15, 0x15, 0x0e }, /* '@' */
	{ 0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11 }, /* 'A' */
	{ 0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e }, /* 'B' */
	{ 0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e }, /* 'C' */
	{ 0x1c, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1c }, /* 'D' */
	{ 0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f }, /* 'E' */
	{ 0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10 }, /* 'F' */
	{ 0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f }, /* 'G' */
	{ 0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11 }, /* 'H' */
	{ 0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e }, /* 'I' */
	{ 0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c }, /* 'J' */
	{ 0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11 }, /* 'K' */
	{ 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f }, /* 'L' */
	{ 0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11 }, /* 'M' */
	{ 0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11 }, /* 'N' */
	{ 0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e }, /* 'O' */
	{ 0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10 }, /* 'P' */
	{ 0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d }, /* 'Q' */
	{ 0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11 }, /* 'R' */
	{ 0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e }, /* 'S' */
	{ 0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04 }, /* 'T' */
	{ 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e }, /* 'U' */
	{ 0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04 }, /* 'V' */
	{ 0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a }, /* 'W' */
	{ 0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11 }, /* 'X' */
	{ 0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04 }, /* 'Y' */
	{ 0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f }, /* 'Z' */
	{ 0x0e, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0e }, /* '[' */
	{ 0x00, 0x10, 0x08, 0x04, 0x02, 0x01, 0x00 }, /* backslash */
	{ 0x0e, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0e }, /* ']' */
	{ 0x04, 0x0a, 0x11, 0x00, 0x00, 0x00, 0x00 }, /* '^' */
	{ 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1f }, /* '_' */
	{ 0x08, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00 }, /* '`' */
	{ 0x00, 0x00, 0x0e, 0x01, 0x0f, 0x11, 0x0f }, /* 'a' */
	{ 0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1e }, /* 'b' */
	{ 0x00, 0x00, 0x0e, 0x10, 0x10, 0x11, 0x0e }, /* 'c' */
	{ 0x01, 0x01, 0x0d, 0x13, 0x11, 0x11, 0x0f }, /* 'd' */
	{ 0x00, 0x00, 0x0e, 0x11, 0x1f, 0x10, 0x0e }, /* 'e' */
	{ 0x06, 0x09, 0x08, 0x1c, 0x08, 0x08, 0x08 }, /* 'f' */
	{ 0x00, 0x00, 0x0f, 0x11, 0x0f, 0x01, 0x0e }, /* 'g' */
	{ 0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11 }, /* 'h' */
	{ 0x04, 0x00, 0x0c, 0x04, 0x04, 0x04, 0x0e }, /* 'i' */
	{ 0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0c }, /* 'j' */
	{ 0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12 }, /* 'k' */
	{ 0x0c, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e }, /* 'l' */
	{ 0x00, 0x00, 0x1a, 0x15, 0x15, 0x11, 0x11 }, /* 'm' */
	{ 0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11 }, /* 'n' */
	{ 0x00, 0x00, 0x0e, 0x11, 0x11, 0x11, 0x0e }, /* 'o' */
	{ 0x00, 0x00, 0x1e, 0x11, 0x1e, 0x10, 0x10 }, /* 'p' */
	{ 0x00, 0x00, 0x0d, 0x13, 0x0f, 0x01, 0x01 }, /* 'q' */
	{ 0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10 }, /* 'r' */
	{ 0x00, 0x00, 0x0e, 0x10, 0x0e, 0x01, 0x1e }, /* 's' */
	{ 0x08, 0x08, 0x1c, 0x08, 0x08, 0x09, 0x06 }, /* 't' */
	{ 0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0d }, /* 'u' */
	{ 0x00, 0x00, 0x11, 0x11, 0x11, 0x0a, 0x04 }, /* 'v' */
	{ 0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0a }, /* 'w' */
	{ 0x00, 0x00, 0x11, 0x0a, 0x04, 0x0a, 0x11 }, /* 'x' */
	{ 0x00, 0x00, 0x11, 0x11, 0x0f, 0x01, 0x0e }, /* 'y' */
	{ 0x00, 0x00, 0x1f, 0x02, 0x04, 0x08, 0x1f }, /* 'z' */
	{ 0x02, 0x04, 0x04, 0x08, 0x04, 0x04, 0x02 }, /* '{' */
	{ 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04 }, /* '|' */
	{ 0x08, 0x04, 0x04, 0x02, 0x04, 0x04, 0x08 }, /* '}' */
	{ 0x00, 0x00, 0x08, 0x15, 0x02, 0x00, 0x00 }, /* '~' */
};

/* ---- the canvas ---- */

struct canvas {
	uint8_t *raw;	/* h scanlines of stride bytes: the filter byte 0, then w RGB pixels */
	size_t stride;
	int w, h;
};

struct box {
	int x0, y0, x1, y1;	/* inclusive */
};

static void put(const struct canvas *c, int x, int y, uint32_t rgb)
{
	uint8_t *p;

	if (x < 0 || y < 0 || x >= c->w || y >= c->h)
		return;
	p = c->raw + (size_t)y * c->stride + 1 + (size_t)x * 3;
	p[0] = (uint8_t)(rgb >> 16);
	p[1] = (uint8_t)(rgb >> 8);
	p[2] = (uint8_t)rgb;
}

/* The rectangle from (x0, y0) to (x1, y1) inclusive, cut to the canvas. */
static void fill(const struct canvas *c, int x0, int y0, int x1, int y1, uint32_t rgb)
{
	if (x0 < 0)
		x0 = 0;
	if (y0 < 0)
		y0 = 0;
	if (x1 >= c->w)
		x1 = c->w - 1;
	if (y1 >= c->h)
		y1 = c->h - 1;
	for (int y = y0; y <= y1; y++)
		for (int x = x0; x <= x1; x++)
			put(c, x, y, rgb);
}

/* A line from (xa, ya) to (xb, yb), drawn with a square brush of bw pixels whose top-left
 * corner follows the line, cut to clip. Bresenham: max(|dx|, |dy|) + 1 steps. */
static void line(const struct canvas *c, const struct box *clip, int xa, int ya, int xb, int yb,
		 int bw, uint32_t rgb)
{
	int dx = abs(xb - xa), sx = xa < xb ? 1 : -1;
	int dy = -abs(yb - ya), sy = ya < yb ? 1 : -1;
	int err = dx + dy;

	for (;;) {
		for (int j = 0; j < bw; j++)
			for (int i = 0; i < bw; i++) {
				int x = xa + i, y = ya + j;

				if (x >= clip->x0 && x <= clip->x1 && y >= clip->y0 && y <= clip->y1)
					put(c, x, y, rgb);
			}
		if (xa == xb && ya == yb)
			break;
		int e2 = 2 * err;

		if (e2 >= dy) {
			err += dy;
			xa += sx;
		}
		if (e2 <= dx) {
			err += dx;
			ya += sy;
		}
	}
}

/* ---- text ---- */

static size_t text_len(const char *t)
{
	return t ? strnlen(t, FC_PLOT_TEXT_MAX) : 0;
}

static int text_w(size_t n, int scale)
{
	return n ? (int)n * CELL_W * scale - scale : 0;
}

/* n characters of t at scale, the first glyph's top-left corner at (x, y). up: turned a
 * quarter counter-clockwise, the text running upwards from (x, y), glyph tops to the
 * left (a left-hand axis label). */
static void text(const struct canvas *c, int x, int y, const char *t, size_t n, int scale,
		 bool up, uint32_t rgb)
{
	for (size_t k = 0; k < n; k++) {
		unsigned char ch = (unsigned char)t[k];
		const uint8_t *g = font5x7[(ch < 32 || ch > 126 ? '?' : ch) - 32];
		int u0 = (int)k * CELL_W * scale;

		for (int r = 0; r < GLYPH_H; r++)
			for (int col = 0; col < GLYPH_W; col++) {
				int u = u0 + col * scale, v = r * scale;

				if (!(g[r] >> (GLYPH_W - 1 - col) & 1))
					continue;
				if (up)
					fill(c, x + v, y - u - scale + 1, x + v + scale - 1, y - u, rgb);
				else
					fill(c, x + u, y + v, x + u + scale - 1, y + v + scale - 1, rgb);
			}
	}
}

/* ---- axes: ticks of 1, 2 or 5 x 10^k ---- */

#define TICKS_MAX 24
#define TICK_LABEL_MAX 32

struct axis {
	double lo, hi, step;	/* lo and hi whole multiples of step */
	int nticks;		/* at lo + i * step, i < nticks */
	int decimals;
	bool expo;		/* "%.*e" rather than "%.*f" */
};

/* The decimal exponent of v > 0 (floor of log10), p = 10^k beside it; about 620 steps at
 * most over the range of normal doubles. */
static int exp10_of(double v, double *p_out)
{
	double p = 1;
	int k = 0;

	while (p * 10 <= v) {
		p *= 10;
		k++;
	}
	while (p > v) {
		p /= 10;
		k--;
	}
	if (p_out)
		*p_out = p;
	return k;
}

/* floor of a finite v: a double of 2^52 or more is whole already */
static double floor_d(double v)
{
	double t;

	if (v >= 4503599627370496.0 || v <= -4503599627370496.0)
		return v;
	t = (double)(long long)v;
	return t > v ? t - 1 : t;
}

/*
 * The axis over the finite [min, max] with about target ticks: the step is the smallest
 * of 1, 2, 5 x 10^k not below (max - min) / target, the ends are min and max rounded out
 * to whole steps. A range of (nearly) one value is widened around it. -EINVAL if the
 * range or its rounded ends do not fit a double.
 */
static int axis_make(struct axis *a, double min, double max, int target)
{
	double span = max - min, p, m, c, q, maxabs;
	int k;

	if (!isfinite(span))
		return -EINVAL;
	if (span < 1e-300 || span < (max < 0 ? -max : max) * 1e-12) {
		double mid = min / 2 + max / 2, d = (mid < 0 ? -mid : mid) / 10;

		if (d < 1e-290)
			d = 1;
		min = mid - d;
		max = mid + d;
		span = max - min;
		if (!isfinite(span))
			return -EINVAL;
	}
	k = exp10_of(span / target, &p);
	m = span / target / p;
	c = m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10;
	if (c == 10) {
		c = 1;
		p *= 10;
		k++;
	}
	a->step = c * p;
	a->lo = floor_d(min / a->step) * a->step;
	a->hi = -floor_d(-max / a->step) * a->step;
	if (!isfinite(a->lo) || !isfinite(a->hi) || !isfinite(a->hi - a->lo) || a->hi <= a->lo)
		return -EINVAL;
	q = (a->hi - a->lo) / a->step;
	a->nticks = q > TICKS_MAX - 1 ? TICKS_MAX : (int)(q + 0.5) + 1;

	maxabs = a->lo < 0 ? -a->lo : a->lo;
	if ((a->hi < 0 ? -a->hi : a->hi) > maxabs)
		maxabs = a->hi;
	a->expo = maxabs >= 1e7 || k < -4;
	if (a->expo) {
		int d = exp10_of(maxabs, NULL) - k;

		a->decimals = d < 0 ? 0 : d > 6 ? 6 : d;
	} else {
		a->decimals = k < 0 ? -k : 0;
	}
	return 0;
}

static double tick_value(const struct axis *a, int i)
{
	double v = a->lo + i * a->step;

	return v < a->step * 1e-9 && v > -a->step * 1e-9 ? 0 : v;	/* no "-0.0" */
}

static size_t tick_label(char *buf, const struct axis *a, int i)
{
	int n;

	if (a->expo)
		n = snprintf(buf, TICK_LABEL_MAX, "%.*e", a->decimals, tick_value(a, i));
	else
		n = snprintf(buf, TICK_LABEL_MAX, "%.*f", a->decimals, tick_value(a, i));
	return n < 0 ? 0 : (size_t)n >= TICK_LABEL_MAX ? TICK_LABEL_MAX - 1 : (size_t)n;
}

static int axis_label_w(const struct axis *a, int scale)
{
	char buf[TICK_LABEL_MAX];
	int w = 0;

	for (int i = 0; i < a->nticks; i++) {
		int t = text_w(tick_label(buf, a, i), scale);

		if (t > w)
			w = t;
	}
	return w;
}

/* The pixel of v on an axis whose lo is at pixel p_lo and hi at p_hi; v outside is
 * pinned to the ends. */
static int map(double v, const struct axis *a, int p_lo, int p_hi)
{
	double t = (v - a->lo) / (a->hi - a->lo);
	int span = p_hi > p_lo ? p_hi - p_lo : p_lo - p_hi;
	int off;

	if (!(t > 0))
		t = 0;
	if (t > 1)
		t = 1;
	off = (int)(span * t + 0.5);
	return p_hi > p_lo ? p_lo + off : p_lo - off;
}

/* ---- series ---- */

#define BRUSH 2	/* line width in pixels */

/* One series in the area: consecutive points in one pixel column are one vertical run
 * (from the lowest to the highest), joined to the next column by a line from the last
 * point; so a series of n points with x increasing costs O(n) plus O(w * h) pixels. */
static void series_draw(const struct canvas *c, const struct box *area,
			const struct fc_plot_series *s, const struct axis *ax, const struct axis *ay)
{
	int col = 0, lo = 0, hi = 0, last = 0;
	bool open = false;

	for (size_t i = 0; i < s->n; i++) {
		double x = s->x[i], y = s->y[i];
		int px, py;

		if (!isfinite(x) || !isfinite(y))
			continue;
		px = map(x, ax, area->x0, area->x1);
		py = map(y, ay, area->y1, area->y0);
		if (open && px == col) {
			lo = py < lo ? py : lo;
			hi = py > hi ? py : hi;
			last = py;
			continue;
		}
		if (open) {
			line(c, area, col, lo, col, hi, BRUSH, s->rgb);
			line(c, area, col, last, px, py, BRUSH, s->rgb);
		}
		open = true;
		col = px;
		lo = hi = last = py;
	}
	if (open)
		line(c, area, col, lo, col, hi, BRUSH, s->rgb);
}

/* The legend in rows from y, wrapped at the canvas's width less pad; c NULL only
 * measures. Returns the number of rows. */
static int legend(const struct canvas *c, int y, int w, int pad, int scale,
		  const struct fc_plot_series *s, size_t nseries, bool both_axes)
{
	int cw = CELL_W * scale, row_h = (CELL_H + 2) * scale, x = pad, rows = 0;

	for (size_t i = 0; i < nseries; i++) {
		char name[FC_PLOT_TEXT_MAX + 16];
		size_t n;
		int ew;

		if (!s[i].name)
			continue;
		snprintf(name, sizeof(name), "%.*s%s", FC_PLOT_TEXT_MAX, s[i].name,
			 both_axes && s[i].right_axis ? " (right)" : "");
		n = strlen(name);
		ew = 4 * cw + text_w(n, scale);
		if (rows == 0)
			rows = 1;
		else if (x + ew > w - pad && x > pad) {
			rows++;
			x = pad;
		}
		if (c) {
			int ty = y + (rows - 1) * row_h, mid = ty + GLYPH_H * scale / 2;

			fill(c, x, mid - 1, x + 3 * cw - 1, mid, s[i].rgb);
			text(c, x + 4 * cw, ty, name, n, scale, false, FC_PLOT_RGB_FG);
		}
		x += ew + 2 * cw;
	}
	return rows;
}

/* ---- PNG: libpng (its simplified API; zlib compresses the scanlines) ---- */

/* The canvas as a PNG in memory: libpng reads the pixels after each scanline's filter
 * byte (row stride = the canvas' stride) and chooses its own filters. */
static uint8_t *png_encode(const struct canvas *c, size_t *len_out)
{
	png_image img = { .version = PNG_IMAGE_VERSION, .width = (png_uint_32)c->w,
			  .height = (png_uint_32)c->h, .format = PNG_FORMAT_RGB };
	png_alloc_size_t len = 0;
	uint8_t *out;

	if (!png_image_write_to_memory(&img, NULL, &len, 0, c->raw + 1, (png_int_32)c->stride,
				       NULL) || !(out = malloc(len)))
		return NULL;
	if (!png_image_write_to_memory(&img, out, &len, 0, c->raw + 1, (png_int_32)c->stride,
				       NULL)) {
		free(out);
		return NULL;
	}
	*len_out = len;
	return out;
}

/* ---- the plot ---- */

struct range {
	double min, max;
	bool any;
};

static void range_add(struct range *r, double v)
{
	if (!r->any || v < r->min)
		r->min = v;
	if (!r->any || v > r->max)
		r->max = v;
	r->any = true;
}

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

int fc_plot_png_mem(uint8_t **png, size_t *len, struct fc_plot_frame *frame,
		    const char *title, const char *xlabel, const char *ylabel_left,
		    const char *ylabel_right, const struct fc_plot_series *s, size_t nseries,
		    int w, int h)
{
	struct range rx = { .any = false }, ry[2] = { { .any = false }, { .any = false } };
	struct axis ax, ay[2];
	struct canvas c;
	struct box area;
	size_t n_title = text_len(title), n_xl = text_len(xlabel);
	size_t n_yl[2] = { text_len(ylabel_left), text_len(ylabel_right) };
	int scale, cw, gh, pad, tl, top, bottom, side[2], rows, legend_y = 0, err;
	bool both;
	uint8_t *out;

	if (!png || !len || !s || nseries == 0 || nseries > FC_PLOT_SERIES_MAX ||
	    w < FC_PLOT_DIM_MIN || w > FC_PLOT_DIM_MAX || h < FC_PLOT_DIM_MIN || h > FC_PLOT_DIM_MAX)
		return -EINVAL;
	for (size_t i = 0; i < nseries; i++) {
		if (s[i].n && (!s[i].x || !s[i].y || s[i].n > FC_PLOT_POINTS_MAX))
			return -EINVAL;
		for (size_t j = 0; j < s[i].n; j++) {
			if (!isfinite(s[i].x[j]) || !isfinite(s[i].y[j]))
				continue;
			range_add(&rx, s[i].x[j]);
			range_add(&ry[!!s[i].right_axis], s[i].y[j]);
		}
	}
	if (!rx.any)
		return -EINVAL;
	both = ry[0].any && ry[1].any;

	/* text at twice the font's size on larger pictures */
	scale = w >= 640 && h >= 400 ? 2 : 1;
	cw = CELL_W * scale;
	gh = GLYPH_H * scale;
	pad = 4 * scale + 2;
	tl = 3 * scale + 2;	/* tick length */

	/* top and bottom first: the y axes' ticks depend on the height left */
	top = pad;
	if (n_title)
		top += gh + pad;
	legend_y = top;
	rows = legend(NULL, 0, w, pad, scale, s, nseries, both);
	if (rows)
		top += rows * (CELL_H + 2) * scale + pad;
	top = clampi(top, gh / 2 + pad, h / 3);
	bottom = pad + tl + 2 * scale + gh + (n_xl ? pad + gh : 0);
	bottom = clampi(bottom, 0, h / 3);
	area.y0 = top;
	area.y1 = h - 1 - bottom;

	for (int a = 0; a < 2; a++) {
		if (!ry[a].any)
			continue;
		err = axis_make(&ay[a], ry[a].min, ry[a].max,
				clampi((area.y1 - area.y0) / (CELL_H * scale * 5), 2, 10));
		if (err)
			return err;
		side[a] = pad + (n_yl[a] ? gh + pad : 0) + axis_label_w(&ay[a], scale) +
			  2 * scale + tl;
	}
	for (int a = 0; a < 2; a++) {
		if (!ry[a].any) {
			ay[a] = ay[!a];
			side[a] = pad + 4 * cw;	/* room for half an x tick label */
		}
		side[a] = clampi(side[a], 0, w / 3);
	}
	area.x0 = side[0];
	area.x1 = w - 1 - side[1];
	err = axis_make(&ax, rx.min, rx.max, clampi((area.x1 - area.x0) / (cw * 12), 2, 10));
	if (err)
		return err;

	c.w = w;
	c.h = h;
	c.stride = 1 + 3 * (size_t)w;
	c.raw = malloc(c.stride * (size_t)h);
	if (!c.raw)
		return -ENOMEM;
	memset(c.raw, 0xff, c.stride * (size_t)h);	/* FC_PLOT_RGB_BG */
	for (int y = 0; y < h; y++)
		c.raw[(size_t)y * c.stride] = 0;	/* filter type 0: none */

	/* grid (from the left axis when it has series), series, frame, ticks, text */
	for (int i = 0; i < ax.nticks; i++) {
		int px = map(tick_value(&ax, i), &ax, area.x0, area.x1);

		line(&c, &area, px, area.y0, px, area.y1, 1, FC_PLOT_RGB_GRID);
	}
	for (int i = 0; i < ay[!ry[0].any].nticks; i++) {
		const struct axis *a = &ay[!ry[0].any];
		int py = map(tick_value(a, i), a, area.y1, area.y0);

		line(&c, &area, area.x0, py, area.x1, py, 1, FC_PLOT_RGB_GRID);
	}
	for (size_t i = 0; i < nseries; i++)
		series_draw(&c, &area, &s[i], &ax, &ay[!!s[i].right_axis]);

	fill(&c, area.x0 - 1, area.y0 - 1, area.x1 + 1, area.y0 - 1, FC_PLOT_RGB_FG);
	fill(&c, area.x0 - 1, area.y1 + 1, area.x1 + 1, area.y1 + 1, FC_PLOT_RGB_FG);
	fill(&c, area.x0 - 1, area.y0 - 1, area.x0 - 1, area.y1 + 1, FC_PLOT_RGB_FG);
	fill(&c, area.x1 + 1, area.y0 - 1, area.x1 + 1, area.y1 + 1, FC_PLOT_RGB_FG);

	for (int i = 0; i < ax.nticks; i++) {
		char buf[TICK_LABEL_MAX];
		size_t n = tick_label(buf, &ax, i);
		int px = map(tick_value(&ax, i), &ax, area.x0, area.x1);

		fill(&c, px, area.y1 + 2, px, area.y1 + 1 + tl, FC_PLOT_RGB_FG);
		text(&c, px - text_w(n, scale) / 2, area.y1 + 2 + tl + 2 * scale, buf, n, scale,
		     false, FC_PLOT_RGB_FG);
	}
	for (int a = 0; a < 2; a++) {
		if (!ry[a].any)
			continue;
		for (int i = 0; i < ay[a].nticks; i++) {
			char buf[TICK_LABEL_MAX];
			size_t n = tick_label(buf, &ay[a], i);
			int py = map(tick_value(&ay[a], i), &ay[a], area.y1, area.y0);
			int tw = text_w(n, scale), ty = py - gh / 2;

			if (a == 0) {
				fill(&c, area.x0 - 1 - tl, py, area.x0 - 2, py, FC_PLOT_RGB_FG);
				text(&c, area.x0 - 2 - tl - 2 * scale - tw, ty, buf, n, scale, false,
				     FC_PLOT_RGB_FG);
			} else {
				fill(&c, area.x1 + 2, py, area.x1 + 1 + tl, py, FC_PLOT_RGB_FG);
				text(&c, area.x1 + 2 + tl + 2 * scale, ty, buf, n, scale, false,
				     FC_PLOT_RGB_FG);
			}
		}
		if (n_yl[a]) {
			const char *t = a ? ylabel_right : ylabel_left;
			int lx = a ? w - pad - gh : pad;

			text(&c, lx, (area.y0 + area.y1) / 2 + text_w(n_yl[a], scale) / 2, t, n_yl[a],
			     scale, true, FC_PLOT_RGB_FG);
		}
	}
	if (n_xl)
		text(&c, (area.x0 + area.x1) / 2 - text_w(n_xl, scale) / 2, h - pad - gh, xlabel,
		     n_xl, scale, false, FC_PLOT_RGB_FG);
	if (n_title)
		text(&c, w / 2 - text_w(n_title, scale) / 2, pad, title, n_title, scale, false,
		     FC_PLOT_RGB_FG);
	legend(&c, legend_y, w, pad, scale, s, nseries, both);

	out = png_encode(&c, len);
	free(c.raw);
	if (!out)
		return -ENOMEM;
	*png = out;
	if (frame) {
		frame->x0 = area.x0;
		frame->y0 = area.y0;
		frame->x1 = area.x1;
		frame->y1 = area.y1;
		frame->xmin = ax.lo;
		frame->xmax = ax.hi;
		for (int a = 0; a < 2; a++) {
			frame->ymin[a] = ay[a].lo;
			frame->ymax[a] = ay[a].hi;
		}
	}
	return 0;
}

int fc_plot_png(const char *path, const char *title, const char *xlabel,
		const char *ylabel_left, const char *ylabel_right,
		const struct fc_plot_series *s, size_t nseries, int w, int h)
{
	uint8_t *png;
	size_t len, off = 0;
	int fd, err;

	if (!path)
		return -EINVAL;
	err = fc_plot_png_mem(&png, &len, NULL, title, xlabel, ylabel_left, ylabel_right, s,
			      nseries, w, h);
	if (err)
		return err;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		free(png);
		return err;
	}
	while (off < len) {
		ssize_t k = write(fd, png + off, len - off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			err = k < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)k;
	}
	if (close(fd) && !err)
		err = -errno;
	if (err)
		unlink(path);
	free(png);
	return err;
}
