/*
 * obj: stored objects. One allocation holds the header, the JSON bytes (NUL-terminated)
 * and the key (NUL-terminated), so an object is freed with one free() on its last unref.
 */
#include "store/store_int.h"

#include <stdlib.h>
#include <string.h>

kapi_obj *kapi_obj_ref(kapi_obj *o)
{
    atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
    return o;
}

void kapi_obj_unref(kapi_obj *o)
{
    if (o && atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1) {
        free(atomic_load_explicit(&o->form, memory_order_acquire));
        free(o);
    }
}

const kapi_obj_form *kapi_obj_form_get(const kapi_obj *o)
{
    return atomic_load_explicit(&((kapi_obj *)o)->form, memory_order_acquire);
}

const kapi_obj_form *kapi_obj_form_put(kapi_obj *o, kapi_obj_form *f)
{
    kapi_obj_form *none = NULL;
    if (atomic_compare_exchange_strong_explicit(&o->form, &none, f, memory_order_acq_rel,
                                                memory_order_acquire))
        return f;
    free(f);
    return none;
}

/* An object with room for len bytes of data, its key copied in and its data still to
 * be written (the NUL after it is set). */
static kapi_obj *obj_alloc(kapi_str key, size_t len)
{
    kapi_obj *o = kapi_xmalloc(sizeof(*o) + len + 1 + key.len + 1);
    atomic_init(&o->refs, 1);
    atomic_init(&o->form, NULL);
    o->len = len;
    o->data[len] = '\0';
    o->key = o->data + len + 1;
    o->key_len = key.len;
    if (key.len)
        memcpy(o->key, key.ptr, key.len);
    o->key[key.len] = '\0';
    return o;
}

static void put(char *dst, kapi_str s)
{
    if (s.len)
        memcpy(dst, s.ptr, s.len);
}

kapi_obj *kapi_store__obj_new(kapi_str key, int64_t rev, int64_t create_rev, kapi_str head,
                              kapi_str tail)
{
    char tmp[24];
    const char *digits = kapi_decimal(tmp + sizeof(tmp), rev);
    size_t nd = (size_t)(tmp + sizeof(tmp) - digits);
    kapi_obj *o = obj_alloc(key, head.len + nd + tail.len);
    o->rev = rev;
    o->create_rev = create_rev;
    o->rv_off = (uint32_t)head.len;
    o->rv_len = (uint32_t)nd;
    put(o->data, head);
    memcpy(o->data + head.len, digits, nd);
    put(o->data + head.len + nd, tail);
    return o;
}

kapi_obj *kapi_store__obj_load(const kapi_store_row *row)
{
    if (row->obj)
        return kapi_obj_ref(row->obj);
    char tmp[24];
    kapi_obj *o = obj_alloc(row->key, row->value.len);
    o->rev = row->rev;
    o->create_rev = row->create_rev;
    o->rv_off = row->rv_off;
    o->rv_len = (uint32_t)(tmp + sizeof(tmp) - kapi_decimal(tmp + sizeof(tmp), row->rev));
    put(o->data, row->value);
    return o;
}

kapi_obj *kapi_obj_restamp(const kapi_obj *o, int64_t rev)
{
    size_t tail = (size_t)o->rv_off + o->rv_len;
    return kapi_store__obj_new(kapi_obj_key(o), rev, o->create_rev, (kapi_str){o->data, o->rv_off},
                               (kapi_str){o->data + tail, o->len - tail});
}
