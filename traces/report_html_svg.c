/* report_html_svg.c - the report's plots, hand-written SVG (report_html_internal.h):
 * stacked vertical bars, horizontal bars, lines; axes with round ticks, labels,
 * a legend; generic fonts only, nothing loaded from elsewhere. */
#include "traces/report_html_internal.h"

#include <math.h>
#include <string.h>

#define CHAR_W 7  /* a 12 px sans-serif character, on average (a little more) */
#define FONT 12

const char *rh_color(size_t i)
{
	static const char *const palette[] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
					       "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
					       "#bcbd22", "#17becf" };
	return palette[i % (sizeof(palette) / sizeof(palette[0]))];
}

/* A round step (1, 2 or 5 times a power of ten) that cuts [0, max] into about n pieces. */
double rh_nice_step(double max, int n)
{
	if (!(max > 0) || !isfinite(max))
		return 1;
	double raw = max / n, mag = pow(10, floor(log10(raw))), q = raw / mag;
	return (q <= 1 ? 1 : q <= 2 ? 2 : q <= 5 ? 5 : 10) * mag;
}

/* The axis from 0: its step and end (a whole number of steps >= max). */
static void axis(double max, bool integer, double *step, double *end)
{
	if (!(max > 0) || !isfinite(max))
		max = 1;
	double s = rh_nice_step(max, 5);
	if (integer && s < 1)
		s = 1;
	*step = s;
	*end = ceil(max / s - 1e-9) * s;
	if (*end <= 0)
		*end = s;
}

static void tick_label(double v, bool percent, char *buf, size_t len)
{
	rh_fmt_num(v, buf, len);
	if (percent)
		strncat(buf, "%", len - strlen(buf) - 1);
}

static void open_svg(FILE *f, int w, int h, const char *title)
{
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		   "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"%d\">\n<title>",
		w, h, w, h, FONT);
	rh_esc(f, title, 0);
	fprintf(f, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n"
		   "<text x=\"%d\" y=\"18\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">",
		w, h, w / 2);
	rh_esc(f, title, 0);
	fputs("</text>\n", f);
}

static void text(FILE *f, double x, double y, const char *anchor, const char *extra, const char *s,
		 size_t max)
{
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>", x, y, anchor, extra);
	rh_esc(f, s, max);
	fputs("</text>\n", f);
}

/* A legend of n series in one row at y, from x. */
static void legend(FILE *f, double x, double y, size_t n, const char *const *names,
		   const char *const *colors)
{
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>\n", x,
			y - 9, colors[i]);
		text(f, x + 14, y, "start", "", names[i], 24);
		size_t len = strlen(names[i]);
		x += 14 + (double)(len > 24 ? 25 : len) * CHAR_W + 16;
	}
}

static size_t legend_width(size_t n, const char *const *names)
{
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[i]);
		w += 14 + (len > 24 ? 25 : len) * CHAR_W + 16;
	}
	return w;
}

static size_t max_label(char **labels, size_t n, size_t cap)
{
	size_t m = 1;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(labels[i]);
		if (len > m)
			m = len;
	}
	return m > cap ? cap : m;
}

