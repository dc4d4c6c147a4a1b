/*
 * schema/rules: x-kubernetes-validations, as apiextensions-apiserver 1.26 runs them.
 *
 * At compile (kapi_schema_compile) every node of a standalone schema gets the CEL type
 * Kubernetes declares for it (model.SchemaDeclType: objects with their escapable
 * properties, maps for additionalProperties, lists, strings as bytes, durations or
 * timestamps by format, int-or-string as dyn; a resource's root with apiVersion, kind
 * and metadata's name and generateName), with the sizes cost estimation reads; and every
 * rule is parsed and type-checked with self and oldSelf of its node's type.
 *
 * kapi_schema_rules_crd_check reports what a CRD's rules get wrong, where kube's CRD
 * validation reports it; kapi_schema_rules_validate evaluates the rules over a custom
 * resource, at every instance of their node, oldSelf correlated as kube correlates it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cel/cel.h"
#include "schema/field.h"
#include "schema/schema_int.h"

#define MAX_REQUEST_BYTES (3 * 1024 * 1024)
#define MAX_DURATION_JSON 32
#define MAX_DATETIME_JSON 32
#define JSON_DATE_SIZE 12
#define MIN_DATETIME_JSON 21
#define MIN_DURATION_JSON 3
#define MIN_STRING_SIZE 2
#define MIN_BOOL_SIZE 4
#define MIN_NUMBER_SIZE 1

/* ---- escaping (Kubernetes' cel.Escape) ---- */

static const char *const reserved[] = {
    "true",      "false",  "null",     "in",   "as",     "break", "const", "continue",
    "else",      "for",    "function", "if",   "import", "let",   "loop",  "package",
    "namespace", "return", "var",      "void", "while",  NULL};

/* name as CEL sees it, in arena a, or NULL when it cannot be written in CEL. */
static const char *escape(kapi_arena *a, const char *name)
{
    if (!*name || (name[0] >= '0' && name[0] <= '9'))
        return NULL;
    if (kapi_cstr_in(name, reserved))
        return kapi_arena_printf(a, "__%s__", name);
    kapi_buf b;
    kapi_buf_init(&b);
    for (const char *p = name; *p; p++) {
        char c = *p;
        if (c == '_' && p[1] == '_') {
            kapi_buf_puts(&b, "__underscores__");
            p++;
        } else if (c == '.') {
            kapi_buf_puts(&b, "__dot__");
        } else if (c == '-') {
            kapi_buf_puts(&b, "__dash__");
        } else if (c == '/') {
            kapi_buf_puts(&b, "__slash__");
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '_') {
            kapi_buf_putc(&b, c);
        } else {
            kapi_buf_dispose(&b);
            return NULL;
        }
    }
    const char *s = kapi_arena_strdup(a, b.ptr);
    kapi_buf_dispose(&b);
    return s;
}

/* ---- the declared types (model.SchemaDeclType) ---- */

/* The string, object and metadata nodes WithTypeAndObjectMeta adds to a resource. */
#define NO_BOUNDS                                                                                  \
    .min_length = -1, .max_length = -1, .min_props = -1, .max_props = -1, .min_items = -1,         \
    .max_items = -1
static const kapi_schema string_node = {.types = KAPI_SCHEMA_STRING, NO_BOUNDS};
static kapi_schema_prop meta_props[] = {{.name = "generateName", .schema = &string_node},
                                        {.name = "name", .schema = &string_node}};
static const kapi_schema meta_node = {
    .types = KAPI_SCHEMA_OBJECT, .props = meta_props, .nprops = 2, NO_BOUNDS};
#undef NO_BOUNDS

/* Whether s already has what WithTypeAndObjectMeta would add. */
static bool has_type_and_meta(const kapi_schema *s)
{
    const kapi_schema_prop *k = kapi_schema__prop(s, "kind"),
                           *av = kapi_schema__prop(s, "apiVersion"),
                           *m = kapi_schema__prop(s, "metadata");
    if (!k || !av || !m || k->schema->types != KAPI_SCHEMA_STRING ||
        av->schema->types != KAPI_SCHEMA_STRING || m->schema->types != KAPI_SCHEMA_OBJECT)
        return false;
    const kapi_schema_prop *n = kapi_schema__prop(m->schema, "name"),
                           *g = kapi_schema__prop(m->schema, "generateName");
    return n && g && n->schema->types == KAPI_SCHEMA_STRING &&
           g->schema->types == KAPI_SCHEMA_STRING;
}

/* The schema of member key of object s, a resource's root when resource: the property,
 * or what WithTypeAndObjectMeta adds; NULL when s has none. */
static const kapi_schema *member_schema(const kapi_schema *s, bool resource, const char *key,
                                        bool *embedded)
{
    *embedded = false;
    if (resource && !has_type_and_meta(s)) {
        if (strcmp(key, "kind") == 0 || strcmp(key, "apiVersion") == 0)
            return &string_node;
        if (strcmp(key, "metadata") == 0)
            return &meta_node;
    }
    const kapi_schema_prop *p = kapi_schema__prop(s, key);
    if (!p)
        return NULL;
    *embedded = p->schema->embedded_resource;
    return p->schema;
}

