/*
 * registry/validate_apiextensions: the CustomResourceDefinition object's own rules as
 * apiextensions-apiserver 1.26 checks them (ValidateCustomResourceDefinition and
 * ValidateCustomResourceDefinitionUpdate): name = <plural>.<group>, group, scope, the
 * per-version schema requirement, versions (DNS-1035 names, unique, exactly one storage
 * version, deprecation warnings), subresources, printer columns, names, conversion
 * (None/Webhook, the webhook URL or service, review versions), status.storedVersions,
 * the api-approved.kubernetes.io rule of protected groups, preserveUnknownFields.
 *
 * The rules of openAPIV3Schema itself (structural schemas, defaults, list and map types)
 * are the schema engine's (kapi_schema_crd_check); the root-level ones of a status-enabled
 * schema are checked here.
 *
 * Kubernetes validates the internal form of the CRD, which the v1 object converts to:
 * when every version has the same schema (or subresources, or printer columns) it is
 * moved to spec.validation (spec.subresources, spec.additionalPrinterColumns), spec.version
 * is versions[0].name, and the conversion webhook's fields are
 * spec.conversion.webhookClientConfig and spec.conversion.conversionReviewVersions. 1.26
 * names those internal fields in its causes and dumps internal values with Go's %#v. kapi
 * keeps 1.26's rules, reasons, wording and cause order but answers in the client's terms:
 *
 * - Paths are the public apiextensions.k8s.io/v1 ones. What 1.26 checks once at the top
 *   level is reported, at the same place in the order, for every version that carries it
 *   (spec.versions[i].schema.openAPIV3Schema..., spec.versions[i].subresources...,
 *   spec.versions[i].additionalPrinterColumns[j].jsonPath); the webhook's fields are
 *   spec.conversion.webhook.clientConfig and spec.conversion.webhook.conversionReviewVersions;
 *   the duplicate spec.version cause is dropped (spec.versions[0].name carries it).
 * - Values: scalars are shown as Go shows them (strings quoted, numbers and booleans bare),
 *   which is what the client wrote. A list or a version, which 1.26 dumps as a Go struct
 *   or slice, is shown as compact JSON of what the object holds: a list as the JSON array
 *   (an absent one as null, an empty one as []), a version by its name as a JSON string,
 *   and so the versions list as the JSON array of the names (["v1","v2"]). Never a Go type
 *   name or a pointer.
 *
 * The v1 defaults (singular = lowercased kind, listKind = kind + "List", conversion
 * None, service port 443) are applied here when absent.
 */
#include <stdlib.h>

#include "base/regex.h"
#include "codec/go.h"
#include "codec/json.h"
#include "registry/registry_int.h"

#define APPROVAL_ANNOTATION "api-approved.kubernetes.io"

typedef struct cctx {
    kapi_error *err;
    kapi_arena *a;
    const json_t *spec;
    /* what the conversion to the internal form moved to the top level (checked where
     * 1.26 checks it, reported per version) */
    bool hoist_schema, hoist_subresources, hoist_columns;
    bool require_schema, require_recognized_review;
    kapi_schema_crd_rules rules; /* which schema rules the stored CRD lets apply */
} cctx;

static const char *P(cctx *c, const char *parent, const char *name)
{
    return kapi_path_child(c->a, parent, name);
}

/* The messages of a rule joined with "," (Go's strings.Join(errs, ",")); NULL if valid. */
static char *joined(size_t (*rule)(const char *, const char **), const char *v)
{
    const char *msgs[KAPI_MSGS_MAX];
    size_t n = rule(v, msgs);
    if (n == 0)
        return NULL;
    kapi_buf b;
    kapi_buf_init(&b);
    for (size_t i = 0; i < n; i++)
        kapi_buf_printf(&b, "%s%s", i ? "," : "", msgs[i]);
    return kapi_buf_detach(&b, NULL);
}

static void invalid_joined(cctx *c, const char *path, const char *v, const char *prefix,
                           size_t (*rule)(const char *, const char **), const char *checked)
{
    char *msg = joined(rule, checked ? checked : v);
    if (msg)
        kapi_field_invalid_str(c->err, path, v, "%s%s", prefix, msg);
    free(msg);
}

/* ---- the internal form ---- */

static bool member_equal(const json_t *a, const json_t *b)
{
    bool an = !a || json_is_null(a), bn = !b || json_is_null(b);
    return (an && bn) || (!an && !bn && json_equal((json_t *)a, (json_t *)b));
}

/* True when every version has the same member key (all absent counts). */
static bool identical(const json_t *versions, const char *key)
{
    const json_t *first = json_object_get(json_array_get(versions, 0), key);
    for (size_t i = 1; i < json_array_size(versions); i++)
        if (!member_equal(json_object_get(json_array_get(versions, i), key), first))
            return false;
    return true;
}

