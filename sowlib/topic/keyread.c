/* KeyReader: `Topic.lookup(value)` of a one-field content key in one C call; made with
 * `sow_keys=True`, `Topic.get(sow_key)` of a content key in one C call.
 *
 * The facade's Python path is the reference (tests/test_keyread.py checks that both
 * agree); this is the same sequence of steps without a Python frame between them,
 * for a topic whose log is a file and whose key map holds its keys in a KeyTable:
 *
 *   1. an expiration pending (the expiry queue's `heap` is not empty): NotImplemented,
 *      the Python path asks the clock and expires first;
 *   2. the key: for a SOW key (`sow_keys`), the int its text is the decimal text of, as
 *      KeyMap.key_of reads it (any other text: NotImplemented, the Python path);
 *      else `digest(head + text)`, the digest the content key generator uses, of
 *      the value's text (an int in the int64 range as decimal, or a non-empty str as
 *      UTF-8); any other value: NotImplemented. The digest is the xxhash package's
 *      XXH64 when sowlib.storage.recordread found it (and checked that it agrees with
 *      the package), called on a scratch buffer; else `digest` itself;
 *   3. the record cache's `get(key)`, without the lock (writers drop a key from the
 *      cache under the lock before changing it);
 *   4. under the topic's lock: the entry in the key map's current table (its `slots`),
 *      read by keytable_read_entry (the common record at its offset in `log.mm`, built
 *      by rowread.c's rowread_record; None: absent; NotImplemented: another entry, a
 *      closed log, no C record reader), and on one read in `admit_mask + 1`
 *      on average, `cache_put(key, record, cost_base + len(payload) * cost_factor)`.
 *
 * The admission draws come from a xorshift generator of its own (the Python path
 * draws from `random`; both admit the same share).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../storage/recordread.h"
#include "keytable.h"

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *keys;      /* the key map: `keys.slots` is its current table */
    PyObject *head;      /* bytes: the key's domain and separator */
    PyObject *digest;    /* bytes -> int */
    PyObject *cache_get; /* key -> Record or None */
    PyObject *cache_put; /* (key, record, cost) -> None; None: no caching */
    Py_ssize_t cost_base;
    Py_ssize_t cost_factor;
    uint64_t admit_mask;
    uint64_t draws;      /* the xorshift state, never 0 */
    PyObject *expiry;    /* its `heap`: pending expirations */
    PyObject *acquire;   /* the topic lock's acquire and release */
    PyObject *release;
    PyObject *log;       /* the log file: `log.mm` */
    PyTypeObject *record_type;
    PyObject *topic;
    PyObject *message_type;
    PyObject *doc;       /* a Record's doc until first touched (None: the payload) */
    int sow_keys;        /* values are SOW key texts, not key field values */
    char scratch[256];   /* the bytes of a key being hashed */
} KeyReader;

static const RecordReadApi *records; /* sowlib.storage.recordread's C interface, or NULL */
static PyObject *str_heap;
static PyObject *str_slots;

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

/* The content key a SOW key's text stands for, as KeyMap.key_of reads it (the decimal
 * text of an int in [0, 2**64), no leading zero): 1 and `*key` set (a new int); 0 for
 * anything else (the Python path: a key that is not a content key, another type). */
static int
key_of_text(PyObject *value, PyObject **key)
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
    *key = PyLong_FromUnsignedLongLong(v);
    return *key == NULL ? -1 : 1;
}

/* The key of `value`: 1 and `*key` set (a new int); 0 for a value the Python path
 * hashes (another type, an int past int64, empty text, unencodable text); -1 with
 * an error set. */
static int
key_of(KeyReader *r, PyObject *value, PyObject **key)
{
    if (r->sow_keys) {
        return key_of_text(value, key);
    }
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
    Py_ssize_t head_len = PyBytes_GET_SIZE(r->head);
    if (records != NULL && records->xxh64 != NULL &&
        head_len + len <= (Py_ssize_t)sizeof r->scratch) {
        /* the package's own C function, on bytes that never become an object */
        memcpy(r->scratch, PyBytes_AS_STRING(r->head), (size_t)head_len);
        memcpy(r->scratch + head_len, text, (size_t)len);
        *key = PyLong_FromUnsignedLongLong(records->xxh64(r->scratch, (size_t)(head_len + len), 0));
        return *key == NULL ? -1 : 1;
    }
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, head_len + len);
    if (bytes == NULL) {
        return -1;
    }
    memcpy(PyBytes_AS_STRING(bytes), PyBytes_AS_STRING(r->head), (size_t)head_len);
    memcpy(PyBytes_AS_STRING(bytes) + head_len, text, (size_t)len);
    *key = PyObject_Vectorcall(r->digest, &bytes, 1, NULL);
    Py_DECREF(bytes);
    return *key == NULL ? -1 : 1;
}

