/* SPDX-License-Identifier: Apache-2.0 */
/*
 * falconctl's plot renderer (cli/plot.c), its PNG read back with libpng: the signature,
 * IHDR first (RGB, the size asked), IEND last, the pixels decoded; compressed (a 1000 x
 * 600 chart well under the 1.8 MB its scanlines take). Then the pixels: the series' colour
 * where y = x must be, the background or grid elsewhere, the frame around the area, both
 * y axes, NaN and infinite points skipped, one-point and constant series, the legend and
 * the title; bad input refused; a million points in bounded time; the file writer.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <png.h>

#include "plot.h"
#include "testutil.h"

#define RED 0xe01010u
#define BLUE 0x1030d0u

/* ---- the PNG read back with libpng (what an image viewer would show) ---- */

struct img {
	int w, h;
	uint8_t *raw;	/* h scanlines of 1 + 3w bytes (a zero byte, then RGB) */
	size_t stride;
};

/* Decode png, asserting it is a w x h RGB PNG with IHDR first and IEND last; the pixels go
 * to img. */
static void png_read(const uint8_t *png, size_t len, int w, int h, struct img *img)
{
	static const uint8_t sig[8] = { 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a };
	png_image pi = { .version = PNG_IMAGE_VERSION };

	assert_true(len > 8 + 25 + 12);
	assert_memory_equal(png, sig, 8);
	assert_memory_equal(png + 12, "IHDR", 4);
	assert_memory_equal(png + len - 8, "IEND", 4);
	assert_true(png[8 + 8 + 9] == 2);	/* colour type RGB */
	assert_true(png_image_begin_read_from_memory(&pi, png, len));
	assert_int_equal(pi.width, w);
	assert_int_equal(pi.height, h);
	pi.format = PNG_FORMAT_RGB;
	img->w = w;
	img->h = h;
	img->stride = 1 + 3 * (size_t)w;
	img->raw = calloc((size_t)h, img->stride);
	assert_non_null(img->raw);
	assert_true(png_image_finish_read(&pi, NULL, img->raw + 1, (png_int_32)img->stride, NULL));
}

