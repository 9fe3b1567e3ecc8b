/* SPDX-License-Identifier: Apache-2.0 */
/* jread.c - the JSON reader of falconctl and the metrics exporter (jread.h). */
#include <stdlib.h>
#include <string.h>

#include "jread.h"

static struct fc_jv *parse(char **p, int depth);

static void skip(char **p)
{
	while (**p == ' ' || **p == '\n' || **p == '\t' || **p == '\r')
		(*p)++;
}

/* A string at *p (on its opening quote), unescaped in place. */
static char *str(char **p)
{
	char *out = ++*p, *w = out;

	while (**p && **p != '"') {
		if (**p == '\\' && (*p)[1]) {
			(*p)++;
			if (**p == 'u') {
				size_t rest = strlen(*p);

				*w++ = '?';
				*p += rest > 4 ? 4 : rest - 1;
			} else {
				*w++ = **p == 'n' ? '\n' : **p == 't' ? '\t' : **p;
			}
			(*p)++;
			continue;
		}
		*w++ = *(*p)++;
	}
	if (**p != '"')
		return NULL;
	(*p)++;
	*w = 0;
	return out;
}

/* The members of an object or array at *p (on its bracket) into v. */
static struct fc_jv *container(char **p, struct fc_jv *v, int depth)
{
	char close = **p == '{' ? '}' : ']';
	struct fc_jv **tail = &v->kid;

	v->t = close == '}' ? FC_J_OBJ : FC_J_ARR;
	(*p)++;
	skip(p);
	if (**p == close) {
		(*p)++;
		return v;
	}
	for (;;) {
		char *key = NULL;
		struct fc_jv *k;

		skip(p);
		if (v->t == FC_J_OBJ) {
			if (**p != '"' || !(key = str(p)))
				return NULL;
			skip(p);
			if (*(*p)++ != ':')
				return NULL;
		}
		if (!(k = parse(p, depth + 1)))
			return NULL;
		k->key = key;
		*tail = k;
		tail = &k->next;
		skip(p);
		if (**p == ',') {
			(*p)++;
			continue;
		}
		if (**p != close)
			return NULL;
		(*p)++;
		return v;
	}
}

static struct fc_jv *parse(char **p, int depth)
{
	struct fc_jv *v;
	const char *start;

	if (depth > FC_J_DEPTH_MAX || !(v = calloc(1, sizeof(*v))))
		return NULL;
	skip(p);
	if (**p == '{' || **p == '[') {
		if (container(p, v, depth))
			return v;
		fc_jfree(v);
		return NULL;
	}
	if (**p == '"') {
		v->t = FC_J_STR;
		if ((v->s = str(p)))
			return v;
		free(v);
		return NULL;
	}
	v->t = FC_J_LIT;
	start = *p;
	while (**p && !strchr(",}] \n\t\r", **p))
		(*p)++;
	if (*p == start || !(v->s = strndup(start, (size_t)(*p - start)))) {
		free(v);
		return NULL;
	}
	return v;
}

struct fc_jv *fc_jparse(char **p)
{
	return parse(p, 0);
}

void fc_jfree(struct fc_jv *v)
{
	while (v) {
		struct fc_jv *n = v->next;

		fc_jfree(v->kid);
		if (v->t == FC_J_LIT)
			free(v->s); /* strings point into the text; literals are copies */
		free(v);
		v = n;
	}
}

const struct fc_jv *fc_jget(const struct fc_jv *o, const char *key)
{
	for (const struct fc_jv *m = o && o->t == FC_J_OBJ ? o->kid : NULL; m; m = m->next)
		if (m->key && !strcmp(m->key, key))
			return m;
	return NULL;
}

int fc_jscalar(const struct fc_jv *v)
{
	return v && (v->t == FC_J_STR || v->t == FC_J_LIT);
}

const char *fc_jstr(const struct fc_jv *v)
{
	return fc_jscalar(v) && v->s ? v->s : "";
}

int fc_jnum(const struct fc_jv *v, double *out)
{
	char *e;

	if (!v || v->t != FC_J_LIT || !v->s || !strchr("-0123456789", v->s[0]))
		return 0;
	*out = strtod(v->s, &e);
	return *e == 0;
}
