/*
 * cel/lex: the lexer rules of cel-go v0.12's CEL.g4, matched longest first as ANTLR's
 * lexer matches them (a keyword wins over IDENTIFIER at equal length, so "in" is IN and
 * "index" an IDENTIFIER), and cel-go's unescaping of string and bytes literals.
 */
#include <stdio.h>
#include <string.h>

#include "cel/cel_int.h"
#include "codec/go.h"

static const char *const names[] = {
    [TOK_EOF] = "<EOF>",     [TOK_EQ] = "'=='",          [TOK_NE] = "'!='",
    [TOK_IN] = "'in'",       [TOK_LT] = "'<'",           [TOK_LE] = "'<='",
    [TOK_GE] = "'>='",       [TOK_GT] = "'>'",           [TOK_AND] = "'&&'",
    [TOK_OR] = "'||'",       [TOK_LBRACK] = "'['",       [TOK_RBRACK] = "']'",
    [TOK_LBRACE] = "'{'",    [TOK_RBRACE] = "'}'",       [TOK_LPAREN] = "'('",
    [TOK_RPAREN] = "')'",    [TOK_DOT] = "'.'",          [TOK_COMMA] = "','",
    [TOK_MINUS] = "'-'",     [TOK_NOT] = "'!'",          [TOK_QUEST] = "'?'",
    [TOK_COLON] = "':'",     [TOK_PLUS] = "'+'",         [TOK_STAR] = "'*'",
    [TOK_SLASH] = "'/'",     [TOK_PERCENT] = "'%'",      [TOK_TRUE] = "'true'",
    [TOK_FALSE] = "'false'", [TOK_NULL] = "'null'",      [TOK_INT] = "NUM_INT",
    [TOK_UINT] = "NUM_UINT", [TOK_FLOAT] = "NUM_FLOAT",  [TOK_STRING] = "STRING",
    [TOK_BYTES] = "BYTES",   [TOK_IDENT] = "IDENTIFIER",
};

const char *kapi_cel__tok_name(cel_tok t)
{
    return names[t];
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
    return kapi_hex_value(c) >= 0;
}

static bool is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static size_t digits(const char *s, size_t n, size_t i)
{
    size_t j = i;
    while (j < n && is_digit(s[j]))
        j++;
    return j - i;
}

/* The length of an EXPONENT at i, or 0. */
static size_t exponent(const char *s, size_t n, size_t i)
{
    if (i >= n || (s[i] != 'e' && s[i] != 'E'))
        return 0;
    size_t j = i + 1;
    if (j < n && (s[j] == '+' || s[j] == '-'))
        j++;
    size_t d = digits(s, n, j);
    return d ? j + d - i : 0;
}

/* A number at i (a digit, or '.' and a digit): its type and length, the longest of
 * NUM_FLOAT, NUM_INT and NUM_UINT. */
static cel_tok number(const char *s, size_t n, size_t i, size_t *len)
{
    size_t j = i;
    if (s[j] == '.') { /* '.' DIGIT+ EXPONENT? */
        j += 1 + digits(s, n, j + 1);
        j += exponent(s, n, j);
        *len = j - i;
        return TOK_FLOAT;
    }
    if (s[j] == '0' && j + 2 < n && s[j + 1] == 'x' && is_hex(s[j + 2])) {
        j += 2;
        while (j < n && is_hex(s[j]))
            j++;
        if (j < n && (s[j] == 'u' || s[j] == 'U')) {
            *len = j + 1 - i;
            return TOK_UINT;
        }
        *len = j - i;
        return TOK_INT;
    }
    j += digits(s, n, j);
    if (j + 1 < n && s[j] == '.' && is_digit(s[j + 1])) {
        j += 1 + digits(s, n, j + 1);
        j += exponent(s, n, j);
        *len = j - i;
        return TOK_FLOAT;
    }
    size_t e = exponent(s, n, j);
    if (e) {
        *len = j + e - i;
        return TOK_FLOAT;
    }
    if (j < n && (s[j] == 'u' || s[j] == 'U')) {
        *len = j + 1 - i;
        return TOK_UINT;
    }
    *len = j - i;
    return TOK_INT;
}

/* The length of a STRING at i (its quote, after any r/R prefix, at q), or 0 when it does
 * not end, with *fail the index where the rule could not go on (n at the end). Escapes
 * are skipped by the ESC_SEQ shapes; raw strings have none. An unterminated triple quote
 * falls back to the empty string its first two quotes make, as ANTLR's lexer falls back
 * to the longest match it saw. */
