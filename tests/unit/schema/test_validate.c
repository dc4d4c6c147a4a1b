/* Unit tests for value validation (src/schema/validate.c), the format checkers
 * (strfmt.c) and Go's printing of values (codec/go.h).
 *
 * The first test replays kube-apiserver 1.26's recorded answers (the golden corpus,
 * ../shared/testdata/golden, or $KAPI_TESTDATA/golden): the Widget CRD's schema and the
 * bodies of the custom resources it rejected with 422 give the causes schema validation
 * must produce. The tables after it give each keyword's exact wording, in the words of
 * kube-openapi's errors as apiextensions-apiserver converts them. */
#include <jansson.h>

#include "codec/json.h"
#include "schema/field.h"
#include "schema/schema.h"
#include "schema/schema_int.h"
#include "test.h"

/* ---- helpers ---- */

/* JSON written with ' for " (easier to read in C). */
static json_t *parse_q(const char *text)
{
    char *s = kapi_xstrdup(text);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t jerr;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &jerr);
    if (!v)
        test_fail(__FILE__, __LINE__, "bad JSON %s: %s", s, jerr.text);
    free(s);
    return v;
}

/* "field: message (Reason)" lines, one per cause, in order. */
static char *causes_text(const kapi_error *err)
{
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < err->ncauses; i++)
        kapi_buf_printf(&b, "%s%s: %s (%s)", i ? "\n" : "", err->causes[i].field,
                        err->causes[i].message, err->causes[i].reason);
    return kapi_buf_detach(&b, NULL);
}

static kapi_schema_root *compile_q(const char *schema)
{
    json_t *src = parse_q(schema);
    kapi_schema_root *root = NULL;
    kapi_error *err = kapi_schema_compile(src, &root);
    if (err)
        test_fail(__FILE__, __LINE__, "compile %s: %s", schema, err->message);
    json_decref(src);
    return root;
}

typedef void (*validate_fn)(const kapi_schema *s, const json_t *v, kapi_error *err);

static void schema_only(const kapi_schema *s, const json_t *v, kapi_error *err)
{
    kapi_schema_validate(s, v, "", err);
}

static void embedded_only(const kapi_schema *s, const json_t *v, kapi_error *err)
{
    kapi_schema_validate_embedded(s, v, "", err);
}

/* Validates value against schema (both JSON with ') with fn; checks the causes. */
static void check(int line, validate_fn fn, const char *schema, const char *value, const char *want)
{
    kapi_schema_root *root = compile_q(schema);
    json_t *v = parse_q(value);
    kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "invalid");
    fn(kapi_schema_root_node(root), v, err);
    char *got = causes_text(err);
    if (strcmp(got, want) != 0)
        test_fail(__FILE__, line, "%s with %s:\n got: %s\nwant: %s", schema, value, got, want);
    free(got);
    kapi_error_free(err);
    json_decref(v);
    kapi_schema_root_free(root);
}

#define CHECK_CAUSES(schema, value, want) check(__LINE__, schema_only, schema, value, want)
#define CHECK_EMBEDDED(schema, value, want) check(__LINE__, embedded_only, schema, value, want)

/* ---- kube-apiserver's recorded answers ---- */

static json_t *load_jsonl(const char *name)
{
    const char *dir = getenv("KAPI_TESTDATA");
    char *path = dir ? kapi_xprintf("%s/golden/%s", dir, name)
                     : kapi_xprintf("../shared/testdata/golden/%s", name);
    FILE *f = fopen(path, "r");
    if (!f)
        test_fail(__FILE__, __LINE__, "cannot open %s", path);
    json_t *by_id = json_object();
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *r = json_loads(line, 0, NULL);
        if (r)
            json_object_set_new(by_id, json_string_value(json_object_get(r, "id")), r);
    }
    free(line);
    fclose(f);
    free(path);
    return by_id;
}

/* Whether a recorded cause comes from schema validation (not CEL, metadata, scale). */
static bool schema_cause(const json_t *c)
{
    const char *field = json_string_value(json_object_get(c, "field"));
    const char *msg = json_string_value(json_object_get(c, "message"));
    if (!field || !msg || field[0] == '.' || strncmp(field, "metadata", 8) == 0 ||
        strcmp(field, "kind") == 0)
        return false;
    static const char *const prefixes[] = {
        "Required value", "Unsupported value:", "Too long:", "Too many:", "Duplicate value:"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(prefixes); i++)
        if (strncmp(msg, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return strstr(msg, " in body ") || strstr(msg, " must validate ");
}

static int line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of text, sorted (kube-apiserver's order of properties is a map's). */
static char *sorted_lines(char *text)
{
    char *lines[64];
    size_t n = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && n < 64;
         l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    qsort(lines, n, sizeof(*lines), line_cmp);
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < n; i++)
        kapi_buf_printf(&b, "%s%s", i ? "\n" : "", lines[i]);
    return kapi_buf_detach(&b, NULL);
}

static char *recorded_causes(const json_t *resp)
{
    json_t *causes =
               json_object_get(json_object_get(json_object_get(resp, "body"), "details"), "causes"),
           *c;
    size_t i;
    kapi_buf b;
    kapi_buf_init(&b);
    json_array_foreach(causes, i, c)
    {
        if (!schema_cause(c))
            continue;
        kapi_buf_printf(&b, "%s%s: %s (%s)", b.len ? "\n" : "",
                        json_string_value(json_object_get(c, "field")),
                        json_string_value(json_object_get(c, "message")),
                        json_string_value(json_object_get(c, "reason")));
    }
    char *text = kapi_buf_detach(&b, NULL), *out = sorted_lines(text);
    free(text);
    return out;
}

TEST(schema_validate_matches_recorded_kube_apiserver)
{
    json_t *requests = load_jsonl("requests.jsonl"), *responses = load_jsonl("responses.jsonl");
    json_t *crd = json_object_get(json_object_get(requests, "crd-create"), "body");
    json_t *schema = kapi_json_path(json_array_get(kapi_json_path(crd, "spec.versions"), 0),
                                    "schema.openAPIV3Schema");
    CHECK(schema);
    kapi_schema_root *root = NULL;
    kapi_error *cerr = kapi_schema_compile(schema, &root);
    CHECK(cerr == NULL);
    const char *id;
    json_t *req;
    int compared = 0;
    json_object_foreach(requests, id, req)
    {
        json_t *resp = json_object_get(responses, id);
        const char *method = json_string_value(json_object_get(req, "method"));
        const char *path = json_string_value(json_object_get(req, "path"));
        if (strncmp(id, "cr-", 3) != 0 ||
            json_integer_value(json_object_get(resp, "status")) != 422 ||
            (strcmp(method, "POST") != 0 && strcmp(method, "PUT") != 0) || strstr(path, "/scale"))
            continue;
        kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "invalid");
        kapi_schema_validate(kapi_schema_root_node(root), json_object_get(req, "body"), "", err);
        char *text = causes_text(err), *got = sorted_lines(text), *want = recorded_causes(resp);
        if (strcmp(got, want) != 0)
            test_fail(__FILE__, __LINE__, "%s:\n got: %s\nwant: %s", id, got, want);
        free(text);
        free(got);
        free(want);
        kapi_error_free(err);
        compared++;
    }
    printf("  golden: %d recorded custom resource answers compared\n", compared);
    CHECK(compared >= 15);
    kapi_schema_root_free(root);
    json_decref(requests);
    json_decref(responses);
}

