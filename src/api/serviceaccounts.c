/*
 * api/serviceaccounts: what the api does for ServiceAccount tokens (auth.h, "ServiceAccount
 * tokens"): the TokenRequest subresource that issues them, the store's answer when one
 * authenticates, and the OpenID discovery documents that let others verify them.
 *
 * A TokenRequest is a create that stores nothing. It is read and answered as
 * kube-apiserver's create handler and TokenREST do: the body decoded as a TokenRequest
 * (defaults, unknown fields, Go's type errors), the body's namespace checked against the
 * path's, managedFields and the namespace lifecycle's admission (kapi_api__create_unstored),
 * then the ServiceAccount read, the spec completed and validated, the bound object looked
 * for, the lifetime capped, and the token signed. A dry run issues a token too, as 1.26
 * does.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "codec/go.h"
#include "schema/field.h"

#define MIN_EXPIRATION 600                /* ten minutes */
#define MAX_EXPIRATION ((int64_t)1 << 32) /* seconds */

/* ---- authentication's lookup ---- */

bool kapi_api__sa_get(void *ctx, kapi_str ns, kapi_str name, kapi_arena *a, const char **uid,
                      int64_t *deleted)
{
    kapi_api *api = ctx;
    const kapi_type *t = kapi_registry_serviceaccounts(api->registry);
    kapi_obj *o = NULL;
    int64_t secs = 0;
    int32_t nsec;
    if (kapi_store_get(api->store, kapi_type_key(a, t, ns, name), &o) != KAPI_STORE_OK)
        return false;
    json_t *obj = kapi_api__parse_stored(o);
    kapi_obj_unref(o);
    const char *u = kapi_json_path_str(obj, "metadata.uid");
    const char *del = kapi_json_path_str(obj, "metadata.deletionTimestamp");
    *uid = kapi_arena_strdup(a, u ? u : "");
    *deleted = del && kapi_gotime_parse(del, &secs, &nsec) ? secs : 0;
    json_decref(obj);
    return true;
}

/* ---- TokenRequest ---- */

/* The 422 of a TokenRequest, naming name. */
static kapi_error *invalid(kapi_error *err, const char *name)
{
    return kapi_field_finish_invalid(err, "TokenRequest", "authentication.k8s.io", name);
}

/* The body's metadata.name, when given, is the path's. */
static kapi_error *check_name(kapi_req *r, const json_t *obj)
{
    const json_t *given = kapi_json_path(obj, "metadata.name");
    kapi_str path = r->info.name, body = {json_string_value(given), json_string_length(given)};
    if (!body.len || kapi_str_eq(body, path))
        return NULL;
    kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "invalid");
    kapi_field_invalid_str(err, "metadata.name", json_string_value(given),
                           "must match the service account name if specified");
    return invalid(err, kapi_api__shown(&r->arena, path));
}

/* ValidateTokenRequest: a lifetime from ten minutes to 2^32 seconds. */
static kapi_error *validate(int64_t exp)
{
    kapi_error *err = kapi_error_new(KAPI_STATUS_INVALID, "invalid");
    if (exp < MIN_EXPIRATION)
        kapi_field_invalid_int(err, "spec.expirationSeconds", exp,
                               "may not specify a duration less than 10 minutes");
    if (exp > MAX_EXPIRATION)
        kapi_field_invalid_int(err, "spec.expirationSeconds", exp,
                               "may not specify a duration larger than 2^32 seconds");
    if (err->ncauses == 0) {
        kapi_error_free(err);
        return NULL;
    }
    return invalid(err, "");
}

/* A token may be bound to a Pod or a Secret of the namespace. kapi serves neither, so the
 * object is never found, which is kube's 404; any other kind is its 400. */
static kapi_error *bound_object(kapi_req *r, const json_t *ref)
{
    if (!ref || json_is_null(ref))
        return NULL;
    const char *kind = kapi_json_path_str(ref, "kind") ?: "";
    const char *av = kapi_json_path_str(ref, "apiVersion") ?: "";
    const char *name = kapi_json_path_str(ref, "name") ?: "";
    /* schema.FromAPIVersionAndKind: an apiVersion with more than one '/' names no group. */
    const char *slash = strchr(av, '/');
    bool parsed = !slash || !strchr(slash + 1, '/');
    kapi_str group = slash && parsed ? (kapi_str){av, (size_t)(slash - av)} : KAPI_STR("");
    const char *version = !parsed ? "" : slash ? slash + 1 : av;
    const char *plural = strcmp(kind, "Pod") == 0      ? "pods"
                         : strcmp(kind, "Secret") == 0 ? "secrets"
                                                       : NULL;
    if (plural && !group.len) {
        kapi_error *err = kapi_error_new(KAPI_STATUS_NOT_FOUND, "%s %s not found", plural,
                                         kapi_api__quote(&r->arena, kapi_str_c(name)));
        kapi_error_details(err, name, "", plural);
        return err;
    }
    return kapi_error_new(KAPI_STATUS_BAD_REQUEST,
                          "cannot bind token to object of type %.*s/%s, Kind=%s", (int)group.len,
                          group.ptr ? group.ptr : "", version, kind);
}

