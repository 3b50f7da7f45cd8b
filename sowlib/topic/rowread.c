/* RowReader: the records of many content keys in one C call (`Views.records`, the rows
 * of a query), and the one function that builds the Record of a common record, which
 * the by-key read (KeyReader, through keytable_read_entry) uses too.
 *
 * `RowReader(record_type=, topic=, message_type=, doc=)(table, buf, keys)` gives
 * `(rows, pending)`:
 *
 *   - for each key of `keys` (a list), in order: where `table` (a KeyTable) holds the
 *     key as a bare offset, the common record at that offset in `buf` (the log's map),
 *     read and checked by sowlib.storage.recordread's C interface (what its `read_put`
 *     reads), as a `record_type` (a tuple type with Record's fields) whose doc is `doc`
 *     (the payload when None); absent keys are left out;
 *   - a key whose record this does not read (not an int in [0, 2**64), an entry with
 *     header fields, another record shape, no C record reader) is left in `rows` in its
 *     place and counted in `pending`: the caller reads it the Python way, which decides
 *     and raises.
 *
 * The records are read in file order (their offsets sorted), so the map is walked front
 * to back. No record cache is read or filled: a row costs about what a cache probe
 * would, and the cache is kept for the records read by key.
 *
 * A `table` that is not a KeyTable, or a `buf` without a buffer (a closed map):
 * NotImplemented, the Python path. Everything the call uses is an argument: it reads no
 * attribute by name. The caller holds the topic's lock. The Python path of
 * Views.records is the reference (tests/test_read_paths.py checks that both agree).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../storage/recordread.h"
#include "keytable.h"

static const RecordReadApi *records; /* sowlib.storage.recordread's C interface, or NULL */

PyObject *
rowread_record(PyTypeObject *record_type, uint64_t key, const CommonPut *put, PyObject *topic,
               PyObject *message_type, PyObject *doc)
{
    char digits[20];
    Py_ssize_t n = decimal_digits(key, digits);
    PyObject *text = PyUnicode_New(n, 127);
    if (text != NULL) {
        memcpy(PyUnicode_1BYTE_DATA(text), digits, (size_t)n);
    }
    PyObject *items[5] = {
        text,
        PyBytes_FromStringAndSize((const char *)put->payload, put->payload_len),
        PyLong_FromUnsignedLongLong(put->seq),
        PyFloat_FromDouble(put->timestamp),
        PyBytes_FromStringAndSize(NULL, 0),
    };
    PyObject *rec = record_type->tp_alloc(record_type, 9);
    for (int i = 0; i < 5; i++) {
        if (items[i] == NULL) {
            Py_CLEAR(rec);
        }
    }
    if (rec == NULL) {
        for (int i = 0; i < 5; i++) {
            Py_XDECREF(items[i]);
        }
        return NULL;
    }
    /* (sow_key, data, seq, timestamp, expiration, topic, message_type, correlation_id,
     *  doc): a common record has no expiration and no correlation id */
    PyTuple_SET_ITEM(rec, 0, items[0]);
    PyTuple_SET_ITEM(rec, 1, items[1]);
    PyTuple_SET_ITEM(rec, 2, items[2]);
    PyTuple_SET_ITEM(rec, 3, items[3]);
    PyTuple_SET_ITEM(rec, 4, Py_NewRef(Py_None));
    PyTuple_SET_ITEM(rec, 5, Py_NewRef(topic));
    PyTuple_SET_ITEM(rec, 6, Py_NewRef(message_type));
    PyTuple_SET_ITEM(rec, 7, items[4]);
    PyTuple_SET_ITEM(rec, 8, Py_NewRef(doc == Py_None ? items[1] : doc));
    return rec;
}

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *record_type;
    PyObject *topic;
    PyObject *message_type;
    PyObject *doc; /* a Record's doc until first touched (None: the payload) */
} RowReader;

/* A record to read: its offset, and its key (and the key's place in the keys given). */
typedef struct {
    int64_t off;
    Py_ssize_t pos;
    uint64_t key;
} Wanted;

static inline void
swap(Wanted *a, Wanted *b)
{
    Wanted t = *a;
    *a = *b;
    *b = t;
}

/* Sort `w[0..n)` by offset: one pass when already sorted (the keys of a scan), else a
 * quicksort (median of three, the smaller side recursed into) ending in insertion sorts. */
