/* api_call: requests and watches against an api_env server (see api_call.h). */
#include "api_call.h"

#include <sys/socket.h>

#include "test.h"

int api_call(api_env *e, const char *method, const char *path, const char *headers,
             const char *body, api_answer *a)
{
    http_client c;
    http_resp resp;
    kapi_buf req;
    kapi_buf_init(&req);
    kapi_buf_printf(&req,
                    "%s %s HTTP/1.1\r\nHost: x\r\n%s%s%sContent-Length: %zu\r\n"
                    "Connection: close\r\n\r\n%s",
                    method, path, e->auth_header, headers,
                    strstr(headers, "Content-Type:") ? "" : "Content-Type: application/json\r\n",
                    body ? strlen(body) : 0, body ? body : "");
    client_connect(&c, e->http.port);
    client_send(&c, req.ptr, req.len);
    CHECK(client_read_response(&c, &resp));
    a->status = resp.status;
    a->head = resp.head;
    a->body = resp.body;
    a->json = json_loadb(resp.body.ptr, resp.body.len, 0, NULL);
    client_close(&c);
    kapi_buf_dispose(&req);
    return a->status;
}

int api_status(api_env *e, const char *method, const char *path, const char *body)
{
    api_answer a;
    int status = api_call(e, method, path, "", body, &a);
    api_answer_dispose(&a);
    return status;
}

void api_answer_dispose(api_answer *a)
{
    kapi_buf_dispose(&a->head);
    kapi_buf_dispose(&a->body);
    json_decref(a->json);
    a->json = NULL;
}

const char *api_str(const api_answer *a, const char *path)
{
    return kapi_json_path_str(a->json, path);
}

long long api_int(const api_answer *a, const char *path)
{
    return json_integer_value(kapi_json_path(a->json, path));
}

char *api_cronjob(const char *name, const char *meta_extra)
{
    return kapi_xprintf("{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",\"metadata\":{"
                        "\"name\":\"%s\"%s%s},\"spec\":{\"schedule\":\"0 3 29 2 *\","
                        "\"suspend\":true,\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{"
                        "\"restartPolicy\":\"OnFailure\",\"containers\":[{\"name\":\"main\","
                        "\"image\":\"busybox\"}]}}}}}}",
                        name, *meta_extra ? "," : "", meta_extra);
}

void api_create_widget_crd(api_env *e)
{
    static const char crd[] =
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","
        "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},"
        "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{"
        "\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":"
        "\"object\",\"properties\":{\"size\":{\"type\":\"string\"}}}}}}}]}}";
    /* what the CRD controller does (api_env runs none): the names accepted, Established */
    static const char established[] =
        "{\"status\":{\"acceptedNames\":{\"plural\":\"widgets\",\"singular\":\"widget\","
        "\"kind\":\"Widget\",\"listKind\":\"WidgetList\"},\"conditions\":[{\"type\":"
        "\"NamesAccepted\",\"status\":\"True\",\"reason\":\"NoConflicts\",\"message\":\"no "
        "conflicts found\"},{\"type\":\"Established\",\"status\":\"True\",\"reason\":"
        "\"InitialNamesAccepted\",\"message\":\"the initial names have been accepted\"}]}}";
    api_answer a;
    CHECK_INT_EQ(
        api_status(e, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd), 201);
    CHECK_INT_EQ(api_call(e, "PATCH",
                          "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                          "widgets.example.com/status",
                          "Content-Type: application/merge-patch+json\r\n", established, &a),
                 200);
    api_answer_dispose(&a);
}

/* Drops the first n bytes of b. */
static void drop(kapi_buf *b, size_t n)
{
    if (n == 0)
        return;
    memmove(b->ptr, b->ptr + n, b->len - n);
    b->len -= n;
    b->ptr[b->len] = '\0';
}

void api_watch_open(api_env *e, const char *path, api_watch *w)
{
    memset(w, 0, sizeof(*w));
    kapi_buf_init(&w->data);
    client_connect(&w->c, e->http.port);
    kapi_buf req;
    kapi_buf_init(&req);
    kapi_buf_printf(&req, "GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n", path, e->auth_header);
    client_send(&w->c, req.ptr, req.len);
    kapi_buf_dispose(&req);
    CHECK(client_read_until(&w->c, "\r\n\r\n"));
    w->status = atoi(w->c.carry.ptr + 9);
    CHECK(strcasestr(w->c.carry.ptr, "\r\nTransfer-Encoding: chunked\r\n") != NULL);
    drop(&w->c.carry, (size_t)(strstr(w->c.carry.ptr, "\r\n\r\n") + 4 - w->c.carry.ptr));
}

/* Moves the complete chunks received into w->data; notes the terminating one. */
static void dechunk(api_watch *w)
{
    kapi_buf *raw = &w->c.carry;
    size_t off = 0;
    while (!w->ended) {
        const char *eol = memmem(raw->ptr + off, raw->len - off, "\r\n", 2);
        if (!eol)
            break;
        size_t line = (size_t)(eol + 2 - (raw->ptr + off));
        size_t size = strtoul(raw->ptr + off, NULL, 16);
        if (raw->len - off < line + size + 2)
            break;
        kapi_buf_put(&w->data, raw->ptr + off + line, size);
        off += line + size + 2;
        w->ended = size == 0;
    }
    drop(raw, off);
}

json_t *api_watch_next(api_watch *w)
{
    for (;;) {
        dechunk(w); /* what came with the head, or the last read */
        const char *nl = w->data.len ? memchr(w->data.ptr, '\n', w->data.len) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - w->data.ptr);
            json_t *ev = json_loadb(w->data.ptr, n, 0, NULL);
            CHECK(ev != NULL);
            drop(&w->data, n + 1);
            return ev;
        }
        if (w->ended)
            return NULL;
        char buf[16384];
        ssize_t got = recv(w->c.fd, buf, sizeof(buf), 0);
        if (got <= 0)
            return NULL;
        kapi_buf_put(&w->c.carry, buf, (size_t)got);
    }
}

void api_watch_close(api_watch *w)
{
    client_close(&w->c);
    kapi_buf_dispose(&w->data);
}

const char *api_event_type(const json_t *ev)
{
    return kapi_json_path_str(ev, "type");
}

const char *api_event_str(const json_t *ev, const char *path)
{
    return kapi_json_path_str(json_object_get(ev, "object"), path);
}
