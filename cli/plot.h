/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plot.h - line plots as PNG files for falconctl (`falconctl conn trace ID` draws a
 * connection's delay, fcwnd, ncwnd, RTO and retransmits over time): an RGB framebuffer,
 * Bresenham lines, a built-in 5x7 bitmap font, tick values of 1, 2 or 5 x 10^k, and the
 * PNG written by libpng (deflate-compressed by zlib; a 1000 x 600 chart of a few
 * series is tens of KiB).
 *
 * The picture: the title on top, a legend under it (one sample line and name per
 * series, "(right)" after the series of the right-hand axis when both axes are in use),
 * the plot area framed, grid lines and numbered ticks on the x axis and the left y axis,
 * and on the right y axis if a series uses it; the axis labels beside and under them.
 * Each axis spans the finite data rounded out to whole ticks. Series are drawn in order,
 * each as a 2-pixel line through its points; points whose x or y is NaN or infinite are
 * skipped (the line joins their neighbours). Text is ASCII; any other byte draws as '?',
 * and text longer than FC_PLOT_TEXT_MAX characters is cut there.
 *
 * Cost: O(n) per series for x increasing (the points that fall in one pixel column are
 * drawn as one vertical run), plus the w x h framebuffer and the PNG beside it; the
 * functions allocate both and free them before returning. Thread-safe (no state).
 */
#ifndef FC_PLOT_H
#define FC_PLOT_H

#include <stddef.h>
#include <stdint.h>

#define FC_PLOT_DIM_MIN 200		/* w and h in pixels, inclusive */
#define FC_PLOT_DIM_MAX 4000
#define FC_PLOT_SERIES_MAX 16
#define FC_PLOT_POINTS_MAX (1u << 26)	/* per series */
#define FC_PLOT_TEXT_MAX 96		/* characters of a title, label or name */

/* the fixed colours (0xRRGGBB); a series' own colour should differ from them */
#define FC_PLOT_RGB_BG 0xffffffu	/* background */
#define FC_PLOT_RGB_FG 0x000000u	/* frame, ticks, text */
#define FC_PLOT_RGB_GRID 0xdcdcdcu	/* grid lines inside the plot area */

struct fc_plot_series {
	const char *name;	/* legend text (ASCII); NULL: no legend entry */
	const double *x, *y;	/* n points, x increasing */
	size_t n;
	uint32_t rgb;		/* 0xRRGGBB */
	int right_axis;		/* 1: scaled on the right-hand y axis */
};

/* Where a plot went, for tests and for callers that draw on it: the plot area in pixels
 * (inclusive; y grows downwards, so (x0, y1) shows (xmin, ymin)) and the data values at
 * its edges. [0] is the left axis, [1] the right one; an axis without series copies the
 * other's range. The frame line is drawn just outside the area (x0 - 1, y1 + 1, ...). */
struct fc_plot_frame {
	int x0, y0, x1, y1;
	double xmin, xmax;
	double ymin[2], ymax[2];
};

/*
 * Render nseries series into an RGB PNG of w x h pixels and return it in *png (malloc'd,
 * the caller frees it) and *len. title, xlabel, ylabel_left and ylabel_right may be NULL
 * (nothing drawn, no room taken). frame, if not NULL, receives the plot area's place.
 * Returns 0, or:
 *   -EINVAL  png, len or s NULL; nseries 0 or above FC_PLOT_SERIES_MAX; w or h outside
 *            [FC_PLOT_DIM_MIN, FC_PLOT_DIM_MAX]; a series with n > 0 and x or y NULL,
 *            or n above FC_PLOT_POINTS_MAX; no finite point in any series; data whose
 *            range does not fit a double (max - min overflows)
 *   -ENOMEM  out of memory
 * On error *png and *len are left untouched.
 */
int fc_plot_png_mem(uint8_t **png, size_t *len, struct fc_plot_frame *frame,
		    const char *title, const char *xlabel, const char *ylabel_left,
		    const char *ylabel_right, const struct fc_plot_series *s, size_t nseries,
		    int w, int h);

/*
 * The same written to the file at path (created with mode 0644 less the umask, or
 * truncated). Returns 0, the errors of fc_plot_png_mem (-EINVAL also for path NULL), or
 * the -errno of open, write or close; a file that could not be written whole is
 * removed.
 */
int fc_plot_png(const char *path, const char *title, const char *xlabel,
		const char *ylabel_left, const char *ylabel_right,
		const struct fc_plot_series *s, size_t nseries, int w, int h);

#endif /* FC_PLOT_H */
