/*
 * patch/json_patch: RFC 6902 JSON Patch as github.com/evanphx/json-patch v4.12.0 applies it
 * for kube-apiserver 1.26, with that library's departures from the RFC (patch.h lists
 * them) and its error messages, word for word: they are the reasons behind the 422s.
 *
 * A path resolves as the library's findObject does: split at "/", the first token skipped,
 * the tokens between walked through objects (by member) and arrays (by strconv.Atoi index,
 * negative from the end), the last token unescaped (~1 is "/", ~0 is "~") and handed to
 * the container the walk ended on.
 */
#include "codec/go.h"
#include "patch/patch_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPERATIONS 10000             /* handlers' maxJSONPatchOperations */
#define MAX_COPY_BYTES (3 * 1024 * 1024) /* kube-apiserver's JSONPatchMaxCopyBytes */

/* One application of a patch. */
typedef struct state {
    json_t *root;   /* the document: an object or an array */
    int64_t copied; /* bytes the copy operations have added */
    kapi_buf *why;  /* the failure, in evanphx's words */
} state;

/* Where a path leads: the container its last token is in (NULL when the walk fails), that
 * token unescaped, and how many tokens the path has. */
typedef struct target {
    json_t *con;
    char *key;
    size_t depth;
} target;

/* ---- tokens and indices ---- */

/* A token with ~1 and ~0 replaced in one pass, as strings.NewReplacer does. */
static char *unescape(const char *s, size_t n)
{
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < n; i++) {
        bool esc = s[i] == '~' && i + 1 < n && (s[i + 1] == '0' || s[i + 1] == '1');
        kapi_buf_putc(&b, esc ? (s[i + 1] == '1' ? '/' : '~') : s[i]);
        i += esc;
    }
    return kapi_buf_detach(&b, NULL);
}

/* strconv.Atoi: an optional sign and decimal digits, within int64; on failure appends its
 * error to why. */
static bool go_atoi(int64_t *out, const char *s, kapi_buf *why)
{
    const char *p = s + (*s == '+' || *s == '-');
    bool neg = *s == '-', digits = *p != '\0';
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    bool range = true;
    for (; *p && digits && range; p++) {
        uint64_t d = (uint64_t)(unsigned char)*p - '0';
        digits = d <= 9;
        range = !digits || v <= (limit - d) / 10;
        v = v * 10 + d;
    }
    if (digits && range) {
        *out = neg ? (int64_t)(0 - v) : (int64_t)v;
        return true;
    }
    kapi_buf_puts(why, "strconv.Atoi: parsing ");
    kapi_go_quote(why, s, strlen(s));
    kapi_buf_puts(why, digits ? ": value out of range" : ": invalid syntax");
    return false;
}

/* An index of a list of size elements: negative counts from the end. */
static bool in_bounds(int64_t *idx, int64_t size, kapi_buf *why)
{
    if (*idx >= size || *idx < -size) {
        kapi_buf_printf(
            why, "Unable to access invalid index: %" PRId64 ": invalid index referenced", *idx);
        return false;
    }
    if (*idx < 0)
        *idx += size;
    return true;
}

static bool array_index(int64_t *idx, json_t *arr, const char *key, kapi_buf *why)
{
    return go_atoi(idx, key, why) && in_bounds(idx, (int64_t)json_array_size(arr), why);
}

/* ---- containers (the library's partialDoc and partialArray) ---- */

/* get: an object's member (NULL when missing) or an array's element. */
static bool con_get(json_t **out, json_t *con, const char *key, kapi_buf *why)
{
    int64_t idx;
    if (json_is_object(con)) {
        *out = json_object_get(con, key);
        return true;
    }
    if (!array_index(&idx, con, key, why))
        return false;
    *out = json_array_get(con, (size_t)idx);
    return true;
}