static int64_t zero_if_negative(int64_t v)
{
    return v < 0 ? 0 : v;
}

static const char *format_of(const kapi_schema *s)
{
    return s->format ? s->format : "";
}

/* estimateMaxStringLengthPerRequest */
static int64_t max_string_length(const kapi_schema *s)
{
    const char *f = format_of(s);
    if (s->int_or_string)
        return MAX_REQUEST_BYTES - 2;
    if (strcmp(f, "duration") == 0)
        return MAX_DURATION_JSON;
    if (strcmp(f, "date") == 0)
        return JSON_DATE_SIZE;
    if (strcmp(f, "date-time") == 0)
        return MAX_DATETIME_JSON;
    return MAX_REQUEST_BYTES - 2;
}

typedef struct builder {
    kapi_arena *a;
} builder;

static kapi_cel_typ *new_type(builder *b, kapi_cel_tkind kind, int64_t min_size)
{
    kapi_cel_typ *t = kapi_arena_alloc(b->a, sizeof(*t));
    memset(t, 0, sizeof(*t));
    t->kind = kind;
    t->min_size = min_size;
    return t;
}

static const kapi_cel_typ *decl_type(builder *b, const kapi_schema *s, bool resource,
                                     const char *name);

static const kapi_cel_typ *object_type(builder *b, const kapi_schema *s, bool resource,
                                       const char *name)
{
    size_t cap = s->nprops + 3, n = 0;
    kapi_cel_field *fields = kapi_arena_alloc(b->a, cap * sizeof(*fields));
    int64_t min_size = 2;
    const char *extra[] = {"apiVersion", "kind", "metadata"};
    size_t nkeys = s->nprops + (resource ? 3 : 0);
    for (size_t i = 0; i < nkeys; i++) {
        const char *key = i < s->nprops ? s->props[i].name : extra[i - s->nprops];
        if (i >= s->nprops && kapi_schema__prop(s, key) && has_type_and_meta(s))
            continue;
        if (i < s->nprops && resource && !has_type_and_meta(s) &&
            kapi_cstr_in(key, (const char *const[]){"apiVersion", "kind", "metadata", NULL}))
            continue;
        bool embedded;
        const kapi_schema *ps = member_schema(s, resource, key, &embedded);
        const char *esc = escape(b->a, key);
        const kapi_cel_typ *ft =
            decl_type(b, ps, embedded, kapi_arena_printf(b->a, "%s.%s", name, esc ? esc : key));
        if (!ft)
            continue;
        if (esc)
            fields[n++] = (kapi_cel_field){esc, ft};
        bool required = s->required && kapi_cstr_in(key, s->required);
        const kapi_schema_prop *p = kapi_schema__prop(s, key);
        if (required && !(p && p->default_value))
            min_size += (int64_t)strlen(key) + ft->min_size + 4;
    }
    kapi_cel_typ *t = new_type(b, KAPI_CEL_TY_OBJECT, min_size);
    t->name = name;
    t->fields = fields;
    t->nfields = n;
    return t;
}

static const kapi_cel_typ *string_type(builder *b, const kapi_schema *s)
{
    const char *f = format_of(s);
    kapi_cel_typ *t;
    if (strcmp(f, "byte") == 0) {
        t = new_type(b, KAPI_CEL_TY_BYTES, MIN_STRING_SIZE);
        t->max_elements = (uint64_t)(s->max_length >= 0 ? s->max_length : max_string_length(s));
    } else if (strcmp(f, "duration") == 0) {
        t = new_type(b, KAPI_CEL_TY_DURATION, MIN_DURATION_JSON);
        t->max_elements = (uint64_t)max_string_length(s);
    } else if (strcmp(f, "date") == 0 || strcmp(f, "date-time") == 0) {
        t = new_type(b, KAPI_CEL_TY_TIMESTAMP, *f && f[4] ? MIN_DATETIME_JSON : JSON_DATE_SIZE);
        t->max_elements = (uint64_t)max_string_length(s);
    } else {
        t = new_type(b, KAPI_CEL_TY_STRING, MIN_STRING_SIZE);
        t->max_elements = (uint64_t)(s->max_length >= 0 ? s->max_length * 4 : max_string_length(s));
    }
    return t;
}

/* The type Kubernetes declares for s (a resource's root when resource), its objects
 * named from name; NULL when CEL cannot see values of s. */