/* The same answers, in kube-openapi's order for one value: type first, then the
 * combinators (anyOf's message, then its best branch's errors). */
TEST(schema_validate_int_or_string_order)
{
    CHECK_CAUSES("{'type':'object','properties':{'spec':{'type':'object','properties':{"
                 "'quantity':{'x-kubernetes-int-or-string':true,'anyOf':[{'type':'integer'},"
                 "{'type':'string'}]}}}}}",
                 "{'spec':{'quantity':1.5}}",
                 "spec.quantity: Invalid value: \"number\": spec.quantity in body must be of type "
                 "integer,string: \"number\" (FieldValueTypeInvalid)\n"
                 "<nil>: Invalid value: \"\": \"spec.quantity\" must validate at least one "
                 "schema (anyOf) (FieldValueInvalid)\n"
                 "spec.quantity: Invalid value: \"number\": spec.quantity in body must be of type "
                 "integer: \"number\" (FieldValueTypeInvalid)");
    /* a float that is an integer is one */
    CHECK_CAUSES("{'x-kubernetes-int-or-string':true}", "2.0", "");
}

/* ---- each keyword's words ---- */

#define OBJ(props)                                                                                 \
    "{'type':'object','properties':{'spec':{'type':'object','properties':{" props "}}}}"

TEST(schema_validate_type)
{
    CHECK_CAUSES(OBJ("'x':{'type':'integer'}"), "{'spec':{'x':'7'}}",
                 "spec.x: Invalid value: \"string\": spec.x in body must be of type integer: "
                 "\"string\" (FieldValueTypeInvalid)");
    CHECK_CAUSES(OBJ("'x':{'type':'integer'}"), "{'spec':{'x':1.5}}",
                 "spec.x: Invalid value: \"number\": spec.x in body must be of type integer: "
                 "\"number\" (FieldValueTypeInvalid)");
    CHECK_CAUSES(OBJ("'x':{'type':'integer'}"), "{'spec':{'x':3.0}}", "");
    CHECK_CAUSES(OBJ("'x':{'type':'number'}"), "{'spec':{'x':3}}", "");
    CHECK_CAUSES(OBJ("'x':{'type':'string'}"), "{'spec':{'x':null}}",
                 "spec.x: Invalid value: \"null\": spec.x in body must be of type string: "
                 "\"null\" (FieldValueTypeInvalid)");
    CHECK_CAUSES(OBJ("'x':{'type':'string','nullable':true}"), "{'spec':{'x':null}}", "");
    CHECK_CAUSES(OBJ("'x':{'type':'boolean'}"), "{'spec':{'x':{}}}",
                 "spec.x: Invalid value: \"object\": spec.x in body must be of type boolean: "
                 "\"object\" (FieldValueTypeInvalid)");
    CHECK_CAUSES(OBJ("'x':{'type':'array'}"), "{'spec':{'x':true}}",
                 "spec.x: Invalid value: \"boolean\": spec.x in body must be of type array: "
                 "\"boolean\" (FieldValueTypeInvalid)");
    /* the root has no name: its field is <nil> */
    CHECK_CAUSES("{'type':'object'}", "[]",
                 "<nil>: Invalid value: \"array\":  in body must be of type object: \"array\" "
                 "(FieldValueTypeInvalid)");
    /* int32 and other formats apiextensions does not check are dropped */
    CHECK_CAUSES(OBJ("'x':{'type':'integer','format':'int32'}"), "{'spec':{'x':3000000000}}", "");
}

TEST(schema_validate_format)
{
    CHECK_CAUSES(OBJ("'t':{'type':'string','format':'date-time'}"), "{'spec':{'t':'yesterday'}}",
                 "spec.t: Invalid value: \"yesterday\": spec.t in body must be of type date-time: "
                 "\"yesterday\" (FieldValueTypeInvalid)");
    CHECK_CAUSES(OBJ("'t':{'type':'string','format':'date-time'}"),
                 "{'spec':{'t':'2024-02-29T23:59:59.5+01:00'}}", "");
    /* a checked format is a type to kube-openapi for what is not a string */
    CHECK_CAUSES(OBJ("'t':{'type':'string','format':'uuid'}"), "{'spec':{'t':5}}",
                 "spec.t: Invalid value: \"int64\": spec.t in body must be of type uuid: "
                 "\"int64\" (FieldValueTypeInvalid)");
    /* ... but an array passes the type check of a string with a checked format */
    CHECK_CAUSES(OBJ("'t':{'type':'string','format':'uuid'}"), "{'spec':{'t':[1]}}", "");
    /* names are compared without dashes, as strfmt does */
    CHECK_CAUSES(OBJ("'t':{'type':'string','format':'ip-v4'}"), "{'spec':{'t':'1.2.3'}}",
                 "spec.t: Invalid value: \"1.2.3\": spec.t in body must be of type ip-v4: "
                 "\"1.2.3\" (FieldValueTypeInvalid)");
    CHECK_CAUSES(OBJ("'t':{'type':'string','format':'no-such-format'}"), "{'spec':{'t':'x'}}", "");
}

