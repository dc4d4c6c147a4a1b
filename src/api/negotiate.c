/*
 * api/negotiate: the form of a resource's answers, from the Accept header (reference 4.8),
 * picked in kube-apiserver 1.26's two steps.
 *
 * 1. The route (go-restful, built-in types only) looks at the bare media types: unless a
 *    range is * / * or names exactly a type the route produces (parameters and q
 *    ignored), the answer is 406 "406: Not Acceptable\n\nAvailable representations: ..."
 *    with empty details; the list route produces the watch stream types too.
 * 2. The handler orders the ranges as goautoneg does (by q, then specific before *) and
 *    takes the first that matches a served type (type/subtype, type/ *, * / *) with
 *    parameters the endpoint allows: none of as=/g=/v=, or as=Table (JSON or YAML),
 *    as=PartialObjectMetadata or as=PartialObjectMetadataList with g=meta.k8s.io and v=v1
 *    or v1beta1; stream= only "watch" and not for YAML; sv= only "v1". No Accept header
 *    is JSON; nothing acceptable is 406 "only the following media types are accepted:
 *    ..." without details.
 *
 * kapi serves JSON, YAML and, for built-in types, protobuf: objects, lists and
 * PartialObjectMetadata(List) (a Table has no protobuf form in 1.26: kube's 406). For a
 * custom resource a protobuf range is passed over, so a client's fallback
 * (`application/vnd.kubernetes.protobuf, application/json`) gets JSON, but an error
 * answer is still protobuf when the bare range asks for it, as kube's is. A watch takes
 * the same forms (watch.c writes its events in them), except YAML, which has no stream
 * form: kube's 406.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

#define SERVED_TYPES "application/json, application/yaml, application/vnd.kubernetes.protobuf"
#define STREAM_TYPES                                                                               \
    "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"

/* One media range of an Accept header, as goautoneg parses it. */
typedef struct media_range {
    kapi_str type, subtype;
    double q;
    /* The parameters kube reads (the last of a repeated name wins); as, g and v are set
     * (possibly empty) when the range asks for a conversion. */
    kapi_str as, g, v, stream, sv;
    bool convert;
} media_range;

static kapi_str trim_spaces(kapi_str s)
{
    while (s.len && s.ptr[0] == ' ')
        s.ptr++, s.len--;
    while (s.len && s.ptr[s.len - 1] == ' ')
        s.len--;
    return s;
}

/* strconv.ParseFloat(s, 32), 0 when it does not parse. */
static double parse_q(kapi_str s)
{
    char buf[64], *end;
    if (!s.len || s.len >= sizeof(buf) || s.ptr[0] == ' ')
        return 0;
    memcpy(buf, s.ptr, s.len);
    buf[s.len] = '\0';
    double q = strtod(buf, &end);
    return *end ? 0 : (double)(float)q;
}

static void read_param(media_range *m, kapi_str param)
{
    static const struct {
        const char *name;
        size_t off;
        bool convert;
    } known[] = {
        {"as", offsetof(media_range, as), true},  {"g", offsetof(media_range, g), true},
        {"v", offsetof(media_range, v), true},    {"stream", offsetof(media_range, stream), false},
        {"sv", offsetof(media_range, sv), false},
    };
    kapi_str name;
    if (!memchr(param.ptr, '=', param.len))
        return;
    kapi_str_cut(&param, '=', &name);
    name = trim_spaces(name);
    if (kapi_str_eqc(name, "q")) {
        m->q = parse_q(param);
        return;
    }
    for (size_t i = 0; i < KAPI_ARRAY_LEN(known); i++) {
        if (kapi_str_eqc(name, known[i].name)) {
            *(kapi_str *)((char *)m + known[i].off) = trim_spaces(param);
            m->convert = m->convert || known[i].convert;
        }
    }
}

/* goautoneg's ParseAccept for one comma-separated part; false for a part it skips. */
static bool parse_range(kapi_str part, media_range *m)
{
    kapi_str range, sub;
    memset(m, 0, sizeof(*m));
    m->q = 1;
    part = trim_spaces(part);
    kapi_str_cut(&part, ';', &range);
    bool slash = memchr(range.ptr, '/', range.len) != NULL;
    kapi_str_cut(&range, '/', &sub);
    m->type = trim_spaces(sub);
    m->subtype = trim_spaces(range);
    if (!slash && !kapi_str_eqc(m->type, "*"))
        return false;
    if (!slash)
        m->subtype = KAPI_STR("*");
    if (slash && memchr(range.ptr, '/', range.len))
        return false;
    while (part.len) {
        kapi_str param;
        kapi_str_cut(&part, ';', &param);
        read_param(m, param);
    }
    return true;
}