static size_t string_len(const char *s, size_t n, size_t i, size_t q, bool raw, size_t *fail)
{
    char quote = s[q];
    bool triple = q + 2 < n && s[q + 1] == quote && s[q + 2] == quote;
    size_t j = q + (triple ? 3 : 1);
    while (j < n) {
        char c = s[j];
        if (triple && c == quote && j + 2 < n && s[j + 1] == quote && s[j + 2] == quote)
            return j + 3 - i;
        if (!triple && c == quote)
            return j + 1 - i;
        if (!triple && (c == '\n' || c == '\r')) {
            *fail = j;
            return 0;
        }
        if (c == '\\' && !raw) {
            /* ESC_SEQ: the shapes the grammar allows */
            if (j + 1 >= n) {
                *fail = n;
                return 0;
            }
            char e = s[j + 1];
            size_t k = 0;
            if (strchr("abfnrtv\"'\\?`", e))
                k = 2;
            else if (e >= '0' && e <= '3' && j + 3 < n && s[j + 2] >= '0' && s[j + 2] <= '7' &&
                     s[j + 3] >= '0' && s[j + 3] <= '7')
                k = 4;
            else if ((e == 'x' || e == 'X') && j + 3 < n && is_hex(s[j + 2]) && is_hex(s[j + 3]))
                k = 4;
            else if (e == 'u' || e == 'U') {
                size_t h = e == 'u' ? 4 : 8, m = 0;
                while (m < h && j + 2 + m < n && is_hex(s[j + 2 + m]))
                    m++;
                k = m == h ? 2 + h : 0;
            }
            if (!k) {
                /* the rule fails at the first character no shape takes */
                size_t m = 1;
                while (j + m < n && m < 9 && (m < 2 || is_hex(s[j + m]) || is_digit(s[j + m])))
                    m++;
                *fail = e && strchr("xXuU0123", e) ? j + m : j + 1;
                if (*fail > n)
                    *fail = n;
                return 0;
            }
            j += k;
            continue;
        }
        j++;
    }
    if (triple)
        return q + 2 - i;
    *fail = n;
    return 0;
}

static bool keyword(const char *s, size_t n, const char *kw)
{
    return n == strlen(kw) && memcmp(s, kw, n) == 0;
}

cel_token kapi_cel__next(cel_lexer *lx)
{
    const char *s = lx->src;
    size_t n = lx->len;
    for (;;) {
        size_t i = lx->pos;
        while (i < n && strchr("\t \r\n\f", s[i]) && s[i])
            i++;
        if (i + 1 < n && s[i] == '/' && s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                i++;
            lx->pos = i;
            continue;
        }
        lx->pos = i;
        if (i >= n)
            return (cel_token){TOK_EOF, n, 0};
        char c = s[i], d = i + 1 < n ? s[i + 1] : 0;
        cel_tok t = TOK_EOF;
        size_t len = 1, fail = 0;
        switch (c) {
        case '=':
            if (d == '=')
                t = TOK_EQ, len = 2;
            break;
        case '!':
            t = d == '=' ? TOK_NE : TOK_NOT, len = d == '=' ? 2 : 1;
            break;
        case '<':
            t = d == '=' ? TOK_LE : TOK_LT, len = d == '=' ? 2 : 1;
            break;
        case '>':
            t = d == '=' ? TOK_GE : TOK_GT, len = d == '=' ? 2 : 1;
            break;
        case '&':
            if (d == '&')
                t = TOK_AND, len = 2;
            break;
        case '|':
            if (d == '|')
                t = TOK_OR, len = 2;
            break;
        case '[':
            t = TOK_LBRACK;
            break;
        case ']':
            t = TOK_RBRACK;
            break;
        case '{':
            t = TOK_LBRACE;
            break;
        case '}':
            t = TOK_RBRACE;
            break;
        case '(':
            t = TOK_LPAREN;
            break;
        case ')':
            t = TOK_RPAREN;
            break;
        case ',':
            t = TOK_COMMA;
            break;
        case '-':
            t = TOK_MINUS;
            break;
        case '?':
            t = TOK_QUEST;
            break;
        case ':':
            t = TOK_COLON;
            break;
        case '+':
            t = TOK_PLUS;
            break;
        case '*':
            t = TOK_STAR;
            break;
        case '/':
            t = TOK_SLASH;
            break;
        case '%':
            t = TOK_PERCENT;
            break;
        case '.':
            if (is_digit(d))
                t = number(s, n, i, &len);
            else
                t = TOK_DOT;
            break;
        case '"':
        case '\'':
            if ((len = string_len(s, n, i, i, false, &fail)) != 0)
                t = TOK_STRING;
            break;
        default:
            if (is_digit(c)) {
                t = number(s, n, i, &len);
            } else if ((c == 'r' || c == 'R') && (d == '"' || d == '\'')) {
                if ((len = string_len(s, n, i, i + 1, true, &fail)) != 0)
                    t = TOK_STRING;
            } else if ((c == 'b' || c == 'B') && (d == '"' || d == '\'' ||
                                                  ((d == 'r' || d == 'R') && i + 2 < n &&
                                                   (s[i + 2] == '"' || s[i + 2] == '\'')))) {
                bool raw = d == 'r' || d == 'R';
                if ((len = string_len(s, n, i, i + 1 + raw, raw, &fail)) != 0)
                    t = TOK_BYTES;
            }
            if (t == TOK_EOF && (is_letter(c) || c == '_')) {
                size_t j = i + 1;
                while (j < n && (is_letter(s[j]) || is_digit(s[j]) || s[j] == '_'))
                    j++;
                len = j - i;
                t = keyword(s + i, len, "in")      ? TOK_IN
                    : keyword(s + i, len, "true")  ? TOK_TRUE
                    : keyword(s + i, len, "false") ? TOK_FALSE
                    : keyword(s + i, len, "null")  ? TOK_NULL
                                                   : TOK_IDENT;
            }
            break;
        }
        if (t == TOK_EOF) {
            /* no rule takes it: ANTLR reports what it read up to and with the character
             * it failed at, and goes on after that character */
            size_t end = fail ? fail : i;
            size_t cl = end < n ? 1 : 0;
            while (end + cl < n && ((unsigned char)s[end + cl] & 0xC0) == 0x80)
                cl++;
            kapi_buf msg;
            kapi_buf_init(&msg);
            kapi_buf_puts(&msg, "token recognition error at: '");
            for (size_t k = i; k < end + cl; k++) /* ANTLR's getErrorDisplay */
                kapi_buf_puts(&msg, s[k] == '\n'   ? "\\n"
                                    : s[k] == '\r' ? "\\r"
                                    : s[k] == '\t' ? "\\t"
                                                   : (char[2]){s[k], 0});
            kapi_buf_putc(&msg, '\'');
            lx->report(lx->ctx, i, msg.ptr);
            kapi_buf_dispose(&msg);
            lx->pos = end + cl;
            continue;
        }
        lx->pos = i + len;
        return (cel_token){t, i, len};
    }
}