static void
sort_by_offset(Wanted *w, Py_ssize_t n)
{
    Py_ssize_t i = 1;
    while (i < n && w[i - 1].off <= w[i].off) {
        i++;
    }
    if (i >= n) {
        return;
    }
    while (n > 16) {
        Py_ssize_t mid = n / 2, last = n - 1;
        if (w[mid].off < w[0].off) {
            swap(&w[mid], &w[0]);
        }
        if (w[last].off < w[0].off) {
            swap(&w[last], &w[0]);
        }
        if (w[last].off < w[mid].off) {
            swap(&w[last], &w[mid]);
        }
        int64_t pivot = w[mid].off;
        Py_ssize_t lo = 0, hi = last;
        while (lo <= hi) {
            while (w[lo].off < pivot) {
                lo++;
            }
            while (w[hi].off > pivot) {
                hi--;
            }
            if (lo <= hi) {
                swap(&w[lo], &w[hi]);
                lo++;
                hi--;
            }
        }
        /* now w[0..hi] <= pivot <= w[lo..n) */
        if (hi + 1 < n - lo) {
            sort_by_offset(w, hi + 1);
            w += lo;
            n -= lo;
        }
        else {
            sort_by_offset(w + lo, n - lo);
            n = hi + 1;
        }
    }
    for (Py_ssize_t j = 1; j < n; j++) {
        Wanted t = w[j];
        Py_ssize_t k = j;
        while (k > 0 && w[k - 1].off > t.off) {
            w[k] = w[k - 1];
            k--;
        }
        w[k] = t;
    }
}

/* Keys are looked up a group at a time: the index slots of the group are prefetched,
 * then their entries, before any is read, so the cache misses of a group overlap. The
 * records are read in file order, the first lines of a record a few places ahead
 * prefetched. */
#define GROUP 32
#define AHEAD 6
#define AHEAD_BYTES 256

static inline void
prefetch(const void *p)
{
#if defined(__GNUC__)
    __builtin_prefetch(p);
#else
    (void)p;
#endif
}

/* Step 1 of `rows`: where each key's record is. The keys left to the Python path go to
 * `found` (counted in `*pending`), the records to read to `wanted`; gives their number. */
static Py_ssize_t
locate(KeyTable *table, PyObject *keys, PyObject **found, Wanted *wanted, Py_ssize_t *pending)
{
    Py_ssize_t n = PyList_GET_SIZE(keys), m = 0;
    uint64_t ks[GROUP];
    Py_ssize_t at[GROUP];
    for (Py_ssize_t lo = 0; lo < n; lo += GROUP) {
        Py_ssize_t hi = lo + GROUP < n ? lo + GROUP : n;
        int g = 0;
        for (Py_ssize_t i = lo; i < hi; i++) {
            PyObject *key = PyList_GET_ITEM(keys, i);
            if (PyLong_CheckExact(key)) {
                uint64_t k = PyLong_AsUnsignedLongLong(key);
                if (!(k == (uint64_t)-1 && PyErr_Occurred())) {
                    ks[g] = k;
                    at[g] = i;
                    g++;
                    prefetch(&table->index[slot_of(k, table->bits)]);
                    continue;
                }
                PyErr_Clear(); /* a negative or too big int: the Python path */
            }
            found[i] = Py_NewRef(key);
            (*pending)++;
        }
        for (int q = 0; q < g; q++) {
            uint32_t ix = table->index[slot_of(ks[q], table->bits)];
            if (ix < DUMMY) {
                prefetch(&table->entries[ix]);
            }
        }
        for (int q = 0; q < g; q++) {
            size_t where;
            Py_ssize_t ix = keytable_find(table, ks[q], &where);
            if (ix < 0) {
                continue; /* absent */
            }
            if (table->entries[ix].off >= 0 && records != NULL) {
                wanted[m].off = table->entries[ix].off;
                wanted[m].pos = at[q];
                wanted[m].key = ks[q];
                m++;
            }
            else {
                found[at[q]] = Py_NewRef(PyList_GET_ITEM(keys, at[q]));
                (*pending)++;
            }
        }
    }
    return m;
}