/* goautoneg's order: higher q first, then a concrete type or subtype before "*". */
static bool range_less(const media_range *a, const media_range *b)
{
    if (a->q > b->q)
        return true;
    if (!kapi_str_eqc(a->type, "*") && kapi_str_eqc(b->type, "*"))
        return true;
    return !kapi_str_eqc(a->subtype, "*") && kapi_str_eqc(b->subtype, "*");
}

/* The ranges of header, sorted as Go's sort.Sort does it for short slices (an insertion
 * sort; the order goautoneg's comparison gives is not a strict one). */
static media_range *parse_accept(const char *header, size_t *n_out)
{
    kapi_str s = kapi_str_c(header), part;
    size_t n = 0, cap = 1;
    for (const char *p = header; *p; p++)
        cap += *p == ',';
    media_range *v = kapi_xcalloc(cap, sizeof(*v));
    while (s.len) {
        kapi_str_cut(&s, ',', &part);
        if (parse_range(part, &v[n]))
            n++;
    }
    for (size_t i = 1; i < n; i++) {
        for (size_t j = i; j > 0 && range_less(&v[j], &v[j - 1]); j--) {
            media_range t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    }
    *n_out = n;
    return v;
}

/* The served types, in kube's order of preference. */
#define PROTOBUF 2
static const struct {
    const char *name, *type, *subtype;
    kapi_format format;
    bool stream;
} accepted[] = {
    {"application/json", "application", "json", KAPI_FORMAT_JSON, true},
    {"application/yaml", "application", "yaml", KAPI_FORMAT_YAML, false},
    {"application/vnd.kubernetes.protobuf", "application", "vnd.kubernetes.protobuf",
     KAPI_FORMAT_PROTOBUF, true},
};

/* The conversion a range asks for, or false when the endpoint does not allow it. */
static bool read_target(const media_range *m, size_t type, unsigned convert, kapi_media *out)
{
    static const struct {
        const char *as;
        kapi_target target;
    } kinds[] = {{"Table", KAPI_TARGET_TABLE},
                 {"PartialObjectMetadata", KAPI_TARGET_POM},
                 {"PartialObjectMetadataList", KAPI_TARGET_POM_LIST}};
    bool meta = kapi_str_eqc(m->g, "meta.k8s.io") &&
                (kapi_str_eqc(m->v, "v1") || kapi_str_eqc(m->v, "v1beta1"));
    for (size_t i = 0; meta && i < KAPI_ARRAY_LEN(kinds); i++) {
        if (kapi_str_eqc(m->as, kinds[i].as)) {
            out->target = kinds[i].target;
            out->v1beta1 = kapi_str_eqc(m->v, "v1beta1");
            if (out->target == KAPI_TARGET_TABLE)
                return (convert & KAPI_CONVERT_TABLE) && type != PROTOBUF;
            return true;
        }
    }
    return false;
}

/* acceptMediaTypeOptions with the restrictions of a resource endpoint. */
static bool acceptable(const media_range *m, size_t type, unsigned convert, bool protobuf,
                       kapi_media *out)
{
    memset(out, 0, sizeof(*out));
    out->format = accepted[type].format;
    if (type == PROTOBUF && !protobuf)
        return false;
    if (m->stream.len && (!accepted[type].stream || !kapi_str_eqc(m->stream, "watch")))
        return false;
    if (m->sv.len && !kapi_str_eqc(m->sv, "v1"))
        return false;
    if (m->convert)
        return convert && read_target(m, type, convert, out);
    return true;
}

static bool matches(const media_range *m, size_t type)
{
    if (kapi_str_eqc(m->type, "*") && kapi_str_eqc(m->subtype, "*"))
        return true;
    return kapi_str_eqc(m->type, accepted[type].type) &&
           (kapi_str_eqc(m->subtype, "*") || kapi_str_eqc(m->subtype, accepted[type].subtype));
}

/* The choice of kapi_api__choose_media among the n parsed ranges v. */
static bool choose(const media_range *v, size_t n, unsigned convert, bool protobuf, kapi_media *out)
{
    bool found = false;
    for (size_t i = 0; i < n && !found; i++)
        for (size_t t = 0; t < KAPI_ARRAY_LEN(accepted) && !found; t++)
            found = matches(&v[i], t) && acceptable(&v[i], t, convert, protobuf, out);
    return found;
}

bool kapi_api__choose_media(const char *accept, unsigned convert, bool protobuf, kapi_media *out)
{
    size_t n;
    media_range *v = parse_accept(accept, &n);
    bool found = choose(v, n, convert, protobuf, out);
    free(v);
    return found;
}

int kapi_api__discovery_form(const char *accept)
{
    size_t n;
    int form = -1;
    media_range *v = parse_accept(accept && *accept ? accept : "*/*", &n);
    for (size_t i = 0; i < n && form < 0; i++) {
        const media_range *m = &v[i];
        bool json = (kapi_str_eqc(m->type, "application") &&
                     (kapi_str_eqc(m->subtype, "json") || kapi_str_eqc(m->subtype, "*"))) ||
                    (kapi_str_eqc(m->type, "*") && kapi_str_eqc(m->subtype, "*"));
        if (!json)
            continue;
        if (!m->convert)
            form = 0;
        else if (kapi_str_eqc(m->as, "APIGroupDiscoveryList") &&
                 kapi_str_eqc(m->g, "apidiscovery.k8s.io") && kapi_str_eqc(m->v, "v2"))
            form = 2;
        else if (kapi_str_eqc(m->as, "APIGroupDiscoveryList") &&
                 kapi_str_eqc(m->g, "apidiscovery.k8s.io") && kapi_str_eqc(m->v, "v2beta1"))
            form = 1;
    }
    free(v);
    return form < 0 ? 0 : form;
}

/* go-restful's Route.matchesAccept: a bare type the route produces, or * / *. */
static bool route_accepts(const char *accept)
{
    kapi_str s = kapi_str_c(*accept ? accept : "*/*"), part, type;
    while (s.len) {
        kapi_str_cut(&s, ',', &part);
        kapi_str_cut(&part, ';', &type);
        type = trim_spaces(type);
        if (kapi_str_eqc(type, "*/*"))
            return true;
        for (size_t t = 0; t < KAPI_ARRAY_LEN(accepted); t++)
            if (kapi_str_eqc(type, accepted[t].name))
                return true;
    }
    return false;
}

kapi_error *kapi_api__negotiate(kapi_req *r)
{
    const char *accept = kapi_http_header_get(r->http, "accept");
    bool watch = strcmp(r->info.verb, "watch") == 0;
    kapi_media plain;
    accept = accept ? accept : "";
    if (r->type->builtin && !route_accepts(accept)) {
        bool list_route = !r->info.name.len || r->info.watch_path;
        kapi_error *err = kapi_error_new(
            KAPI_STATUS_NOT_ACCEPTABLE, "406: Not Acceptable\n\nAvailable representations: %s",
            list_route ? SERVED_TYPES ", " STREAM_TYPES : SERVED_TYPES);
        err->has_details = true;
        return err;
    }
    if (!*accept)
        return NULL;
    size_t n;
    media_range *v = parse_accept(accept, &n);
    if (choose(v, n, 0, true, &plain))
        r->error_format = plain.format;
    /* a type without a Table (the reviews) takes no as=Table, as kube's has no convertor */
    unsigned convert = KAPI_CONVERT_METADATA |
                       (r->type->ncolumns || r->type->default_table ? KAPI_CONVERT_TABLE : 0);
    bool found = choose(v, n, convert, r->type->protobuf != NULL, &r->media);
    free(v);
    if (!found)
        return kapi_error_new(KAPI_STATUS_NOT_ACCEPTABLE,
                              "only the following media types are accepted: " SERVED_TYPES);
    if (watch && r->media.format == KAPI_FORMAT_YAML)
        return kapi_error_new(KAPI_STATUS_NOT_ACCEPTABLE,
                              "only the following media types are accepted: " STREAM_TYPES);
    return NULL;
}