/* spec.audiences, when empty the API's audiences. */
static void default_audiences(const kapi_jwt *j, json_t *spec)
{
    json_t *auds = json_object_get(spec, "audiences");
    size_t n;
    const char *const *api = kapi_jwt_audiences(j, &n);
    if (json_array_size(auds) > 0)
        return;
    auds = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(auds, json_string(api[i]));
    json_object_set_new_nocheck(spec, "audiences", auds);
}

/* The token for the request's ServiceAccount sa, signed at now, into obj's status. */
static void issue(kapi_req *r, const json_t *sa, json_t *obj, int64_t now)
{
    const kapi_jwt *j = kapi_auth_jwt(r->api->auth);
    json_t *spec = json_object_get(obj, "spec"), *auds = json_object_get(spec, "audiences");
    int64_t exp = json_integer_value(json_object_get(spec, "expirationSeconds"));
    const char **names = kapi_arena_alloc(&r->arena, (json_array_size(auds) + 1) * sizeof(*names));
    for (size_t i = 0; i < json_array_size(auds); i++)
        names[i] = json_string_value(json_array_get(auds, i)) ?: "";
    kapi_jwt_claims c = {
        .audiences = names,
        .naudiences = json_array_size(auds),
        .iat = now,
        .nbf = now,
        .exp = now + exp,
        .ns = kapi_json_path_str(sa, "metadata.namespace"),
        .sa = {kapi_json_path_str(sa, "metadata.name"), kapi_json_path_str(sa, "metadata.uid")},
    };
    const char *token = kapi_jwt_sign(j, &c, &r->arena);
    char when[32];
    json_object_set_new_nocheck(obj, "status",
                                json_pack("{s:s,s:s}", "token", token ? token : "",
                                          "expirationTimestamp",
                                          kapi_time_rfc3339(when, now + exp)));
}

/* Fills in what the server sets before it validates: name, namespace, creationTimestamp,
 * the default audiences; the status the client sent is dropped. */
static void complete(kapi_req *r, const json_t *sa, json_t *obj, int64_t now)
{
    json_t *meta = kapi_json_object_ensure(obj, "metadata");
    char when[32];
    if (!json_string_length(json_object_get(meta, "name")))
        json_object_set_nocheck(meta, "name", kapi_json_path(sa, "metadata.name"));
    if (!json_string_length(json_object_get(meta, "namespace")))
        json_object_set_nocheck(meta, "namespace", kapi_json_path(sa, "metadata.namespace"));
    json_object_set_new_nocheck(meta, "creationTimestamp",
                                json_string(kapi_time_rfc3339(when, now)));
    default_audiences(kapi_auth_jwt(r->api->auth), kapi_json_object_ensure(obj, "spec"));
    json_object_del(obj, "status");
}

/* The lifetime of spec, shortened to --service-account-max-token-expiration (with kube's
 * warning). */
static void cap_expiration(kapi_req *r, json_t *spec)
{
    int64_t max = kapi_jwt_max_expiration(kapi_auth_jwt(r->api->auth));
    int64_t exp = json_integer_value(json_object_get(spec, "expirationSeconds"));
    if (max <= 0 || exp <= max)
        return;
    kapi_api__warn(r, "requested expiration of %lld seconds shortened to %lld seconds",
                   (long long)exp, (long long)max);
    json_object_set_new_nocheck(spec, "expirationSeconds", json_integer(max));
}

/* The TokenREST's part, on the decoded, admitted obj. */
static kapi_error *token_request(kapi_req *r, json_t *obj)
{
    json_t *sa = NULL;
    int64_t now = kapi_time_now_ns() / 1000000000;
    kapi_error *err = check_name(r, obj);
    if (!err)
        err = kapi_api_get(r->api, r->type, r->info.ns, r->info.name, &sa);
    if (err)
        return err;
    complete(r, sa, obj, now);
    json_t *spec = json_object_get(obj, "spec");
    if (!(err = validate(json_integer_value(json_object_get(spec, "expirationSeconds")))) &&
        !(err = bound_object(r, json_object_get(spec, "boundObjectRef")))) {
        cap_expiration(r, spec);
        issue(r, sa, obj, now);
    }
    json_decref(sa);
    return err;
}

static void respond_token(kapi_req *r, const kapi_type *kind, const json_t *obj)
{
    kapi_buf b;
    kapi_buf_init(&b);
    json_t *canon = kapi_api__canonical(kind, obj);
    kapi_json_encode(&b, canon);
    kapi_buf_putc(&b, '\n');
    json_decref(canon);
    kapi_api__respond_json(r, 201, &b);
}

