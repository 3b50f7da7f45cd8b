/* The optional C form of one checked read of the common PUT record.
 *
 * `read_put(buf, off, limit)` gives what `sowlib.storage.walk.read_put` gives for a
 * PUT record with a u64 key and nothing optional, whose checksum holds:
 * (seq, timestamp seconds, 0.0, b"", framed length, payload). For anything else
 * (another record shape, a record that is not intact, an offset outside the
 * bytes) it returns None and the caller takes the Python path, which decides and
 * raises. The Python path is the reference; tests/storage/test_recordread.py checks
 * that both agree on intact, damaged and foreign bytes.
 *
 * The checksum is xxh3-64 of the record up to its last 8 bytes, which hold it in
 * canonical (big-endian) order; it is computed by the xxhash package the rest of
 * sowlib uses, called on a read-only view of the bytes (no copy).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* The layout of the common record (see docs/storage-format.md). */
#define HEAD_SIZE 36     /* fixed header and the u64 key: where the payload starts */
#define OVERHEAD 44      /* HEAD_SIZE and the 8-byte checksum */
#define MARKER 0xF5      /* byte 4 of every record */
#define KIND_BYTE 0x41   /* a PUT whose key is a u64 */
#define KEY_BYTES 8

static PyObject *intdigest; /* xxhash.xxh3_64_intdigest */

static uint32_t
load_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v; /* the file is little-endian, as are the machines sowlib builds on */
}

static uint64_t
load_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t
load_canonical_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

/* 1: the checksum holds; 0: it does not; -1: an error is set. */
static int
checksum_holds(const unsigned char *rec, Py_ssize_t body)
{
    PyObject *view = PyMemoryView_FromMemory((char *)rec, body, PyBUF_READ);
    if (view == NULL) {
        return -1;
    }
    PyObject *digest = PyObject_CallOneArg(intdigest, view);
    Py_DECREF(view);
    if (digest == NULL) {
        return -1;
    }
    uint64_t got = PyLong_AsUnsignedLongLong(digest);
    Py_DECREF(digest);
    if (got == (uint64_t)-1 && PyErr_Occurred()) {
        return -1;
    }
    return got == load_canonical_u64(rec + body);
}

static PyObject *
fields_of(const unsigned char *rec, uint32_t length)
{
    uint64_t seq = load_u64(rec + 12);
    int64_t stamp;
    memcpy(&stamp, rec + 20, sizeof stamp);
    return Py_BuildValue(
        "(KddyIy#)",
        (unsigned long long)seq,
        (double)stamp / 1e6,
        0.0,
        "",
        (unsigned int)length,
        (const char *)rec + HEAD_SIZE,
        (Py_ssize_t)(length - OVERHEAD));
}

static PyObject *
read_put(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "read_put(buf, off, limit) takes 3 arguments");
        return NULL;
    }
    Py_ssize_t off = PyLong_AsSsize_t(args[1]);
    if (off == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[2]);
    if (limit == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer buf;
    if (PyObject_GetBuffer(args[0], &buf, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    PyObject *result = Py_None;
    if (limit > buf.len) {
        limit = buf.len;
    }
    if (off < 0 || limit < OVERHEAD || off > limit - OVERHEAD) {
        goto done;
    }
    const unsigned char *rec = (const unsigned char *)buf.buf + off;
    uint32_t length = load_u32(rec);
    uint32_t payload = load_u32(rec + 8);
    if (rec[4] != MARKER || rec[5] != KIND_BYTE || rec[6] != KEY_BYTES || rec[7] != 0) {
        goto done;
    }
    if ((uint64_t)length != (uint64_t)payload + OVERHEAD || (uint64_t)length > (uint64_t)(limit - off)) {
        goto done;
    }
    int holds = checksum_holds(rec, (Py_ssize_t)length - 8);
    if (holds < 0) {
        result = NULL;
    } else if (holds) {
        result = fields_of(rec, length);
    }
done:
    PyBuffer_Release(&buf);
    if (result == Py_None) {
        Py_RETURN_NONE;
    }
    return result;
}

static PyMethodDef methods[] = {
    {"read_put", (PyCFunction)(void (*)(void))read_put, METH_FASTCALL,
     "read_put(buf, off, limit): the fields of the common PUT record at off, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "sowlib.storage.recordread",
    "The optional C form of one checked read of the common PUT record.",
    -1,
    methods,
};

PyMODINIT_FUNC
PyInit_recordread(void)
{
    PyObject *xxhash = PyImport_ImportModule("xxhash");
    if (xxhash == NULL) {
        return NULL;
    }
    intdigest = PyObject_GetAttrString(xxhash, "xxh3_64_intdigest");
    Py_DECREF(xxhash);
    if (intdigest == NULL) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddIntConstant(module, "HEAD_SIZE", HEAD_SIZE) < 0
        || PyModule_AddIntConstant(module, "OVERHEAD", OVERHEAD) < 0
        || PyModule_AddIntConstant(module, "MARKER", MARKER) < 0
        || PyModule_AddIntConstant(module, "KIND_BYTE", KIND_BYTE) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
