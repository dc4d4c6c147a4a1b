/*
 * registry/printers: the Table columns of a type and the cells of its rows, as
 * kube-apiserver 1.26 prints them (DESIGN.md invariant 1: the columns are data in the type
 * files; only a built-in printer's computed cells are code, the small functions below).
 *
 * A column without "cell" follows the CRD rules (apiextensions' table convertor): the
 * first value its JSONPath finds, by the column's type:
 *   string   a string as it is, a list or map as Go's JSON of it, another scalar as Go's
 *            fmt prints it, null as "<no value>";
 *   integer  an integer (a real truncated), number a real, boolean a boolean;
 *   date     the age of an RFC 3339 string (ShortHumanDuration), "<unknown>" for the zero
 *            time, "<invalid>" when it does not parse;
 * nothing found, or a value of another type, is a null cell.
 *
 * A column with "cell" is computed as kube's Go printer computes it, reading the value at
 * its jsonPath (or the whole object) the way Go reads a typed field: missing is the zero
 * value ("", 0, false).
 *
 * The JSONPath subset (what CRD columns use): .field, ['field'] or ["field"], [n] (n < 0
 * counts from the end), [*] or .* and filters [?(@.path == 'text')] (or !=, or a number)
 * (the first element found is the value); a backslash escapes the next character of a
 * field name.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/go.h"
#include "codec/json.h"
#include "registry/registry_int.h"

#define NS 1000000000LL
#define MINUTE_NS (60 * NS)
#define HOUR_NS (60 * MINUTE_NS)

struct kapi_jsonpath_step {
    char *field; /* a member name; NULL for an index, a wildcard or a filter */
    long long index;
    bool all; /* [*] or .* */
    /* A filter [?(@.sub == literal)] (or !=): literal is set. */
    kapi_jsonpath_step *sub;
    size_t nsub;
    json_t *literal;
    bool negate;
};

static bool parse_path(const char *s, kapi_jsonpath_step **out, size_t *nout);

/* ---- JSONPath ---- */

/* kube's jsonpath ends an identifier at these. */
static bool terminator(char c)
{
    return c == '\0' || strchr(".,[]$@{} \t\r\n", c) != NULL;
}

/* A field name up to a terminator (backslash escapes), into the heap. */
static char *read_field(const char **p)
{
    kapi_buf b;
    kapi_buf_init(&b);
    const char *s = *p;
    while (!terminator(*s)) {
        if (*s == '\\' && s[1])
            s++;
        kapi_buf_putc(&b, *s++);
    }
    *p = s;
    size_t n;
    return kapi_buf_detach(&b, &n);
}

static const char *skip_spaces(const char *s)
{
    while (*s == ' ')
        s++;
    return s;
}

/* A filter's literal: a quoted string or a number. */
static json_t *read_literal(const char **p)
{
    const char *s = *p, *end;
    char *num_end;
    if (*s == '\'' || *s == '"') {
        if (!(end = strchr(s + 1, *s)))
            return NULL;
        *p = end + 1;
        return json_stringn(s + 1, (size_t)(end - s - 1));
    }
    long long i = strtoll(s, &num_end, 10);
    if (num_end != s && *num_end != '.' && *num_end != 'e' && *num_end != 'E') {
        *p = num_end;
        return json_integer(i);
    }
    double f = strtod(s, &num_end);
    if (num_end == s)
        return NULL;
    *p = num_end;
    return json_real(f);
}

/* A filter after its "[?(": @ and a relative path, == or !=, a literal, then ")]". */
static bool read_filter(const char **p, kapi_jsonpath_step *st)
{
    const char *s = skip_spaces(*p), *start;
    if (*s++ != '@')
        return false;
    for (start = s; *s && !strchr(" =!)", *s); s++)
        if (*s == '\\' && s[1])
            s++;
    char *rel = kapi_xstrndup(start, (size_t)(s - start));
    bool ok = parse_path(rel, &st->sub, &st->nsub);
    free(rel);
    s = skip_spaces(s);
    if (!ok || (s[0] != '=' && s[0] != '!') || s[1] != '=')
        return false;
    st->negate = s[0] == '!';
    s = skip_spaces(s + 2);
    if (!(st->literal = read_literal(&s)))
        return false;
    s = skip_spaces(s);
    if (s[0] != ')' || s[1] != ']')
        return false;
    *p = s + 2;
    return true;
}