void kapi_api__serve_token(kapi_req *r)
{
    const kapi_subresource *sub = kapi_type_subresource(r->type, kapi_str_c("token"));
    kapi_write_opts o;
    json_t *obj = NULL;
    kapi_error *err;
    if (!kapi_jwt_can_sign(kapi_auth_jwt(r->api->auth)))
        err = kapi_api__err_not_found_resource(); /* no issuer: kube serves no token */
    else if (r->media.target == KAPI_TARGET_TABLE)
        err = kapi_error_new(KAPI_STATUS_NOT_ACCEPTABLE,
                             "only the following media types are accepted: application/json, "
                             "application/yaml, application/vnd.kubernetes.protobuf");
    else if ((err = kapi_api__write_options(r, "CreateOptions", false, &o)) == NULL &&
             (err = kapi_api__decode_as(r, sub->kind, &o, &obj)) == NULL &&
             (err = kapi_api__body_namespace(r->type, r->info.ns,
                                             kapi_json_object_ensure(obj, "metadata"))) == NULL &&
             (err = kapi_api__create_unstored(r, sub, o.manager, obj)) == NULL)
        err = token_request(r, obj);
    if (err)
        kapi_api__respond_error(r, err);
    else
        respond_token(r, sub->kind, obj);
    json_decref(obj);
}

/* ---- OpenID discovery ---- */

/* s without the blanks around it. */
static kapi_str trim(kapi_str s)
{
    while (s.len && s.ptr[0] == ' ')
        s.ptr++, s.len--;
    while (s.len && s.ptr[s.len - 1] == ' ')
        s.len--;
    return s;
}

/* A discovery document's Accept: absent, or with a range (its parameters aside) that is
 * * / *, the document's type, or the type's main part and *, as go-restful matches the
 * type a route produces; else kube's 406. */
static kapi_error *accepts(kapi_req *r, const char *type)
{
    const char *accept = kapi_http_header_get(r->http, "accept");
    size_t main_len = strcspn(type, "/");
    kapi_str rest = kapi_str_c(accept ? accept : ""), part, range;
    if (!rest.len)
        return NULL;
    while (rest.len) {
        kapi_str_cut(&rest, ',', &part);
        kapi_str_cut(&part, ';', &range);
        range = trim(range);
        bool main_star = range.len == main_len + 2 && memcmp(range.ptr, type, main_len) == 0 &&
                         memcmp(range.ptr + main_len, "/*", 2) == 0;
        if (kapi_str_eqc(range, "*/*") || kapi_str_eqc(range, type) || main_star)
            return NULL;
    }
    kapi_error *err = kapi_error_new(KAPI_STATUS_NOT_ACCEPTABLE,
                                     "406: Not Acceptable\n\nAvailable representations: %s", type);
    kapi_media m;
    err->has_details = true;
    if (kapi_api__choose_media(accept, 0, false, &m))
        r->error_format = m.format; /* the Status in the form asked for (YAML) */
    return err;
}

/* Which discovery document path is (0 the configuration, 1 the keys, -1 neither); *below
 * says it is a path under one, which go-restful answers with its 404 Status. A trailing
 * '/' is no part of the path. */
static int openid_doc(const char *path, bool *below)
{
    static const char *const docs[] = {"/.well-known/openid-configuration", "/openid/v1/jwks"};
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    for (size_t i = 0; i < KAPI_ARRAY_LEN(docs); i++) {
        size_t len = strlen(docs[i]);
        *below = n > len && path[len] == '/';
        if (n >= len && memcmp(path, docs[i], len) == 0 && (n == len || *below))
            return (int)i;
    }
    *below = false;
    return -1;
}

bool kapi_api__serve_openid(kapi_req *r)
{
    static const kapi_http_header cache = {"Cache-Control", "public, max-age=3600"};
    static const char *const types[] = {"application/json", "application/jwk-set+json"};
    const kapi_jwt *j = kapi_auth_jwt(r->api->auth);
    bool below;
    int doc = openid_doc(r->path, &below);
    kapi_buf b;
    kapi_buf_init(&b);
    if (doc < 0 || !(doc == 0 ? kapi_jwt_openid_config(j, r->api->server_address, &b)
                              : kapi_jwt_jwks(j, &b))) {
        kapi_buf_dispose(&b); /* discovery is off: the path is unknown */
        return false;
    }
    kapi_error *err = below                                 ? kapi_api__err_not_found_resource()
                      : strcmp(r->http->method, "GET") != 0 ? kapi_api__err_method_not_allowed()
                                                            : accepts(r, types[doc]);
    if (err) {
        kapi_buf_dispose(&b);
        kapi_api__respond_error(r, err);
        return true;
    }
    size_t len;
    char *p = kapi_buf_detach(&b, &len);
    kapi_http_chunk c = kapi_http_chunk_take(p, len);
    kapi_api__send_headers(r, 200, types[doc], &cache, 1, &c, 1);
    return true;
}
