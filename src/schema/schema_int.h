/*
 * schema internals shared by the files of src/schema.
 */
#ifndef KAPI_SCHEMA_INT_H
#define KAPI_SCHEMA_INT_H

#include <string.h>

#include "codec/go.h"
#include "codec/json.h"
#include "schema/schema.h"

/* Parses s as metav1.Time (RFC 3339) or, with micro, metav1.MicroTime (RFC 3339 with
 * exactly six fractional digits), the way Go's time.Parse does. On success writes the
 * value as Go encodes it again (UTC, "Z", seconds or microseconds) into out (at least
 * 32 bytes) and returns NULL; otherwise a 400 worded as Go's parse error. */
kapi_error *kapi_schema__parse_time(const char *s, bool micro, char *out);

/* The property key of object schema s, or NULL. */
static inline const kapi_schema_prop *kapi_schema__prop(const kapi_schema *s, const char *key)
{
    for (size_t i = 0; i < s->nprops; i++) /* the first byte rules most names out */
        if (s->props[i].name[0] == key[0] && strcmp(s->props[i].name, key) == 0)
            return &s->props[i];
    return NULL;
}

/* ---- x-kubernetes-validations (rules.c) ---- */

/* Gives every node of root, a standalone schema just compiled, its CEL type and its
 * compiled rules (made in arena a). */
void kapi_schema__compile_rules(kapi_arena *a, kapi_schema *root);
/* Frees what the rules of s hold outside the arena (their programs). */
void kapi_schema__free_rules(const kapi_schema *s);

/* ---- string formats (strfmt.c) ---- */

/* The id of the checker for a schema's format, or -1 when custom resource validation
 * does not check it (apiextensions blanks the formats it does not support). */
int kapi_schema__format_id(const char *name);
/* Whether s (n bytes) is valid in format id (a kapi_schema__format_id result). */
bool kapi_schema__format_check(int id, const char *s, size_t n);

#endif