TEST(schema_validate_enum)
{
    CHECK_CAUSES(OBJ("'n':{'type':'integer','enum':[1,2.5,'x',true,{'a':1},[1]]}"),
                 "{'spec':{'n':3}}",
                 "spec.n: Unsupported value: 3: supported values: \"1\", \"2.5\", \"x\", "
                 "\"true\", \"{\\\"a\\\":1}\", \"[1]\" (FieldValueNotSupported)");
    /* numbers convert to the enum value's Go type: 1.0 is 1, 2.9 truncates to 2 */
    CHECK_CAUSES(OBJ("'n':{'enum':[1,2]}"), "{'spec':{'n':1.0}}", "");
    CHECK_CAUSES(OBJ("'n':{'enum':[1,2]}"), "{'spec':{'n':2.9}}", "");
    CHECK_CAUSES(OBJ("'n':{'enum':[1.5]}"), "{'spec':{'n':1.5}}", "");
    CHECK_CAUSES(OBJ("'o':{'type':'object','enum':[{'a':2}]}"), "{'spec':{'o':{'a':1,'b':'x'}}}",
                 "spec.o: Unsupported value: map[string]interface {}{\"a\":1, \"b\":\"x\"}: "
                 "supported values: \"{\\\"a\\\":2}\" (FieldValueNotSupported)");
    /* null never matches, not even null */
    CHECK_CAUSES(OBJ("'s':{'type':'string','nullable':true,'enum':['a',null]}"),
                 "{'spec':{'s':null}}",
                 "spec.s: Unsupported value: \"null\": supported values: \"a\", \"null\" "
                 "(FieldValueNotSupported)");
    CHECK_CAUSES(OBJ("'s':{'type':'string','enum':['a']}"), "{'spec':{'s':'tab\\there'}}",
                 "spec.s: Unsupported value: \"tab\\there\": supported values: \"a\" "
                 "(FieldValueNotSupported)");
}

TEST(schema_validate_numbers)
{
    const char *s = OBJ("'r':{'type':'integer','minimum':0,'maximum':100}");
    CHECK_CAUSES(s, "{'spec':{'r':-1}}",
                 "spec.r: Invalid value: -1: spec.r in body should be greater than or equal to 0 "
                 "(FieldValueInvalid)");
    CHECK_CAUSES(s, "{'spec':{'r':101}}",
                 "spec.r: Invalid value: 101: spec.r in body should be less than or equal to 100 "
                 "(FieldValueInvalid)");
    CHECK_CAUSES(OBJ("'f':{'type':'number','minimum':1.5,'exclusiveMinimum':true}"),
                 "{'spec':{'f':1.5}}",
                 "spec.f: Invalid value: 1.5: spec.f in body should be greater than 1.5 "
                 "(FieldValueInvalid)");
    CHECK_CAUSES(OBJ("'f':{'type':'number','maximum':1e6,'exclusiveMaximum':true}"),
                 "{'spec':{'f':2e6}}",
                 "spec.f: Invalid value: 2e+06: spec.f in body should be less than 1e+06 "
                 "(FieldValueInvalid)");
    /* integer data meets int64(bound): 1 is not below int64(1.5) */
    CHECK_CAUSES(OBJ("'f':{'type':'number','minimum':1.5}"), "{'spec':{'f':1}}", "");
    CHECK_CAUSES(OBJ("'m':{'type':'integer','multipleOf':3}"), "{'spec':{'m':10}}",
                 "spec.m: Invalid value: 10: spec.m in body should be a multiple of 3 "
                 "(FieldValueInvalid)");
    CHECK_CAUSES(OBJ("'m':{'type':'number','multipleOf':0.25}"), "{'spec':{'m':0.3}}",
                 "spec.m: Invalid value: 0.3: spec.m in body should be a multiple of 0.25 "
                 "(FieldValueInvalid)");
    CHECK_CAUSES(OBJ("'m':{'type':'number','multipleOf':0.25}"), "{'spec':{'m':0.75}}", "");
    /* all three, in kube-openapi's order: multipleOf, minimum, maximum */
    CHECK_CAUSES(OBJ("'m':{'type':'number','multipleOf':2,'minimum':5,'maximum':0}"),
                 "{'spec':{'m':1.5}}",
                 "spec.m: Invalid value: 1.5: spec.m in body should be a multiple of 2 "
                 "(FieldValueInvalid)\n"
                 "spec.m: Invalid value: 1.5: spec.m in body should be greater than or equal to 5 "
                 "(FieldValueInvalid)\n"
                 "spec.m: Invalid value: 1.5: spec.m in body should be less than or equal to 0 "
                 "(FieldValueInvalid)");
}

TEST(schema_validate_strings)
{
    const char *s = OBJ("'n':{'type':'string','minLength':2,'maxLength':3,'pattern':'^[a-z]+$'}");
    CHECK_CAUSES(s, "{'spec':{'n':'abcd'}}",
                 "spec.n: Too long: may not be longer than 3 (FieldValueTooLong)");
    CHECK_CAUSES(s, "{'spec':{'n':'a'}}",
                 "spec.n: Invalid value: \"a\": spec.n in body should be at least 2 chars long "
                 "(FieldValueInvalid)");
    /* the first failure only: a short string is not also checked against the pattern */
    CHECK_CAUSES(s, "{'spec':{'n':'A'}}",
                 "spec.n: Invalid value: \"A\": spec.n in body should be at least 2 chars long "
                 "(FieldValueInvalid)");
    CHECK_CAUSES(s, "{'spec':{'n':'AB'}}",
                 "spec.n: Invalid value: \"AB\": spec.n in body should match '^[a-z]+$' "
                 "(FieldValueInvalid)");
    /* lengths count characters */
    CHECK_CAUSES(s, "{'spec':{'n':'\u00e9\u00e9\u00e9'}}",
                 "spec.n: Invalid value: \"\u00e9\u00e9\u00e9\": spec.n in body should match "
                 "'^[a-z]+$' (FieldValueInvalid)");
    CHECK_CAUSES(OBJ("'n':{'type':'string','maxLength':2}"), "{'spec':{'n':'\u00e9\u00e9'}}", "");
}