static const kapi_cel_typ *decl_type(builder *b, const kapi_schema *s, bool resource,
                                     const char *name)
{
    if (!s)
        return NULL;
    if (s->int_or_string) {
        kapi_cel_typ *t = new_type(b, KAPI_CEL_TY_DYN, 1);
        t->max_elements = MAX_REQUEST_BYTES - 2;
        return t;
    }
    switch (s->types) {
    case KAPI_SCHEMA_ARRAY: {
        const kapi_cel_typ *e =
            decl_type(b, s->items, s->items && s->items->embedded_resource, name);
        if (!e)
            return NULL;
        kapi_cel_typ *t = new_type(b, KAPI_CEL_TY_LIST, 1);
        t->elem = e;
        t->max_elements = s->max_items >= 0
                              ? (uint64_t)zero_if_negative(s->max_items)
                              : (uint64_t)((MAX_REQUEST_BYTES - 2) / (e->min_size + 1));
        t->min_size = 2;
        return t;
    }
    case KAPI_SCHEMA_OBJECT:
        if (s->additional) {
            const kapi_cel_typ *v =
                decl_type(b, s->additional, s->additional->embedded_resource, name);
            if (!v)
                return NULL;
            kapi_cel_typ *t = new_type(b, KAPI_CEL_TY_MAP, 2);
            t->key = kapi_cel_type_of(KAPI_CEL_TY_STRING);
            t->elem = v;
            t->max_elements = s->max_props >= 0
                                  ? (uint64_t)zero_if_negative(s->max_props)
                                  : (uint64_t)((MAX_REQUEST_BYTES - 2) / (v->min_size + 6));
            return t;
        }
        return object_type(b, s, resource, name);
    case KAPI_SCHEMA_STRING:
        return string_type(b, s);
    case KAPI_SCHEMA_BOOLEAN:
        return new_type(b, KAPI_CEL_TY_BOOL, MIN_BOOL_SIZE);
    case KAPI_SCHEMA_NUMBER:
        return new_type(b, KAPI_CEL_TY_DOUBLE, MIN_NUMBER_SIZE);
    case KAPI_SCHEMA_INTEGER:
    case KAPI_SCHEMA_INTEGER | KAPI_SCHEMA_NUMBER:
        return new_type(b, KAPI_CEL_TY_INT, MIN_NUMBER_SIZE);
    default:
        return NULL;
    }
}

/* ---- compiling the rules ---- */

static const char *trimmed_empty(const char *s)
{
    return s + strspn(s, " \t\n\v\f\r");
}

static const char *issues_error(kapi_arena *a, const kapi_cel_ast *ast, const char *src)
{
    kapi_buf b;
    kapi_buf_init(&b);
    kapi_buf_puts(&b, "compilation failed: ");
    kapi_cel_issues_text(&b, ast, src, strlen(src));
    const char *s = kapi_arena_strdup(a, b.ptr);
    kapi_buf_dispose(&b);
    return s;
}

/* compileRule: the rule's program with self and oldSelf of type self, or why not. */
static void compile_rule(kapi_arena *a, const kapi_schema *s, const json_t *src,
                         kapi_schema_rule *r)
{
    const char *rule = json_string_value(json_object_get(src, "rule"));
    const char *message = json_string_value(json_object_get(src, "message"));
    r->rule = kapi_arena_strdup(a, rule ? rule : "");
    r->message = kapi_arena_strdup(a, message ? message : "");
    if (!*trimmed_empty(r->rule))
        return;
    const kapi_cel_typ *self = s->cel_type;
    if (!self) {
        r->error = kapi_arena_printf(
            a,
            "rule declared on schema that does not support validation rules type: '%s' "
            "x-kubernetes-preserve-unknown-fields: '%s'",
            s->types == KAPI_SCHEMA_OBJECT ? "object" : "", s->preserve_unknown ? "true" : "false");
        return;
    }
    kapi_cel_ast *ast = kapi_cel_parse(r->rule, strlen(r->rule));
    kapi_cel_var vars[2] = {{"self", self}, {"oldSelf", self}};
    bool used[2] = {false, false};
    const kapi_cel_typ *t = ast->root ? kapi_cel_check(ast, vars, 2, used) : NULL;
    if (!t)
        r->error = issues_error(a, ast, r->rule);
    else if (t->kind != KAPI_CEL_TY_BOOL)
        r->error = "cel expression must evaluate to a bool";
    if (r->error) {
        kapi_cel_ast_free(ast);
        return;
    }
    r->ast = ast;
    r->transition = used[1];
    r->max_cost = kapi_cel_estimate_cost(ast).max;
}

static bool compile_node(builder *b, kapi_schema *s, const kapi_cel_typ *t);

static bool compile_child(builder *b, const kapi_schema *child, const kapi_cel_typ *t)
{
    return child && compile_node(b, (kapi_schema *)child, t);
}

/* Gives s (compiled a moment ago, read by no one yet) its type t and its compiled rules,
 * and so on down; whether s or a node below it has rules. */