/* ---- values shown in messages (the rule at the top) ---- */

/* Compact JSON of v, "null" when absent: how a list (or a version) is shown. Heap. */
static char *json_text(const json_t *v)
{
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    if (!s)
        return kapi_xstrdup("null");
    json_free_t jansson_free; /* json_dumps allocates as jansson does (kapi_json_setup) */
    json_get_alloc_funcs(NULL, &jansson_free);
    char *out = kapi_xstrdup(s);
    jansson_free(s);
    return out;
}

/* A version as a value: its name, as a JSON string. Heap. */
static char *version_text(const json_t *v)
{
    json_t *name = json_string(kapi_registry__str(v, "name"));
    char *s = json_text(name);
    json_decref(name);
    return s;
}

/* The versions list as a value: the JSON array of the names (null when absent). Heap. */
static char *versions_text(const json_t *versions)
{
    if (!json_is_array(versions))
        return json_text(NULL);
    json_t *names = json_array();
    for (size_t i = 0; i < json_array_size(versions); i++)
        json_array_append_new(names,
                              json_string(kapi_registry__str(json_array_get(versions, i), "name")));
    char *s = json_text(names);
    json_decref(names);
    return s;
}

/* ---- schema presence ---- */

static bool has_default(const json_t *node)
{
    return json_object_get(node, "default") != NULL;
}

static bool spec_has_defaults(const json_t *spec)
{
    const json_t *versions = json_object_get(spec, "versions");
    for (size_t i = 0; i < json_array_size(versions); i++)
        if (kapi_schema_crd_has(
                json_object_get(json_object_get(json_array_get(versions, i), "schema"),
                                "openAPIV3Schema"),
                has_default))
            return true;
    return false;
}

/* validateCustomResourceDefinitionValidation: the root rules of a status-enabled schema,
 * then the schema's own (kapi_schema_crd_check). */
static void validation_rules(cctx *c, const json_t *validation, bool status, const char *path)
{
    const json_t *schema = json_object_get(validation, "openAPIV3Schema");
    if (!json_is_object(schema))
        return;
    const char *type = kapi_registry__str(schema, "type");
    if (status && *type && strcmp(type, "object") != 0)
        kapi_field_invalid_str(c->err, P(c, path, "openAPIV3Schema.type"), type,
                               "only \"object\" is allowed as the type at the root of the schema "
                               "if the status subresource is enabled");
    if (json_is_true(json_object_get(schema, "nullable")))
        kapi_field_forbidden(c->err, P(c, path, "openAPIV3Schema.nullable"),
                             "nullable cannot be true at the root");
    kapi_schema_crd_check(schema, P(c, path, "openAPIV3Schema"), &c->rules, c->err);
}

/* ---- subresources, columns, names ---- */

static void simple_json_path(cctx *c, const char *s, const char *path, bool *bad)
{
    *bad = true;
    if (!*s)
        kapi_field_invalid_str(c->err, path, s, "must not be empty");
    else if (s[0] != '.')
        kapi_field_invalid_str(c->err, path, s, "must be a simple json path starting with .");
    else
        *bad = false;
}

static void scale_path(cctx *c, const json_t *scale, const char *key, const char *under,
                       const char *path)
{
    const char *s = kapi_registry__str(scale, key), *at = P(c, path, key);
    bool bad;
    if (!*s) {
        kapi_field_required(c->err, at, "");
        return;
    }
    simple_json_path(c, s, at, &bad);
    if (!bad && strncmp(s, under, strlen(under)) != 0)
        kapi_field_invalid_str(c->err, at, s, "should be a json path under %s",
                               strcmp(under, ".spec.") == 0 ? ".spec" : ".status");
}

static void subresources(cctx *c, const json_t *sub, const char *path)
{
    const json_t *scale = json_object_get(sub, "scale");
    if (!json_is_object(scale))
        return;
    scale_path(c, scale, "specReplicasPath", ".spec.", P(c, path, "scale"));
    scale_path(c, scale, "statusReplicasPath", ".status.", P(c, path, "scale"));
    const char *sel = kapi_registry__str(scale, "labelSelectorPath");
    if (*sel) {
        const char *at = P(c, P(c, path, "scale"), "labelSelectorPath");
        bool bad;
        simple_json_path(c, sel, at, &bad);
        if (!bad && strncmp(sel, ".spec.", 6) != 0 && strncmp(sel, ".status.", 8) != 0)
            kapi_field_invalid_str(c->err, at, sel,
                                   "should be a json path under either .spec or .status");
    }
}