TEST(schema_validate_arrays)
{
    const char *s = OBJ("'l':{'type':'array','minItems':1,'maxItems':2,'uniqueItems':true,"
                        "'items':{'type':'string','maxLength':1}}");
    CHECK_CAUSES(s, "{'spec':{'l':[]}}",
                 "spec.l: Invalid value: 0: spec.l in body should have at least 1 items "
                 "(FieldValueInvalid)");
    CHECK_CAUSES(s, "{'spec':{'l':['a','b','cc']}}",
                 "spec.l[2]: Too long: may not be longer than 1 (FieldValueTooLong)\n"
                 "spec.l: Too many: 3: must have at most 2 items (FieldValueTooMany)");
    CHECK_CAUSES(s, "{'spec':{'l':['a','a']}}",
                 "spec.l: Invalid value: \"\": spec.l in body shouldn't contain duplicates "
                 "(FieldValueInvalid)");
    /* nested items keep their indices; a null item gets type and enum only */
    CHECK_CAUSES(OBJ("'l':{'type':'array','items':{'type':'array','items':{'type':'integer'}}}"),
                 "{'spec':{'l':[[1],[2,'x'],null]}}",
                 "spec.l[1][1]: Invalid value: \"string\": spec.l[1][1] in body must be of type "
                 "integer: \"string\" (FieldValueTypeInvalid)\n"
                 "spec.l[2]: Invalid value: \"null\": spec.l[2] in body must be of type array: "
                 "\"null\" (FieldValueTypeInvalid)");
}

TEST(schema_validate_objects)
{
    CHECK_CAUSES(OBJ("'m':{'type':'object','maxProperties':1,'additionalProperties':"
                     "{'type':'string'}}"),
                 "{'spec':{'m':{'a':1,'b':2}}}",
                 "spec.m: Too many: 2: must have at most 1 items (FieldValueTooMany)");
    CHECK_CAUSES(OBJ("'m':{'type':'object','minProperties':1}"), "{'spec':{'m':{}}}",
                 "spec.m: Invalid value: 0: spec.m in body should have at least 1 properties "
                 "(FieldValueInvalid)");
    CHECK_CAUSES(OBJ("'m':{'type':'object','additionalProperties':{'type':'string'}}"),
                 "{'spec':{'m':{'a':1,'b':'x','c':true}}}",
                 "spec.m.a: Invalid value: \"integer\": spec.m.a in body must be of type string: "
                 "\"integer\" (FieldValueTypeInvalid)\n"
                 "spec.m.c: Invalid value: \"boolean\": spec.m.c in body must be of type string: "
                 "\"boolean\" (FieldValueTypeInvalid)");
    CHECK_CAUSES("{'type':'object','properties':{'a':{}},'additionalProperties':false}",
                 "{'a':1,'b':2}",
                 "<nil>: Invalid value: \"b\": .b in body is a forbidden property "
                 "(FieldValueInvalid)");
    CHECK_CAUSES(OBJ("'o':{'type':'object','properties':{'a':{}},'additionalProperties':false}"),
                 "{'spec':{'o':{'zz':1}}}",
                 "spec.o: Invalid value: \"zz\": spec.o.zz in body is a forbidden property "
                 "(FieldValueInvalid)");
    CHECK_CAUSES("{'type':'object','required':['spec'],'properties':{'spec':{'type':'object',"
                 "'required':['a','b'],'properties':{'a':{},'b':{}}}}}",
                 "{}", "spec: Required value (FieldValueRequired)");
    CHECK_CAUSES("{'type':'object','required':['spec'],'properties':{'spec':{'type':'object',"
                 "'required':['a','b'],'properties':{'a':{},'b':{}}}}}",
                 "{'spec':{'b':null}}", "spec.a: Required value (FieldValueRequired)");
}

TEST(schema_validate_combinators)
{
    CHECK_CAUSES(OBJ("'x':{'type':'integer','oneOf':[{'minimum':5},{'maximum':2}]}"),
                 "{'spec':{'x':3}}",
                 "<nil>: Invalid value: \"\": \"spec.x\" must validate one and only one schema "
                 "(oneOf). Found none valid (FieldValueInvalid)\n"
                 "spec.x: Invalid value: 3: spec.x in body should be greater than or equal to 5 "
                 "(FieldValueInvalid)");
    CHECK_CAUSES(OBJ("'x':{'type':'integer','oneOf':[{'minimum':1},{'maximum':5}]}"),
                 "{'spec':{'x':3}}",
                 "<nil>: Invalid value: \"\": \"spec.x\" must validate one and only one schema "
                 "(oneOf). Found 2 valid alternatives (FieldValueInvalid)");
    CHECK_CAUSES(OBJ("'x':{'type':'integer','allOf':[{'minimum':5},{'maximum':2}]}"),
                 "{'spec':{'x':3}}",
                 "spec.x: Invalid value: 3: spec.x in body should be greater than or equal to 5 "
                 "(FieldValueInvalid)\n"
                 "spec.x: Invalid value: 3: spec.x in body should be less than or equal to 2 "
                 "(FieldValueInvalid)\n"
                 "<nil>: Invalid value: \"\": \"spec.x\" must validate all the schemas (allOf). "
                 "None validated (FieldValueInvalid)");
    CHECK_CAUSES(OBJ("'x':{'type':'integer','allOf':[{'minimum':5},{'maximum':9}]}"),
                 "{'spec':{'x':3}}",
                 "spec.x: Invalid value: 3: spec.x in body should be greater than or equal to 5 "
                 "(FieldValueInvalid)\n"
                 "<nil>: Invalid value: \"\": \"spec.x\" must validate all the schemas (allOf) "
                 "(FieldValueInvalid)");
    CHECK_CAUSES(OBJ("'x':{'type':'integer','not':{'minimum':5}}"), "{'spec':{'x':7}}",
                 "<nil>: Invalid value: \"\": \"spec.x\" must not validate the schema (not) "
                 "(FieldValueInvalid)");
    /* anyOf reports the branch with the most matches (here the one that checked more) */
    CHECK_CAUSES(OBJ("'x':{'anyOf':[{'type':'string'},{'type':'integer','minimum':5}]}"),
                 "{'spec':{'x':3}}",
                 "<nil>: Invalid value: \"\": \"spec.x\" must validate at least one schema "
                 "(anyOf) (FieldValueInvalid)\n"
                 "spec.x: Invalid value: 3: spec.x in body should be greater than or equal to 5 "
                 "(FieldValueInvalid)");
    CHECK_CAUSES("{'anyOf':[{'type':'string'}]}", "1",
                 "<nil>: Invalid value: \"\": \"\" must validate at least one schema (anyOf) "
                 "(FieldValueInvalid)\n"
                 "<nil>: Invalid value: \"integer\":  in body must be of type string: "
                 "\"integer\" (FieldValueTypeInvalid)");
    /* the same error twice is reported once (kube-openapi's Result de-duplicates) */
    CHECK_CAUSES(OBJ("'x':{'type':'integer','minimum':5,'allOf':[{'minimum':5}]}"),
                 "{'spec':{'x':3}}",
                 "spec.x: Invalid value: 3: spec.x in body should be greater than or equal to 5 "
                 "(FieldValueInvalid)\n"
                 "<nil>: Invalid value: \"\": \"spec.x\" must validate all the schemas (allOf). "
                 "None validated (FieldValueInvalid)");
}