static uint32_t px(const struct img *img, int x, int y)
{
	const uint8_t *p;

	assert_true(x >= 0 && y >= 0 && x < img->w && y < img->h);
	p = img->raw + (size_t)y * img->stride + 1 + (size_t)x * 3;
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

/* Render into img (the PNG checked and decoded) and fr; returns the PNG's length. */
static size_t render(struct img *img, struct fc_plot_frame *fr, const char *title,
		     const struct fc_plot_series *s, size_t nseries, int w, int h)
{
	uint8_t *png = NULL;
	size_t len = 0;

	assert_int_equal(fc_plot_png_mem(&png, &len, fr, title, "x", "left", "right", s,
					 nseries, w, h), 0);
	png_read(png, len, w, h, img);
	free(png);
	return len;
}

/* ---- where the data should be ---- */

/* (no libm: the Makefile links none into the unit tests) */
static double absd(double v)
{
	return v < 0 ? -v : v;
}

static int iround(double v)
{
	return v < 0 ? -(int)(-v + 0.5) : (int)(v + 0.5);
}

static int map_x(const struct fc_plot_frame *fr, double v)
{
	return fr->x0 + iround((v - fr->xmin) / (fr->xmax - fr->xmin) * (fr->x1 - fr->x0));
}

static int map_y(const struct fc_plot_frame *fr, int axis, double v)
{
	return fr->y1 - iround((v - fr->ymin[axis]) / (fr->ymax[axis] - fr->ymin[axis]) *
				    (fr->y1 - fr->y0));
}

/* rgb within one pixel of (x, y) */
static bool near(const struct img *img, int x, int y, uint32_t rgb)
{
	for (int dy = -1; dy <= 1; dy++)
		for (int dx = -1; dx <= 1; dx++) {
			int xx = x + dx, yy = y + dy;

			if (xx >= 0 && yy >= 0 && xx < img->w && yy < img->h &&
			    px(img, xx, yy) == rgb)
				return true;
		}
	return false;
}

/* The frame's sanity: inside the picture, a good part of it, framed in FG just outside. */
static void check_frame(const struct img *img, const struct fc_plot_frame *fr)
{
	assert_true(fr->x0 > 0 && fr->x1 < img->w - 1 && fr->y0 > 0 && fr->y1 < img->h - 1);
	assert_true(fr->x1 - fr->x0 >= img->w / 3 && fr->y1 - fr->y0 >= img->h / 3);
	for (int y = fr->y0 - 1; y <= fr->y1 + 1; y++) {
		assert_int_equal(px(img, fr->x0 - 1, y), FC_PLOT_RGB_FG);
		assert_int_equal(px(img, fr->x1 + 1, y), FC_PLOT_RGB_FG);
	}
	for (int x = fr->x0 - 1; x <= fr->x1 + 1; x++) {
		assert_int_equal(px(img, x, fr->y0 - 1), FC_PLOT_RGB_FG);
		assert_int_equal(px(img, x, fr->y1 + 1), FC_PLOT_RGB_FG);
	}
}

/* y = a + b x (on axis) drawn in rgb: present at every quarter step of x over [x_lo,
 * x_hi]; in the area, no rgb further than 4 pixels from it vertically, only background
 * and grid there, and mostly background. */
static void check_line(const struct img *img, const struct fc_plot_frame *fr, int axis,
		       double a, double b, double x_lo, double x_hi, uint32_t rgb)
{
	long bg = 0, far = 0;

	for (double v = x_lo; v <= x_hi; v += 0.25)
		assert_true(near(img, map_x(fr, v), map_y(fr, axis, a + b * v), rgb));
	for (int x = fr->x0; x <= fr->x1; x++) {
		double v = fr->xmin + (fr->xmax - fr->xmin) * (x - fr->x0) / (fr->x1 - fr->x0);
		double yl = fr->y1 - (a + b * v - fr->ymin[axis]) /
				     (fr->ymax[axis] - fr->ymin[axis]) * (fr->y1 - fr->y0);

		for (int y = fr->y0; y <= fr->y1; y++) {
			uint32_t c = px(img, x, y);

			if (absd(y - yl) <= 4 && v >= x_lo - 0.5 && v <= x_hi + 0.5)
				continue;
			far++;
			if (c == rgb)
				fail_msg("colour %06x at (%d, %d), %.1f px from its line", rgb, x, y,
					 absd(y - yl));
			if (c == FC_PLOT_RGB_BG)
				bg++;
		}
	}
	assert_true(far > 0);
	assert_true(bg * 10 > far * 8);
}

/* ---- the tests ---- */

static void test_png_structure(void **state)
{
	double x[3] = { 0, 1, 2 }, y[3] = { 1, 3, 2 };
	struct fc_plot_series s = { "s", x, y, 3, RED, 0 };
	struct fc_plot_frame fr;
	struct img img;
	size_t len;

	(void)state;
	/* the smallest, the largest edge, one not a multiple of anything, > 65535 bytes per
	 * block boundary crossing a scanline */
	static const int dims[][2] = { { 200, 200 }, { 4000, 200 }, { 200, 4000 }, { 333, 257 } };

	for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++) {
		int w = dims[i][0], h = dims[i][1];
		size_t raw = (size_t)h * (1 + 3 * (size_t)w);

		len = render(&img, &fr, "structure", &s, 1, w, h);
		assert_true(len < raw / 4);	/* deflate: mostly background */
		check_frame(&img, &fr);
		free(img.raw);
	}

	/* 1000 x 600, the size falconctl draws: 1,800,803 bytes as stored blocks */
	len = render(&img, &fr, "structure", &s, 1, 1000, 600);
	assert_true(len < 100000);
	print_message("1000 x 600: %zu bytes\n", len);
	free(img.raw);
}

static void test_line_y_eq_x(void **state)
{
	double x[101], y[101];
	struct fc_plot_series s = { NULL, x, y, 101, RED, 0 };
	struct fc_plot_frame fr;
	struct img img;

	(void)state;
	for (int i = 0; i <= 100; i++)
		x[i] = y[i] = i;
	render(&img, &fr, NULL, &s, 1, 400, 300);
	check_frame(&img, &fr);
	/* [0, 100] is whole ticks already (steps of 1, 2 or 5 x 10^k) */
	assert_true(fr.xmin == 0 && fr.xmax == 100);
	assert_true(fr.ymin[0] == 0 && fr.ymax[0] == 100);
	/* corner to corner */
	assert_int_equal(px(&img, fr.x0, fr.y1), RED);
	assert_true(near(&img, fr.x1, fr.y0, RED));
	check_line(&img, &fr, 0, 0, 1, 0, 100, RED);

	/* no legend entry (no name), so no red outside the area; tick labels on the left
	 * only: dark pixels left of the frame, none right of it beside the area */
	bool left_text = false;

	for (int yy = 0; yy < img.h; yy++)
		for (int xx = 0; xx < img.w; xx++) {
			bool inside = xx >= fr.x0 && xx <= fr.x1 && yy >= fr.y0 && yy <= fr.y1;
			uint32_t c = px(&img, xx, yy);

			assert_true(inside || c != RED);
			if (yy >= fr.y0 && yy <= fr.y1 && xx < fr.x0 - 1 && c == FC_PLOT_RGB_FG)
				left_text = true;
			if (yy >= fr.y0 && yy <= fr.y1 && xx > fr.x1 + 1)
				assert_int_equal(c, FC_PLOT_RGB_BG);
		}
	assert_true(left_text);
	free(img.raw);
}