/* One bracketed step after its '[': 'name', "name", *, a filter, or an integer. */
static bool read_bracket(const char **p, kapi_jsonpath_step *st)
{
    const char *s = *p;
    if (s[0] == '?' && s[1] == '(') {
        *p = s + 2;
        return read_filter(p, st);
    }
    if (*s == '\'' || *s == '"') {
        const char *end = strchr(s + 1, *s);
        if (!end || end[1] != ']')
            return false;
        st->field = kapi_xstrndup(s + 1, (size_t)(end - s - 1));
        *p = end + 2;
        return true;
    }
    if (s[0] == '*' && s[1] == ']') {
        st->all = true;
        *p = s + 2;
        return true;
    }
    char *end;
    st->index = strtoll(s, &end, 10);
    if (end == s || *end != ']')
        return false;
    *p = end + 1;
    return true;
}

static void free_steps(kapi_jsonpath_step *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].field);
        free_steps(v[i].sub, v[i].nsub);
        json_decref(v[i].literal);
    }
    free(v);
}

/* Parses a column's path (it starts with '.', as CRD validation requires). */
static bool parse_path(const char *s, kapi_jsonpath_step **out, size_t *nout)
{
    kapi_jsonpath_step *v = NULL;
    size_t n = 0;
    bool ok = *s == '.';
    while (ok && *s) {
        v = kapi_xrealloc(v, (n + 1) * sizeof(*v));
        kapi_jsonpath_step *st = memset(&v[n++], 0, sizeof(*v));
        if (*s == '[') {
            s++;
            ok = read_bracket(&s, st);
        } else if (*s == '.' && !terminator(s[1])) {
            s++;
            st->field = read_field(&s);
            if (strcmp(st->field, "*") == 0) {
                free(st->field);
                st->field = NULL;
                st->all = true;
            }
        } else {
            ok = false;
        }
    }
    if (!ok) {
        free_steps(v, n);
        return false;
    }
    *out = v;
    *nout = n;
    return true;
}

static const json_t *eval_path(const kapi_jsonpath_step *st, size_t n, const json_t *v);

/* Whether a filter holds for the value left: 1 or 0, -1 when kube's comparison fails
 * (nothing to compare, or values of different kinds), which fails the whole path. */
static int filter_holds(const kapi_jsonpath_step *st, const json_t *left)
{
    const json_t *lit = st->literal;
    int eq;
    if (json_is_string(left) && json_is_string(lit))
        eq = strcmp(json_string_value(left), json_string_value(lit)) == 0;
    else if (json_is_integer(left) && json_is_integer(lit))
        eq = json_integer_value(left) == json_integer_value(lit);
    else if (json_is_real(left) && json_is_real(lit))
        eq = json_real_value(left) == json_real_value(lit);
    else
        return -1;
    return eq != st->negate;
}

/* The first element of array v that passes filter st and in which the rest of the path
 * finds a value, or NULL. */
static const json_t *eval_filter(const kapi_jsonpath_step *st, size_t n, const json_t *v)
{
    const json_t *found = NULL;
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *e = json_array_get(v, i);
        int holds = filter_holds(st, eval_path(st->sub, st->nsub, e));
        if (holds < 0)
            return NULL;
        if (holds && !found)
            found = eval_path(st + 1, n - 1, e);
    }
    return found;
}

/* The first value the steps find in v, or NULL. A null on the way finds nothing. */
static const json_t *eval_path(const kapi_jsonpath_step *st, size_t n, const json_t *v)
{
    if (!v)
        return NULL;
    if (n == 0)
        return v;
    if (json_is_null(v))
        return NULL;
    if (st->field)
        return eval_path(st + 1, n - 1, json_object_get(v, st->field));
    if (st->literal)
        return eval_filter(st, n, v);
    if (st->all) {
        const json_t *found = NULL;
        void *it = json_object_iter((json_t *)v);
        for (size_t i = 0; !found && i < json_array_size(v); i++)
            found = eval_path(st + 1, n - 1, json_array_get(v, i));
        for (; !found && it; it = json_object_iter_next((json_t *)v, it))
            found = eval_path(st + 1, n - 1, json_object_iter_value(it));
        return found;
    }
    long long size = (long long)json_array_size(v),
              i = st->index < 0 ? st->index + size : st->index;
    if (!json_is_array(v) || i < 0 || i >= size)
        return NULL;
    return eval_path(st + 1, n - 1, json_array_get(v, (size_t)i));
}

/* ---- times ---- */

