/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jread.h - a small JSON reader for what falcond's admin socket writes (daemon/admin.c):
 * falconctl draws it as tables, and prom.c turns it into Prometheus text in falconctl
 * (stats -o prometheus) and in falcond's metrics thread (metrics.c).
 *
 * The text is parsed in place: strings point into it (escapes undone there; \uXXXX
 * becomes '?'), numbers and literals (true, false, null) are copied. Nesting deeper than
 * FC_J_DEPTH_MAX is refused. Not a validator: it reads JSON that falcond wrote.
 */
#ifndef FC_JREAD_H
#define FC_JREAD_H

#define FC_J_DEPTH_MAX 8

enum fc_jt { FC_J_OBJ, FC_J_ARR, FC_J_STR, FC_J_LIT };

struct fc_jv {
	enum fc_jt t;
	char *s;                   /* FC_J_STR / FC_J_LIT: the text */
	char *key;                 /* member name inside an object, else NULL */
	struct fc_jv *kid, *next;  /* first child (object, array); next sibling */
};

/* Parse the value at *p (which it modifies and advances). Returns the tree (fc_jfree it),
 * or NULL on a syntax error, too deep a nesting or no memory. */
struct fc_jv *fc_jparse(char **p);
void fc_jfree(struct fc_jv *v);

/* The member key of object o, or NULL. */
const struct fc_jv *fc_jget(const struct fc_jv *o, const char *key);
/* A scalar's text ("" for objects and arrays and for NULL). */
const char *fc_jstr(const struct fc_jv *v);
/* 1 for a string or a literal. */
int fc_jscalar(const struct fc_jv *v);
/* 1 when v is a JSON number (a literal that strtod takes whole); its value in *out. */
int fc_jnum(const struct fc_jv *v, double *out);

#endif