/* add into an array: "-" appends, an index inserts before it (the size itself appends). */
static bool array_add(json_t *arr, const char *key, json_t *val, kapi_buf *why)
{
    int64_t idx;
    kapi_buf cause;
    if (strcmp(key, "-") == 0)
        return json_array_append_new(arr, val) == 0;
    kapi_buf_init(&cause);
    bool ok = go_atoi(&idx, key, &cause);
    if (!ok)
        kapi_buf_printf(why, "value was not a proper array index: '%s': %s", key, cause.ptr);
    kapi_buf_dispose(&cause);
    if (ok && in_bounds(&idx, (int64_t)json_array_size(arr) + 1, why))
        return json_array_insert_new(arr, (size_t)idx, val) == 0;
    json_decref(val);
    return false;
}

/* add: sets an object's member or inserts into an array. Steals val. */
static bool con_add(json_t *con, const char *key, json_t *val, kapi_buf *why)
{
    if (json_is_object(con))
        return json_object_set_new_nocheck(con, key, val) == 0;
    return array_add(con, key, val, why);
}

/* remove: an object's member (which must exist) or an array's element. */
static bool con_remove(json_t *con, const char *key, kapi_buf *why)
{
    int64_t idx;
    if (json_is_array(con))
        return array_index(&idx, con, key, why) && json_array_remove(con, (size_t)idx) == 0;
    if (json_object_del(con, key) == 0)
        return true;
    kapi_buf_printf(why, "Unable to remove nonexistent key: %s: missing value", key);
    return false;
}

/* findObject: walks path to the container of its last token. */
static void find(target *t, json_t *root, const char *path)
{
    const char *tok = strchr(path, '/'), *next;
    json_t *con = tok ? root : NULL, *child;
    kapi_buf ignore;
    kapi_buf_init(&ignore);
    t->depth = 1;
    for (tok = tok ? tok + 1 : tok; con && (next = strchr(tok, '/')) != NULL; tok = next + 1) {
        char *key = unescape(tok, (size_t)(next - tok));
        child = NULL;
        con_get(&child, con, key, &ignore);
        con = json_is_object(child) || json_is_array(child) ? child : NULL;
        t->depth++;
        free(key);
    }
    kapi_buf_dispose(&ignore);
    t->con = con;
    t->key = con ? unescape(tok, strlen(tok)) : NULL;
}

/* ---- operation members ---- */

/* Operation.Path and .From: the member as a string, or the library's cause of failure. */
static bool op_string(const char **out, const json_t *op, const char *name, kapi_buf *cause)
{
    json_t *v = json_is_object(op) ? json_object_get(op, name) : NULL;
    if (json_is_string(v)) {
        *out = json_string_value(v);
        return true;
    }
    if (v && !json_is_null(v))
        kapi_buf_printf(cause, "json: cannot unmarshal %s into Go value of type string",
                        kapi_go_json_kind(v));
    else if (strcmp(name, "path") == 0)
        kapi_buf_puts(cause, "operation missing path field: missing value");
    else
        kapi_buf_puts(cause, "operation, missing from field: missing value");
    return false;
}

/* Reads member name (path or from) of a kind operation; on failure writes "<kind>
 * operation failed to decode <name>: <cause>", where the library writes some causes as
 * plain "missing value" (with_cause false). */
static bool op_member(const char **out, const json_t *op, const char *name, const char *kind,
                      bool with_cause, state *st)
{
    kapi_buf cause;
    kapi_buf_init(&cause);
    bool ok = op_string(out, op, name, &cause);
    if (!ok)
        kapi_buf_printf(st->why, "%s operation failed to decode %s: %s", kind, name,
                        with_cause ? cause.ptr : "missing value");
    kapi_buf_dispose(&cause);
    return ok;
}

/* The value member: NULL when absent, json null when null. */
static const json_t *op_value(const json_t *op)
{
    return json_is_object(op) ? json_object_get(op, "value") : NULL;
}

/* A copy of an operation's value to insert: an absent value inserts null, as the library
 * inserts nil. */
static json_t *value_copy(const json_t *op)
{
    const json_t *v = op_value(op);
    return v ? kapi_json_copy(v) : json_null();
}

/* ---- nesting ---- */

static size_t height(const json_t *v);