void kapi_human_duration(char *out, int64_t d)
{
    int64_t secs = d / NS, minutes = d / MINUTE_NS, hours = d / HOUR_NS;
    if (secs < -1)
        strcpy(out, "<invalid>");
    else if (secs < 0)
        strcpy(out, "0s");
    else if (secs < 120)
        sprintf(out, "%llds", (long long)secs);
    else if (minutes < 10 && secs % 60)
        sprintf(out, "%lldm%llds", (long long)minutes, (long long)(secs % 60));
    else if (minutes < 180)
        sprintf(out, "%lldm", (long long)minutes);
    else if (hours < 8 && minutes % 60)
        sprintf(out, "%lldh%lldm", (long long)hours, (long long)(minutes % 60));
    else if (hours < 48)
        sprintf(out, "%lldh", (long long)hours);
    else if (hours < 24 * 8 && hours % 24)
        sprintf(out, "%lldd%lldh", (long long)(hours / 24), (long long)(hours % 24));
    else if (hours < 24 * 365 * 2)
        sprintf(out, "%lldd", (long long)(hours / 24));
    else if (hours < 24 * 365 * 8 && (hours / 24) % 365)
        sprintf(out, "%lldy%lldd", (long long)(hours / 24 / 365), (long long)((hours / 24) % 365));
    else
        sprintf(out, "%lldy", (long long)(hours / 24 / 365));
}

void kapi_short_human_duration(char *out, int64_t d)
{
    int64_t secs = d / NS, minutes = d / MINUTE_NS, hours = d / HOUR_NS;
    if (secs < -1)
        strcpy(out, "<invalid>");
    else if (secs < 0)
        strcpy(out, "0s");
    else if (secs < 60)
        sprintf(out, "%llds", (long long)secs);
    else if (minutes < 60)
        sprintf(out, "%lldm", (long long)minutes);
    else if (hours < 24)
        sprintf(out, "%lldh", (long long)hours);
    else if (hours < 24 * 365)
        sprintf(out, "%lldd", (long long)(hours / 24));
    else
        sprintf(out, "%lldy", (long long)(hours / 24 / 365));
}

/* Go's zero time.Time, 0001-01-01T00:00:00Z, in seconds since the epoch. */
#define GO_ZERO_TIME (-62135596800LL)

/* How a stored time reads: absent (or the zero time), or not RFC 3339. */
typedef enum { TIME_OK, TIME_ZERO, TIME_INVALID } time_state;

static time_state read_time(const json_t *v, int64_t *secs, int32_t *nsec)
{
    const char *s = json_string_value(v);
    if (!s || !*s || strcmp(s, "null") == 0)
        return TIME_ZERO;
    if (!kapi_gotime_parse(s, secs, nsec))
        return TIME_INVALID;
    return *secs == GO_ZERO_TIME && *nsec == 0 ? TIME_ZERO : TIME_OK;
}

/* u - t in nanoseconds, saturated as Go's Time.Sub is (beyond ~292 years). */
static int64_t time_sub(int64_t u_secs, int32_t u_nsec, int64_t secs, int32_t nsec)
{
    if (u_secs - secs > INT64_MAX / NS - 1)
        return INT64_MAX;
    if (secs - u_secs > INT64_MAX / NS - 1)
        return INT64_MIN;
    return (u_secs - secs) * NS + (u_nsec - nsec);
}

/* now - t, as time.Since. */
static int64_t since(int64_t now_ns, int64_t secs, int32_t nsec)
{
    return time_sub(now_ns / NS, (int32_t)(now_ns % NS), secs, nsec);
}

/* translateTimestampSince: "<unknown>" for the zero time, else HumanDuration. */
static void age_text(char *out, const json_t *v, int64_t now_ns)
{
    int64_t secs;
    int32_t nsec;
    if (read_time(v, &secs, &nsec) != TIME_OK)
        strcpy(out, "<unknown>");
    else
        kapi_human_duration(out, since(now_ns, secs, nsec));
}

/* ---- the CRD rules ---- */

static json_t *string_cell(const json_t *v)
{
    if (json_is_string(v))
        return json_incref((json_t *)v);
    if (json_is_null(v))
        return json_string_nocheck("<no value>");
    kapi_buf b;
    kapi_buf_init(&b);
    if (json_is_object(v) || json_is_array(v))
        kapi_go_json(&b, v);
    else
        kapi_go_put_fmt(&b, v, 'v');
    json_t *s = json_stringn(b.ptr, b.len);
    kapi_buf_dispose(&b);
    return s;
}

static json_t *date_cell(const json_t *v, int64_t now_ns)
{
    char out[32];
    int64_t secs;
    int32_t nsec;
    if (!json_is_string(v))
        return json_null();
    switch (read_time(v, &secs, &nsec)) {
    case TIME_ZERO:
        return json_string_nocheck("<unknown>");
    case TIME_INVALID:
        return json_string_nocheck("<invalid>");
    default:
        kapi_short_human_duration(out, since(now_ns, secs, nsec));
        return json_string(out);
    }
}

/* int64(f) for a float64 in range (Go leaves the rest implementation-defined). */
static json_int_t go_int64(double f)
{
    if (!(f > -9223372036854775808.0 && f < 9223372036854775808.0))
        return INT64_MIN;
    return (json_int_t)f;
}

