/*
 * registry/defaulters: the defaulting Kubernetes does with a condition, which a schema's
 * "default" cannot say. Each is named by the x-kapi-defaulter of a definition in
 * src/schema/defs and runs after that object's static defaults.
 */
#include <stdio.h>
#include <string.h>

#include "registry/registry.h"

/* The tag of an image reference, "latest" when it names none; "" with a digest. */
static const char *image_tag(const char *image, char *buf, size_t n)
{
    if (strchr(image, '@'))
        return "";
    const char *slash = strrchr(image, '/');
    const char *colon = strrchr(slash ? slash : image, ':');
    if (!colon)
        return "latest";
    snprintf(buf, n, "%s", colon + 1);
    return buf;
}

/* A container pulls an image it may already have unless the image is :latest. */
static void container(json_t *obj)
{
    if (json_object_get(obj, "imagePullPolicy"))
        return;
    const char *image = json_string_value(json_object_get(obj, "image"));
    char buf[256];
    const char *tag = image_tag(image ? image : "", buf, sizeof(buf));
    json_object_set_new(obj, "imagePullPolicy",
                        json_string(strcmp(tag, "latest") == 0 ? "Always" : "IfNotPresent"));
}

void kapi_registry__defaulters(kapi_schema_set *s)
{
    kapi_schema_set_defaulter(s, "container", container);
}