static void test_right_axis(void **state)
{
	double x[101], y[101], yr[101];
	struct fc_plot_series s[2] = {
		{ "left", x, y, 101, RED, 0 },
		{ "right", x, yr, 101, BLUE, 1 },
	};
	struct fc_plot_frame fr;
	struct img img;
	bool right_text = false;

	(void)state;
	for (int i = 0; i <= 100; i++) {
		x[i] = y[i] = i;
		yr[i] = 1000 - 10 * i;
	}
	render(&img, &fr, "two axes", s, 2, 600, 400);
	check_frame(&img, &fr);
	assert_true(fr.ymin[0] == 0 && fr.ymax[0] == 100);
	assert_true(fr.ymin[1] == 0 && fr.ymax[1] == 1000);
	/* both lines in their own scales: they cross in the middle */
	for (double v = 0; v <= 100; v += 0.25) {
		assert_true(near(&img, map_x(&fr, v), map_y(&fr, 0, v), RED) ||
			    absd(v - 50) < 3);
		assert_true(near(&img, map_x(&fr, v), map_y(&fr, 1, 1000 - 10 * v), BLUE) ||
			    absd(v - 50) < 3);
	}
	for (int yy = fr.y0; yy <= fr.y1; yy++)
		for (int xx = fr.x1 + 2; xx < img.w; xx++)
			right_text |= px(&img, xx, yy) == FC_PLOT_RGB_FG;
	assert_true(right_text);
	free(img.raw);

	/* only the right axis in use: the left copies its range */
	render(&img, &fr, NULL, &s[1], 1, 400, 300);
	assert_true(fr.ymin[0] == fr.ymin[1] && fr.ymax[0] == fr.ymax[1]);
	check_line(&img, &fr, 1, 1000, -10, 0, 100, BLUE);
	free(img.raw);
}

static void test_nan_skipped(void **state)
{
	double x[101], y[101];
	struct fc_plot_series s = { NULL, x, y, 101, RED, 0 };
	struct fc_plot_frame fr;
	struct img img;

	(void)state;
	for (int i = 0; i <= 100; i++)
		x[i] = y[i] = i;
	y[30] = NAN;
	y[31] = INFINITY;
	y[50] = -INFINITY;
	x[70] = NAN;		/* its y would stretch the axis */
	y[70] = 1e9;
	x[80] = INFINITY;
	y[80] = -1e9;
	x[0] = NAN;		/* the first and last: the line starts and ends a step in */
	x[100] = NAN;
	render(&img, &fr, NULL, &s, 1, 400, 300);
	assert_true(fr.ymax[0] == 100 && fr.ymin[0] == 0);
	assert_true(fr.xmin == 0 && fr.xmax == 100);
	/* joined across the skipped points, nothing drawn beyond the finite ends */
	check_line(&img, &fr, 0, 0, 1, 1, 99, RED);
	free(img.raw);
}

static void test_degenerate(void **state)
{
	double x[3] = { 5, 5, 5 }, y[3] = { 7, 7, 7 };
	struct fc_plot_series s = { "one", x, y, 1, RED, 0 };
	struct fc_plot_frame fr;
	struct img img;

	(void)state;
	/* one point: both axes widened around it, a dot where it is */
	render(&img, &fr, NULL, &s, 1, 300, 300);
	assert_true(fr.xmin < 5 && fr.xmax > 5 && fr.ymin[0] < 7 && fr.ymax[0] > 7);
	assert_true(near(&img, map_x(&fr, 5), map_y(&fr, 0, 7), RED));
	free(img.raw);

	/* a constant over a range of x: a horizontal line */
	x[1] = 6;
	x[2] = 7;
	s.n = 3;
	render(&img, &fr, NULL, &s, 1, 300, 300);
	assert_true(fr.ymin[0] < 7 && fr.ymax[0] > 7);
	check_line(&img, &fr, 0, 7, 0, 5, 7, RED);
	free(img.raw);

	/* values near the ends of the doubles still fit */
	x[0] = -1e300;
	x[1] = 0;
	x[2] = 1e300;
	y[0] = -1e-300;
	y[1] = 0;
	y[2] = 1e-300;
	render(&img, &fr, NULL, &s, 1, 300, 300);
	assert_true(fr.xmin <= -1e300 && fr.xmax >= 1e300);
	free(img.raw);
}