static void column(cctx *c, const json_t *col, const char *path)
{
    static const char *const types[] = {"boolean", "date", "integer", "number", "string", NULL};
    static const char *const formats[] = {"byte",  "date",  "date-time", "double", "float",
                                          "int32", "int64", "password",  NULL};
    const char *type = kapi_registry__str(col, "type"), *format = kapi_registry__str(col, "format");
    const char *jp = kapi_registry__str(col, "jsonPath");
    const char *types_msg = "must be one of boolean,date,integer,number,string";
    if (!*kapi_registry__str(col, "name"))
        kapi_field_required(c->err, P(c, path, "name"), "");
    if (!*type)
        kapi_field_required(c->err, P(c, path, "type"), types_msg);
    else if (!kapi_cstr_in(type, types))
        kapi_field_invalid_str(c->err, P(c, path, "type"), type, "%s", types_msg);
    if (*format && !kapi_cstr_in(format, formats))
        kapi_field_invalid_str(c->err, P(c, path, "format"), format,
                               "must be one of byte,date,date-time,double,float,int32,int64,"
                               "password");
    bool bad;
    if (!*jp)
        kapi_field_required(c->err, P(c, path, "jsonPath"), "");
    else
        simple_json_path(c, jp, P(c, path, "jsonPath"), &bad);
}

static void columns(cctx *c, const json_t *cols, const char *path)
{
    for (size_t i = 0; i < json_array_size(cols); i++)
        column(c, json_array_get(cols, i), kapi_path_index(c->a, path, i));
}

/* ValidateCustomResourceDefinitionNames; kind and listKind are read with their defaults
 * when default_names is set (spec.names). */
static void names(cctx *c, const json_t *n, const char *path, bool default_names)
{
    const char *plural = kapi_registry__str(n, "plural"),
               *singular = kapi_registry__str(n, "singular");
    const char *kind = kapi_registry__str(n, "kind"), *list = kapi_registry__str(n, "listKind");
    char *lower = kapi_xstrdup(kind), *dflt_list = NULL;
    for (char *p = lower; *p; p++)
        *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    if (default_names && !*singular)
        singular = lower;
    if (default_names && !*list && *kind)
        list = dflt_list = kapi_xprintf("%sList", kind);
    char *list_lower = kapi_xstrdup(list);
    for (char *p = list_lower; *p; p++)
        *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    const char *mixed = "may have mixed case, but should otherwise match: ";
    if (default_names) {
        static const char *const required[] = {"plural", "singular", "kind", "listKind"};
        const char *vals[] = {plural, singular, kind, list};
        for (size_t i = 0; i < KAPI_ARRAY_LEN(required); i++)
            if (!*vals[i])
                kapi_field_required(c->err, P(c, path, required[i]), "");
    }
    if (*plural)
        invalid_joined(c, P(c, path, "plural"), plural, "", kapi_is_dns1035_label, NULL);
    if (*singular)
        invalid_joined(c, P(c, path, "singular"), singular, "", kapi_is_dns1035_label, NULL);
    if (*kind)
        invalid_joined(c, P(c, path, "kind"), kind, mixed, kapi_is_dns1035_label, lower);
    if (*list)
        invalid_joined(c, P(c, path, "listKind"), list, mixed, kapi_is_dns1035_label, list_lower);
    const json_t *shorts = json_object_get(n, "shortNames");
    for (size_t i = 0; i < json_array_size(shorts); i++) {
        const char *s = json_string_value(json_array_get(shorts, i));
        invalid_joined(c, kapi_path_index(c->a, P(c, path, "shortNames"), i), s ? s : "", "",
                       kapi_is_dns1035_label, NULL);
    }
    if (*kind && strcmp(kind, list) == 0)
        kapi_field_invalid_str(c->err, P(c, path, "listKind"), list,
                               "kind and listKind may not be the same");
    const json_t *cats = json_object_get(n, "categories");
    for (size_t i = 0; i < json_array_size(cats); i++) {
        const char *s = json_string_value(json_array_get(cats, i));
        invalid_joined(c, kapi_path_index(c->a, P(c, path, "categories"), i), s ? s : "", "",
                       kapi_is_dns1035_label, NULL);
    }
    free(lower);
    free(list_lower);
    free(dflt_list);
}

/* ---- conversion ---- */