TEST(schema_validate_list_types)
{
    const char *set = OBJ("'tags':{'type':'array','x-kubernetes-list-type':'set','items':{}}");
    CHECK_CAUSES(set, "{'spec':{'tags':['a','b','a','a','b',1,1.0,{'k':1},{'k':1.0}]}}",
                 "spec.tags[2]: Duplicate value: \"a\" (FieldValueDuplicate)\n"
                 "spec.tags[4]: Duplicate value: \"b\" (FieldValueDuplicate)\n"
                 "spec.tags[8]: Duplicate value: map[string]interface {}{\"k\":1} "
                 "(FieldValueDuplicate)");
    const char *map =
        OBJ("'ports':{'type':'array','x-kubernetes-list-type':'map',"
            "'x-kubernetes-list-map-keys':['name','proto'],'items':{'type':'object'}}");
    CHECK_CAUSES(map,
                 "{'spec':{'ports':[{'name':'a','proto':'TCP','n':1},{'name':'a','proto':'UDP'},"
                 "{'name':'a','proto':'TCP','n':2},{},null]}}",
                 "spec.ports[4]: Invalid value: \"null\": spec.ports[4] in body must be of type "
                 "object: \"null\" (FieldValueTypeInvalid)\n"
                 "spec.ports[2]: Duplicate value: map[string]interface {}{\"name\":\"a\", "
                 "\"proto\":\"TCP\"} (FieldValueDuplicate)\n"
                 "spec.ports[4]: Duplicate value: map[string]interface {}{} (FieldValueDuplicate)");
    const char *one = OBJ("'ports':{'type':'array','x-kubernetes-list-type':'map',"
                          "'x-kubernetes-list-map-keys':['name'],'items':{'type':'object'}}");
    CHECK_CAUSES(one, "{'spec':{'ports':[{'port':1},{'name':null},{'name':null},{'port':2}]}}",
                 "spec.ports[2]: Duplicate value: map[string]interface {}{\"name\":interface "
                 "{}(nil)} (FieldValueDuplicate)\n"
                 "spec.ports[3]: Duplicate value: map[string]interface {}{} (FieldValueDuplicate)");
    CHECK_CAUSES(OBJ("'ports':{'type':'array','x-kubernetes-list-type':'map',"
                     "'x-kubernetes-list-map-keys':['name']}"),
                 "{'spec':{'ports':[{'name':'a'},'x',{'name':'a'}]}}",
                 "spec.ports[1]: Invalid value: \"x\": must be an object for an array of "
                 "list-type map (FieldValueInvalid)");
    /* list types are checked after schema validation, through maps by key */
    CHECK_CAUSES(OBJ("'m':{'type':'object','additionalProperties':{'type':'array',"
                     "'x-kubernetes-list-type':'set','items':{'type':'integer'}}}"),
                 "{'spec':{'m':{'k':[1,'x',1]}}}",
                 "spec.m.k[1]: Invalid value: \"string\": spec.m.k[1] in body must be of type "
                 "integer: \"string\" (FieldValueTypeInvalid)\n"
                 "spec.m[k][2]: Duplicate value: 1 (FieldValueDuplicate)");
}

/* A list-type set longer than 64 items goes through the hashed index. */
TEST(schema_validate_long_sets)
{
    kapi_schema_root *root = compile_q("{'type':'array','x-kubernetes-list-type':'set'}");
    json_t *arr = json_array();
    for (int i = 0; i < 300; i++)
        json_array_append_new(arr, i % 100 == 7 ? json_integer(7) : json_integer(i));
    json_array_append_new(arr, json_real(8.0)); /* a float64 is not the int64 8 */
    json_array_append_new(arr, json_integer(250));
    json_t *obj = json_pack("{s:o}", "l", arr);
    kapi_schema_root *top = compile_q("{'type':'object','properties':{'l':"
                                      "{'type':'array','x-kubernetes-list-type':'set'}}}");
    kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "invalid");
    kapi_schema_validate(kapi_schema_root_node(top), obj, "", err);
    char *got = causes_text(err);
    CHECK_STR_EQ(got, "l[107]: Duplicate value: 7 (FieldValueDuplicate)\n"
                      "l[301]: Duplicate value: 250 (FieldValueDuplicate)");
    free(got);
    kapi_error_free(err);
    json_decref(obj);
    kapi_schema_root_free(top);
    kapi_schema_root_free(root);
}

/* ---- patterns: Go's regexp (base/regex.h), compiled with the schema ---- */