static int
admitted(KeyReader *r)
{
    uint64_t x = r->draws;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r->draws = x;
    return ((x >> 32) & r->admit_mask) == 0;
}

/* The record of `key` (an int) under the lock; NotImplemented for the Python path. */
static PyObject *
read_locked(KeyReader *r, PyObject *key)
{
    PyObject *table = PyObject_GetAttr(r->keys, str_slots);
    if (table == NULL) {
        return NULL;
    }
    PyObject *rec;
    unsigned long long k = PyLong_AsUnsignedLongLong(key);
    if (!Py_IS_TYPE(table, &KeyTableType) || (k == (unsigned long long)-1 && PyErr_Occurred())) {
        PyErr_Clear();
        rec = Py_NewRef(Py_NotImplemented);
    }
    else {
        size_t where;
        Py_ssize_t ix = keytable_find((KeyTable *)table, (uint64_t)k, &where);
        rec = ix < 0 ? Py_NewRef(Py_None)
                     : keytable_read_entry((KeyTable *)table, ix, r->log, r->record_type,
                                           r->topic, r->message_type, r->doc);
    }
    Py_DECREF(table);
    if (rec == NULL || rec == Py_None || rec == Py_NotImplemented || r->cache_put == Py_None ||
        !admitted(r)) {
        return rec;
    }
    Py_ssize_t size = PyObject_Length(PyTuple_GET_ITEM(rec, 1));
    PyObject *cost = size < 0 ? NULL : PyLong_FromSsize_t(r->cost_base + size * r->cost_factor);
    PyObject *done = NULL;
    if (cost != NULL) {
        PyObject *call[3] = {key, rec, cost};
        done = PyObject_Vectorcall(r->cache_put, call, 3, NULL);
        Py_DECREF(cost);
    }
    if (done == NULL) {
        Py_DECREF(rec);
        return NULL;
    }
    Py_DECREF(done);
    return rec;
}

static PyObject *
KeyReader_call(KeyReader *r, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "KeyReader takes one key value");
        return NULL;
    }
    PyObject *heap = PyObject_GetAttr(r->expiry, str_heap);
    if (heap == NULL) {
        return NULL;
    }
    int pending = PyObject_IsTrue(heap);
    Py_DECREF(heap);
    if (pending) {
        return pending < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    }
    PyObject *key;
    int hashed = key_of(r, args[0], &key);
    if (hashed <= 0) {
        return hashed < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    }
    PyObject *rec = PyObject_Vectorcall(r->cache_get, &key, 1, NULL);
    if (rec != Py_None) {
        Py_DECREF(key);
        return rec; /* cached, or NULL: an error */
    }
    Py_DECREF(rec);
    PyObject *locked = PyObject_CallNoArgs(r->acquire);
    if (locked == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    Py_DECREF(locked);
    rec = read_locked(r, key);
    Py_DECREF(key);
    /* release whatever happened, keeping an error raised under the lock */
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyObject *released = PyObject_CallNoArgs(r->release);
    if (released == NULL) {
        Py_XDECREF(rec);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(trace);
        return NULL;
    }
    Py_DECREF(released);
    PyErr_Restore(type, value, trace);
    return rec;
}

static PyObject *
KeyReader_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return KeyReader_call((KeyReader *)self, args, nargsf, kwnames);
}

static int
KeyReader_traverse(KeyReader *r, visitproc visit, void *arg)
{
    Py_VISIT(r->keys);
    Py_VISIT(r->head);
    Py_VISIT(r->digest);
    Py_VISIT(r->cache_get);
    Py_VISIT(r->cache_put);
    Py_VISIT(r->expiry);
    Py_VISIT(r->acquire);
    Py_VISIT(r->release);
    Py_VISIT(r->log);
    Py_VISIT(r->record_type);
    Py_VISIT(r->topic);
    Py_VISIT(r->message_type);
    Py_VISIT(r->doc);
    return 0;
}