static json_t *crd_cell(const char *type, const json_t *v, int64_t now_ns)
{
    if (!v)
        return json_null();
    if (strcmp(type, "string") == 0)
        return string_cell(v);
    if (strcmp(type, "integer") == 0 && json_is_integer(v))
        return json_incref((json_t *)v);
    if (strcmp(type, "integer") == 0 && json_is_real(v))
        return json_integer(go_int64(json_real_value(v)));
    if (strcmp(type, "number") == 0 && json_is_number(v))
        return json_real(json_number_value(v));
    if (strcmp(type, "boolean") == 0 && json_is_boolean(v))
        return json_incref((json_t *)v);
    if (strcmp(type, "date") == 0)
        return date_cell(v, now_ns);
    return json_null();
}

/* ---- built-in printers' cells ---- */

static const char *go_string(const json_t *v)
{
    const char *s = json_string_value(v);
    return s ? s : "";
}

static json_t *cell_string(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    return json_string(go_string(v));
}

static json_t *cell_string_or_none(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    return json_string(*go_string(v) ? go_string(v) : "<none>");
}

/* fmt.Sprint of an integer field. */
static json_t *cell_integer_text(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    return json_sprintf("%lld", (long long)json_integer_value(v));
}

/* printBoolPtr. */
static json_t *cell_bool_pointer(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    if (!json_is_boolean(v))
        return json_string_nocheck("<unset>");
    return json_string(json_is_true(v) ? "True" : "False");
}

static json_t *cell_length(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    return json_integer((json_int_t)json_array_size(v));
}

static json_t *cell_age(const json_t *v, const json_t *obj, int64_t now_ns)
{
    char out[32];
    (void)obj;
    age_text(out, v, now_ns);
    return json_string(out);
}

static json_t *cell_age_or_none(const json_t *v, const json_t *obj, int64_t now_ns)
{
    if (!v || json_is_null(v))
        return json_string_nocheck("<none>");
    return cell_age(v, obj, now_ns);
}

/* The default table's Created At: the time in UTC, RFC 3339. */
static json_t *cell_created_at(const json_t *v, const json_t *obj, int64_t now_ns)
{
    char out[32];
    int64_t secs;
    int32_t nsec;
    (void)obj, (void)now_ns;
    if (read_time(v, &secs, &nsec) != TIME_OK)
        return json_string_nocheck("0001-01-01T00:00:00Z");
    return json_string(kapi_time_rfc3339(out, secs));
}

/* layoutContainerCells: one member of each container, joined by ",". */
static json_t *join_member(const json_t *containers, const char *key)
{
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < json_array_size(containers); i++) {
        if (i)
            kapi_buf_putc(&b, ',');
        kapi_buf_puts(&b, go_string(json_object_get(json_array_get(containers, i), key)));
    }
    json_t *s = json_stringn(b.ptr, b.len);
    kapi_buf_dispose(&b);
    return s;
}

static json_t *cell_container_names(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    return join_member(v, "name");
}

static json_t *cell_container_images(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    return join_member(v, "image");
}

/* printJob's Completions: "<succeeded>/<completions>"; without completions, "/1", and
 * " of <parallelism>" when more than one pod runs at a time. */
static json_t *cell_job_completions(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)v, (void)now_ns;
    const json_t *spec = json_object_get(obj, "spec");
    long long succeeded = (long long)json_integer_value(kapi_json_path(obj, "status.succeeded"));
    const json_t *completions = json_object_get(spec, "completions");
    long long parallelism = (long long)json_integer_value(json_object_get(spec, "parallelism"));
    if (json_is_integer(completions))
        return json_sprintf("%lld/%lld", succeeded, (long long)json_integer_value(completions));
    if (parallelism > 1)
        return json_sprintf("%lld/1 of %lld", succeeded, parallelism);
    return json_sprintf("%lld/1", succeeded);
}

/* printJob's Duration: from startTime to completionTime, or to now while the Job has not
 * completed; empty before it starts. */
static json_t *cell_job_duration(const json_t *v, const json_t *obj, int64_t now_ns)
{
    char out[32] = "";
    int64_t secs, end_secs;
    int32_t nsec, end_nsec;
    (void)v;
    const json_t *status = json_object_get(obj, "status");
    const char *start = json_string_value(json_object_get(status, "startTime"));
    const char *end = json_string_value(json_object_get(status, "completionTime"));
    if (start && kapi_gotime_parse(start, &secs, &nsec)) {
        if (end && kapi_gotime_parse(end, &end_secs, &end_nsec))
            kapi_human_duration(out, time_sub(end_secs, end_nsec, secs, nsec));
        else
            kapi_human_duration(out, since(now_ns, secs, nsec));
    }
    return json_string(out);
}