static bool ctl_byte(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

/* The parts of a URL as Go's url.Parse splits it; NULL when it does not parse, with the
 * parse error in *why (heap). */
typedef struct url_parts {
    char *scheme, *user, *host, *query, *fragment;
} url_parts;

static void url_dispose(url_parts *u)
{
    free(u->scheme), free(u->user), free(u->host), free(u->query), free(u->fragment);
}

static bool scheme_char(char ch, bool first)
{
    bool alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
    return first ? alpha : alpha || (ch >= '0' && ch <= '9') || ch == '+' || ch == '-' || ch == '.';
}

/* Splits the authority "user@host:port" (Go's parseAuthority and parseHost). */
static char *parse_authority(url_parts *u, const char *auth, size_t n)
{
    const char *at = NULL;
    for (size_t i = 0; i < n; i++)
        if (auth[i] == '@')
            at = auth + i;
    if (at) {
        u->user = kapi_xstrndup(auth, (size_t)(at - auth));
        n -= (size_t)(at + 1 - auth);
        auth = at + 1;
    }
    u->host = kapi_xstrndup(auth, n);
    const char *colon = NULL;
    if (u->host[0] == '[') {
        char *close = strchr(u->host, ']');
        if (!close)
            return kapi_xstrdup("missing ']' in host");
        colon = close[1] == ':' ? close + 1 : NULL;
    } else {
        colon = strrchr(u->host, ':');
    }
    for (const char *p = colon ? colon + 1 : ""; *p; p++)
        if (*p < '0' || *p > '9')
            return kapi_xprintf("invalid port \"%s\" after host", colon);
    return NULL;
}

static char *parse_url(url_parts *u, const char *raw)
{
    const char *hash = strchr(raw, '#');
    size_t n = hash ? (size_t)(hash - raw) : strlen(raw);
    *u = (url_parts){0};
    if (ctl_byte(raw))
        return kapi_xstrdup("net/url: invalid control character in URL");
    u->fragment = kapi_xstrdup(hash ? hash + 1 : "");
    size_t i = 0;
    while (i < n && scheme_char(raw[i], i == 0))
        i++;
    if (i < n && raw[i] == ':') {
        if (i == 0)
            return kapi_xstrdup("missing protocol scheme");
        u->scheme = kapi_xstrndup(raw, i);
        for (char *p = u->scheme; *p; p++)
            *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        raw += i + 1, n -= i + 1;
    } else {
        if (n > 0 && raw[0] == ':')
            return kapi_xstrdup("missing protocol scheme");
        u->scheme = kapi_xstrdup("");
    }
    const char *q = memchr(raw, '?', n);
    u->query = kapi_xstrndup(q ? q + 1 : "", q ? n - (size_t)(q + 1 - raw) : 0);
    if (q)
        n = (size_t)(q - raw);
    if (!*u->scheme) {
        size_t seg = 0;
        while (seg < n && raw[seg] != '/')
            seg++;
        if (memchr(raw, ':', seg))
            return kapi_xstrdup("first path segment in URL cannot contain colon");
    }
    if (n >= 2 && raw[0] == '/' && raw[1] == '/') {
        const char *auth = raw + 2, *slash = memchr(auth, '/', n - 2);
        return parse_authority(u, auth, slash ? (size_t)(slash - auth) : n - 2);
    }
    return NULL;
}

/* webhook.ValidateWebhookURL with https forced. */
static void webhook_url(cctx *c, const char *raw, const char *path)
{
    const char *form = "; desired format: https://host[/path]";
    url_parts u;
    char *why = parse_url(&u, raw);
    if (why) {
        kapi_buf b;
        kapi_buf_init(&b);
        kapi_buf_puts(&b, "url must be a valid URL: parse ");
        kapi_go_quote(&b, raw, strlen(raw));
        kapi_buf_printf(&b, ": %s%s", why, form);
        kapi_field_required(c->err, path, b.ptr);
        kapi_buf_dispose(&b);
        free(why);
        url_dispose(&u);
        return;
    }
    if (strcmp(u.scheme, "https") != 0)
        kapi_field_invalid_str(c->err, path, u.scheme, "'https' is the only allowed URL scheme%s",
                               form);
    if (!u.host || !*u.host)
        kapi_field_invalid_str(c->err, path, "", "host must be specified%s", form);
    if (u.user)
        kapi_field_invalid_str(c->err, path, u.user,
                               "user information is not permitted in the URL");
    if (*u.fragment)
        kapi_field_invalid_str(c->err, path, u.fragment, "fragments are not permitted in the URL");
    if (*u.query)
        kapi_field_invalid_str(c->err, path, u.query,
                               "query parameters are not permitted in the URL");
    url_dispose(&u);
}

/* webhook.ValidateWebhookService (port defaults to 443). */
static void webhook_service(cctx *c, const json_t *svc, const char *path)
{
    const char *msgs[KAPI_MSGS_MAX];
    long long port = kapi_registry__has(svc, "port") ? kapi_registry__int(svc, "port") : 443;
    if (!*kapi_registry__str(svc, "name"))
        kapi_field_required(c->err, P(c, path, "name"), "service name is required");
    if (!*kapi_registry__str(svc, "namespace"))
        kapi_field_required(c->err, P(c, path, "namespace"), "service namespace is required");
    if (kapi_is_port_num(port, msgs))
        kapi_field_invalid_int(c->err, P(c, path, "port"), port, "port is not valid: %s", msgs[0]);
    if (!kapi_registry__has(svc, "path"))
        return;
    const char *up = kapi_registry__str(svc, "path"), *pp = P(c, path, "path");
    if (!*up || strcmp(up, "/") == 0)
        return;
    if (strcmp(up, "//") == 0) {
        kapi_field_invalid_str(c->err, pp, up, "segment[0] may not be empty");
        return;
    }
    if (up[0] != '/')
        kapi_field_invalid_str(c->err, pp, up, "must start with a '/'");
    char *check = kapi_xstrdup(up + 1);
    size_t len = strlen(check);
    if (len > 0 && check[len - 1] == '/')
        check[len - 1] = '\0';
    char *seg = check;
    for (int i = 0;; i++) {
        char *slash = strchr(seg, '/');
        if (slash)
            *slash = '\0';
        if (!*seg) {
            kapi_field_invalid_str(c->err, pp, up, "segment[%d] may not be empty", i);
        } else {
            size_t n = kapi_is_dns1123_subdomain(seg, msgs);
            for (size_t m = 0; m < n; m++)
                kapi_field_invalid_str(c->err, pp, up, "segment[%d]: %s", i, msgs[m]);
        }
        if (!slash)
            break;
        seg = slash + 1;
    }
    free(check);
}

/* validateConversionReviewVersions */
static void review_versions(cctx *c, const json_t *versions, const char *path)
{
    const char *msgs[KAPI_MSGS_MAX];
    bool accepted = false;
    if (json_array_size(versions) == 0) {
        kapi_field_required(c->err, path, "");
        return;
    }
    for (size_t i = 0; i < json_array_size(versions); i++) {
        const char *v = json_string_value(json_array_get(versions, i));
        const char *at = kapi_path_index(c->a, path, i);
        bool seen = false;
        v = v ? v : "";
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(v, json_string_value(json_array_get(versions, j)) ?: "") == 0;
        if (seen) {
            kapi_field_invalid_str(c->err, at, v, "duplicate version");
            continue;
        }
        size_t n = kapi_is_dns1035_label(v, msgs);
        kapi_field_invalid_each(c->err, at, v, msgs, n);
        accepted = accepted || strcmp(v, "v1") == 0 || strcmp(v, "v1beta1") == 0;
    }
    if (c->require_recognized_review && !accepted) {
        char *shown = json_text(versions);
        kapi_field_invalid_raw(c->err, path, shown, "must include at least one of v1, v1beta1");
        free(shown);
    }
}

/* validateCustomResourceConversion, under the v1 paths of the webhook's fields. */
static void conversion(cctx *c, const json_t *conv, const char *path)
{
    static const char *const strategies[] = {"None", "Webhook", NULL};
    const char *strategy = conv ? kapi_registry__str(conv, "strategy") : "None";
    const json_t *hook = json_object_get(conv, "webhook");
    const json_t *cc = json_object_get(hook, "clientConfig");
    const json_t *reviews = json_object_get(hook, "conversionReviewVersions");
    const char *hpath = P(c, path, "webhook"), *cpath = P(c, hpath, "clientConfig");
    const char *not_webhook = "should not be set when strategy is not set to Webhook";
    if (!*strategy)
        kapi_field_required(c->err, P(c, path, "strategy"), "");
    else if (!kapi_cstr_in(strategy, strategies))
        kapi_field_not_supported(c->err, P(c, path, "strategy"), strategy, strategies);
    if (strcmp(strategy, "Webhook") != 0) {
        if (cc && !json_is_null(cc))
            kapi_field_forbidden(c->err, cpath, not_webhook);
        if (json_array_size(reviews) > 0)
            kapi_field_forbidden(c->err, P(c, hpath, "conversionReviewVersions"), not_webhook);
        return;
    }
    if (!cc || json_is_null(cc))
        kapi_field_required(c->err, cpath, "required when strategy is set to Webhook");
    else if (kapi_registry__has(cc, "url") == kapi_registry__has(cc, "service"))
        kapi_field_required(c->err, cpath, "exactly one of url or service is required");
    else if (kapi_registry__has(cc, "url"))
        webhook_url(c, kapi_registry__str(cc, "url"), P(c, cpath, "url"));
    else
        webhook_service(c, json_object_get(cc, "service"), P(c, cpath, "service"));
    review_versions(c, reviews, P(c, hpath, "conversionReviewVersions"));
}

/* ---- versions and the spec ---- */

static void deprecation_warning(cctx *c, const json_t *v, const char *path)
{
    const json_t *dw = json_object_get(v, "deprecationWarning");
    if (!dw || json_is_null(dw))
        return;
    const char *s = json_string_value(dw) ?: "";
    const char *at = P(c, path, "deprecationWarning");
    if (!json_is_true(json_object_get(v, "deprecated"))) {
        kapi_field_invalid_str(c->err, at, s, "can only be set for deprecated versions");
        return;
    }
    if (strlen(s) > 256)
        kapi_field_invalid_str(c->err, at, s, "must be <= 256 characters long");
    if (!*s)
        kapi_field_invalid_str(c->err, at, s, "must not be an empty string");
    for (size_t i = 0; s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f) {
            kapi_field_invalid_str(c->err, at, s,
                                   "must only contain printable UTF-8 characters; non-printable "
                                   "character found at index %zu",
                                   i);
            break;
        }
    }
}