/* The larger of h and c's height. */
static size_t deeper(size_t h, const json_t *c)
{
    size_t ch = height(c);
    return ch > h ? ch : h;
}

/* How many levels of objects and arrays v nests (0 for a scalar). */
static size_t height(const json_t *v)
{
    size_t h = 0, i;
    const char *key;
    json_t *c;
    if (json_is_object(v))
        json_object_foreach((json_t *)v, key, c) h = deeper(h, c);
    else if (json_is_array(v))
        json_array_foreach(v, i, c) h = deeper(h, c);
    else
        return 0;
    return h + 1;
}

/* Whether val may go where t leads without the document nesting deeper than the limit. */
static bool fits(const target *t, const json_t *val, kapi_buf *why)
{
    if (t->depth + height(val) <= KAPI_PATCH_MAX_DEPTH)
        return true;
    kapi_buf_printf(why, "the document would nest deeper than %d levels", KAPI_PATCH_MAX_DEPTH);
    return false;
}

/* Adds val (stolen) where t leads, if it fits. */
static bool put(const target *t, json_t *val, kapi_buf *why)
{
    if (fits(t, val, why))
        return con_add(t->con, t->key, val, why);
    json_decref(val);
    return false;
}

/* ---- the operations ---- */

static bool op_add(state *st, const json_t *op)
{
    const char *path;
    target t = {0};
    kapi_buf cause;
    bool ok = false;
    kapi_buf_init(&cause);
    if (!op_member(&path, op, "path", "add", false, st))
        goto done;
    find(&t, st->root, path);
    if (!t.con)
        kapi_buf_printf(st->why,
                        "add operation does not apply: doc is missing path: \"%s\": missing value",
                        path);
    else if (!(ok = put(&t, value_copy(op), &cause)))
        kapi_buf_printf(st->why, "error in add for path: '%s': %s", path, cause.ptr);
done:
    free(t.key);
    kapi_buf_dispose(&cause);
    return ok;
}

static bool op_remove(state *st, const json_t *op)
{
    const char *path;
    target t = {0};
    kapi_buf cause;
    bool ok = false;
    kapi_buf_init(&cause);
    if (!op_member(&path, op, "path", "remove", false, st))
        goto done;
    find(&t, st->root, path);
    if (!t.con)
        kapi_buf_printf(
            st->why, "remove operation does not apply: doc is missing path: \"%s\": missing value",
            path);
    else if (!(ok = con_remove(t.con, t.key, &cause)))
        kapi_buf_printf(st->why, "error in remove for path: '%s': %s", path, cause.ptr);
done:
    free(t.key);
    kapi_buf_dispose(&cause);
    return ok;
}

/* replace of the root: an object or an array becomes the document; anything else is
 * ignored, as the library's wrapping of a nil error makes it. */
static bool replace_root(state *st, const json_t *op)
{
    const json_t *v = op_value(op);
    if (json_is_object(v) || json_is_array(v)) {
        json_decref(st->root);
        st->root = kapi_json_copy(v);
    }
    return true;
}

/* Sets the member or element t leads to, which exists, to val (stolen). */
static bool set(const target *t, json_t *val, kapi_buf *why)
{
    int64_t idx;
    if (!fits(t, val, why)) {
        json_decref(val);
        return false;
    }
    if (json_is_object(t->con))
        return json_object_set_new_nocheck(t->con, t->key, val) == 0;
    array_index(&idx, t->con, t->key, why);
    return json_array_set_new(t->con, (size_t)idx, val) == 0;
}

static bool op_replace(state *st, const json_t *op)
{
    const char *path;
    target t = {0};
    json_t *cur;
    kapi_buf cause;
    bool ok = false;
    kapi_buf_init(&cause);
    if (!op_member(&path, op, "path", "replace", true, st))
        goto done;
    if (!*path) {
        ok = replace_root(st, op);
        goto done;
    }
    find(&t, st->root, path);
    if (!t.con)
        kapi_buf_printf(st->why,
                        "replace operation does not apply: doc is missing path: %s: missing value",
                        path);
    else if (!con_get(&cur, t.con, t.key, &cause))
        kapi_buf_printf(st->why,
                        "replace operation does not apply: doc is missing key: %s: missing value",
                        path);
    else if (!(ok = set(&t, value_copy(op), &cause)))
        kapi_buf_printf(st->why, "error in remove for path: '%s': %s", path, cause.ptr);
done:
    free(t.key);
    kapi_buf_dispose(&cause);
    return ok;
}