/* A label selector requirement as labels.Requirement.String() writes it. */
typedef struct requirement {
    const char *key;
    char *text;
} requirement;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One matchExpressions entry; false when LabelSelectorAsSelector refuses it. */
static bool expression_text(const json_t *e, kapi_buf *b)
{
    static const char *const ops[][2] = {
        {"In", " in "}, {"NotIn", " notin "}, {"Exists", ""}, {"DoesNotExist", ""}};
    const char *op = go_string(json_object_get(e, "operator")), *sep = NULL;
    const json_t *values = json_object_get(e, "values");
    size_t n = json_array_size(values);
    for (size_t i = 0; i < KAPI_ARRAY_LEN(ops); i++)
        if (strcmp(op, ops[i][0]) == 0)
            sep = ops[i][1];
    bool set = sep && *sep;
    if (!sep || (set && n == 0) || (!set && n > 0))
        return false;
    kapi_buf_printf(b, "%s%s%s", strcmp(op, "DoesNotExist") == 0 ? "!" : "",
                    go_string(json_object_get(e, "key")), sep);
    if (!set)
        return true;
    const char **sorted = kapi_xcalloc(n, sizeof(*sorted));
    for (size_t i = 0; i < n; i++)
        sorted[i] = go_string(json_array_get(values, i));
    qsort(sorted, n, sizeof(*sorted), cmp_str);
    kapi_buf_putc(b, '(');
    for (size_t i = 0; i < n; i++)
        kapi_buf_printf(b, "%s%s", i ? "," : "", sorted[i]);
    kapi_buf_putc(b, ')');
    free(sorted);
    return true;
}

/* Sorts by key, keeping the order of equal keys (labels.Selector.Add). */
static void sort_requirements(requirement *r, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(r[j].key, r[j - 1].key) < 0; j--) {
            requirement t = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t;
        }
}

/* metav1.FormatLabelSelector: "<none>" for no selector or an empty one, "<error>" for one
 * that does not convert. */
static json_t *cell_label_selector(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    const json_t *labels = json_object_get(v, "matchLabels");
    const json_t *exprs = json_object_get(v, "matchExpressions");
    size_t n = 0, cap = json_object_size(labels) + json_array_size(exprs);
    requirement *r = kapi_xcalloc(cap ? cap : 1, sizeof(*r));
    bool ok = true;
    const char *key;
    json_t *e;
    size_t i;
    kapi_buf b;
    json_object_foreach((json_t *)labels, key, e)
    {
        r[n].key = key;
        r[n++].text = kapi_xprintf("%s=%s", key, go_string(e));
    }
    json_array_foreach((json_t *)exprs, i, e)
    {
        kapi_buf_init(&b);
        ok = ok && expression_text(e, &b);
        r[n].key = go_string(json_object_get(e, "key"));
        r[n++].text = kapi_buf_detach(&b, &(size_t){0});
    }
    sort_requirements(r, n);
    kapi_buf_init(&b);
    for (i = 0; i < n; i++) {
        kapi_buf_printf(&b, "%s%s", i ? "," : "", r[i].text);
        free(r[i].text);
    }
    free(r);
    json_t *s = json_string(!ok ? "<error>" : b.len ? b.ptr : "<none>");
    kapi_buf_dispose(&b);
    return s;
}

/* Go's %v of []NodeSelectorRequirement: [{key In [a b]} {key Exists []}]. */
static void node_requirements(kapi_buf *b, const json_t *reqs)
{
    kapi_buf_putc(b, '[');
    for (size_t i = 0; i < json_array_size(reqs); i++) {
        const json_t *req = json_array_get(reqs, i);
        const json_t *values = json_object_get(req, "values");
        kapi_buf_printf(b, "%s{%s %s [", i ? " " : "", go_string(json_object_get(req, "key")),
                        go_string(json_object_get(req, "operator")));
        for (size_t j = 0; j < json_array_size(values); j++)
            kapi_buf_printf(b, "%s%s", j ? " " : "", go_string(json_array_get(values, j)));
        kapi_buf_puts(b, "]}");
    }
    kapi_buf_putc(b, ']');
}

/* The ClusterCIDR printer's NodeSelector: each term's requirements, terms joined by ",". */
static json_t *cell_node_selector(const json_t *v, const json_t *obj, int64_t now_ns)
{
    static const char *const parts[][2] = {{"matchExpressions", "MatchExpressions: "},
                                           {"matchFields", "MatchFields: "}};
    (void)obj, (void)now_ns;
    if (!v || json_is_null(v))
        return json_string_nocheck("<none>");
    const json_t *terms = json_object_get(v, "nodeSelectorTerms");
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < json_array_size(terms); i++) {
        for (size_t p = 0; p < KAPI_ARRAY_LEN(parts); p++) {
            const json_t *reqs = json_object_get(json_array_get(terms, i), parts[p][0]);
            if (!json_array_size(reqs))
                continue;
            kapi_buf_printf(&b, "%s%s", b.len ? "," : "", parts[p][1]);
            node_requirements(&b, reqs);
        }
    }
    json_t *s = json_stringn(b.ptr, b.len);
    kapi_buf_dispose(&b);
    return s;
}

