/* The optional C form of reading top-level fields out of flat JSON objects.
 *
 * `top_columns(payloads, names)` gives, for each name, the list of that field's
 * value in each payload: what decoding every payload (orjson, or the standard json
 * module) and taking `doc[name]` gives. It accepts a strict subset of JSON and
 * returns None for anything outside it, and the caller then decodes the payloads
 * (the reference, which also raises for a payload that is not JSON). The subset:
 * one object, optional JSON whitespace around its tokens, members whose keys and
 * string values hold no backslash and no control character and are valid UTF-8,
 * values that are such strings, numbers (an integer of at most 18 digits, or a
 * float of at most 64 characters with at most two exponent digits), true, false or
 * null; each name present exactly once. A nested
 * object or array, an escape, a long integer, a duplicate name or a missing name
 * all give None. `sowlib/codecs/json_fields.py` states the reference and
 * tests/codecs/test_json_fields.py checks that both agree.
 *
 * The reads of payloads where they lie in a log file's map (`top_columns_at`,
 * `top_codes_at`) are in jsonmapped.c, which shares this file's parser through
 * jsonfields.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "jsonfields.h"


#define MAX_INT_DIGITS 18
#define MAX_NUMBER 64

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
} Cursor;

static void
skip_ws(Cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) {
        c->p++;
    }
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 (Unicode table 3-7). */
static int
utf8_sequence(const unsigned char *p, const unsigned char *end)
{
    unsigned char b = p[0];
    Py_ssize_t left = end - p;
    if (b < 0x80) {
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF) {
        return (left >= 2 && (p[1] & 0xC0) == 0x80) ? 2 : 0;
    }
    if (b >= 0xE0 && b <= 0xEF) {
        if (left < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) {
            return 0;
        }
        if (b == 0xE0 && p[1] < 0xA0) {
            return 0; /* overlong */
        }
        if (b == 0xED && p[1] > 0x9F) {
            return 0; /* a surrogate */
        }
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (left < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 ||
            (p[3] & 0xC0) != 0x80) {
            return 0;
        }
        if (b == 0xF0 && p[1] < 0x90) {
            return 0; /* overlong */
        }
        if (b == 0xF4 && p[1] > 0x8F) {
            return 0; /* beyond U+10FFFF */
        }
        return 4;
    }
    return 0;
}

/* A string token at c->p (on its opening quote): sets its content span; 0 or -1 (not
 * in the subset). */
static int
read_string(Cursor *c, const unsigned char **start, Py_ssize_t *len)
{
    if (c->p >= c->end || *c->p != '"') {
        return -1;
    }
    const unsigned char *p = c->p + 1;
    *start = p;
    while (p < c->end) {
        unsigned char b = *p;
        if (b == '"') {
            *len = p - *start;
            c->p = p + 1;
            return 0;
        }
        if (b == '\\' || b < 0x20) {
            return -1;
        }
        if (b < 0x80) {
            p++;
            continue;
        }
        int n = utf8_sequence(p, c->end);
        if (n == 0) {
            return -1;
        }
        p += n;
    }
    return -1;
}

static int
is_digit(unsigned char b)
{
    return b >= '0' && b <= '9';
}

/* A number token at c->p, as JSON's grammar has it, within the subset: an integer of
 * at most MAX_INT_DIGITS digits, or a float of at most MAX_NUMBER characters whose
 * exponent has at most two digits (so it is finite: it needs no parse to be checked).
 * With `make`, a new int or float; else Py_None (borrowed: only checked). NULL with
 * nothing set when outside the subset, NULL with an error set on failure. */