/* The value at a move's or a copy's from (a move removes it) into *val, a new reference
 * (null for a missing member, as the library reads nil), and the depth it was at. */
static bool take(json_t **val, size_t *depth, state *st, const json_t *op, bool move)
{
    const char *kind = move ? "move" : "copy", *from;
    target f = {0};
    json_t *v = NULL;
    kapi_buf cause;
    bool ok = false;
    kapi_buf_init(&cause);
    if (!op_member(&from, op, "from", kind, true, st))
        goto done;
    find(&f, st->root, from);
    if (!f.con) {
        kapi_buf_printf(st->why,
                        "%s operation does not apply: doc is missing from path: %s: missing value",
                        kind, from);
        goto done;
    }
    ok = con_get(&v, f.con, f.key, &cause);
    *val = v ? json_incref(v) : json_null();
    ok = ok && (!move || con_remove(f.con, f.key, &cause));
    if (!ok && move)
        kapi_buf_printf(st->why, "error in move for path: '%s': %s", f.key, cause.ptr);
    else if (!ok)
        kapi_buf_printf(st->why, "error in copy for from: '%s': %s", from, cause.ptr);
    *depth = f.depth;
done:
    free(f.key);
    kapi_buf_dispose(&cause);
    return ok;
}

/* Counts a copy's bytes (as encoding/json writes the value; nothing for null) against the
 * limit kube-apiserver sets. */
static bool count_copy(state *st, const json_t *val)
{
    kapi_buf enc;
    kapi_buf_init(&enc);
    if (!json_is_null(val))
        kapi_json_encode(&enc, val);
    st->copied += (int64_t)enc.len;
    kapi_buf_dispose(&enc);
    if (st->copied <= MAX_COPY_BYTES)
        return true;
    kapi_buf_printf(st->why,
                    "Unable to complete the copy, the accumulated size increase of copy is %" PRId64
                    ", exceeding the limit %d",
                    st->copied, MAX_COPY_BYTES);
    return false;
}

/* Adds a moved value (a move that goes no deeper needs no nesting check) or a copy of a
 * copied one where path leads. */
static bool place(const target *t, json_t *val, size_t from_depth, bool move, kapi_buf *cause)
{
    if (move && t->depth <= from_depth)
        return con_add(t->con, t->key, val, cause);
    if (move)
        return put(t, val, cause);
    json_t *dup = kapi_json_copy(val);
    json_decref(val);
    return put(t, dup, cause);
}

static bool op_move_copy(state *st, const json_t *op, bool move)
{
    const char *kind = move ? "move" : "copy", *path;
    target t = {0};
    json_t *val = NULL;
    size_t from_depth = 0;
    kapi_buf cause;
    bool ok = false;
    kapi_buf_init(&cause);
    if (!take(&val, &from_depth, st, op, move) || !op_member(&path, op, "path", kind, move, st))
        goto done;
    find(&t, st->root, path);
    if (!t.con) {
        kapi_buf_printf(
            st->why,
            "%s operation does not apply: doc is missing destination path: %s: missing value", kind,
            path);
        goto done;
    }
    if (!move && !count_copy(st, val))
        goto done;
    ok = place(&t, val, from_depth, move, &cause);
    val = NULL;
    if (!ok && move)
        kapi_buf_printf(st->why, "error in move for path: '%s': %s", path, cause.ptr);
    else if (!ok)
        kapi_buf_printf(st->why, "error while adding value during copy: %s", cause.ptr);
done:
    json_decref(val);
    free(t.key);
    kapi_buf_dispose(&cause);
    return ok;
}