/* strings.TrimSpace (ASCII white space). */
static json_t *cell_trim_space(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    const char *s = go_string(v);
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    while (n && isspace((unsigned char)*s))
        s++, n--;
    return json_stringn(s, n);
}

/* The times and count of the Event printer (core/v1 names: the storage view). */
typedef struct event_times {
    char first[32], last[32];
    long long count;
} event_times;

static void read_event_times(const json_t *ev, int64_t now_ns, event_times *t)
{
    int64_t secs;
    int32_t nsec;
    const json_t *first = json_object_get(ev, "firstTimestamp");
    const json_t *series = json_object_get(ev, "series");
    age_text(t->first,
             read_time(first, &secs, &nsec) == TIME_ZERO ? json_object_get(ev, "eventTime") : first,
             now_ns);
    const json_t *last = json_object_get(ev, "lastTimestamp");
    if (read_time(last, &secs, &nsec) == TIME_ZERO)
        strcpy(t->last, t->first);
    else
        age_text(t->last, last, now_ns);
    t->count = json_integer_value(json_object_get(ev, "count"));
    if (json_is_object(series)) {
        age_text(t->last, json_object_get(series, "lastObservedTime"), now_ns);
        t->count = json_integer_value(json_object_get(series, "count"));
    } else if (t->count == 0) {
        t->count = 1; /* singleton events of the new API have no count */
    }
}

static json_t *cell_event_last_seen(const json_t *v, const json_t *obj, int64_t now_ns)
{
    event_times t;
    (void)v;
    read_event_times(obj, now_ns, &t);
    return json_string(t.last);
}

static json_t *cell_event_first_seen(const json_t *v, const json_t *obj, int64_t now_ns)
{
    event_times t;
    (void)v;
    read_event_times(obj, now_ns, &t);
    return json_string(t.first);
}

static json_t *cell_event_count(const json_t *v, const json_t *obj, int64_t now_ns)
{
    event_times t;
    (void)v;
    read_event_times(obj, now_ns, &t);
    return json_integer(t.count);
}

/* "kind/name" of the involved object, the kind in lower case. */
static json_t *cell_event_object(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)v, (void)now_ns;
    const json_t *io = json_object_get(obj, "involvedObject");
    const char *name = go_string(json_object_get(io, "name"));
    char *kind = kapi_xstrdup(go_string(json_object_get(io, "kind")));
    for (char *p = kind; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    json_t *s = *name ? json_sprintf("%s/%s", kind, name) : json_string(kind);
    free(kind);
    return s;
}

/* The source's component (else the reporting component), then ", " and its host (else
 * the reporting instance) when there is one. */
static json_t *cell_event_source(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)v, (void)now_ns;
    const json_t *src = json_object_get(obj, "source");
    const char *comp = go_string(json_object_get(src, "component"));
    const char *host = go_string(json_object_get(src, "host"));
    if (!*comp)
        comp = go_string(json_object_get(obj, "reportingComponent"));
    if (!*host)
        host = go_string(json_object_get(obj, "reportingInstance"));
    return *host ? json_sprintf("%s, %s", comp, host) : json_string(comp);
}

/* The RoleBinding and ClusterRoleBinding printers' Role: "Kind/name" of the roleRef. */
static json_t *cell_role_ref(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    return json_sprintf("%s/%s", go_string(json_object_get(v, "kind")),
                        go_string(json_object_get(v, "name")));
}

/* The subjects of one kind, as rbac.SubjectsStrings lists them, joined by ", ": a
 * ServiceAccount as "namespace/name", the others by name. */
static json_t *subjects_of_kind(const json_t *subjects, const char *kind)
{
    bool sa = strcmp(kind, "ServiceAccount") == 0;
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < json_array_size(subjects); i++) {
        const json_t *s = json_array_get(subjects, i);
        if (strcmp(go_string(json_object_get(s, "kind")), kind) != 0)
            continue;
        kapi_buf_puts(&b, b.len ? ", " : "");
        if (sa)
            kapi_buf_printf(&b, "%s/", go_string(json_object_get(s, "namespace")));
        kapi_buf_puts(&b, go_string(json_object_get(s, "name")));
    }
    json_t *out = json_stringn(b.ptr, b.len);
    kapi_buf_dispose(&b);
    return out;
}

static json_t *cell_subject_users(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    return subjects_of_kind(v, "User");
}