static bool compile_node(builder *b, kapi_schema *s, const kapi_cel_typ *t)
{
    s->cel_type = t;
    const json_t *rules = json_object_get(s->src, "x-kubernetes-validations");
    size_t n = json_array_size(rules);
    if (n) {
        kapi_schema_rule *r = kapi_arena_alloc(b->a, n * sizeof(*r));
        memset(r, 0, n * sizeof(*r));
        for (size_t i = 0; i < n; i++)
            compile_rule(b->a, s, json_array_get(rules, i), &r[i]);
        s->rules = r;
        s->nrules = n;
    }
    for (size_t i = 0; i < s->nprops; i++) {
        const kapi_schema_prop *p = &s->props[i];
        const char *esc = escape(b->a, p->name);
        const kapi_cel_typ *ft = NULL;
        for (size_t k = 0; esc && t && t->kind == KAPI_CEL_TY_OBJECT && k < t->nfields; k++)
            if (strcmp(t->fields[k].name, esc) == 0)
                ft = t->fields[k].type;
        if (!esc)
            ft = decl_type(b, p->schema, p->schema->embedded_resource,
                           kapi_arena_printf(b->a, "%s.%s", t ? t->name : "selfType", p->name));
        s->rules_below |= compile_child(b, p->schema, ft);
    }
    const kapi_cel_typ *elem =
        t && (t->kind == KAPI_CEL_TY_LIST || t->kind == KAPI_CEL_TY_MAP) ? t->elem : NULL;
    s->rules_below |= compile_child(b, s->items, elem);
    s->rules_below |= compile_child(b, s->additional, elem);
    s->rules_below |= s->nrules > 0;
    return s->rules_below;
}

void kapi_schema__compile_rules(kapi_arena *a, kapi_schema *root)
{
    builder b = {a};
    compile_node(&b, root, decl_type(&b, root, true, "selfType"));
}

void kapi_schema__free_rules(const kapi_schema *s)
{
    for (size_t i = 0; i < s->nrules; i++)
        kapi_cel_ast_free(s->rules[i].ast);
}

/* ---- the CRD's rules (ValidateCustomResourceDefinitionOpenAPISchema) ---- */

#define COST_LIMIT 10000000ULL      /* StaticEstimatedCostLimit, per rule */
#define CRD_COST_LIMIT 100000000ULL /* StaticEstimatedCRDCostLimit, all rules of a schema */
#define UNBOUNDED UINT64_MAX

typedef struct expensive {
    const char *path;
    uint64_t cost;
} expensive;

typedef struct crd_ctx {
    kapi_arena *a;
    kapi_error *err;
    size_t schema_causes; /* the causes before this check: schema errors */
    uint64_t total;
    expensive top[5]; /* the most expensive rules, most first (kube keeps 4) */
    size_t ntop;
} crd_ctx;

static uint64_t mul_saturating(uint64_t a, uint64_t b)
{
    if (a == 0)
        return 0;
    return UINT64_MAX / a < b ? UINT64_MAX : a * b;
}

/* getCostErrorMessage */
static void cost_message(kapi_buf *b, const char *what, uint64_t cost, uint64_t limit)
{
    double factor = (double)cost / (double)limit;
    kapi_buf_printf(b, "%s exceeds budget by factor of ", what);
    if (factor > 100.0)
        kapi_buf_puts(b, "more than 100x");
    else if (factor < 1.5)
        kapi_buf_printf(b, "%fx", factor);
    else
        kapi_buf_printf(b, "%.1fx", factor);
    kapi_buf_puts(b, " (try simplifying the rule, or adding maxItems, maxProperties, and "
                     "maxLength where arrays, maps, and strings are declared)");
}

static void observe(crd_ctx *c, const char *path, uint64_t cost)
{
    c->total = UINT64_MAX - c->total < cost ? UINT64_MAX : c->total + cost;
    if (cost < CRD_COST_LIMIT / 100)
        return;
    size_t i = c->ntop;
    for (; i > 0 && c->top[i - 1].cost < cost; i--)
        c->top[i] = c->top[i - 1];
    c->top[i] = (expensive){path, cost};
    if (c->ntop < 4)
        c->ntop++;
}

/* Whether a schema error is at path or below it. */
static bool errors_under(const crd_ctx *c, const char *path)
{
    size_t n = strlen(path);
    for (size_t i = 0; i < c->schema_causes; i++) {
        const char *f = c->err->causes[i].field;
        if (f && strncmp(f, path, n) == 0 && (!f[n] || f[n] == '.' || f[n] == '['))
            return true;
    }
    return false;
}

/* The Go %#v of an apiextensions.ValidationRule. */
static const kapi_gofield rule_fields[] = {{"Rule", "rule", KAPI_GO_STRING, NULL, NULL},
                                           {"Message", "message", KAPI_GO_STRING, NULL, NULL}};
static const kapi_gotype rule_type = {"apiextensions.ValidationRule", rule_fields, 2};

/* uncorrelatable: the path of the highest list above s whose items do not correlate with
 * the old object's (any but a list-type map), or NULL: oldSelf means nothing below it. */