/* ---- unescaping (cel-go's parser/unescape.go) ---- */

const char *kapi_cel__unquote(const char *text, size_t n, bool bytes, kapi_buf *out)
{
    static const char bad[] = "unable to unescape string";
    bool raw = false;
    if (bytes)
        text++, n--;
    if (n < 2)
        return bad;
    if (text[0] == 'r' || text[0] == 'R')
        text++, n--, raw = true;
    if (text[0] != text[n - 1] || (text[0] != '"' && text[0] != '\''))
        return bad;
    size_t q = n >= 6 && text[1] == text[0] && text[2] == text[0] ? 3 : 1;
    const char *p = text + q, *end = text + n - q;
    if (raw || !memchr(p, '\\', (size_t)(end - p))) {
        kapi_buf_put(out, p, (size_t)(end - p));
        return NULL;
    }
    while (p < end) {
        if (*p != '\\') {
            kapi_buf_putc(out, *p++);
            continue;
        }
        if (p + 1 >= end)
            return "unable to unescape string, found '\\' as last character";
        char c = p[1];
        p += 2;
        const char *simple = strchr("abfnrtv\\'\"`?", c);
        if (simple && c) {
            static const char values[] = "\a\b\f\n\r\t\v\\'\"`?";
            kapi_buf_putc(out, values[simple - "abfnrtv\\'\"`?"]);
        } else if (c == 'x' || c == 'X' || c == 'u' || c == 'U') {
            size_t h = c == 'u' ? 4 : c == 'U' ? 8 : 2;
            if ((c == 'u' || c == 'U') && bytes)
                return bad;
            if ((size_t)(end - p) < h)
                return bad;
            uint32_t v = 0;
            for (size_t j = 0; j < h; j++) {
                if (!is_hex(p[j]))
                    return bad;
                v = v << 4 | (uint32_t)kapi_hex_value(p[j]);
            }
            p += h;
            if (h == 2 && bytes)
                kapi_buf_putc(out, (char)v);
            else if (v > 0x10FFFF)
                return bad;
            else /* a surrogate is written as U+FFFD, as Go's utf8.EncodeRune writes it */
                kapi_go_put_rune(out, (int32_t)v);
        } else if (c >= '0' && c <= '3') {
            if (end - p < 2 || p[0] < '0' || p[0] > '7' || p[1] < '0' || p[1] > '7')
                return "unable to unescape octal sequence in string";
            uint32_t v =
                (uint32_t)(c - '0') * 64 + (uint32_t)(p[0] - '0') * 8 + (uint32_t)(p[1] - '0');
            p += 2;
            if (bytes)
                kapi_buf_putc(out, (char)v);
            else
                kapi_go_put_rune(out, (int32_t)v);
        } else {
            return bad;
        }
    }
    return NULL;
}