static json_t *cell_subject_groups(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    return subjects_of_kind(v, "Group");
}

static json_t *cell_subject_service_accounts(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    return subjects_of_kind(v, "ServiceAccount");
}

/* printNode's Status: Ready or NotReady from the Ready condition, Unknown without one,
 * then ",SchedulingDisabled" for an unschedulable node. */
static json_t *cell_node_status(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)v, (void)now_ns;
    const char *ready = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(kapi_json_path(obj, "status.conditions"), i, c)
    {
        if (strcmp(go_string(json_object_get(c, "type")), "Ready") == 0)
            ready = go_string(json_object_get(c, "status"));
    }
    const char *status = !ready ? "Unknown" : strcmp(ready, "True") == 0 ? "Ready" : "NotReady";
    bool off = json_is_true(kapi_json_path(obj, "spec.unschedulable"));
    return json_sprintf("%s%s", status, off ? ",SchedulingDisabled" : "");
}

/* findNodeRoles: the names after node-role.kubernetes.io/ and the value of
 * kubernetes.io/role, sorted and unique, comma-separated; "<none>" when there are none. */
static json_t *cell_node_roles(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)v, (void)now_ns;
    static const char prefix[] = "node-role.kubernetes.io/";
    const json_t *labels = kapi_json_path(obj, "metadata.labels");
    const char **roles = kapi_xcalloc(json_object_size(labels) + 1, sizeof(*roles));
    size_t n = 0;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)labels, key, value)
    {
        if (strncmp(key, prefix, sizeof(prefix) - 1) == 0 && key[sizeof(prefix) - 1])
            roles[n++] = key + sizeof(prefix) - 1;
        else if (strcmp(key, "kubernetes.io/role") == 0 && *go_string(value))
            roles[n++] = go_string(value);
    }
    qsort(roles, n, sizeof(*roles), cmp_str);
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || strcmp(roles[i], roles[i - 1]) != 0)
            kapi_buf_printf(&b, "%s%s", b.len ? "," : "", roles[i]);
    json_t *s = json_string(b.len ? b.ptr : "<none>");
    kapi_buf_dispose(&b);
    free(roles);
    return s;
}

/* The first status.addresses entry of the given type, or "<none>". */
static json_t *node_address(const json_t *obj, const char *type)
{
    size_t i;
    json_t *a;
    json_array_foreach(kapi_json_path(obj, "status.addresses"), i, a)
    {
        if (strcmp(go_string(json_object_get(a, "type")), type) == 0)
            return json_string(go_string(json_object_get(a, "address")));
    }
    return json_string("<none>");
}

static json_t *cell_node_internal_ip(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)v, (void)now_ns;
    return node_address(obj, "InternalIP");
}

static json_t *cell_node_external_ip(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)v, (void)now_ns;
    return node_address(obj, "ExternalIP");
}

static json_t *cell_string_or_unknown(const json_t *v, const json_t *obj, int64_t now_ns)
{
    (void)obj, (void)now_ns;
    return json_string(*go_string(v) ? go_string(v) : "<unknown>");
}

static const struct {
    const char *name;
    kapi_cell_fn fn;
} cells[] = {
    {"string", cell_string},
    {"stringOrNone", cell_string_or_none},
    {"stringOrUnknown", cell_string_or_unknown},
    {"integerText", cell_integer_text},
    {"boolPointer", cell_bool_pointer},
    {"length", cell_length},
    {"age", cell_age},
    {"ageOrNone", cell_age_or_none},
    {"createdAt", cell_created_at},
    {"jobCompletions", cell_job_completions},
    {"jobDuration", cell_job_duration},
    {"nodeStatus", cell_node_status},
    {"nodeRoles", cell_node_roles},
    {"nodeInternalIP", cell_node_internal_ip},
    {"nodeExternalIP", cell_node_external_ip},
    {"containerNames", cell_container_names},
    {"containerImages", cell_container_images},
    {"labelSelector", cell_label_selector},
    {"nodeSelector", cell_node_selector},
    {"trimSpace", cell_trim_space},
    {"eventLastSeen", cell_event_last_seen},
    {"eventFirstSeen", cell_event_first_seen},
    {"eventCount", cell_event_count},
    {"eventObject", cell_event_object},
    {"eventSource", cell_event_source},
    {"roleRef", cell_role_ref},
    {"subjectUsers", cell_subject_users},
    {"subjectGroups", cell_subject_groups},
    {"subjectServiceAccounts", cell_subject_service_accounts},
};

/* ---- loading ---- */

#define NAME_COLUMN                                                                                \
    "{\"name\":\"Name\",\"type\":\"string\",\"format\":\"name\",\"jsonPath\":\".metadata.name\","  \
    "\"description\":\"The name of the object, unique within its namespace (or the cluster).\"}"