static void crd_rules(crd_ctx *c, const kapi_schema *s, const char *path, uint64_t cardinality,
                      const char *uncorrelatable)
{
    if (!s->nrules || errors_under(c, path))
        return;
    const json_t *src = json_object_get(s->src, "x-kubernetes-validations");
    uint64_t fallback =
        (uint64_t)(MAX_REQUEST_BYTES / ((s->cel_type ? s->cel_type->min_size : 0) + 1));
    for (size_t i = 0; i < s->nrules; i++) {
        const kapi_schema_rule *r = &s->rules[i];
        const char *at = kapi_arena_printf(c->a, "%s.x-kubernetes-validations[%zu].rule", path, i);
        uint64_t cost =
            mul_saturating(r->max_cost, cardinality == UNBOUNDED ? fallback : cardinality);
        if (cost > COST_LIMIT) {
            kapi_buf b;
            kapi_buf_init(&b);
            cost_message(&b, "estimated rule cost", cost, COST_LIMIT);
            kapi_field_forbidden(c->err, at, b.ptr);
            kapi_buf_dispose(&b);
        }
        observe(c, at, cost);
        if (r->error) {
            kapi_buf b;
            kapi_buf_init(&b);
            kapi_gofmt(&b, &rule_type, json_array_get(src, i));
            kapi_field_invalid_raw(c->err, at, b.ptr, "%s", r->error);
            kapi_buf_dispose(&b);
        }
        if (r->transition && uncorrelatable)
            kapi_field_invalid_str(c->err, at, r->rule,
                                   "oldSelf cannot be used on the uncorrelatable portion of the "
                                   "schema within %s",
                                   uncorrelatable);
    }
}

/* extractMaxElements: how many values of a child one value of s holds at most. */
static uint64_t max_elements(const kapi_schema *s)
{
    if (s->types == KAPI_SCHEMA_OBJECT)
        return json_object_get(s->src, "additionalProperties")
                   ? (s->max_props >= 0 ? (uint64_t)s->max_props : UNBOUNDED)
                   : 1;
    if (s->types == KAPI_SCHEMA_ARRAY)
        return s->max_items >= 0 ? (uint64_t)s->max_items : UNBOUNDED;
    return 1;
}

static void crd_node(crd_ctx *c, const kapi_schema *s, const char *path, uint64_t cardinality,
                     const char *uncorrelatable)
{
    uint64_t per = max_elements(s);
    uint64_t child =
        cardinality == UNBOUNDED || per == UNBOUNDED ? UNBOUNDED : mul_saturating(cardinality, per);
    if (s->additional)
        crd_node(c, s->additional, kapi_arena_printf(c->a, "%s.additionalProperties", path), child,
                 uncorrelatable);
    for (size_t i = 0; i < s->nprops; i++)
        crd_node(c, s->props[i].schema,
                 kapi_arena_printf(c->a, "%s.properties[%s]", path, s->props[i].name), child,
                 uncorrelatable);
    bool map_list = s->list_type && strcmp(s->list_type, "map") == 0;
    if (s->items)
        crd_node(c, s->items, kapi_arena_printf(c->a, "%s.items", path), child,
                 uncorrelatable || map_list ? uncorrelatable : path);
    crd_rules(c, s, path, cardinality, uncorrelatable);
}

void kapi_schema_rules_crd_check(const kapi_schema *root, const char *path, size_t schema_causes,
                                 kapi_error *err)
{
    kapi_arena a;
    kapi_arena_init(&a);
    crd_ctx c = {.a = &a, .err = err, .schema_causes = schema_causes};
    crd_node(&c, root, path, 1, NULL);
    if (c.total > CRD_COST_LIMIT) {
        for (size_t i = 0; i < c.ntop; i++)
            kapi_field_forbidden(err, c.top[i].path,
                                 "contributed to estimated rule cost total exceeding cost limit "
                                 "for entire OpenAPIv3 schema");
        kapi_buf b;
        kapi_buf_init(&b);
        cost_message(&b,
                     "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 "
                     "schema",
                     c.total, CRD_COST_LIMIT);
        kapi_field_forbidden(err, path, b.ptr);
        kapi_buf_dispose(&b);
    }
    kapi_arena_dispose(&a);
}

/* ---- evaluating the rules over a custom resource (cel.Validator) ---- */

#define PER_CALL_LIMIT 1000000  /* PerCallLimit */
#define RUNTIME_BUDGET 10000000 /* RuntimeCELCostBudget, per object */

static kapi_cel_value to_value(kapi_arena *a, const kapi_schema *s, bool resource, const json_t *v);

static kapi_cel_value error_value(kapi_arena *a, const char *fmt, const char *arg)
{
    return (kapi_cel_value){.t = KAPI_CEL_T_ERROR, .u.error = kapi_arena_printf(a, fmt, arg)};
}