static PyObject *
read_number(Cursor *c, int make)
{
    const unsigned char *p = c->p, *start = c->p, *end = c->end;
    int negative = 0, digits = 0, is_float = 0, exponent_digits = 0;
    if (p < end && *p == '-') {
        negative = 1;
        p++;
    }
    if (p >= end || !is_digit(*p)) {
        return NULL;
    }
    if (*p == '0') {
        p++;
        digits = 1;
    }
    else {
        while (p < end && is_digit(*p)) {
            p++;
            digits++;
        }
    }
    if (p < end && *p == '.') {
        is_float = 1;
        p++;
        if (p >= end || !is_digit(*p)) {
            return NULL;
        }
        while (p < end && is_digit(*p)) {
            p++;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        is_float = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-')) {
            p++;
        }
        if (p >= end || !is_digit(*p)) {
            return NULL;
        }
        while (p < end && is_digit(*p)) {
            p++;
            exponent_digits++;
        }
    }
    Py_ssize_t n = p - start;
    if (is_float ? (n > MAX_NUMBER || exponent_digits > 2) : digits > MAX_INT_DIGITS) {
        return NULL;
    }
    c->p = p;
    if (!make) {
        return Py_None;
    }
    if (!is_float) {
        long long value = 0;
        for (const unsigned char *q = start + negative; q < p; q++) {
            value = value * 10 + (*q - '0');
        }
        return PyLong_FromLongLong(negative ? -value : value);
    }
    char text[MAX_NUMBER + 1];
    memcpy(text, start, (size_t)n);
    text[n] = '\0';
    char *stop = NULL;
    double value = PyOS_string_to_double(text, &stop, NULL);
    if (value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    if (stop != text + n || !Py_IS_FINITE(value)) {
        return NULL;
    }
    return PyFloat_FromDouble(value);
}

static int
match_word(Cursor *c, const char *word, Py_ssize_t n)
{
    if (c->end - c->p < n || memcmp(c->p, word, (size_t)n) != 0) {
        return 0;
    }
    c->p += n;
    return 1;
}

/* The value at c->p as a new reference; NULL with nothing set when outside the subset. */
static PyObject *
read_value(Cursor *c)
{
    if (c->p >= c->end) {
        return NULL;
    }
    unsigned char b = *c->p;
    if (b == '"') {
        const unsigned char *start;
        Py_ssize_t len;
        if (read_string(c, &start, &len) < 0) {
            return NULL;
        }
        return PyUnicode_DecodeUTF8((const char *)start, len, "strict");
    }
    if (b == '-' || is_digit(b)) {
        return read_number(c, 1);
    }
    if (match_word(c, "true", 4)) {
        Py_RETURN_TRUE;
    }
    if (match_word(c, "false", 5)) {
        Py_RETURN_FALSE;
    }
    if (match_word(c, "null", 4)) {
        Py_RETURN_NONE;
    }
    return NULL;
}

/* Skip the value at c->p (checking it as read_value does, making no object); 0 or -1. */
static int
skip_value(Cursor *c)
{
    if (c->p >= c->end) {
        return -1;
    }
    unsigned char b = *c->p;
    if (b == '"') {
        const unsigned char *start;
        Py_ssize_t len;
        return read_string(c, &start, &len);
    }
    if (b == '-' || is_digit(b)) {
        return read_number(c, 0) == NULL ? -1 : 0;
    }
    if (match_word(c, "true", 4) || match_word(c, "false", 5) || match_word(c, "null", 4)) {
        return 0;
    }
    return -1;
}

int
jsonfields_read_payload(const unsigned char *data, Py_ssize_t size, PyObject *names,
                        Py_ssize_t count, PyObject **found)
{
    Cursor c = {data, data + size};
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{') {
        return 1;
    }
    c.p++;
    skip_ws(&c);
    if (c.p < c.end && *c.p == '}') {
        c.p++;
    }
    else {
        for (;;) {
            const unsigned char *key;
            Py_ssize_t key_len;
            if (read_string(&c, &key, &key_len) < 0) {
                return 1;
            }
            skip_ws(&c);
            if (c.p >= c.end || *c.p != ':') {
                return 1;
            }
            c.p++;
            skip_ws(&c);
            Py_ssize_t at = -1;
            for (Py_ssize_t i = 0; i < count; i++) {
                PyObject *name = PyTuple_GET_ITEM(names, i);
                if (PyBytes_GET_SIZE(name) == key_len &&
                    memcmp(PyBytes_AS_STRING(name), key, (size_t)key_len) == 0) {
                    at = i;
                    break;
                }
            }
            if (at < 0) {
                if (skip_value(&c) < 0) {
                    return PyErr_Occurred() ? -1 : 1;
                }
            }
            else {
                if (found[at] != NULL) {
                    return 1; /* a duplicate name: left to the reference */
                }
                found[at] = read_value(&c);
                if (found[at] == NULL) {
                    return PyErr_Occurred() ? -1 : 1;
                }
            }
            skip_ws(&c);
            if (c.p < c.end && *c.p == ',') {
                c.p++;
                skip_ws(&c);
                continue;
            }
            if (c.p < c.end && *c.p == '}') {
                c.p++;
                break;
            }
            return 1;
        }
    }
    skip_ws(&c);
    if (c.p != c.end) {
        return 1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        if (found[i] == NULL) {
            return 1;
        }
    }
    return 0;
}

PyObject *
jsonfields_new_columns(Py_ssize_t count, Py_ssize_t rows)
{
    PyObject *columns = PyList_New(count);
    if (columns == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *column = PyList_New(rows);
        if (column == NULL) {
            Py_DECREF(columns);
            return NULL;
        }
        PyList_SET_ITEM(columns, i, column);
    }
    return columns;
}

int
jsonfields_names_ok(PyObject *names)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        if (!PyBytes_Check(PyTuple_GET_ITEM(names, i))) {
            PyErr_SetString(PyExc_TypeError, "names must be bytes");
            return 0;
        }
    }
    return 1;
}

