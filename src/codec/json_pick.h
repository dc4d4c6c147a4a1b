/*
 * codec/json_pick: a few members of a large JSON object, without parsing the rest.
 *
 * A controller that follows every write reads a handful of fields of each object it sees
 * (the garbage collector: the uid, owners and finalizers in metadata); parsing the whole
 * object into jansson values to read them costs more than the rest of its work. Picking
 * scans the text once, skipping the values it does not want without building them, and
 * parses only the members asked for.
 */
#ifndef KAPI_CODEC_JSON_PICK_H
#define KAPI_CODEC_JSON_PICK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/base.h"

/* The members named in keys (a NULL-terminated list) of the object that is member
 * `within` of the JSON object text p[0..n), parsed, in a new object (a new reference);
 * absent ones are left out. NULL when the text is not an object, or `within` is absent or
 * not an object. For any text kapi_json_parse accepts, the answer equals picking those
 * members from its result (duplicate names: the last one, as there); the values skipped
 * are not checked, so a text it refuses may still give an answer. */
json_t *kapi_json_pick(const char *p, size_t n, const char *within, const char *const *keys);

/* kapi_json_pick for a text in which no object repeats a name, such as the bytes kapi
 * stores (its encoder writes each member once): the scan stops at the end of the first
 * member named `within`, so what follows it is not read. On a text with repeats the
 * answer may be that of an earlier repeat. */
json_t *kapi_json_pick_unique(const char *p, size_t n, const char *within, const char *const *keys);

/* The text of each of keys (a NULL-terminated list) in the JSON object text p[0..n):
 * texts[i] as written there, unparsed ({NULL, 0} when absent), for a text in which no
 * object repeats a name. A member's text is itself a text to call this on, for the
 * members of a member. False when the text is not an object the scanner can follow (a
 * name written with an escape, say); texts then say nothing. What is skipped is not
 * checked, so a text that does not parse may still give texts. */
bool kapi_json_member_texts(const char *p, size_t n, const char *const *keys, kapi_str *texts);

#endif