void rh_svg_vbars(FILE *f, const struct rh_bars *b, int *w, int *h)
{
	double top = 0;
	for (size_t i = 0; i < b->n; i++) {
		double sum = 0;
		for (size_t s = 0; s < b->nseries; s++)
			sum += b->v[i * b->nseries + s];
		if (sum > top)
			top = sum;
	}
	double step, end;
	axis(b->max > 0 ? b->max : top, !b->percent, &step, &end);
	char buf[32];
	size_t ywidth = 1;
	for (double t = 0; t <= end + step / 2; t += step) {
		tick_label(t, b->percent, buf, sizeof(buf));
		if (strlen(buf) > ywidth)
			ywidth = strlen(buf);
	}
	double slot = b->n ? 720.0 / (double)b->n : 40;
	if (slot > 48)
		slot = 48;
	if (slot < 6)
		slot = 6;
	double pw = slot * (double)(b->n ? b->n : 1);
	if (pw < 320) {
		pw = 320;
		slot = b->n ? pw / (double)b->n : pw;
	}
	size_t lab = max_label(b->labels, b->n, 16);
	size_t every = 1; /* label every category, or one in `every` */
	while (every * slot < 2.0 * FONT)
		every++;
	bool rotate = (double)lab * CHAR_W > slot * (double)every - 4;
	bool leg = b->nseries > 1 || b->legend;
	double left = 24 + (double)ywidth * CHAR_W + 8, top_m = leg ? 50 : 34;
	double bottom = 24 + (rotate ? (double)lab * CHAR_W * 0.72 + 8 : FONT + 6);
	double ph = 240;
	int W = (int)(left + pw + 20), H = (int)(top_m + ph + bottom);
	size_t lw = leg ? legend_width(b->nseries, b->series) : 0;
	if ((double)W < left + (double)lw + 20)
		W = (int)(left + (double)lw + 20);
	*w = W;
	*h = H;
	open_svg(f, W, H, b->title);
	if (leg)
		legend(f, left, 38, b->nseries, b->series, b->colors);
	/* grid and value axis */
	for (double t = 0; t <= end + step / 2; t += step) {
		double y = top_m + ph - t / end * ph;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n",
			left, y, left + pw, y);
		tick_label(t, b->percent, buf, sizeof(buf));
		text(f, left - 4, y + 4, "end", "", buf, 0);
	}
	for (size_t i = 0; i < b->n; i++) {
		double x = left + slot * (double)i, y = top_m + ph, sum = 0;
		double bw = slot > 4 ? slot * 0.8 : slot;
		for (size_t s = 0; s < b->nseries; s++) {
			double v = b->v[i * b->nseries + s];
			sum += v;
			double bh = v / end * ph;
			if (!(bh > 0))
				continue;
			y -= bh;
			fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
				x + (slot - bw) / 2, y, bw, bh, b->colors[s]);
			rh_esc(f, b->labels[i], 0);
			if (b->nseries > 1) {
				fputs(" ", f);
				rh_esc(f, b->series[s], 0);
			}
			fprintf(f, ": %.0f</title></rect>\n", v);
		}
		if (b->n <= 40 && sum > 0) {
			rh_fmt_num(sum, buf, sizeof(buf));
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\">%s</text>\n",
				x + slot / 2, y - 3, buf);
		}
		if (i % every == 0) {
			double lx = x + slot / 2, ly = top_m + ph + FONT + 4;
			if (rotate) {
				char tr[96];
				snprintf(tr, sizeof(tr), " transform=\"rotate(-45 %.1f %.1f)\"", lx, ly - 4);
				text(f, lx, ly, "end", tr, b->labels[i], 16);
			} else
				text(f, lx, ly, "middle", "", b->labels[i], 16);
		}
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\"/>\n", left,
		top_m + ph, left + pw, top_m + ph);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\"/>\n", left,
		top_m, left, top_m + ph);
	text(f, left + pw / 2, H - 6, "middle", "", b->xlabel, 0);
	char tr[96];
	snprintf(tr, sizeof(tr), " transform=\"rotate(-90 14 %.1f)\"", top_m + ph / 2);
	text(f, 14, top_m + ph / 2, "middle", tr, b->ylabel, 0);
	fputs("</svg>\n", f);
}

void rh_svg_hbars(FILE *f, const struct rh_bars *b, int *w, int *h)
{
	double top = 0;
	for (size_t i = 0; i < b->n * b->nseries; i++)
		if (b->v[i] > top)
			top = b->v[i];
	double step, end;
	axis(b->max > 0 ? b->max : top, !b->percent, &step, &end);
	size_t lab = max_label(b->labels, b->n, 40);
	size_t rows = b->overlay ? 1 : b->nseries;
	double bar = 12, row = (double)rows * bar + 8;
	double left = (double)lab * CHAR_W + 16, pw = 440, vals = 90;
	double top_m = b->nseries > 1 ? 50 : 34, ph = row * (double)(b->n ? b->n : 1);
	int W = (int)(left + pw + vals), H = (int)(top_m + ph + 48);
	*w = W;
	*h = H;
	open_svg(f, W, H, b->title);
	if (b->nseries > 1)
		legend(f, left, 38, b->nseries, b->series, b->colors);
	char buf[32];
	for (double t = 0; t <= end + step / 2; t += step) {
		double x = left + t / end * pw;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", x,
			top_m, x, top_m + ph);
		tick_label(t, b->percent, buf, sizeof(buf));
		text(f, x, top_m + ph + 16, "middle", "", buf, 0);
	}
	for (size_t i = 0; i < b->n; i++) {
		double y0 = top_m + row * (double)i + 4;
		text(f, left - 6, y0 + (row - 8) / 2 + 4, "end", "", b->labels[i], 40);
		char vtext[96] = "";
		for (size_t s = 0; s < b->nseries; s++) {
			double v = b->v[i * b->nseries + s];
			double y = b->overlay ? y0 : y0 + bar * (double)s;
			double bw = v / end * pw;
			/* overlaid: each later series a little thinner, to show the one below */
			double th = b->overlay ? bar - 3 * (double)s : bar - 1;
			if (th < 3)
				th = 3;
			if (b->overlay)
				y += (bar - th) / 2;
			if (bw > 0) {
				fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
					left, y, bw, th, b->colors[s]);
				rh_esc(f, b->labels[i], 0);
				fputs(" ", f);
				rh_esc(f, b->nseries > 1 ? b->series[s] : "", 0);
				tick_label(v, b->percent, buf, sizeof(buf));
				fprintf(f, ": %s</title></rect>\n", buf);
			}
			tick_label(v, b->percent, buf, sizeof(buf));
			if (b->overlay) {
				size_t len = strlen(vtext);
				snprintf(vtext + len, sizeof(vtext) - len, "%s%s", s ? " / " : "", buf);
			} else
				fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">%s</text>\n",
					left + bw + 3, y + bar - 3, buf);
		}
		if (b->overlay) {
			double bw = b->v[i * b->nseries] / end * pw;
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">%s</text>\n", left + bw + 3,
				y0 + bar - 2, vtext);
		}
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\"/>\n", left,
		top_m, left, top_m + ph);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\"/>\n", left,
		top_m + ph, left + pw, top_m + ph);
	text(f, left + pw / 2, H - 8, "middle", "", b->xlabel, 0);
	fputs("</svg>\n", f);
}