/* kube's default table for a built-in type without a printer (rest.NewDefaultTableConvertor). */
static const char default_columns[] =
    "[" NAME_COLUMN ",{\"name\":\"Created At\",\"type\":\"date\",\"jsonPath\":"
    "\".metadata.creationTimestamp\",\"cell\":\"createdAt\",\"description\":\"The time the "
    "server created the object, in UTC.\"}]";

/* What apiextensions serves for a CRD version without additionalPrinterColumns. */
static const char custom_age_column[] =
    "{\"name\":\"Age\",\"type\":\"date\",\"jsonPath\":\".metadata.creationTimestamp\","
    "\"description\":\"How long ago the server created the object.\"}";

static json_t *parse_text(const char *text)
{
    return kapi_json_parse(text, strlen(text), NULL);
}

/* The full column list of def: a built-in type's "printerColumns" are its columns (kube's
 * default table when absent, no Table when empty); a custom resource's are its CRD's
 * additionalPrinterColumns, after a Name column, and an Age column when there are none.
 * Written back into def. */
static json_t *full_columns(kapi_type *t, json_t *def)
{
    json_t *cols = json_object_get(def, "printerColumns");
    if (t->builtin && cols)
        return cols;
    if (t->builtin) {
        t->default_table = true;
        cols = parse_text(default_columns);
    } else {
        json_t *given = cols;
        cols = json_array();
        json_array_append_new(cols, parse_text(NAME_COLUMN));
        if (json_array_size(given))
            json_array_extend(cols, given);
        else
            json_array_append_new(cols, parse_text(custom_age_column));
    }
    json_object_set_new_nocheck(def, "printerColumns", cols);
    return cols;
}

static kapi_error *load_column(kapi_column *c, const char *name, json_t *def)
{
    const char *cell = kapi_json_path_str(def, "cell");
    c->name = kapi_json_path_str(def, "name");
    c->type = kapi_json_path_str(def, "type");
    c->format = kapi_json_path_str(def, "format");
    c->format = c->format ? c->format : "";
    c->priority = (int)json_integer_value(json_object_get(def, "priority"));
    c->json_path = kapi_json_path_str(def, "jsonPath");
    for (size_t i = 0; cell && i < KAPI_ARRAY_LEN(cells); i++)
        if (strcmp(cell, cells[i].name) == 0)
            c->cell = cells[i].fn;
    if (!cell && strcmp(c->format, "name") == 0)
        c->cell = cell_string; /* kube prints the object's name, "" when it has none */
    kapi_jsonpath_step *steps = NULL;
    bool ok = c->name && c->type && (!cell || c->cell) && (c->json_path || c->cell) &&
              (!c->json_path || parse_path(c->json_path, &steps, &c->nsteps));
    c->steps = steps;
    if (!ok)
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "type %s: bad printer column %s", name,
                              c->name ? c->name : "");
    c->description = kapi_json_path_str(def, "description");
    if (!c->description || !*c->description) {
        json_object_set_new_nocheck(def, "description",
                                    json_sprintf("The value at %s in the object.", c->json_path));
        c->description = kapi_json_path_str(def, "description");
    }
    return NULL;
}

kapi_error *kapi_registry__load_columns(kapi_type *t, const char *name, json_t *def)
{
    json_t *cols = full_columns(t, def);
    size_t n = json_array_size(cols);
    kapi_column *v = kapi_xcalloc(n ? n : 1, sizeof(*v));
    t->columns = v;
    t->ncolumns = n;
    if (!json_is_array(cols) || (!n && !t->builtin))
        return kapi_error_new(KAPI_STATUS_INTERNAL_ERROR, "type %s: bad \"printerColumns\"", name);
    for (size_t i = 0; i < n; i++) {
        kapi_error *err = load_column(&v[i], name, json_array_get(cols, i));
        if (err)
            return err;
    }
    return NULL;
}

void kapi_registry__free_columns(kapi_type *t)
{
    for (size_t i = 0; i < t->ncolumns; i++)
        free_steps((kapi_jsonpath_step *)t->columns[i].steps, t->columns[i].nsteps);
    free((void *)t->columns);
}

json_t *kapi_type_table_cells(const kapi_type *t, const json_t *obj, int64_t now_ns)
{
    json_t *row = json_array();
    for (size_t i = 0; i < t->ncolumns; i++) {
        const kapi_column *c = &t->columns[i];
        const json_t *v = c->json_path ? eval_path(c->steps, c->nsteps, obj) : NULL;
        json_array_append_new(row,
                              c->cell ? c->cell(v, obj, now_ns) : crd_cell(c->type, v, now_ns));
    }
    return row;
}