static void test_text(void **state)
{
	double x[2] = { 0, 1 }, y[2] = { 0, 1 };
	struct fc_plot_series named = { "a series", x, y, 2, RED, 0 };
	struct fc_plot_series anon = { NULL, x, y, 2, RED, 0 };
	struct fc_plot_frame fr_bare, fr_title, fr_legend;
	struct img img;
	bool title_px = false, legend_px = false;

	(void)state;
	render(&img, &fr_bare, NULL, &anon, 1, 400, 300);
	free(img.raw);

	/* a title takes room on top and puts dark pixels there */
	render(&img, &fr_title, "A title: 0123456789 ~!?", &anon, 1, 400, 300);
	assert_true(fr_title.y0 > fr_bare.y0);
	for (int yy = 0; yy < fr_title.y0 - 1; yy++)
		for (int xx = 0; xx < img.w; xx++)
			title_px |= px(&img, xx, yy) == FC_PLOT_RGB_FG;
	assert_true(title_px);
	free(img.raw);

	/* a legend entry: its colour sample above the area, beside dark text */
	render(&img, &fr_legend, NULL, &named, 1, 400, 300);
	assert_true(fr_legend.y0 > fr_bare.y0);
	for (int yy = 0; yy < fr_legend.y0 - 1; yy++)
		for (int xx = 0; xx < img.w; xx++)
			legend_px |= px(&img, xx, yy) == RED;
	assert_true(legend_px);
	free(img.raw);

	/* bytes outside ASCII and text longer than the limit are drawn, not refused */
	char lng[300];

	memset(lng, 'W', sizeof(lng) - 1);
	lng[sizeof(lng) - 1] = '\0';
	named.name = lng;
	render(&img, &fr_legend, "\x01\xff\x7f caf\xc3\xa9", &named, 1, 200, 200);
	free(img.raw);
}