void rh_svg_lines(FILE *f, const char *title, const char *xlabel, const char *ylabel, bool integer,
		  const struct rh_line *lines, size_t nlines, int *w, int *h)
{
	double xmax = 0, ymax = 0;
	size_t points = 0;
	for (size_t l = 0; l < nlines; l++)
		for (size_t i = 0; i < lines[l].n; i++) {
			if (lines[l].x[i] > xmax)
				xmax = lines[l].x[i];
			if (lines[l].y[i] > ymax)
				ymax = lines[l].y[i];
			points++;
		}
	double xs, xe, ys, ye;
	axis(xmax, false, &xs, &xe);
	axis(ymax, integer, &ys, &ye);
	char buf[32];
	size_t ywidth = 1;
	for (double t = 0; t <= ye + ys / 2; t += ys) {
		rh_fmt_num(t, buf, sizeof(buf));
		if (strlen(buf) > ywidth)
			ywidth = strlen(buf);
	}
	const char *names[16], *colors[16];
	size_t nl = nlines > 16 ? 16 : nlines;
	for (size_t l = 0; l < nl; l++) {
		names[l] = lines[l].name;
		colors[l] = lines[l].color;
	}
	double left = 24 + (double)ywidth * CHAR_W + 8, top_m = 50, pw = 600, ph = 260;
	int W = (int)(left + pw + 30), H = (int)(top_m + ph + 46);
	size_t lw = legend_width(nl, names);
	if ((double)W < left + (double)lw + 20)
		W = (int)(left + (double)lw + 20);
	*w = W;
	*h = H;
	open_svg(f, W, H, title);
	legend(f, left, 38, nl, names, colors);
	for (double t = 0; t <= ye + ys / 2; t += ys) {
		double y = top_m + ph - t / ye * ph;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n",
			left, y, left + pw, y);
		rh_fmt_num(t, buf, sizeof(buf));
		text(f, left - 4, y + 4, "end", "", buf, 0);
	}
	for (double t = 0; t <= xe + xs / 2; t += xs) {
		double x = left + t / xe * pw;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", x,
			top_m, x, top_m + ph);
		rh_fmt_num(t, buf, sizeof(buf));
		text(f, x, top_m + ph + 16, "middle", "", buf, 0);
	}
	for (size_t l = 0; l < nlines; l++) {
		const struct rh_line *ln = &lines[l];
		if (!ln->n)
			continue;
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", ln->color);
		for (size_t i = 0; i < ln->n; i++)
			fprintf(f, "%s%.1f,%.1f", i ? " " : "", left + ln->x[i] / xe * pw,
				top_m + ph - ln->y[i] / ye * ph);
		fputs("\"/>\n", f);
		if (points <= 60)
			for (size_t i = 0; i < ln->n; i++)
				fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
					left + ln->x[i] / xe * pw, top_m + ph - ln->y[i] / ye * ph, ln->color);
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\"/>\n", left,
		top_m + ph, left + pw, top_m + ph);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\"/>\n", left,
		top_m, left, top_m + ph);
	text(f, left + pw / 2, H - 8, "middle", "", xlabel, 0);
	char tr[96];
	snprintf(tr, sizeof(tr), " transform=\"rotate(-90 14 %.1f)\"", top_m + ph / 2);
	text(f, 14, top_m + ph / 2, "middle", tr, ylabel, 0);
	fputs("</svg>\n", f);
}

int rh_bar_chart(struct rh *r, const char *name, const struct rh_bars *b, bool vertical,
		 const char *alt)
{
	FILE *svg = rh_svg_open(r, name);
	if (!svg)
		return -1;
	int w, h;
	if (vertical)
		rh_svg_vbars(svg, b, &w, &h);
	else
		rh_svg_hbars(svg, b, &w, &h);
	return rh_svg_close(r, name, svg, w, h, alt);
}
