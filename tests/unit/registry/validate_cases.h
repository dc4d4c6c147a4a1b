/*
 * Table tests of the validation of a built-in type: each case is a JSON merge patch
 * (RFC 7386) over a valid base object, and the exact Status message kube-apiserver 1.26
 * answers with (NULL: the object is valid). The runner prepares the object as the
 * pipeline does (prepare_create, or prepare_update against old) and runs
 * kapi_type_validate, so the causes, their order and the message are those of a request.
 */
#ifndef KAPI_TEST_VALIDATE_CASES_H
#define KAPI_TEST_VALIDATE_CASES_H

#include <jansson.h>

#include "registry/registry.h"
#include "test.h"

typedef struct vcase {
    const char *name;
    const char *patch; /* merge patch over the base object */
    const char *want;  /* the 422 message, or NULL when valid */
    size_t ncauses;    /* details.causes count to check, 0: not checked */
} vcase;

/* The messages of the common rules, for building expected messages. */
#define LABEL_MSG                                                                                  \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "   \
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "     \
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define SUBDOMAIN_MSG                                                                              \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "   \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "  \
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define DNS1035_MSG                                                                                \
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "   \
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "           \
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
#define QNAME_PART_MSG                                                                             \
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "  \
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "     \
    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define LABEL_VALUE_MSG                                                                            \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "    \
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "             \
    "'my_value',  or '12345', regex used for validation is "                                       \
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"

/* RFC 7386: members of patch replace those of target, null removes, objects merge. */
static inline json_t *vcase_merge(json_t *target, const json_t *patch)
{
    if (!json_is_object(patch)) {
        json_decref(target);
        return json_deep_copy(patch);
    }
    if (!json_is_object(target)) {
        json_decref(target);
        target = json_object();
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)patch, k, v)
    {
        if (json_is_null(v)) {
            json_object_del(target, k);
            continue;
        }
        json_t *cur = json_incref(json_object_get(target, k));
        json_object_set_new(target, k, vcase_merge(cur, v));
    }
    return target;
}

static inline json_t *vcase_parse(const char *name, const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_ALLOW_NUL, &jerr); /* names may hold \u0000 */
    if (!v)
        test_fail(__FILE__, __LINE__, "case %s: bad JSON: %s", name, jerr.text);
    return v;
}

/* Validates base+patch as a create (old_base NULL) or as an update of old_base into
 * base+patch, for every case; fails on the first answer that differs. */
static inline void vcase_run(const char *group, const char *version, const char *plural,
                             const char *base, const char *old_base, const vcase *cases, size_t n)
{
    kapi_registry *reg;
    if (kapi_registry_new(&reg) != NULL)
        test_fail(__FILE__, __LINE__, "registry");
    const kapi_type *t =
        kapi_registry_lookup(reg, kapi_str_c(group), kapi_str_c(version), kapi_str_c(plural));
    if (!t)
        test_fail(__FILE__, __LINE__, "no type %s/%s %s", group, version, plural);
    for (size_t i = 0; i < n; i++) {
        json_t *patch = vcase_parse(cases[i].name, cases[i].patch);
        json_t *obj = vcase_merge(vcase_parse(cases[i].name, base), patch);
        json_t *old = old_base ? vcase_parse(cases[i].name, old_base) : NULL;
        if (old)
            kapi_type_prepare_update(t, obj, old);
        else
            kapi_type_prepare_create(t, obj);
        kapi_error *err = kapi_type_validate(t, obj, old);
        const char *got = err ? err->message : NULL;
        bool same =
            (!got && !cases[i].want) || (got && cases[i].want && !strcmp(got, cases[i].want));
        if (!same)
            test_fail(__FILE__, __LINE__, "case %s:\n got: %s\nwant: %s", cases[i].name,
                      got ? got : "(valid)", cases[i].want ? cases[i].want : "(valid)");
        if (err && cases[i].ncauses && err->ncauses != cases[i].ncauses)
            test_fail(__FILE__, __LINE__, "case %s: %zu causes, want %zu", cases[i].name,
                      err->ncauses, cases[i].ncauses);
        if (err && (err->status != KAPI_STATUS_INVALID || !err->has_details))
            test_fail(__FILE__, __LINE__, "case %s: not a 422 with details", cases[i].name);
        kapi_error_free(err);
        json_decref(patch);
        json_decref(obj);
        json_decref(old);
    }
    kapi_registry_free(reg);
}

#endif
