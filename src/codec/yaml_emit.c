/* codec/yaml_emit: JSON values written as kube-apiserver writes application/yaml, that is
 * sigs.k8s.io/yaml's JSONToYAML: the object's JSON read back by go-yaml v2 (numbers take
 * their YAML types) and marshalled by it. go-yaml's emitter is a port of libyaml's, so
 * libyaml's emitter lays the text out; this file feeds it the events and the scalar
 * styles go-yaml's encoder chooses (encode.go), keys in go-yaml's order (sorter.go).
 *
 * Where libyaml 0.2.5 and go-yaml v2.4.0 differ: libyaml ends a stream whose last scalar
 * is a |+ block with "..." (go-yaml does not: cleared below); go-yaml escapes every
 * character of a double-quoted string that starts with U+FEFF (a bug kapi does not copy). */
#include "codec/yaml.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "codec/codec_int.h"

static int write_out(void *data, unsigned char *p, size_t n)
{
    kapi_buf_put(data, p, n);
    return 1;
}

static void emit(yaml_emitter_t *e, yaml_event_t *ev, bool made)
{
    /* Events are made from valid UTF-8 (jansson's), so neither step can fail; if one did,
     * the emitter would stay in its error state and write nothing more. */
    if (made)
        yaml_emitter_emit(e, ev);
}

static void scalar(yaml_emitter_t *e, const char *s, size_t n, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    emit(e, &ev,
         yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)n, 1, 1, style));
}

/* encode.go's stringv: a newline makes a literal block; text that would read back as
 * another type (or as a base 60 number) is double-quoted; the rest is plain, which the
 * emitter turns into single quotes when plain would misread (": ", " #", leading "- "). */
static void string_value(yaml_emitter_t *e, const char *s, size_t n)
{
    kapi_yaml__value v;
    yaml_scalar_style_t style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    if (memchr(s, '\n', n))
        style = YAML_LITERAL_SCALAR_STYLE;
    else if (kapi_yaml__resolve(s, n, true, &v) == KAPI_YAML_STR && !kapi_yaml__base60(s, n))
        style = YAML_PLAIN_SCALAR_STYLE;
    scalar(e, s, n, style);
}

/* A JSON real as go-yaml reads Go's JSON text of it back: integral values below 1e21 are
 * written by Go as digits, which read as an int (or uint) when they fit; the rest is a
 * float, written by strconv.FormatFloat(x, 'g', -1, 64). */
static void real_value(yaml_emitter_t *e, double x)
{
    char num[40];
    if (x == trunc(x) && fabs(x) < 1e21 && x >= -9223372036854775808.0 &&
        x < 18446744073709551616.0) {
        if (x < 9223372036854775808.0)
            snprintf(num, sizeof(num), "%lld", (long long)x);
        else
            snprintf(num, sizeof(num), "%llu", (unsigned long long)x);
    } else {
        kapi_go_format_float(num, x, 64);
    }
    scalar(e, num, strlen(num), YAML_PLAIN_SCALAR_STYLE);
}

typedef struct member {
    const char *key;
    size_t len;
    json_t *value;
} member;

static int member_cmp(const void *a, const void *b)
{
    const member *x = a, *y = b;
    return kapi_yaml__key_cmp(x->key, x->len, y->key, y->len);
}

static void value(yaml_emitter_t *e, const json_t *v);

static void mapping(yaml_emitter_t *e, const json_t *v)
{
    yaml_event_t ev;
    size_t n = json_object_size(v), k = 0, klen;
    member *m = kapi_xmalloc((n ? n : 1) * sizeof(*m));
    const char *key;
    json_t *x;
    json_object_keylen_foreach((json_t *)v, key, klen, x)
    {
        m[k++] = (member){key, klen, x};
    }
    qsort(m, n, sizeof(*m), member_cmp);
    emit(e, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE));
    for (k = 0; k < n; k++) {
        string_value(e, m[k].key, m[k].len);
        value(e, m[k].value);
    }
    emit(e, &ev, yaml_mapping_end_event_initialize(&ev));
    free(m);
}

static void value(yaml_emitter_t *e, const json_t *v)
{
    yaml_event_t ev;
    char num[32];
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        mapping(e, v);
        break;
    case JSON_ARRAY:
        emit(e, &ev,
             yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE));
        for (size_t i = 0; i < json_array_size(v); i++)
            value(e, json_array_get(v, i));
        emit(e, &ev, yaml_sequence_end_event_initialize(&ev));
        break;
    case JSON_STRING:
        string_value(e, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        scalar(e, num, strlen(num), YAML_PLAIN_SCALAR_STYLE);
        break;
    case JSON_REAL:
        real_value(e, json_real_value(v));
        break;
    case JSON_TRUE:
        scalar(e, "true", 4, YAML_PLAIN_SCALAR_STYLE);
        break;
    case JSON_FALSE:
        scalar(e, "false", 5, YAML_PLAIN_SCALAR_STYLE);
        break;
    case JSON_NULL:
        scalar(e, "null", 4, YAML_PLAIN_SCALAR_STYLE);
        break;
    }
}

void kapi_yaml_encode(kapi_buf *b, const json_t *v)
{
    yaml_emitter_t e;
    yaml_event_t ev;
    yaml_emitter_initialize(&e);
    yaml_emitter_set_output(&e, write_out, b);
    yaml_emitter_set_unicode(&e, 1);
    emit(&e, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
    emit(&e, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
    value(&e, v);
    emit(&e, &ev, yaml_document_end_event_initialize(&ev, 1));
    e.open_ended = 0; /* go-yaml's encoder.finish: no "..." at the end */
    emit(&e, &ev, yaml_stream_end_event_initialize(&ev));
    yaml_emitter_delete(&e);
}