static bool op_move(state *st, const json_t *op)
{
    return op_move_copy(st, op, true);
}

static bool op_copy(state *st, const json_t *op)
{
    return op_move_copy(st, op, false);
}

/* Whether a test passes: a missing or null target against "value": null; otherwise equal
 * JSON values. An absent value (a nil dereference in the library) fails. */
static bool test_passes(const json_t *target_val, const json_t *value)
{
    if (!target_val || json_is_null(target_val))
        return json_is_null(value);
    return value && !json_is_null(value) && json_equal((json_t *)target_val, (json_t *)value);
}

static bool op_test(state *st, const json_t *op)
{
    const char *path;
    target t = {0};
    json_t *cur = st->root;
    kapi_buf cause;
    bool ok = false;
    kapi_buf_init(&cause);
    if (!op_member(&path, op, "path", "test", true, st))
        goto done;
    if (*path)
        find(&t, st->root, path);
    if (*path && !t.con)
        kapi_buf_printf(st->why,
                        "test operation does not apply: is missing path: %s: missing value", path);
    else if (*path && !con_get(&cur, t.con, t.key, &cause))
        kapi_buf_printf(st->why, "error in test for path: '%s': %s", path, cause.ptr);
    else if (!(ok = test_passes(cur, op_value(op))))
        kapi_buf_printf(st->why, "testing value %s failed: test failed", path);
done:
    free(t.key);
    kapi_buf_dispose(&cause);
    return ok;
}

static const struct {
    const char *kind;
    bool (*apply)(state *st, const json_t *op);
} operations[] = {
    {"add", op_add},   {"remove", op_remove}, {"replace", op_replace},
    {"move", op_move}, {"test", op_test},     {"copy", op_copy},
};

/* Operation.Kind: the op member when it is a string, else "unknown". */
static const char *op_kind(const json_t *op)
{
    json_t *v = json_is_object(op) ? json_object_get(op, "op") : NULL;
    return json_is_string(v) ? json_string_value(v) : "unknown";
}

static bool apply_op(state *st, const json_t *op)
{
    const char *kind = op_kind(op);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(operations); i++)
        if (strcmp(kind, operations[i].kind) == 0)
            return operations[i].apply(st, op);
    kapi_buf_printf(st->why, "Unexpected kind: %s", kind);
    return false;
}

bool kapi_patch__json_apply(json_t **root, const json_t *ops, kapi_buf *why)
{
    state st = {.root = *root, .why = why};
    size_t i;
    json_t *op;
    bool ok = true;
    json_array_foreach(ops, i, op)
    {
        if (!(ok = apply_op(&st, op)))
            break;
    }
    *root = st.root;
    return ok;
}

/* jsonpatch.DecodePatch: an array (or null) of objects (or nulls). */
static kapi_error *check_patch(const json_t *patch)
{
    size_t i;
    json_t *op;
    if (!json_is_array(patch))
        return kapi_patch__type_error("", patch, "jsonpatch.Patch");
    json_array_foreach(patch, i, op)
    {
        if (!json_is_object(op) && !json_is_null(op))
            return kapi_patch__type_error("", op, "jsonpatch.Operation");
    }
    if (json_array_size(patch) > MAX_OPERATIONS)
        return kapi_error_new(KAPI_STATUS_REQUEST_ENTITY_TOO_LARGE,
                              "Request entity too large: The allowed maximum operations in a "
                              "JSON patch is %d, got %zu",
                              MAX_OPERATIONS, json_array_size(patch));
    return NULL;
}

kapi_error *kapi_patch_json(json_t **doc, const json_t *patch)
{
    kapi_error *err;
    kapi_buf why;
    if (!patch || json_is_null(patch))
        return NULL;
    if ((err = check_patch(patch)) != NULL)
        return err;
    if (!json_is_object(*doc) && !json_is_array(*doc))
        return kapi_patch__rejected();
    kapi_buf_init(&why);
    if (!kapi_patch__json_apply(doc, patch, &why))
        err = kapi_patch__rejected();
    kapi_buf_dispose(&why);
    return err;
}