static PyObject *
rows(RowReader *r, KeyTable *table, Py_buffer *view, PyObject *keys)
{
    Py_ssize_t n = PyList_GET_SIZE(keys);
    PyObject **found = PyMem_Calloc((size_t)n + 1, sizeof(PyObject *));
    Wanted *wanted = PyMem_Malloc(((size_t)n + 1) * sizeof(Wanted));
    PyObject *out = NULL;
    Py_ssize_t pending = 0;
    if (found == NULL || wanted == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t m = locate(table, keys, found, wanted, &pending);
    sort_by_offset(wanted, m);
    const unsigned char *base = view->buf;
    for (Py_ssize_t j = 0; j < m; j++) {
        if (j + AHEAD < m && wanted[j + AHEAD].off < view->len - AHEAD_BYTES) {
            const unsigned char *ahead = base + wanted[j + AHEAD].off;
            for (int line = 0; line < AHEAD_BYTES; line += 64) {
                prefetch(ahead + line);
            }
        }
        Wanted *w = &wanted[j];
        CommonPut put;
        int got = records->common_put(base, w->off, view->len, &put);
        if (got < 0) {
            goto done;
        }
        if (got == 0) {
            found[w->pos] = Py_NewRef(PyList_GET_ITEM(keys, w->pos));
            pending++;
        }
        else {
            found[w->pos] = rowread_record(r->record_type, w->key, &put, r->topic,
                                           r->message_type, r->doc);
            if (found[w->pos] == NULL) {
                goto done;
            }
        }
    }
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        count += found[i] != NULL;
    }
    PyObject *list = PyList_New(count);
    if (list == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0, at = 0; i < n; i++) {
        if (found[i] != NULL) {
            PyList_SET_ITEM(list, at++, found[i]);
            found[i] = NULL;
        }
    }
    PyObject *number = PyLong_FromSsize_t(pending);
    out = number == NULL ? NULL : PyTuple_Pack(2, list, number);
    Py_DECREF(list);
    Py_XDECREF(number);
done:
    if (found != NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_XDECREF(found[i]);
        }
    }
    PyMem_Free(found);
    PyMem_Free(wanted);
    return out;
}

static PyObject *
RowReader_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 3 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "RowReader takes (table, buf, keys)");
        return NULL;
    }
    if (!PyList_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "RowReader: keys must be a list");
        return NULL;
    }
    if (!Py_IS_TYPE(args[0], &KeyTableType)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    Py_buffer view;
    if (args[1] == Py_None || PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear(); /* a closed map: the Python path says so */
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *out = rows((RowReader *)self, (KeyTable *)args[0], &view, args[2]);
    PyBuffer_Release(&view);
    return out;
}

static int
RowReader_traverse(RowReader *r, visitproc visit, void *arg)
{
    Py_VISIT(r->record_type);
    Py_VISIT(r->topic);
    Py_VISIT(r->message_type);
    Py_VISIT(r->doc);
    return 0;
}

static int
RowReader_clear(RowReader *r)
{
    Py_CLEAR(r->record_type);
    Py_CLEAR(r->topic);
    Py_CLEAR(r->message_type);
    Py_CLEAR(r->doc);
    return 0;
}

static void
RowReader_dealloc(RowReader *r)
{
    PyObject_GC_UnTrack(r);
    RowReader_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *
RowReader_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"record_type", "topic", "message_type", "doc", NULL};
    PyObject *record_type, *topic, *message_type, *doc;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!UUO:RowReader", names, &PyType_Type,
                                     &record_type, &topic, &message_type, &doc)) {
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)record_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "RowReader: record_type must be a tuple type");
        return NULL;
    }
    RowReader *r = (RowReader *)type->tp_alloc(type, 0);
    if (r == NULL) {
        return NULL;
    }
    r->vectorcall = RowReader_vectorcall;
    r->record_type = (PyTypeObject *)Py_NewRef(record_type);
    r->topic = Py_NewRef(topic);
    r->message_type = Py_NewRef(message_type);
    r->doc = Py_NewRef(doc);
    return (PyObject *)r;
}

static PyTypeObject RowReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sowlib.topic.keytable.RowReader",
    .tp_basicsize = sizeof(RowReader),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "RowReader(...)(table, buf, keys): the records of many keys (see rowread.c); "
              "(rows, pending), or NotImplemented where the Python path reads them all.",
    .tp_new = RowReader_new,
    .tp_dealloc = (destructor)RowReader_dealloc,
    .tp_traverse = (traverseproc)RowReader_traverse,
    .tp_clear = (inquiry)RowReader_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(RowReader, vectorcall),
};

int
rowread_add_type(PyObject *module)
{
    if (records == NULL && (records = PyCapsule_Import(RECORDREAD_API, 0)) == NULL) {
        PyErr_Clear(); /* every row is left to the Python path */
    }
    if (PyType_Ready(&RowReaderType) < 0) {
        return -1;
    }
    return PyModule_AddObjectRef(module, "RowReader", (PyObject *)&RowReaderType);
}