/* A string or bytes value of the n bytes at p, which stay valid (NUL-terminated) while
 * the value is used. */
static kapi_cel_value text_value(kapi_cel_type t, const char *p, size_t n)
{
    return (kapi_cel_value){.t = t, .u.s = {p, n}};
}

/* Go's %T of a JSON value decoded into interface{}. */
static const char *go_type(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "map[string]interface {}";
    case JSON_ARRAY:
        return "[]interface {}";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "int64";
    case JSON_REAL:
        return "float64";
    default:
        return "bool";
    }
}

/* An object's value: its members by their CEL names, each of its property's type;
 * members the schema does not know keep their names and JSON values (for equality and
 * size only: no checked rule can reach them); null members are absent. */
static kapi_cel_value object_value(kapi_arena *a, const kapi_schema *s, bool resource,
                                   const json_t *v)
{
    size_t n = json_object_size(v), k = 0;
    kapi_cel_value *keys = kapi_arena_alloc(a, (n ? n : 1) * sizeof(*keys));
    kapi_cel_value *vals = kapi_arena_alloc(a, (n ? n : 1) * sizeof(*vals));
    const char *key;
    json_t *m;
    json_object_foreach((json_t *)v, key, m)
    {
        bool embedded;
        const kapi_schema *ps = s->additional;
        const char *name = key;
        if (!ps) {
            ps = member_schema(s, resource, key, &embedded);
            if (ps && json_is_null(m))
                continue;
            const char *esc = ps ? escape(a, key) : NULL;
            name = esc ? esc : key;
        } else {
            embedded = ps->embedded_resource;
        }
        keys[k] = text_value(KAPI_CEL_T_STRING, name, strlen(name));
        vals[k++] = ps ? to_value(a, ps, embedded, m) : kapi_cel_from_json(a, m);
    }
    return (kapi_cel_value){.t = KAPI_CEL_T_MAP, .u.map = {keys, vals, k}};
}

/* The error value of a string its format does not read (why: the parser's heap text,
 * freed here; kube's message names the string only). */
static kapi_cel_value parse_error(kapi_arena *a, char *why, const char *fmt, const char *str)
{
    free(why);
    return error_value(a, fmt, str);
}

static kapi_cel_value string_value(kapi_arena *a, const kapi_schema *s, const json_t *v)
{
    const char *str = json_string_value(v), *f = format_of(s);
    size_t n = json_string_length(v);
    if (strcmp(f, "duration") == 0) {
        int64_t ns;
        char *why = kapi_go_parse_duration((kapi_str){str, n}, &ns);
        if (why)
            return parse_error(a, why, "Invalid duration %s", str);
        return (kapi_cel_value){.t = KAPI_CEL_T_DURATION, .u.i = ns};
    }
    if (strcmp(f, "date") == 0 || strcmp(f, "date-time") == 0) {
        bool date = f[4] == 0;
        char *full = date ? kapi_xprintf("%sT00:00:00Z", str) : NULL;
        kapi_go_time t;
        char *why = n == strlen(str) ? kapi_go_parse_time(date ? full : str, false, &t)
                                     : kapi_xstrdup("a NUL byte");
        free(full);
        if (why)
            return parse_error(a, why,
                               date ? "Invalid date formatted string %s"
                                    : "Invalid date-time formatted string %s",
                               str);
        return (kapi_cel_value){.t = KAPI_CEL_T_TIMESTAMP, .u.ts = t};
    }
    if (strcmp(f, "byte") == 0) {
        kapi_buf b;
        kapi_buf_init(&b);
        long bad = kapi_base64_decode(str, n, KAPI_BASE64_STD, &b);
        kapi_cel_value r =
            bad >= 0 ? error_value(a, "Invalid byte formatted string %s", str)
                     : text_value(KAPI_CEL_T_BYTES, kapi_arena_strndup(a, b.ptr, b.len), b.len);
        kapi_buf_dispose(&b);
        return r;
    }
    return text_value(KAPI_CEL_T_STRING, str, n);
}

/* UnstructuredToVal: v as CEL sees it through schema s (a resource's root when
 * resource); an error value where v does not fit s. */