/* Read one payload into row `row` of `columns`: 0, 1 (outside the subset: `columns`
 * released) or -1 (an error: `columns` released). */
static int
fill_row(PyObject *columns, Py_ssize_t row, const unsigned char *data, Py_ssize_t size,
         PyObject *names, Py_ssize_t count)
{
    PyObject *found[MAX_NAMES];
    memset(found, 0, sizeof found);
    int got = jsonfields_read_payload(data, size, names, count, found);
    if (got != 0) {
        for (Py_ssize_t i = 0; i < count; i++) {
            Py_XDECREF(found[i]);
        }
        Py_DECREF(columns);
        return got;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyList_SET_ITEM(PyList_GET_ITEM(columns, i), row, found[i]);
    }
    return 0;
}

static PyObject *
top_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyList_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "top_columns(payloads: list, names: tuple)");
        return NULL;
    }
    PyObject *payloads = args[0], *names = args[1];
    Py_ssize_t count = PyTuple_GET_SIZE(names), rows = PyList_GET_SIZE(payloads);
    if (count == 0 || count > MAX_NAMES) {
        Py_RETURN_NONE;
    }
    if (!jsonfields_names_ok(names)) {
        return NULL;
    }
    PyObject *columns = jsonfields_new_columns(count, rows);
    if (columns == NULL) {
        return NULL;
    }
    for (Py_ssize_t row = 0; row < rows; row++) {
        PyObject *payload = PyList_GET_ITEM(payloads, row);
        if (!PyBytes_CheckExact(payload)) {
            Py_DECREF(columns);
            Py_RETURN_NONE;
        }
        int got = fill_row(columns, row, (const unsigned char *)PyBytes_AS_STRING(payload),
                           PyBytes_GET_SIZE(payload), names, count);
        if (got < 0) {
            return NULL;
        }
        if (got > 0) {
            Py_RETURN_NONE;
        }
    }
    return columns;
}

static PyMethodDef methods[] = {
    {"top_columns", (PyCFunction)(void (*)(void))top_columns, METH_FASTCALL,
     "top_columns(payloads, names): each name's value in each flat JSON object, or None."},
    {"top_columns_at", (PyCFunction)(void (*)(void))top_columns_at, METH_FASTCALL,
     "top_columns_at(api, buf, offsets, low, limit, names): top_columns of the payloads of "
     "the common PUT records at offsets of a log's map, read in place, or None."},
    {"top_codes_at", (PyCFunction)(void (*)(void))top_codes_at, METH_FASTCALL,
     "top_codes_at(api, buf, offsets, low, limit, names): top_columns_at coded: per name "
     "(num, code, values, strings), or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "sowlib.codecs.jsonfields",
    "Top-level fields of flat JSON objects (the optional C form).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit_jsonfields(void)
{
    return PyModule_Create(&module);
}