static void check_pattern(int line, const char *pattern, const char *value, bool want)
{
    json_t *src = json_pack("{s:s,s:s}", "type", "string", "pattern", pattern);
    kapi_schema_root *root = NULL;
    kapi_error *err = kapi_schema_compile(src, &root);
    if (err)
        test_fail(__FILE__, line, "pattern %s: %s", pattern, err->message);
    json_t *v = json_string(value);
    err = kapi_error_new(KAPI_STATUS_INVALID, "invalid");
    kapi_schema_validate(kapi_schema_root_node(root), v, "", err);
    if ((err->ncauses == 0) != want)
        test_fail(__FILE__, line, "pattern %s on \"%s\": want %s", pattern, value,
                  want ? "a match" : "no match");
    kapi_error_free(err);
    json_decref(v);
    json_decref(src);
    kapi_schema_root_free(root);
}

#define CHECK_PATTERN(p, v, want) check_pattern(__LINE__, p, v, want)

TEST(schema_validate_patterns)
{
    CHECK_PATTERN("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "my-name", true);
    CHECK_PATTERN("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "-x", false);
    CHECK_PATTERN("^\\d{3}-\\d+$", "123-4", true);
    CHECK_PATTERN("^\\d{3}-\\d+$", "12a-4", false);
    CHECK_PATTERN("^[\\w.\\-]+$", "a_b.c-d", true); /* escapes inside brackets */
    CHECK_PATTERN("^[\\w.\\-]+$", "a\\b", false);   /* not a literal backslash */
    CHECK_PATTERN("^[^\\s]+$", "no-space", true);
    CHECK_PATTERN("^[^\\s]+$", "a b", false);
    CHECK_PATTERN("^[]a]+$", "]a]", true); /* a leading ] is literal */
    CHECK_PATTERN("^[\\^\\]\\[-]+$", "^][-", true);
    CHECK_PATTERN("^(?:ab)+$", "abab", true);
    CHECK_PATTERN("^(?P<x>a)b$", "ab", true);
    CHECK_PATTERN("^a.*?b$", "axxb", true); /* lazy: the same matches */
    CHECK_PATTERN("^.$", "\xc3\xa9", true); /* one character, two bytes */
    CHECK_PATTERN("^.$", "\n", false);      /* . does not match a newline */
    CHECK_PATTERN("(?s)^.$", "\n", true);
    CHECK_PATTERN("(?i)^abc$", "ABC", true);
    CHECK_PATTERN("^a{2}$", "aa", true);
    CHECK_PATTERN("^a{,2}$", "a{,2}", true); /* not a repetition: literal */
    CHECK_PATTERN("^\\x41\\x{42}\\103$", "ABC", true);
    CHECK_PATTERN("^\\Qa.b\\E$", "a.b", true);
    CHECK_PATTERN("^\\Qa.b\\E$", "axb", false);
    CHECK_PATTERN("^[[:alpha:]]+$", "abc", true);
    CHECK_PATTERN("^[[:alpha:]]+$", "\xc3\xa9", false); /* ASCII, as in RE2 */
    CHECK_PATTERN("^\\$\\{[a-z]+\\}$", "${var}", true);
    CHECK_PATTERN("a+", "xaay", true); /* not anchored */
    CHECK_PATTERN("^[\\x{e9}-\\x{ea}]$", "\xc3\xaa", true);
    CHECK_PATTERN("^\\pL+$", "h\xc3\xa9llo", true); /* Unicode classes */
    CHECK_PATTERN("^\\pL+$", "a1", false);
    CHECK_PATTERN("^\\p{Greek}$", "\xce\xbb", true);
    CHECK_PATTERN("^\\d$", "\xd9\xa3", false); /* \\d is ASCII, as in Go */
    CHECK_PATTERN("^\xc3\xa9t\xc3\xa9$", "\xc3\xa9t\xc3\xa9", true);
    CHECK_PATTERN("(((a{0,10}){0,10}){0,10})b", "aaab", true); /* a product of 1000 */
}

/* A value holding NUL is matched whole, not up to the NUL. */
TEST(schema_validate_pattern_nul)
{
    json_t *src = json_pack("{s:s,s:s}", "type", "string", "pattern", "^a$");
    kapi_schema_root *root = NULL;
    CHECK(kapi_schema_compile(src, &root) == NULL);
    json_t *v = json_stringn("a\0b", 3);
    kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "invalid");
    kapi_schema_validate(kapi_schema_root_node(root), v, "", err);
    CHECK_INT_EQ(err->ncauses, 1);
    kapi_error_free(err);
    json_decref(v);
    json_decref(src);
    kapi_schema_root_free(root);
}

/* A schema made for one request's decode walk compiles no pattern: a request never pays
 * for compiling one (and a pattern is no error there). */
TEST(schema_compile_walk_leaves_patterns_out)
{
    json_t *src = parse_q("{'type':'object','properties':{'a':{'type':'string','pattern':'['},"
                          "'b':{'type':'string','pattern':'^x$'}}}");
    kapi_schema_root *root = NULL;
    kapi_error *err = kapi_schema_compile_walk(src, &root);
    CHECK(err == NULL && root != NULL);
    const kapi_schema *n = kapi_schema_root_node(root);
    CHECK_INT_EQ(n->nprops, 2);
    for (size_t i = 0; i < n->nprops; i++)
        CHECK(n->props[i].schema->pattern == NULL && n->props[i].schema->pattern_re == NULL);
    kapi_schema_root_free(root);
    err = kapi_schema_compile(src, &root);
    CHECK(err != NULL && root == NULL);
    kapi_error_free(err);
    json_decref(src);
}

TEST(schema_compile_rejects_what_is_not_structural)
{
    static const struct {
        const char *schema, *message;
    } cases[] = {
        {"{'type':'object','properties':{'a':{'$ref':'#/definitions/x'}}}",
         "properties.a.$ref: $ref is not supported"},
        {"{'type':'object','patternProperties':{'^a':{}}}",
         "patternProperties: patternProperties is not supported"},
        {"{'properties':{'a':{'dependencies':{'b':['c']}}}}",
         "properties.a.dependencies: dependencies is not supported"},
        {"{'type':'array','items':[{'type':'string'}]}",
         "items: items must be a schema object and not an array"},
        {"{'type':'array','items':{'additionalItems':false}}",
         "items.additionalItems: additionalItems is not supported"},
        {"{'definitions':{}}", "definitions: definitions is not supported"},
        {"{'type':['string','null']}", "type: must be a string"},
        {"{'type':'object','properties':{'a':{'type':'null'}}}",
         "properties.a.type: type cannot be set to null, use nullable as an alternative"},
        {"{'type':'string','pattern':'^(a$'}",
         "pattern: must be a valid regular expression, but isn't: error parsing regexp: missing "
         "closing ): `^(a$`"},
        {"{'type':'string','pattern':'(((a{0,20}){0,20}){0,20}){0,20}'}",
         "pattern: must be a valid regular expression, but isn't: error parsing regexp: invalid "
         "repeat count: `{0,20}`"},
        {"{'type':'string','pattern':'['}",
         "pattern: must be a valid regular expression, but isn't: error parsing regexp: missing "
         "closing ]: `[`"},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        json_t *src = parse_q(cases[i].schema);
        kapi_schema_root *root = NULL;
        kapi_error *err = kapi_schema_compile(src, &root);
        CHECK(err && !root);
        CHECK_STR_EQ(err->message, cases[i].message);
        kapi_error_free(err);
        json_decref(src);
    }
}

/* ---- the formats (strfmt.c), each as its Go function answers ---- */

TEST(schema_formats)
{
    static const struct {
        const char *format, *value;
        bool valid;
    } cases[] = {
        {"bsonobjectid", "507f1f77bcf86cd799439011", true},
        {"bsonobjectid", "507f1f77bcf86cd79943901", false},
        {"byte", "aGVsbG8=", true},
        {"byte", "aGVsbG8", false},
        {"byte", "", false}, /* govalidator's pattern wants one quantum */
        {"cidr", "10.0.0.0/8", true},
        {"cidr", "010.0.0.0/8", true}, /* ParseCIDRSloppy */
        {"cidr", "fd00::/129", false},
        {"cidr", "10.0.0.0", false},
        {"creditcard", "4111 1111 1111 1111", true},
        {"creditcard", "4111 1111 1111 1112", false},
        {"date", "2024-02-29", true},
        {"date", "2023-02-29", false},
        {"date", "2024-2-01", false},
        {"date-time", "2024-01-02T03:04:05Z", true},
        {"datetime", "2024-01-02t03:04:05.123456+05:30", true},
        {"date-time", "2024-01-02T24:00:00Z", false},
        {"date-time", "2024-01-02T03:04:05", false},
        {"date-time", "2024-01-02T03:04:05x9Z", true}, /* the pattern's '.' is any character */
        {"duration", "1h30m", true},
        {"duration", "3 days", true}, /* strfmt's own units */
        {"duration", "-1.5\xc2\xb5s", true},
        {"duration", "forever", false},
        {"duration", "1x", false},
        {"email", "joe@example.com", true},
        {"email", "Joe <joe@example.com>", true},
        {"email", "joe@", false},
        {"email", "a..b@example.com", false},
        {"hexcolor", "#ABCDEF", true},
        {"hexcolor", "abc", true},
        {"hexcolor", "#abcd", false},
        {"hostname", "example.com", true},
        {"hostname", "a-b", true},
        {"hostname", "a-b-c", false}, /* one dash, after the first character, in a single label */
        {"hostname", "a-b-c.com", true},
        {"hostname", "example.c", false},
        {"ipv4", "192.168.0.1", true},
        {"ipv4", "192.168.000.001", true}, /* ParseIPSloppy */
        {"ipv4", "256.1.1.1", false},
        {"ipv4", "::1", false},
        {"ipv6", "::1", true},
        {"ipv6", "2001:db8::1:2:3:4:5", true},
        {"ipv6", "::ffff:1.2.3.4", true},
        {"ipv6", "::ffff:01.2.3.4", false}, /* Go's ParseIP rejects leading zeros */
        {"ipv6", "1:2:3:4:5:6:7:8:9", false},
        {"ipv6", "1::2::3", false},
        {"isbn", "978-0321751041", true},
        {"isbn10", "0321751043", true},
        {"isbn13", "9780321751041", true},
        {"isbn10", "0321751044", false},
        {"mac", "01:23:45:67:89:ab", true},
        {"mac", "0123.4567.89ab", true},
        {"mac", "01:23:45-67:89:ab", false},
        {"password", "", true},
        {"rgbcolor", "rgb(255, 0, 10)", true},
        {"rgbcolor", "rgb(256,0,0)", false},
        {"ssn", "123-45-6789", true},
        {"ssn", "123456789", false},
        {"uri", "https://example.com/a?b#c", true},
        {"uri", "mailto:joe@example.com", true},
        {"uri", "/just/a/path", true},
        {"uri", "relative/path", false},
        {"uri", "http://exa mple.com/", false},
        {"uri", "http://example.com:80x/", false},
        {"uri", "http://example.com/%zz", false},
        {"uuid", "123e4567-e89b-12d3-a456-426614174000", true},
        {"uuid", "123E4567E89B12D3A456426614174000", true},
        {"uuid3", "123e4567-e89b-32d3-a456-426614174000", true},
        {"uuid4", "123e4567-e89b-42d3-c456-426614174000", false},
        {"uuid5", "123e4567-e89b-52d3-a456-426614174000", true},
    };
    for (size_t i = 0; i < KAPI_ARRAY_LEN(cases); i++) {
        int id = kapi_schema__format_id(cases[i].format);
        if (id < 0)
            test_fail(__FILE__, __LINE__, "format %s is not checked", cases[i].format);
        bool got = kapi_schema__format_check(id, cases[i].value, strlen(cases[i].value));
        if (got != cases[i].valid)
            test_fail(__FILE__, __LINE__, "%s \"%s\": want %s", cases[i].format, cases[i].value,
                      cases[i].valid ? "valid" : "invalid");
    }
    /* what apiextensions does not support is not checked */
    static const char *const unchecked[] = {"int32",         "int64", "float", "double",
                                            "uri-reference", "regex", "UUID",  "iso8601"};
    for (size_t i = 0; i < KAPI_ARRAY_LEN(unchecked); i++)
        CHECK(kapi_schema__format_id(unchecked[i]) < 0);
}

/* ---- Go's printing (codec/go.h) ---- */

static char *go(void (*fn)(kapi_buf *, const json_t *), const char *json)
{
    json_t *v = parse_q(json);
    kapi_buf b;
    kapi_buf_init(&b);
    fn(&b, v);
    json_decref(v);
    return kapi_buf_detach(&b, NULL);
}

#define CHECK_GO(fn, json, want)                                                                   \
    do {                                                                                           \
        char *got_ = go(fn, json);                                                                 \
        CHECK_STR_EQ(got_, want);                                                                  \
        free(got_);                                                                                \
    } while (0)

TEST(schema_go_printing)
{
    CHECK_GO(kapi_go_value, "'a\\nb\\u00e9\\u00a0\\u0001\\u0022'",
             "\"a\\nb\xc3\xa9\\u00a0\\x01\\\"\"");
    CHECK_GO(kapi_go_value, "1.5", "1.5");
    CHECK_GO(kapi_go_value, "100000.5", "100000.5");
    CHECK_GO(kapi_go_value, "1e6", "1e+06");
    CHECK_GO(kapi_go_value, "123456789.5", "1.234567895e+08");
    CHECK_GO(kapi_go_value, "0.00001", "1e-05");
    CHECK_GO(kapi_go_value, "0.0001", "0.0001");
    CHECK_GO(kapi_go_value, "-0.0", "-0");
    CHECK_GO(kapi_go_value, "9007199254740993", "9007199254740993");
    CHECK_GO(kapi_go_value, "null", "\"null\"");
    CHECK_GO(kapi_go_value, "{'b':[1,'x',null,{}],'a':true}",
             "map[string]interface {}{\"a\":true, \"b\":[]interface {}{1, \"x\", interface "
             "{}(nil), map[string]interface {}{}}}");
    CHECK_GO(kapi_go_json, "{'b':1e21,'a':'<&>','c':1e-7,'d':2.0}",
             "{\"a\":\"\\u003c\\u0026\\u003e\",\"b\":1e+21,\"c\":1e-7,\"d\":2}");
    CHECK_GO(kapi_go_json, "[1e20,0.000001,'\\u2028']",
             "[100000000000000000000,0.000001,\"\\u2028\"]");
}

/* An int64 converts to the string of its code point when matched against a string enum
 * (reflect's Convert), as in kube-apiserver. */
TEST(schema_validate_enum_int_as_rune)
{
    CHECK_CAUSES("{'enum':['A','\\u00e9','\\u20ac','\\ud83d\\ude00','\\ufffd']}", "65", "");
    CHECK_CAUSES("{'enum':['\\u00e9']}", "233", "");
    CHECK_CAUSES("{'enum':['\\u20ac']}", "8364", "");
    CHECK_CAUSES("{'enum':['\\ud83d\\ude00']}", "128512", "");
    CHECK_CAUSES("{'enum':['\\ufffd']}", "-1", "");
    CHECK_CAUSES("{'enum':['B']}", "65",
                 "<nil>: Unsupported value: 65: supported values: \"B\" (FieldValueNotSupported)");
}

/* objectmeta.Validate: embedded resources, wherever the schema puts them. */
TEST(schema_validate_embedded)
{
#define EMBEDDED                                                                                   \
    "{'type':'object','x-kubernetes-embedded-resource':true,"                                      \
    "'x-kubernetes-preserve-unknown-fields':true}"
    const char *one = OBJ("'t':" EMBEDDED);
    CHECK_EMBEDDED(one, "{'spec':{'t':{'apiVersion':'v1','kind':'ConfigMap','metadata':{}}}}", "");
    CHECK_EMBEDDED(one, "{'spec':{'t':{}}}",
                   "spec.t.apiVersion: Required value: must not be empty (FieldValueRequired)\n"
                   "spec.t.kind: Required value: must not be empty (FieldValueRequired)");
    CHECK_EMBEDDED(one, "{'spec':{'t':{'apiVersion':'a/b/c','kind':'','metadata':{'name':'..'}}}}",
                   "spec.t.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: "
                   "a/b/c (FieldValueInvalid)\n"
                   "spec.t.kind: Invalid value: \"\": must not be empty (FieldValueInvalid)\n"
                   "spec.t.metadata.name: Invalid value: \"..\": may not be '..' "
                   "(FieldValueInvalid)");
    CHECK_EMBEDDED(one, "{'spec':{'t':{'apiVersion':1,'kind':'foo.bar'}}}",
                   "spec.t.apiVersion: Invalid value: 1: must be a string (FieldValueInvalid)\n"
                   "spec.t.kind: Invalid value: \"foo.bar\": may have mixed case, but should "
                   "otherwise match: a DNS-1035 label must consist of lower case alphanumeric "
                   "characters or '-', start with an alphabetic character, and end with an "
                   "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
                   "validation is '[a-z]([-a-z0-9]*[a-z0-9])?') (FieldValueInvalid)");
    /* in a list's items and a map's values; a name of any path segment is fine */
    CHECK_EMBEDDED(OBJ("'l':{'type':'array','items':" EMBEDDED "},"
                       "'m':{'type':'object','additionalProperties':" EMBEDDED "}"),
                   "{'spec':{'l':[{'apiVersion':'v1','kind':'A','metadata':{'name':'X_Y'}},"
                   "{'apiVersion':'v1'}],'m':{'k':{'kind':'B','metadata':{'namespace':'N'}}}}}",
                   "spec.l[1].kind: Required value: must not be empty (FieldValueRequired)\n"
                   "spec.m[k].apiVersion: Required value: must not be empty "
                   "(FieldValueRequired)\n"
                   "spec.m[k].metadata.namespace: Invalid value: \"N\": a lowercase RFC 1123 "
                   "label must consist of lower case alphanumeric characters or '-', and must "
                   "start and end with an alphanumeric character (e.g. 'my-name',  or "
                   "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?') "
                   "(FieldValueInvalid)");
#undef EMBEDDED
}