static kapi_cel_value to_value(kapi_arena *a, const kapi_schema *s, bool resource, const json_t *v)
{
    if (json_is_null(v))
        return s->nullable ? (kapi_cel_value){.t = KAPI_CEL_T_NULL}
                           : error_value(a, "%s",
                                         "invalid data, got null for schema with "
                                         "nullable=false");
    if (s->int_or_string) {
        if (json_is_string(v) || json_is_integer(v))
            return kapi_cel_from_json(a, v);
        return error_value(a, "%s",
                           "invalid data, expected XIntOrString value to be either a "
                           "string or integer");
    }
    switch (s->types) {
    case KAPI_SCHEMA_OBJECT:
        if (!json_is_object(v))
            return error_value(a, "%s",
                               "invalid data, expected a map for the provided schema "
                               "with type=object");
        if (resource || s->embedded_resource || s->nprops || s->additional || s->preserve_unknown)
            return object_value(a, s, resource || s->embedded_resource, v);
        return error_value(a, "%s",
                           "invalid object type, expected either Properties or "
                           "AdditionalProperties with Allows=true and non-empty Schema");
    case KAPI_SCHEMA_ARRAY: {
        if (!json_is_array(v))
            return error_value(a, "%s",
                               "invalid data, expected an array for the provided "
                               "schema with type=array");
        if (!s->items)
            return error_value(a, "%s",
                               "invalid array type, expected Items with a non-empty "
                               "Schema");
        size_t n = json_array_size(v);
        kapi_cel_value *e = kapi_arena_alloc(a, (n ? n : 1) * sizeof(*e));
        for (size_t i = 0; i < n; i++)
            e[i] = to_value(a, s->items, s->items->embedded_resource, json_array_get(v, i));
        bool unordered = s->list_type && strcmp(s->list_type, "atomic") != 0;
        const char **keys = NULL;
        if (unordered && strcmp(s->list_type, "map") == 0) {
            size_t nk = 0;
            while (s->list_map_keys && s->list_map_keys[nk])
                nk++;
            keys = kapi_arena_alloc(a, (nk + 1) * sizeof(*keys));
            for (size_t i = 0; i < nk; i++) {
                const char *esc = escape(a, s->list_map_keys[i]);
                keys[i] = esc ? esc : s->list_map_keys[i];
            }
            keys[nk] = NULL;
        }
        return (kapi_cel_value){.t = KAPI_CEL_T_LIST,
                                .u.list = {.v = e, .n = n, .unordered = unordered, .keys = keys}};
    }
    case KAPI_SCHEMA_STRING:
        if (!json_is_string(v))
            return error_value(a, "invalid data, expected string, got %s", go_type(v));
        return string_value(a, s, v);
    case KAPI_SCHEMA_NUMBER:
        if (!json_is_number(v))
            return error_value(a, "invalid data, expected float, got %s", go_type(v));
        return (kapi_cel_value){.t = KAPI_CEL_T_DOUBLE, .u.d = json_number_value(v)};
    case KAPI_SCHEMA_INTEGER:
    case KAPI_SCHEMA_INTEGER | KAPI_SCHEMA_NUMBER:
        if (!json_is_integer(v))
            return error_value(a, "invalid data, expected int, got %s", go_type(v));
        return (kapi_cel_value){.t = KAPI_CEL_T_INT, .u.i = json_integer_value(v)};
    case KAPI_SCHEMA_BOOLEAN:
        if (!json_is_boolean(v))
            return error_value(a, "invalid data, expected bool, got %s", go_type(v));
        return (kapi_cel_value){.t = KAPI_CEL_T_BOOL, .u.b = json_is_true(v)};
    default:
        return kapi_cel_from_json(a, v);
    }
}

typedef struct activation {
    kapi_cel_value self, old;
    bool has_old;
} activation;

static bool lookup(void *ctx, const char *name, kapi_cel_value *out)
{
    const activation *act = ctx;
    if (strcmp(name, "self") == 0) {
        *out = act->self;
        return true;
    }
    if (strcmp(name, "oldSelf") == 0 && act->has_old) {
        *out = act->old;
        return true;
    }
    return false;
}

typedef struct run_ctx {
    kapi_arena *a;
    kapi_error *err;
    int64_t budget; /* what is left; < 0: stop */
} run_ctx;

static const char *type_name(const kapi_schema *s)
{
    static const char *const names[] = {"object",  "array",  "string",
                                        "integer", "number", "boolean"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(names); i++)
        if (s->types == 1u << i)
            return names[i];
    return s->types == (KAPI_SCHEMA_INTEGER | KAPI_SCHEMA_NUMBER) && !s->int_or_string ? "integer"
                                                                                       : "";
}

