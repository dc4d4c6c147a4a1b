/*
 * patch/gosort: the stable sort of Go 1.19's sort.SliceStable (the Go kube-apiserver 1.26 is
 * built with), step for step. strategicpatch orders merged lists with a less function that
 * is not a strict weak order (an item missing from the order list is "less" than
 * anything), so only the same algorithm, making the same comparisons and swaps, gives the
 * same order: insertion sort over blocks of 20, then blocks merged pairwise in place with
 * SymMerge (Kim and Kutzner) and block rotations.
 */
#include "patch/patch_int.h"

typedef struct sorter {
    bool (*less)(void *ctx, size_t i, size_t j);
    void (*swap)(void *ctx, size_t i, size_t j);
    void *ctx;
} sorter;

static bool less(const sorter *s, size_t i, size_t j)
{
    return s->less(s->ctx, i, j);
}

static void swap(const sorter *s, size_t i, size_t j)
{
    s->swap(s->ctx, i, j);
}

static void insertion_sort(const sorter *s, size_t a, size_t b)
{
    for (size_t i = a + 1; i < b; i++)
        for (size_t j = i; j > a && less(s, j, j - 1); j--)
            swap(s, j, j - 1);
}

/* Swaps the n elements at a with the n at b. */
static void swap_range(const sorter *s, size_t a, size_t b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        swap(s, a + i, b + i);
}

/* Turns [a,m) [m,b) into [m,b) [a,m) with block swaps. */
static void rotate(const sorter *s, size_t a, size_t m, size_t b)
{
    size_t i = m - a, j = b - m;
    while (i != j) {
        if (i > j) {
            swap_range(s, m - i, m, j);
            i -= j;
        } else {
            swap_range(s, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(s, m - i, m, i);
}

/* Moves element a into the sorted run [m,b): before the first element not less than it. */
static void insert_first(const sorter *s, size_t a, size_t m, size_t b)
{
    size_t i = m, j = b;
    while (i < j) {
        size_t h = (i + j) / 2;
        if (less(s, h, a))
            i = h + 1;
        else
            j = h;
    }
    for (size_t k = a; k + 1 < i; k++)
        swap(s, k, k + 1);
}

/* Moves element m into the sorted run [a,m): after the last element not greater than it. */
static void insert_last(const sorter *s, size_t a, size_t m)
{
    size_t i = a, j = m;
    while (i < j) {
        size_t h = (i + j) / 2;
        if (!less(s, m, h))
            i = h + 1;
        else
            j = h;
    }
    for (size_t k = m; k > i; k--)
        swap(s, k, k - 1);
}

/* Merges the sorted runs [a,m) and [m,b) in place. */
static void sym_merge(const sorter *s, size_t a, size_t m, size_t b)
{
    if (m - a == 1) {
        insert_first(s, a, m, b);
        return;
    }
    if (b - m == 1) {
        insert_last(s, a, m);
        return;
    }
    size_t mid = (a + b) / 2, n = mid + m;
    size_t start = m > mid ? n - b : a, r = m > mid ? mid : m, p = n - 1;
    while (start < r) {
        size_t c = (start + r) / 2;
        if (!less(s, p - c, c))
            start = c + 1;
        else
            r = c;
    }
    size_t end = n - start;
    if (start < m && m < end)
        rotate(s, start, m, end);
    if (a < start && start < mid)
        sym_merge(s, a, start, mid);
    if (mid < end && end < b)
        sym_merge(s, mid, end, b);
}

void kapi_patch__sort_stable(size_t n, bool (*less_fn)(void *ctx, size_t i, size_t j),
                             void (*swap_fn)(void *ctx, size_t i, size_t j), void *ctx)
{
    const sorter s = {less_fn, swap_fn, ctx};
    size_t block = 20, a = 0, b = block;
    for (; b <= n; a = b, b += block)
        insertion_sort(&s, a, b);
    insertion_sort(&s, a, n);
    for (; block < n; block *= 2) {
        for (a = 0, b = 2 * block; b <= n; a = b, b += 2 * block)
            sym_merge(&s, a, a + block, b);
        if (a + block < n)
            sym_merge(&s, a, a + block, n);
    }
}
