/* The content key a by-key read looks up (reader.c's `lookup` and `get`), as the Python
 * path finds it:
 *
 *   - `reader_key_of_value`: the key of a one-field content key value, XXH64 (seed 0)
 *     of `head + text`, as the content key generator hashes it: the value's text is an
 *     int in the int64 range as decimal, or a non-empty str as UTF-8. Hashed by
 *     digest.h on a scratch buffer; a key longer than the buffer by `digest` (the
 *     package's function) on a bytes object;
 *   - `reader_key_of_text`: the key a SOW key's text stands for, as KeyMap.key_of reads
 *     it (the decimal text of an int in [0, 2**64), no leading zero).
 *
 * Any other value (another type, an int past int64, empty text, text with lone
 * surrogates, another SOW key text) is the Python path's: 0.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "../storage/digest.h"
#include "keytable.h"

/* The decimal text of `v` in `out` (room for 21 characters); its length. */
static Py_ssize_t
decimal(long long v, char *out)
{
    if (v >= 0) {
        return decimal_digits((uint64_t)v, out);
    }
    out[0] = '-';
    return 1 + decimal_digits(0ULL - (unsigned long long)v, out + 1);
}

int
reader_key_of_text(PyObject *value, uint64_t *key)
{
    if (!PyUnicode_CheckExact(value) || !PyUnicode_IS_ASCII(value)) {
        return 0;
    }
    Py_ssize_t len = PyUnicode_GET_LENGTH(value);
    const Py_UCS1 *text = PyUnicode_1BYTE_DATA(value);
    if (len == 0 || len > 20 || (text[0] == '0' && len > 1)) {
        return 0;
    }
    uint64_t v = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        unsigned d = (unsigned)text[i] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10) {
            return 0;
        }
        v = v * 10 + d;
    }
    *key = v;
    return 1;
}

int
reader_key_of_value(PyObject *value, const char *head, Py_ssize_t head_len, char *scratch,
                    Py_ssize_t room, PyObject *digest, uint64_t *key)
{
    char number[24];
    const char *text;
    Py_ssize_t len;
    if (PyLong_CheckExact(value)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        len = decimal(v, number);
        text = number;
    }
    else if (PyUnicode_CheckExact(value)) {
        text = PyUnicode_AsUTF8AndSize(value, &len);
        if (text == NULL || len == 0) {
            PyErr_Clear(); /* lone surrogates: the Python path escapes them */
            return 0;
        }
    }
    else {
        return 0;
    }
    if (head_len + len <= room) {
        memcpy(scratch, head, (size_t)head_len);
        memcpy(scratch + head_len, text, (size_t)len);
        *key = dg_xxh64(scratch, (size_t)(head_len + len), 0);
        return 1;
    }
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, head_len + len);
    if (bytes == NULL) {
        return -1;
    }
    memcpy(PyBytes_AS_STRING(bytes), head, (size_t)head_len);
    memcpy(PyBytes_AS_STRING(bytes) + head_len, text, (size_t)len);
    PyObject *hashed = PyObject_Vectorcall(digest, &bytes, 1, NULL);
    Py_DECREF(bytes);
    if (hashed == NULL) {
        return -1;
    }
    *key = PyLong_AsUnsignedLongLong(hashed);
    Py_DECREF(hashed);
    return *key == (uint64_t)-1 && PyErr_Occurred() ? -1 : 1;
}