/* ruleErrorString: the message, else the rule, trimmed. */
static const char *rule_text(kapi_arena *a, const kapi_schema_rule *r)
{
    const char *s = *r->message ? r->message : r->rule;
    s = trimmed_empty(s);
    size_t n = strlen(s);
    while (n && strchr(" \t\n\v\f\r", s[n - 1]))
        n--;
    return kapi_arena_strndup(a, s, n);
}

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* validateExpressions: the rules of s over v (old: its correlated old value, or NULL). */
static void run_rules(run_ctx *c, const kapi_schema *s, bool resource, const char *path,
                      const json_t *v, const json_t *old)
{
    if (!s->nrules)
        return;
    const char *at = *path ? path : "<nil>", *type = type_name(s);
    if (c->budget <= 0) {
        kapi_field_invalid_str(c->err, at, type,
                               "validation failed due to running out of cost "
                               "budget, no further validation rules will be run");
        c->budget = -1;
        return;
    }
    activation act = {.self = to_value(c->a, s, resource, v)};
    if (old && !json_is_null(old)) {
        act.old = to_value(c->a, s, resource, old);
        act.has_old = true;
    }
    kapi_cel_activation cact = {lookup, &act};
    for (size_t i = 0; i < s->nrules; i++) {
        const kapi_schema_rule *r = &s->rules[i];
        if (r->error) {
            kapi_field_invalid_str(c->err, at, type, "rule compile error: %s", r->error);
            continue;
        }
        if (!r->ast || (r->transition && !act.has_old))
            continue;
        uint64_t cost = 0;
        kapi_cel_value got = kapi_cel_eval_limited(r->ast, &cact, c->a, PER_CALL_LIMIT, &cost);
        if (cost > (uint64_t)c->budget) {
            kapi_field_invalid_str(c->err, at, type,
                                   "validation failed due to running out of "
                                   "cost budget, no further validation rules "
                                   "will be run");
            c->budget = -1;
            return;
        }
        c->budget -= (int64_t)cost;
        if (got.t == KAPI_CEL_T_ERROR) {
            const char *e = got.u.error, *text = rule_text(c->a, r);
            if (has_prefix(e, "no such overload"))
                kapi_field_invalid_str(c->err, at, type,
                                       "'%s': call arguments did not match a supported operator, "
                                       "function or macro signature for rule: %s",
                                       e, text);
            else if (has_prefix(e, "operation cancelled: actual cost limit exceeded")) {
                kapi_field_invalid_str(c->err, at, type,
                                       "'%s': no further validation rules will be run due to call "
                                       "cost exceeds limit for rule: %s",
                                       e, text);
                c->budget = -1;
                return;
            } else
                kapi_field_invalid_str(c->err, at, type, "%s evaluating rule: %s", e, text);
            continue;
        }
        if (got.t != KAPI_CEL_T_BOOL || !got.u.b) {
            if (*r->message)
                kapi_field_invalid_str(c->err, at, type, "%s", r->message);
            else
                kapi_field_invalid_str(c->err, at, type, "failed rule: %s", rule_text(c->a, r));
        }
    }
}

/* Whether list-map items x and y have the same keys. */
static bool same_keys(const kapi_schema *s, const json_t *x, const json_t *y)
{
    for (const char *const *k = s->list_map_keys; k && *k; k++) {
        const json_t *a = json_object_get(x, *k), *b = json_object_get(y, *k);
        if (!a || !b ? a != b : !json_equal(a, b))
            return false;
    }
    return true;
}

static void run_node(run_ctx *c, const kapi_schema *s, bool resource, const char *path,
                     const json_t *v, const json_t *old);

/* The old item an item of a list correlates with: the old item of the same keys in a
 * list-type map, none in other lists. */
static const json_t *old_item(const kapi_schema *s, const json_t *item, const json_t *old)
{
    if (!s->list_type || strcmp(s->list_type, "map") != 0 || !json_is_array(old))
        return NULL;
    for (size_t i = 0; i < json_array_size(old); i++)
        if (same_keys(s, item, json_array_get(old, i)))
            return json_array_get(old, i);
    return NULL;
}

static void run_node(run_ctx *c, const kapi_schema *s, bool resource, const char *path,
                     const json_t *v, const json_t *old)
{
    if (!v || !s->rules_below || c->budget < 0)
        return;
    run_rules(c, s, resource, path, v, old);
    if (json_is_array(v) && s->items) {
        for (size_t i = 0; i < json_array_size(v) && c->budget >= 0; i++) {
            const json_t *item = json_array_get(v, i);
            run_node(c, s->items, s->items->embedded_resource,
                     kapi_arena_printf(c->a, "%s[%zu]", path, i), item, old_item(s, item, old));
        }
        return;
    }
    if (!json_is_object(v))
        return;
    const json_t *oldm = json_is_object(old) ? old : NULL;
    const char *key;
    json_t *m;
    json_object_foreach((json_t *)v, key, m)
    {
        if (c->budget < 0)
            return;
        if (s->additional) {
            run_node(c, s->additional, s->additional->embedded_resource,
                     kapi_arena_printf(c->a, "%s[%s]", path, key), m, json_object_get(oldm, key));
            continue;
        }
        const kapi_schema_prop *p = kapi_schema__prop(s, key);
        if (p)
            run_node(c, p->schema, p->schema->embedded_resource,
                     *path ? kapi_arena_printf(c->a, "%s.%s", path, key) : key, m,
                     json_object_get(oldm, key));
    }
}

void kapi_schema_rules_validate(const kapi_schema *s, const json_t *obj, const json_t *old,
                                kapi_error *err)
{
    kapi_arena a;
    kapi_arena_init(&a);
    run_ctx c = {.a = &a, .err = err, .budget = RUNTIME_BUDGET};
    run_node(&c, s, true, "", obj, old);
    kapi_arena_dispose(&a);
}