static void test_bad_input(void **state)
{
	double x[2] = { 0, 1 }, y[2] = { 0, 1 }, nan2[2] = { NAN, NAN };
	double huge[2] = { -1.7e308, 1.7e308 };
	struct fc_plot_series ok = { "ok", x, y, 2, RED, 0 };
	struct fc_plot_series bad;
	struct fc_plot_series many[FC_PLOT_SERIES_MAX + 1];
	uint8_t *png = (uint8_t *)0x1;
	size_t len = 7;

	(void)state;
#define REFUSED(err, s, ns, w, h)                                                         \
	do {                                                                              \
		assert_int_equal(fc_plot_png_mem(&png, &len, NULL, "t", "x", "l", "r", s, ns, \
						 w, h), err);                           \
		assert_ptr_equal(png, (uint8_t *)0x1);                                    \
		assert_int_equal(len, 7);                                                 \
	} while (0)

	REFUSED(-EINVAL, &ok, 1, 199, 300);
	REFUSED(-EINVAL, &ok, 1, 4001, 300);
	REFUSED(-EINVAL, &ok, 1, 300, 199);
	REFUSED(-EINVAL, &ok, 1, 300, 4001);
	REFUSED(-EINVAL, &ok, 1, -300, 300);
	REFUSED(-EINVAL, &ok, 0, 300, 300);
	REFUSED(-EINVAL, NULL, 1, 300, 300);
	for (size_t i = 0; i < FC_PLOT_SERIES_MAX + 1; i++)
		many[i] = ok;
	REFUSED(-EINVAL, many, FC_PLOT_SERIES_MAX + 1, 300, 300);

	bad = ok;	/* n == 0 everywhere */
	bad.n = 0;
	REFUSED(-EINVAL, &bad, 1, 300, 300);
	bad = ok;	/* nothing finite */
	bad.y = nan2;
	REFUSED(-EINVAL, &bad, 1, 300, 300);
	bad = ok;
	bad.x = NULL;
	REFUSED(-EINVAL, &bad, 1, 300, 300);
	bad = ok;
	bad.y = NULL;
	REFUSED(-EINVAL, &bad, 1, 300, 300);
	bad = ok;
	bad.n = (size_t)FC_PLOT_POINTS_MAX + 1;
	REFUSED(-EINVAL, &bad, 1, 300, 300);
	bad = ok;	/* max - min overflows */
	bad.y = huge;
	REFUSED(-EINVAL, &bad, 1, 300, 300);
	bad = ok;
	bad.x = huge;
	REFUSED(-EINVAL, &bad, 1, 300, 300);

	/* one empty series beside a good one is fine; NULL x with n 0 too */
	struct fc_plot_series two[2] = { { "empty", NULL, NULL, 0, BLUE, 1 }, ok };

	png = NULL;
	assert_int_equal(fc_plot_png_mem(&png, &len, NULL, NULL, NULL, NULL, NULL, two, 2, 200,
					 200), 0);
	free(png);

	assert_int_equal(fc_plot_png_mem(NULL, &len, NULL, NULL, NULL, NULL, NULL, &ok, 1, 300,
					 300), -EINVAL);
	assert_int_equal(fc_plot_png_mem(&png, NULL, NULL, NULL, NULL, NULL, NULL, &ok, 1, 300,
					 300), -EINVAL);
#undef REFUSED
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A million noisy points: O(n) plus the picture, in bounded time, and the noise fills
 * the columns it covers (one vertical run per pixel column). */
static void test_million_points(void **state)
{
	const size_t n = 1000000;
	double *x = malloc(n * sizeof(*x)), *y = malloc(n * sizeof(*y));
	uint64_t seed = fc_test_seed(0x9107ull) | 1;
	struct fc_plot_series s = { "noise", x, y, n, RED, 0 };
	struct fc_plot_frame fr;
	struct img img;
	uint8_t *png;
	size_t len;
	double t0, dt, limit = fc_test_quick() ? 60 : 2;

	(void)state;
	assert_non_null(x);
	assert_non_null(y);
	for (size_t i = 0; i < n; i++) {
		x[i] = (double)i;
		y[i] = (double)(fc_test_rand(&seed) % 1000001) / 1e6;	/* [0, 1] */
	}
	t0 = now_s();
	assert_int_equal(fc_plot_png_mem(&png, &len, &fr, "a million points", "i", "y", NULL, &s,
					 1, 1000, 600), 0);
	dt = now_s() - t0;
	print_message("1e6 points, 1000 x 600: %.3f s\n", dt);
	assert_true(dt < limit);
	png_read(png, len, 1000, 600, &img);
	free(png);

	/* every column of the area has the colour over most of its height */
	for (int xx = fr.x0 + 2; xx <= fr.x1 - 2; xx++) {
		int red = 0;

		for (int yy = fr.y0; yy <= fr.y1; yy++)
			red += px(&img, xx, yy) == RED;
		assert_true(red * 10 > (fr.y1 - fr.y0 + 1) * 9);
	}
	free(img.raw);
	free(x);
	free(y);
}

static void test_file(void **state)
{
	double x[3] = { 0, 1, 2 }, y[3] = { 2, 0, 1 };
	struct fc_plot_series s = { "file", x, y, 3, BLUE, 0 };
	char path[] = "/tmp/test_plot.XXXXXX";
	uint8_t *png, *back;
	size_t len;
	FILE *f;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fc_plot_png(path, "t", "x", "l", "r", &s, 1, 300, 200), 0);
	assert_int_equal(fc_plot_png_mem(&png, &len, NULL, "t", "x", "l", "r", &s, 1, 300, 200),
			 0);
	back = malloc(len + 1);
	assert_non_null(back);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(back, 1, len + 1, f), len);	/* the same bytes, no more */
	fclose(f);
	assert_memory_equal(back, png, len);
	free(back);
	free(png);
	unlink(path);

	assert_int_equal(fc_plot_png("/nonexistent-dir/plot.png", "t", "x", "l", "r", &s, 1,
				     300, 200), -ENOENT);
	assert_int_equal(fc_plot_png(NULL, "t", "x", "l", "r", &s, 1, 300, 200), -EINVAL);
	assert_int_equal(fc_plot_png(path, "t", "x", "l", "r", &s, 1, 100, 200), -EINVAL);
	assert_int_equal(access(path, F_OK), -1);	/* nothing created on refusal */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_png_structure),
		cmocka_unit_test(test_line_y_eq_x),
		cmocka_unit_test(test_right_axis),
		cmocka_unit_test(test_nan_skipped),
		cmocka_unit_test(test_degenerate),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_million_points),
		cmocka_unit_test(test_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
