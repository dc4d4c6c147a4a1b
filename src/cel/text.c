/*
 * cel/text: a parse's errors as cel-go displays them (common/errors.go), and the tree's
 * compact text for tests.
 */
#include <inttypes.h>
#include <string.h>

#include "cel/cel_int.h"
#include "codec/go.h"

/* The bytes a UTF-8 sequence starting with c takes (1 for a stray byte). */
static size_t seq_len(unsigned char c)
{
    return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* Line `line` (1-based) of src, without its newline; false past the end. */
static bool line_of(const char *src, size_t len, int line, kapi_str *out)
{
    size_t i = 0;
    for (int l = 1; l < line; l++) {
        const char *nl = memchr(src + i, '\n', len - i);
        if (!nl)
            return false;
        i = (size_t)(nl - src) + 1;
    }
    const char *nl = memchr(src + i, '\n', len - i);
    *out = (kapi_str){src + i, nl ? (size_t)(nl - src) - i : len - i};
    return true;
}

void kapi_cel_issues_text(kapi_buf *b, const kapi_cel_ast *ast, const char *src, size_t len)
{
    for (size_t k = 0; k < ast->nissues; k++) {
        const kapi_cel_issue *is = &ast->issues[k];
        if (k)
            kapi_buf_putc(b, '\n');
        kapi_buf_printf(b, "ERROR: <input>:%d:%d: %s", is->line, is->column + 1, is->message);
        kapi_str l;
        if (is->line < 1 || len == 0 || !line_of(src, len, is->line, &l) || l.len > 16384)
            continue;
        kapi_buf_puts(b, "\n | ");
        for (size_t i = 0; i < l.len; i++)
            kapi_buf_putc(b, l.ptr[i] == '\t' ? ' ' : l.ptr[i]);
        kapi_buf_puts(b, "\n | ");
        size_t i = 0;
        for (int c = 0; c < is->column && i < l.len; c++) {
            size_t n = seq_len((unsigned char)l.ptr[i]);
            kapi_buf_puts(b, n > 1 ? "\xef\xbc\x8e" : "."); /* U+FF0E under a wide one */
            i += n;
        }
        kapi_buf_puts(b, i < l.len && seq_len((unsigned char)l.ptr[i]) > 1 ? "\xef\xbc\xbe" : "^");
    }
}

static void list(kapi_buf *b, kapi_cel_expr *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i)
            kapi_buf_puts(b, ", ");
        kapi_cel_debug(b, v[i]);
    }
}

void kapi_cel_debug(kapi_buf *b, const kapi_cel_expr *e)
{
    char f[40];
    switch (e->kind) {
    case KAPI_CEL_NULL:
        kapi_buf_puts(b, "null");
        break;
    case KAPI_CEL_BOOL:
        kapi_buf_puts(b, e->u.b ? "true" : "false");
        break;
    case KAPI_CEL_INT:
        kapi_buf_printf(b, "%" PRId64, e->u.i);
        break;
    case KAPI_CEL_UINT:
        kapi_buf_printf(b, "%" PRIu64 "u", e->u.u);
        break;
    case KAPI_CEL_DOUBLE:
        kapi_go_format_float(f, e->u.d, 64);
        kapi_buf_puts(b, f);
        break;
    case KAPI_CEL_STRING:
        kapi_go_quote(b, e->u.s.ptr, e->u.s.len);
        break;
    case KAPI_CEL_BYTES:
        kapi_buf_putc(b, 'b');
        kapi_go_quote(b, e->u.s.ptr, e->u.s.len);
        break;
    case KAPI_CEL_IDENT:
        kapi_buf_puts(b, e->u.ident);
        break;
    case KAPI_CEL_SELECT:
        kapi_cel_debug(b, e->u.select.operand);
        kapi_buf_printf(b, ".%s%s", e->u.select.field, e->u.select.test_only ? "~test-only~" : "");
        break;
    case KAPI_CEL_CALL:
        if (e->u.call.target) {
            kapi_cel_debug(b, e->u.call.target);
            kapi_buf_putc(b, '.');
        }
        kapi_buf_printf(b, "%s(", e->u.call.function);
        list(b, e->u.call.args, e->u.call.nargs);
        kapi_buf_putc(b, ')');
        break;
    case KAPI_CEL_LIST:
        kapi_buf_putc(b, '[');
        list(b, e->u.list.elems, e->u.list.n);
        kapi_buf_putc(b, ']');
        break;
    case KAPI_CEL_MAP:
    case KAPI_CEL_STRUCT:
        if (e->kind == KAPI_CEL_STRUCT)
            kapi_buf_puts(b, e->u.map.message);
        kapi_buf_putc(b, '{');
        for (size_t i = 0; i < e->u.map.n; i++) {
            const kapi_cel_entry *en = &e->u.map.entries[i];
            if (i)
                kapi_buf_puts(b, ", ");
            if (en->field)
                kapi_buf_puts(b, en->field);
            else
                kapi_cel_debug(b, en->key);
            kapi_buf_puts(b, ": ");
            kapi_cel_debug(b, en->value);
        }
        kapi_buf_putc(b, '}');
        break;
    case KAPI_CEL_COMPREHENSION:
        kapi_buf_printf(b, "__comprehension__(%s, ", e->u.comp.iter_var);
        kapi_cel_debug(b, e->u.comp.iter_range);
        kapi_buf_printf(b, ", %s, ", e->u.comp.accu_var);
        kapi_cel_debug(b, e->u.comp.accu_init);
        kapi_buf_puts(b, ", ");
        kapi_cel_debug(b, e->u.comp.loop_condition);
        kapi_buf_puts(b, ", ");
        kapi_cel_debug(b, e->u.comp.loop_step);
        kapi_buf_puts(b, ", ");
        kapi_cel_debug(b, e->u.comp.result);
        kapi_buf_putc(b, ')');
        break;
    }
}