static int
KeyReader_clear(KeyReader *r)
{
    Py_CLEAR(r->keys);
    Py_CLEAR(r->head);
    Py_CLEAR(r->digest);
    Py_CLEAR(r->cache_get);
    Py_CLEAR(r->cache_put);
    Py_CLEAR(r->expiry);
    Py_CLEAR(r->acquire);
    Py_CLEAR(r->release);
    Py_CLEAR(r->log);
    Py_CLEAR(r->record_type);
    Py_CLEAR(r->topic);
    Py_CLEAR(r->message_type);
    Py_CLEAR(r->doc);
    return 0;
}

static void
KeyReader_dealloc(KeyReader *r)
{
    PyObject_GC_UnTrack(r);
    KeyReader_clear(r);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *
KeyReader_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *names[] = {
        "keys", "head", "digest", "cache_get", "cache_put", "cost_base", "cost_factor",
        "admit_mask", "expiry", "lock", "log", "record_type", "topic", "message_type", "doc",
        "sow_keys", NULL,
    };
    PyObject *keys, *head, *digest, *cache_get, *cache_put, *expiry, *lock, *log;
    PyObject *record_type, *topic, *message_type, *doc;
    Py_ssize_t cost_base, cost_factor;
    unsigned long long admit_mask;
    int sow_keys = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!OOOnnKOOOO!UUO|p:KeyReader", names, &keys,
                                     &PyBytes_Type, &head, &digest, &cache_get, &cache_put,
                                     &cost_base, &cost_factor, &admit_mask, &expiry, &lock,
                                     &log, &PyType_Type, &record_type, &topic, &message_type,
                                     &doc, &sow_keys)) {
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)record_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "KeyReader: record_type must be a tuple type");
        return NULL;
    }
    if (!PyCallable_Check(digest) || !PyCallable_Check(cache_get) ||
        (cache_put != Py_None && !PyCallable_Check(cache_put))) {
        PyErr_SetString(PyExc_TypeError, "KeyReader: digest and the cache's get/put must be "
                                         "callable");
        return NULL;
    }
    PyObject *acquire = PyObject_GetAttrString(lock, "acquire");
    PyObject *release = acquire == NULL ? NULL : PyObject_GetAttrString(lock, "release");
    if (release == NULL) {
        Py_XDECREF(acquire);
        return NULL;
    }
    KeyReader *r = (KeyReader *)type->tp_alloc(type, 0);
    if (r == NULL) {
        Py_DECREF(acquire);
        Py_DECREF(release);
        return NULL;
    }
    r->vectorcall = KeyReader_vectorcall;
    r->keys = Py_NewRef(keys);
    r->head = Py_NewRef(head);
    r->digest = Py_NewRef(digest);
    r->cache_get = Py_NewRef(cache_get);
    r->cache_put = Py_NewRef(cache_put);
    r->cost_base = cost_base;
    r->cost_factor = cost_factor;
    r->admit_mask = admit_mask;
    /* any nonzero seed; the address varies from one reader to the next */
    r->draws = ((uint64_t)(uintptr_t)r * 0x9E3779B97F4A7C15ULL) | 1;
    r->expiry = Py_NewRef(expiry);
    r->acquire = acquire;
    r->release = release;
    r->log = Py_NewRef(log);
    r->record_type = (PyTypeObject *)Py_NewRef(record_type);
    r->topic = Py_NewRef(topic);
    r->message_type = Py_NewRef(message_type);
    r->doc = Py_NewRef(doc);
    r->sow_keys = sow_keys;
    return (PyObject *)r;
}

static PyTypeObject KeyReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sowlib.topic.keytable.KeyReader",
    .tp_basicsize = sizeof(KeyReader),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "KeyReader(...)(value): Topic.lookup of one content key value (see keyread.c); "
              "NotImplemented where the Python path decides.",
    .tp_new = KeyReader_new,
    .tp_dealloc = (destructor)KeyReader_dealloc,
    .tp_traverse = (traverseproc)KeyReader_traverse,
    .tp_clear = (inquiry)KeyReader_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(KeyReader, vectorcall),
};

int
keyread_add_type(PyObject *module)
{
    if (str_heap == NULL && (str_heap = PyUnicode_InternFromString("heap")) == NULL) {
        return -1;
    }
    if (str_slots == NULL && (str_slots = PyUnicode_InternFromString("slots")) == NULL) {
        return -1;
    }
    if (records == NULL && (records = PyCapsule_Import(RECORDREAD_API, 0)) == NULL) {
        PyErr_Clear(); /* keys are hashed by the package's Python function */
    }
    if (PyType_Ready(&KeyReaderType) < 0) {
        return -1;
    }
    return PyModule_AddObjectRef(module, "KeyReader", (PyObject *)&KeyReaderType);
}
