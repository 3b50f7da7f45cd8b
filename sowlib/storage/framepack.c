/* The optional C form of framing a batch of PUT records with u64 keys (the publish
 * path's `framing.puts_u64`, which is the reference: tests/storage/test_framing_fast.py
 * checks that both give the same bytes).
 *
 * puts_u64(key_ints, payloads, ts_us, exp_us, seq) -> (data, lengths)
 *
 * Each record: the little-endian header `<IBBHIQq` + (exp_us when not 0: `q`) + the key
 * `Q`, the payload, then the XXH3-64 of all that as 8 big-endian bytes (digest.h). The
 * kind byte is PUT | U64_KEY (| EXPIRATION); record i has seq `seq + 1 + i`. Written in
 * one pass into one bytes object: no object per record but the lengths' ints.
 * TypeError for anything but two lists of one length holding ints in [0, 2**64) and
 * bytes; OverflowError for a key beyond that range or a record over 4 GiB.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "digest.h"

#define MARKER 0xF5
#define KIND_PUT 1
#define FLAG_EXPIRATION 0x10
#define FLAG_U64_KEY 0x40
#define CHECKSUM 8

static unsigned char *
put_le(unsigned char *p, uint64_t v, int width)
{
    for (int i = 0; i < width; i++) {
        p[i] = (unsigned char)(v >> (8 * i));
    }
    return p + width;
}

static PyObject *
puts_u64(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 5 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError,
                        "puts_u64(key_ints: list, payloads: list, ts_us, exp_us, seq)");
        return NULL;
    }
    PyObject *keys = args[0], *payloads = args[1];
    Py_ssize_t n = PyList_GET_SIZE(keys);
    if (PyList_GET_SIZE(payloads) != n) {
        PyErr_SetString(PyExc_ValueError, "one key per payload");
        return NULL;
    }
    long long ts = PyLong_AsLongLong(args[2]);
    long long exp = ts == -1 && PyErr_Occurred() ? 0 : PyLong_AsLongLong(args[3]);
    unsigned long long seq = PyErr_Occurred() ? 0 : PyLong_AsUnsignedLongLong(args[4]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t head = 4 + 1 + 1 + 2 + 4 + 8 + 8 + (exp ? 8 : 0) + 8;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = PyList_GET_ITEM(payloads, i);
        if (!PyBytes_CheckExact(p)) {
            PyErr_SetString(PyExc_TypeError, "puts_u64: payloads must be bytes");
            return NULL;
        }
        Py_ssize_t size = head + PyBytes_GET_SIZE(p) + CHECKSUM;
        if (size > (Py_ssize_t)UINT32_MAX || total > PY_SSIZE_T_MAX - size) {
            PyErr_SetString(PyExc_OverflowError, "puts_u64: a record over 4 GiB");
            return NULL;
        }
        total += size;
    }
    PyObject *lengths = PyList_New(n);
    if (lengths == NULL) {
        return NULL;
    }
    PyObject *data = PyBytes_FromStringAndSize(NULL, total);
    if (data == NULL) {
        Py_DECREF(lengths);
        return NULL;
    }
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(data);
    unsigned char kind = KIND_PUT | FLAG_U64_KEY | (exp ? FLAG_EXPIRATION : 0);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyList_GET_ITEM(keys, i), *p = PyList_GET_ITEM(payloads, i);
        if (!PyLong_CheckExact(k)) {
            PyErr_SetString(PyExc_TypeError, "puts_u64: keys must be ints");
            goto fail;
        }
        unsigned long long key = PyLong_AsUnsignedLongLong(k);
        if (key == (unsigned long long)-1 && PyErr_Occurred()) {
            goto fail; /* OverflowError: negative or past 64 bits */
        }
        Py_ssize_t plen = PyBytes_GET_SIZE(p);
        Py_ssize_t length = head + plen + CHECKSUM;
        unsigned char *rec = out;
        out = put_le(out, (uint64_t)length, 4);
        *out++ = MARKER;
        *out++ = kind;
        out = put_le(out, 8, 2);
        out = put_le(out, (uint64_t)plen, 4);
        out = put_le(out, seq + 1 + (unsigned long long)i, 8);
        out = put_le(out, (uint64_t)ts, 8);
        if (exp) {
            out = put_le(out, (uint64_t)exp, 8);
        }
        out = put_le(out, key, 8);
        memcpy(out, PyBytes_AS_STRING(p), (size_t)plen);
        out += plen;
        uint64_t sum = dg_xxh3_64(rec, (size_t)(out - rec));
        for (int b = 7; b >= 0; b--) {
            *out++ = (unsigned char)(sum >> (8 * b));
        }
        PyObject *size = PyLong_FromSsize_t(length);
        if (size == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(lengths, i, size);
    }
    return Py_BuildValue("(NN)", data, lengths);
fail:
    Py_DECREF(data);
    Py_DECREF(lengths);
    return NULL;
}

static PyMethodDef methods[] = {
    {"puts_u64", (PyCFunction)(void (*)(void))puts_u64, METH_FASTCALL,
     "puts_u64(key_ints, payloads, ts_us, exp_us, seq): (record bytes, lengths)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "sowlib.storage.framepack",
    "Framing PUT records with u64 keys (the optional C form).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit_framepack(void)
{
    return PyModule_Create(&module);
}