static bool status_enabled(const json_t *sub)
{
    return json_is_object(sub) && kapi_registry__has(sub, "status");
}

/* The schema, subresources and printer-column rules of version v at path: those 1.26
 * checks per version (hoisted false) or those it checks once at the top level (true). */
static void version_parts(cctx *c, const json_t *v, const char *path, bool hoisted)
{
    const json_t *sub = json_object_get(v, "subresources");
    if (c->hoist_schema == hoisted)
        validation_rules(c, json_object_get(v, "schema"), status_enabled(sub),
                         P(c, path, "schema"));
    if (c->hoist_subresources == hoisted)
        subresources(c, sub, P(c, path, "subresources"));
    if (c->hoist_columns == hoisted)
        columns(c, json_object_get(v, "additionalPrinterColumns"),
                P(c, path, "additionalPrinterColumns"));
}

/* validateCustomResourceDefinitionVersion */
static void version_rules(cctx *c, const json_t *v, const char *path)
{
    deprecation_warning(c, v, path);
    version_parts(c, v, path, false);
}

static void versions(cctx *c, const json_t *vs, const char *path)
{
    size_t storage = 0;
    bool unique = true;
    for (size_t i = 0; i < json_array_size(vs); i++) {
        const json_t *v = json_array_get(vs, i);
        const char *name = kapi_registry__str(v, "name"), *at = kapi_path_index(c->a, path, i);
        storage += json_is_true(json_object_get(v, "storage"));
        for (size_t j = 0; j < i && unique; j++)
            unique = strcmp(name, kapi_registry__str(json_array_get(vs, j), "name")) != 0;
        invalid_joined(c, P(c, at, "name"), name, "", kapi_is_dns1035_label, NULL);
        version_rules(c, v, at);
    }
    char *shown = !unique || storage != 1 ? versions_text(vs) : NULL;
    if (!unique)
        kapi_field_invalid_raw(c->err, path, shown, "must contain unique version names");
    if (storage != 1)
        kapi_field_invalid_raw(c->err, path, shown,
                               "must have exactly one version marked as storage version");
    free(shown);
}

