/*
 * schema/quantity: resource.Quantity as apimachinery reads and writes it. The decode
 * walk writes every quantity in its canonical form (Go re-encodes the parsed value),
 * defaulting rounds resource lists up to milli precision, and validation compares.
 */
#ifndef KAPI_SCHEMA_QUANTITY_H
#define KAPI_SCHEMA_QUANTITY_H

#include "base/base.h"

/* A parsed quantity: value = mant * 10^exp10 exactly; format is the suffix family of the
 * text (Go's Format), which decides how the canonical form is written. */
typedef enum kapi_qformat {
    KAPI_Q_DECIMAL_SI,
    KAPI_Q_BINARY_SI,
    KAPI_Q_DECIMAL_EXPONENT
} kapi_qformat;
typedef struct kapi_quantity {
    __int128 mant;
    int exp10;
    kapi_qformat format;
} kapi_quantity;

/* Parses a quantity ("100m", "1.5Gi", "1e3", "-2"); false when it is not one. */
bool kapi_quantity_parse(kapi_quantity *out, const char *s);
/* -1, 0, 1 as a < b, a == b, a > b. */
int kapi_quantity_cmp(const kapi_quantity *a, const kapi_quantity *b);
/* True when q has no fractional part. */
bool kapi_quantity_is_integer(const kapi_quantity *q);
/* The canonical text of q (Go's Quantity.String()) into b. */
void kapi_quantity_format(kapi_buf *b, const kapi_quantity *q);
/* Rounds q away from zero to a multiple of 10^exp10 (Go's RoundUp(Scale(exp10))). */
void kapi_quantity_round_up(kapi_quantity *q, int exp10);

/* Go's ParseQuantity error for text that is not a quantity. */
#define KAPI_QUANTITY_FORMAT_ERROR                                                                 \
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

#endif
