/* The reads of top-level fields where records lie in a log file's map (part of the
 * optional `sowlib.codecs.jsonfields` module; the parser is jsonfields.c's).
 *
 * `top_columns_at(api, buf, offsets, low, limit, names)` gives what `top_columns` gives
 * for the payloads of the common PUT records at `offsets` of a log file's map `buf`,
 * reading each payload where it lies in the map: no bytes object per record. `api` is
 * the capsule `sowlib.storage.recordread.c_api`, handed over by the caller (the codecs
 * import no storage module): its `common_put` finds each record and checks its
 * checksum, as `read_put` does. None when a record there is not an intact common PUT
 * within [low, limit) or a payload is outside the subset: the caller then reads and
 * decodes the payloads (tests/codecs/test_json_fields_at.py checks both agree).
 *
 * `top_codes_at` (same arguments) reads the same values into a coded column per name,
 * `(num, code, values, strings)`: `num` the float64 and `code` the int32 of each row
 * (bytes, native order); an int of at most 2**53 in magnitude is `num` with code -1,
 * a float other than NaN and -0.0 is `num` with code -2, and any other value is
 * `values[code]` (`strings` maps each text in `values` to its code: text repeated is
 * one entry; None, true and false one entry each; anything else one per row). What
 * `sowlib.columns.column.Column.encode` makes of each value decides in the end: the
 * caller encodes each entry of `values` (tests/columns/test_coded_read.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../storage/recordread.h"
#include "jsonfields.h"

/* What a read of records in a map calls per row: put the row's values (`found`, new
 * references it takes) in place; 0, or -1 with an error set. */
typedef int (*RowSink)(void *sink, Py_ssize_t row, PyObject **found, Py_ssize_t count);

/* The arguments of top_columns_at and top_codes_at: (api, buf, offsets, low, limit,
 * names). 0 (the buffer acquired: release it), 1 (give None) or -1 (an error). */