/* validateCustomResourceDefinitionSpec */
static void crd_spec(cctx *c, const json_t *spec)
{
    static const char *const scopes[] = {"Cluster", "Namespaced", NULL};
    const char *group = kapi_registry__str(spec, "group"),
               *scope = kapi_registry__str(spec, "scope");
    const json_t *vs = json_object_get(spec, "versions");
    char *group_errs = *group ? joined(kapi_is_dns1123_subdomain, group) : NULL;
    if (!*group)
        kapi_field_required(c->err, "spec.group", "");
    else if (group_errs)
        kapi_field_invalid_str(c->err, "spec.group", group, "%s", group_errs);
    else if (!strchr(group, '.'))
        kapi_field_invalid_str(c->err, "spec.group", group,
                               "should be a domain with at least one dot");
    free(group_errs);
    if (!*scope)
        kapi_field_required(c->err, "spec.scope", "");
    else if (!kapi_cstr_in(scope, scopes))
        kapi_field_not_supported(c->err, "spec.scope", scope, scopes);
    for (size_t i = 0; c->require_schema && i < json_array_size(vs); i++) {
        const json_t *schema = json_object_get(json_array_get(vs, i), "schema");
        if (!kapi_registry__has(schema, "openAPIV3Schema"))
            kapi_field_required(
                c->err,
                P(c, P(c, kapi_path_index(c->a, "spec.versions", i), "schema"), "openAPIV3Schema"),
                "schemas are required");
    }
    bool preserve = json_is_true(json_object_get(spec, "preserveUnknownFields"));
    if (spec_has_defaults(spec) && preserve)
        kapi_field_invalid_raw(c->err, "spec.preserveUnknownFields", "true",
                               "must be false in order to use defaults in the schema");
    versions(c, vs, "spec.versions");
    names(c, json_object_get(spec, "names"), "spec.names", true);
    for (size_t i = 0; i < json_array_size(vs); i++) /* 1.26's spec.validation, ... */
        version_parts(c, json_array_get(vs, i), kapi_path_index(c->a, "spec.versions", i), true);
    const json_t *conv = json_object_get(spec, "conversion");
    const char *strategy =
        kapi_registry__has(spec, "conversion") ? kapi_registry__str(conv, "strategy") : "None";
    if (strcmp(strategy, "None") != 0 && preserve)
        kapi_field_invalid_str(c->err, "spec.conversion.strategy", strategy,
                               "must be None if spec.preserveUnknownFields is true");
    conversion(c, kapi_registry__has(spec, "conversion") ? conv : NULL, "spec.conversion");
}

/* ValidateCustomResourceDefinitionStoredVersions */
static void stored_versions(cctx *c, const json_t *stored, const json_t *vs)
{
    const char *path = "status.storedVersions";
    size_t n = json_array_size(stored);
    if (n == 0) {
        char *shown = json_text(stored);
        kapi_field_invalid_raw(c->err, path, shown, "must have at least one stored version");
        free(shown);
        return;
    }
    bool *used = kapi_xcalloc(n, sizeof(*used));
    for (size_t i = 0; i < json_array_size(vs); i++) {
        const json_t *v = json_array_get(vs, i);
        const char *name = kapi_registry__str(v, "name");
        bool found = false;
        for (size_t j = 0; j < n; j++)
            if (strcmp(name, json_string_value(json_array_get(stored, j)) ?: "") == 0)
                found = used[j] = true;
        if (json_is_true(json_object_get(v, "storage")) && !found) {
            char *shown = version_text(v);
            kapi_field_invalid_raw(c->err, path, shown, "must have the storage version %s", name);
            free(shown);
        }
    }
    for (size_t j = 0; j < n; j++)
        if (!used[j])
            kapi_field_invalid_str(c->err, kapi_path_index(c->a, path, j),
                                   json_string_value(json_array_get(stored, j)),
                                   "must appear in spec.versions");
    free(used);
}

/* GetAPIApprovalState: 0 missing, 1 bypassed ("unapproved..."), 2 approved (a URL with a
 * scheme and a host), 3 invalid. */
static int approval_state(const json_t *meta)
{
    const char *v = kapi_registry__str(json_object_get(meta, "annotations"), APPROVAL_ANNOTATION);
    if (!*v)
        return 0;
    if (strncmp(v, "unapproved", 10) == 0)
        return 1;
    const char *sep = strstr(v, "://");
    if (sep && sep > v && sep[3] && sep[3] != '/' && !strchr(v, ' '))
        return 2;
    return 3;
}

static bool protected_group(const char *g)
{
    size_t n = strlen(g);
    return strcmp(g, "k8s.io") == 0 || strcmp(g, "kubernetes.io") == 0 ||
           (n > 7 && strcmp(g + n - 7, ".k8s.io") == 0) ||
           (n > 14 && strcmp(g + n - 14, ".kubernetes.io") == 0);
}

static void api_approval(cctx *c, const json_t *obj, const json_t *old)
{
    const char *path = "metadata.annotations[" APPROVAL_ANNOTATION "]";
    const json_t *meta = json_object_get(obj, "metadata");
    if (!protected_group(kapi_registry__str(c->spec, "group")))
        return;
    int state = approval_state(meta);
    if (old && approval_state(json_object_get(old, "metadata")) == state)
        return;
    if (state == 0)
        kapi_field_required(c->err, path,
                            "protected groups must have approval annotation \"" APPROVAL_ANNOTATION
                            "\", see https://github.com/kubernetes/enhancements/pull/1111");
    else if (state == 3)
        kapi_field_invalid_str(
            c->err, path,
            kapi_registry__str(json_object_get(meta, "annotations"), APPROVAL_ANNOTATION),
            "protected groups must have approval annotation \"" APPROVAL_ANNOTATION
            "\" with either a URL or a reason starting with \"unapproved\", "
            "see https://github.com/kubernetes/enhancements/pull/1111");
}

/* The metadata name rule of a CRD: a DNS subdomain equal to <plural>.<group>. */
static size_t crd_name(void *ctx, const char *name, bool prefix, const char **out)
{
    const json_t *spec = ctx;
    size_t n = kapi_name_dns_subdomain(NULL, name, prefix, out);
    char *want = kapi_xprintf("%s.%s", kapi_registry__str(json_object_get(spec, "names"), "plural"),
                              kapi_registry__str(spec, "group"));
    if (strcmp(name, want) != 0)
        out[n++] = "must be spec.names.plural+\".\"+spec.group";
    free(want);
    return n;
}