static int
map_args(PyObject *const *args, Py_ssize_t nargs, const RecordReadApi **records,
         Py_buffer *view, Py_ssize_t *low, Py_ssize_t *limit)
{
    if (nargs != 6 || !PyList_Check(args[2]) || !PyTuple_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "(api, buf, offsets: list, low: int, limit: int, "
                                         "names: tuple) expected");
        return -1;
    }
    *records = PyCapsule_GetPointer(args[0], RECORDREAD_API);
    if (*records == NULL) {
        return -1;
    }
    *low = PyLong_AsSsize_t(args[3]);
    if (*low == -1 && PyErr_Occurred()) {
        return -1;
    }
    *limit = PyLong_AsSsize_t(args[4]);
    if (*limit == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (!jsonfields_names_ok(args[5])) {
        return -1;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(args[5]);
    if (count == 0 || count > MAX_NAMES) {
        return 1;
    }
    if (PyObject_GetBuffer(args[1], view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (*limit > view->len) {
        *limit = view->len;
    }
    return 0;
}

/* Read the records at `offsets` of the map into `sink`: 0, 1 (a record or payload this
 * does not read) or -1 (an error). */
static int
read_records(const RecordReadApi *records, Py_buffer *view, PyObject *offsets, Py_ssize_t low,
             Py_ssize_t limit, PyObject *names, RowSink put, void *sink)
{
    const unsigned char *base = view->buf;
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    PyObject *found[MAX_NAMES];
    for (Py_ssize_t row = 0; row < PyList_GET_SIZE(offsets); row++) {
        /* offsets holds only what the caller put there and nothing here runs Python
         * code: the list cannot change while it is read */
        Py_ssize_t off = PyLong_AsSsize_t(PyList_GET_ITEM(offsets, row));
        if (off == -1 && PyErr_Occurred()) {
            return -1;
        }
        CommonPut at;
        int got = off < low ? 0 : records->common_put(base, off, limit, &at);
        if (got <= 0) {
            return got < 0 ? -1 : 1;
        }
        memset(found, 0, sizeof found);
        got = jsonfields_read_payload(at.payload, at.payload_len, names, count, found);
        if (got != 0) {
            for (Py_ssize_t i = 0; i < count; i++) {
                Py_XDECREF(found[i]);
            }
            return got;
        }
        if (put(sink, row, found, count) < 0) {
            return -1;
        }
    }
    return 0;
}

static int
put_in_columns(void *sink, Py_ssize_t row, PyObject **found, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        PyList_SET_ITEM(PyList_GET_ITEM((PyObject *)sink, i), row, found[i]);
    }
    return 0;
}

PyObject *
top_columns_at(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    const RecordReadApi *records;
    Py_buffer view;
    Py_ssize_t low, limit;
    int ready = map_args(args, nargs, &records, &view, &low, &limit);
    if (ready != 0) {
        if (ready < 0) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    PyObject *offsets = args[2], *names = args[5];
    PyObject *columns = jsonfields_new_columns(PyTuple_GET_SIZE(names), PyList_GET_SIZE(offsets));
    int got = columns == NULL ? -1
                              : read_records(records, &view, offsets, low, limit, names,
                                             put_in_columns, columns);
    PyBuffer_Release(&view);
    if (got != 0) {
        Py_XDECREF(columns);
        if (got < 0) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    return columns;
}

/* ------------------------------------------------------------------ coded columns */

#define SAFE_INT (1LL << 53)
#define INT_CODE (-1)
#define FLOAT_CODE (-2)

/* One field's coded column being filled (see top_codes_at). */
typedef struct {
    double *num;
    int32_t *code;
    PyObject *values;  /* list: the other values, by local code */
    PyObject *strings; /* dict: str -> its local code */
    int32_t singles[3]; /* the local codes of None, True and False (-1: none yet) */
} Coder;

typedef struct {
    Coder coders[MAX_NAMES];
} Coders;

/* The local code of `v` (a reference taken), added when new: 0 or -1. */
static int
local_code(Coder *k, PyObject *v, int32_t *out)
{
    int single = v == Py_None ? 0 : v == Py_True ? 1 : v == Py_False ? 2 : -1;
    if (single >= 0 && k->singles[single] >= 0) {
        *out = k->singles[single];
        Py_DECREF(v);
        return 0;
    }
    int text = PyUnicode_CheckExact(v);
    if (text) {
        PyObject *known = PyDict_GetItemWithError(k->strings, v);
        if (known != NULL) {
            *out = (int32_t)PyLong_AsLong(known);
            Py_DECREF(v);
            return 0;
        }
        if (PyErr_Occurred()) {
            Py_DECREF(v);
            return -1;
        }
    }
    Py_ssize_t next = PyList_GET_SIZE(k->values);
    if (next >= INT32_MAX) {
        Py_DECREF(v);
        PyErr_SetString(PyExc_OverflowError, "too many distinct values");
        return -1;
    }
    *out = (int32_t)next;
    if (text) {
        PyObject *number = PyLong_FromSsize_t(next);
        if (number == NULL || PyDict_SetItem(k->strings, v, number) < 0) {
            Py_XDECREF(number);
            Py_DECREF(v);
            return -1;
        }
        Py_DECREF(number);
    }
    if (single >= 0) {
        k->singles[single] = *out;
    }
    int failed = PyList_Append(k->values, v);
    Py_DECREF(v);
    return failed;
}

static int
put_in_codes(void *sink, Py_ssize_t row, PyObject **found, Py_ssize_t count)
{
    Coders *all = sink;
    int failed = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        Coder *k = &all->coders[i];
        PyObject *v = found[i];
        found[i] = NULL;
        if (failed) {
            Py_DECREF(v);
            continue;
        }
        if (PyLong_CheckExact(v)) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (!overflow && x >= -SAFE_INT && x <= SAFE_INT) {
                k->num[row] = (double)x;
                k->code[row] = INT_CODE;
                Py_DECREF(v);
                continue;
            }
            PyErr_Clear();
        }
        else if (PyFloat_CheckExact(v)) {
            double d = PyFloat_AS_DOUBLE(v);
            /* NaN, and -0.0 (equal to 0.0, dividing differently), are values of their own */
            if (d == d && (d != 0.0 || !signbit(d))) {
                k->num[row] = d;
                k->code[row] = FLOAT_CODE;
                Py_DECREF(v);
                continue;
            }
        }
        k->num[row] = 0.0;
        failed = local_code(k, v, &k->code[row]) < 0;
    }
    return failed ? -1 : 0;
}

PyObject *
top_codes_at(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    const RecordReadApi *records;
    Py_buffer view;
    Py_ssize_t low, limit;
    int ready = map_args(args, nargs, &records, &view, &low, &limit);
    if (ready != 0) {
        if (ready < 0) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    PyObject *offsets = args[2], *names = args[5];
    Py_ssize_t count = PyTuple_GET_SIZE(names), rows = PyList_GET_SIZE(offsets);
    PyObject *out = PyList_New(count);
    Coders *all = PyMem_Calloc(1, sizeof(Coders));
    int got = out == NULL || all == NULL ? -1 : 0;
    if (all == NULL) {
        PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < count && got == 0; i++) {
        PyObject *num = PyBytes_FromStringAndSize(NULL, rows * (Py_ssize_t)sizeof(double));
        PyObject *code = PyBytes_FromStringAndSize(NULL, rows * (Py_ssize_t)sizeof(int32_t));
        PyObject *values = PyList_New(0), *strings = PyDict_New();
        PyObject *item = num && code && values && strings
                             ? PyTuple_Pack(4, num, code, values, strings)
                             : NULL;
        if (item == NULL) {
            got = -1;
        }
        else {
            PyList_SET_ITEM(out, i, item);
            Coder *k = &all->coders[i];
            k->num = (double *)PyBytes_AS_STRING(num);
            k->code = (int32_t *)PyBytes_AS_STRING(code);
            k->values = values; /* borrowed: the tuple holds them */
            k->strings = strings;
            k->singles[0] = k->singles[1] = k->singles[2] = -1;
        }
        Py_XDECREF(num);
        Py_XDECREF(code);
        Py_XDECREF(values);
        Py_XDECREF(strings);
    }
    if (got == 0) {
        got = read_records(records, &view, offsets, low, limit, names, put_in_codes, all);
    }
    PyBuffer_Release(&view);
    PyMem_Free(all);
    if (got != 0) {
        Py_XDECREF(out);
        if (got < 0) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    return out;
}