static bool established(const json_t *crd)
{
    const json_t *conds = json_object_get(json_object_get(crd, "status"), "conditions");
    for (size_t i = 0; i < json_array_size(conds); i++) {
        const json_t *cond = json_array_get(conds, i);
        if (strcmp(kapi_registry__str(cond, "type"), "Established") == 0)
            return strcmp(kapi_registry__str(cond, "status"), "True") == 0;
    }
    return false;
}

/* requireOpenAPISchema of an update: the stored CRD had a schema in every version. */
static bool all_versions_have_schema(const json_t *spec)
{
    const json_t *vs = json_object_get(spec, "versions");
    for (size_t i = 0; i < json_array_size(vs); i++)
        if (!kapi_registry__has(json_object_get(json_array_get(vs, i), "schema"),
                                "openAPIV3Schema"))
            return false;
    return true;
}

static bool recognized_review(const json_t *spec)
{
    const json_t *rv =
        json_object_get(json_object_get(json_object_get(spec, "conversion"), "webhook"),
                        "conversionReviewVersions");
    bool ok = json_array_size(rv) == 0;
    for (size_t i = 0; i < json_array_size(rv); i++) {
        const char *v = json_string_value(json_array_get(rv, i)) ?: "";
        ok = ok || strcmp(v, "v1") == 0 || strcmp(v, "v1beta1") == 0;
    }
    return ok;
}

static void immutable_str(cctx *c, const json_t *a, const json_t *b, const char *key,
                          const char *path)
{
    if (strcmp(kapi_registry__str(a, key), kapi_registry__str(b, key)) != 0)
        kapi_field_invalid_str(c->err, path, kapi_registry__str(a, key), "field is immutable");
}

/* The openAPIV3Schema of each version of spec, as a JSON array (borrowed members). */
static json_t *schemas_of(const json_t *spec)
{
    json_t *out = json_array();
    const json_t *vs = json_object_get(spec, "versions");
    for (size_t i = 0; i < json_array_size(vs); i++) {
        json_t *s =
            json_object_get(json_object_get(json_array_get(vs, i), "schema"), "openAPIV3Schema");
        if (json_is_object(s))
            json_array_append(out, s);
    }
    return out;
}

void kapi_registry__validate_crd(const kapi_type *t, const json_t *obj, const json_t *old,
                                 kapi_error *err)
{
    kapi_arena a;
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *old_spec = json_object_get(old, "spec");
    const json_t *vs = json_object_get(spec, "versions");
    bool any = json_array_size(vs) > 0;
    cctx c = {err,
              &a,
              spec,
              any && identical(vs, "schema"),
              any && identical(vs, "subresources"),
              any && identical(vs, "additionalPrinterColumns"),
              !old || all_versions_have_schema(old_spec),
              !old || recognized_review(old_spec),
              {0}};
    json_t *old_schemas = old ? schemas_of(old_spec) : NULL;
    c.rules = kapi_schema_crd_rules_for(old_schemas);
    json_decref(old_schemas);
    const json_t *meta = json_object_get(obj, "metadata");
    kapi_arena_init(&a);
    if (old) {
        kapi_meta_validate_update(err, &a, meta, json_object_get(old, "metadata"), "metadata",
                                  false);
    } else {
        kapi_meta_rules rules = {crd_name, (void *)spec, t->namespaced, false};
        kapi_meta_validate(err, &a, meta, "metadata", &rules);
    }
    crd_spec(&c, spec);
    if (old) {
        const json_t *names_now = json_object_get(spec, "names");
        const json_t *names_old = json_object_get(old_spec, "names");
        if (established(old)) {
            immutable_str(&c, spec, old_spec, "scope", "spec.scope");
            immutable_str(&c, names_now, names_old, "kind", "spec.names.kind");
        }
        immutable_str(&c, spec, old_spec, "group", "spec.group");
        immutable_str(&c, names_now, names_old, "plural", "spec.names.plural");
    }
    const json_t *status = json_object_get(obj, "status");
    names(&c, json_object_get(status, "acceptedNames"), "status.acceptedNames", false);
    stored_versions(&c, json_object_get(status, "storedVersions"), vs);
    api_approval(&c, obj, old);
    bool preserved_before = old && json_is_true(json_object_get(old_spec, "preserveUnknownFields"));
    if (!preserved_before && json_is_true(json_object_get(spec, "preserveUnknownFields")))
        kapi_field_invalid_raw(err, "spec.preserveUnknownFields", "true",
                               "cannot set to true, set x-kubernetes-preserve-unknown-fields to "
                               "true in spec.versions[*].schema instead");
    kapi_arena_dispose(&a);
}
