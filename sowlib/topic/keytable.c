/* KeyTable: the optional C form of the key map's `dict`, for content keys.
 *
 * A content key is a 64-bit hash, held by the key map as an int, and most entries
 * are a bare log offset (an int). A dict spends ~100 bytes on such an entry (two int
 * objects and its own slot) and a by-key read follows four pointers into cold
 * memory. KeyTable keeps both numbers unboxed in one 24-byte entry, found through an
 * index of 4-byte slots: ~40 bytes per key and two cache lines per probe.
 *
 * It behaves as the `dict` it replaces (the reference; tests/test_keytable.py
 * checks that both agree), for the operations the key map uses: get, [], [] =, del,
 * in, len, pop, clear, update, keys, values, items, iteration. Keys that are ints in
 * [0, 2**64) are held in the table in insertion order, as a dict orders them; any
 * other key goes to a dict inside, and is listed after them. A value that is an int
 * in [0, 2**63) is held unboxed (get gives an equal int, not the same object); any
 * other value is held by reference.
 *
 * The reader of records by key (reader.c) reads the layout directly (keytable.h): no
 * Python call between a key and its entry.
 *
 * The key map stores only ints and tuples of ints, floats and bytes, which cannot
 * form a reference cycle, so the type is not tracked by the cyclic collector (a
 * collection would otherwise walk every entry).
 *
 * Layout: `entries` in insertion order (a removed entry is marked dead and skipped
 * until the next rebuild); `index` maps a hash slot to an entry number, probed
 * linearly from the slot the key's (multiplied) bits name.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "keytable.h"
#if defined(__linux__)
#include <sys/mman.h>
#endif


/* ------------------------------------------------------------------ memory */

/* Arrays of 2 MiB and more are mapped on their own, aligned to 2 MiB and marked
 * for transparent huge pages where the kernel offers them: a probe at a random key
 * then misses no TLB entry (which, under virtualisation, costs as much as the
 * cache miss itself). Smaller arrays come from Python's allocator. */
#define HUGE_PAGE ((size_t)1 << 21)

static size_t
mapped_len(size_t size)
{
    return (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

static void *
big_alloc(size_t size)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= HUGE_PAGE) {
        size_t len = mapped_len(size);
        char *raw = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) {
            return NULL;
        }
        char *start = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
        if (start > raw) {
            munmap(raw, (size_t)(start - raw));
        }
        size_t tail = (size_t)(raw + len + HUGE_PAGE - (start + len));
        if (tail) {
            munmap(start + len, tail);
        }
        (void)madvise(start, len, MADV_HUGEPAGE); /* advice only: fine if refused */
        return start;
    }
#endif
    return PyMem_Malloc(size);
}

static void
big_free(void *p, size_t size)
{
    if (p == NULL) {
        return;
    }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= HUGE_PAGE) {
        munmap(p, mapped_len(size));
        return;
    }
#endif
    PyMem_Free(p);
}

/* ------------------------------------------------------------------ the table */

/* The entry number of `key`, or -1; `*where` gets its index slot (or the first
 * free slot on its probe path, for an insert). */
Py_ssize_t
keytable_find(KeyTable *t, uint64_t key, size_t *where)
{
    size_t mask = ((size_t)1 << t->bits) - 1;
    size_t i = slot_of(key, t->bits);
    size_t free_slot = SIZE_MAX;
    for (;;) {
        uint32_t ix = t->index[i];
        if (ix == EMPTY) {
            *where = free_slot != SIZE_MAX ? free_slot : i;
            return -1;
        }
        if (ix == DUMMY) {
            if (free_slot == SIZE_MAX) {
                free_slot = i;
            }
        }
        else if (t->entries[ix].key == key) {
            *where = i;
            return (Py_ssize_t)ix;
        }
        i = (i + 1) & mask;
    }
}

/* The index size (log2 of its slots) that holds `need` entries at most 2/3 full. */
static int
bits_for(Py_ssize_t need)
{
    int bits = MIN_BITS;
    while (((Py_ssize_t)1 << bits) * 2 < need * 3) {
        bits++;
    }
    return bits;
}

/* How many entries an index of 1 << bits slots takes (2/3 of its slots). */
static Py_ssize_t
usable_of(int bits)
{
    return (((Py_ssize_t)1 << bits) * 2) / 3;
}

/* A new index of 1 << bits slots and an entry array of `usable`, uninitialised; 0, or -1
 * with MemoryError (nothing allocated). */
static int
alloc_arrays(int bits, Py_ssize_t usable, uint32_t **index, Entry **entries)
{
    *index = big_alloc(sizeof(uint32_t) << bits);
    *entries = big_alloc(sizeof(Entry) * (size_t)usable);
    if (*index == NULL || *entries == NULL) {
        big_free(*index, sizeof(uint32_t) << bits);
        big_free(*entries, sizeof(Entry) * (size_t)usable);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Rebuild with room for `need` live entries: dead entries dropped, order kept. */
static int
rebuild(KeyTable *t, Py_ssize_t need)
{
    int bits = bits_for(need);
    Py_ssize_t usable = usable_of(bits);
    if (usable > (Py_ssize_t)MAX_ENTRIES) {
        PyErr_SetString(PyExc_MemoryError, "KeyTable: too many keys");
        return -1;
    }
    uint32_t *index;
    Entry *entries;
    if (alloc_arrays(bits, usable, &index, &entries) < 0) {
        return -1;
    }
    memset(index, 0xFF, sizeof(uint32_t) << bits);
    size_t mask = ((size_t)1 << bits) - 1;
    Py_ssize_t n = 0;
    for (Py_ssize_t j = 0; j < t->used; j++) {
        Entry *e = &t->entries[j];
        if (e->off == DEAD) {
            continue;
        }
        size_t i = slot_of(e->key, bits);
        while (index[i] != EMPTY) {
            i = (i + 1) & mask;
        }
        index[i] = (uint32_t)n;
        entries[n++] = *e;
    }
    if (t->index != NULL) {
        big_free(t->index, sizeof(uint32_t) << t->bits);
    }
    big_free(t->entries, sizeof(Entry) * (size_t)t->usable);
    t->index = index;
    t->entries = entries;
    t->bits = bits;
    t->usable = usable;
    t->used = n;
    t->live = n;
    return 0;
}

/* Set `key` to the value (`off`, or `obj` when off == BOXED; obj is a new
 * reference, stolen). */
static int
put(KeyTable *t, uint64_t key, int64_t off, PyObject *obj)
{
    size_t where;
    Py_ssize_t ix = keytable_find(t, key, &where);
    if (ix >= 0) {
        Entry *e = &t->entries[ix];
        PyObject *old = e->obj;
        e->off = off;
        e->obj = obj;
        Py_XDECREF(old);
        return 0;
    }
    if (t->used >= t->usable) {
        if (rebuild(t, t->live + 1 > t->live * 2 ? t->live + 1 : t->live * 2) < 0) {
            Py_XDECREF(obj);
            return -1;
        }
        keytable_find(t, key, &where);
    }
    t->index[where] = (uint32_t)t->used;
    Entry *e = &t->entries[t->used++];
    e->key = key;
    e->off = off;
    e->obj = obj;
    t->live++;
    return 0;
}

/* Remove entry `ix` found at index slot `where`; gives its value (a new reference). */
static PyObject *
take(KeyTable *t, Py_ssize_t ix, size_t where)
{
    Entry *e = &t->entries[ix];
    PyObject *value = e->off == BOXED ? e->obj : PyLong_FromLongLong(e->off);
    if (value == NULL) {
        return NULL;
    }
    t->index[where] = DUMMY;
    e->off = DEAD;
    e->obj = NULL;
    t->live--;
    /* many dead entries: rebuild small (keeps iteration and memory in step) */
    if (t->live < t->used / 2 && t->used > 64 && rebuild(t, t->live) < 0) {
        PyErr_Clear(); /* still a valid table, only larger than needed */
    }
    return value;
}

static PyObject *
value_of(Entry *e)
{
    if (e->off == BOXED) {
        return Py_NewRef(e->obj);
    }
    return PyLong_FromLongLong(e->off);
}

/* 1 and `*key` set: `obj` is an int key the table holds; 0: another key;
 * -1: an error is set. */
static int
table_key(PyObject *obj, uint64_t *key)
{
    if (!PyLong_CheckExact(obj)) {
        return 0;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(obj);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
            return -1;
        }
        PyErr_Clear(); /* negative or past 64 bits: held in `others` */
        return 0;
    }
    *key = (uint64_t)v;
    return 1;
}

/* 1 and `*off` set: `value` is held unboxed; 0: by reference; -1: an error. */
static int
table_value(PyObject *value, int64_t *off)
{
    if (!PyLong_CheckExact(value)) {
        return 0;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow || v < 0) {
        return 0;
    }
    *off = (int64_t)v;
    return 1;
}

static int
set_item(KeyTable *t, PyObject *key, PyObject *value)
{
    uint64_t k;
    int is_key = table_key(key, &k);
    if (is_key < 0) {
        return -1;
    }
    if (!is_key) {
        if (t->others == NULL && (t->others = PyDict_New()) == NULL) {
            return -1;
        }
        return PyDict_SetItem(t->others, key, value);
    }
    int64_t off;
    int bare = table_value(value, &off);
    if (bare < 0) {
        return -1;
    }
    if (bare) {
        return put(t, k, off, NULL);
    }
    return put(t, k, BOXED, Py_NewRef(value));
}

/* The value of `key` (a new reference), removed from the table when `remove`;
 * NULL with no error when absent, or NULL with an error. */
static PyObject *
find_item(KeyTable *t, PyObject *key, int remove)
{
    uint64_t k;
    int is_key = table_key(key, &k);
    if (is_key < 0) {
        return NULL;
    }
    if (!is_key) {
        PyObject *v = t->others == NULL ? NULL : PyDict_GetItemWithError(t->others, key);
        if (v == NULL) {
            return NULL;
        }
        Py_INCREF(v);
        if (remove && PyDict_DelItem(t->others, key) < 0) {
            Py_DECREF(v);
            return NULL;
        }
        return v;
    }
    size_t where;
    Py_ssize_t ix = keytable_find(t, k, &where);
    if (ix < 0) {
        return NULL;
    }
    return remove ? take(t, ix, where) : value_of(&t->entries[ix]);
}

static void
clear_all(KeyTable *t)
{
    Entry *entries = t->entries;
    Py_ssize_t used = t->used;
    size_t entries_size = sizeof(Entry) * (size_t)t->usable;
    PyObject *others = t->others;
    if (t->index != NULL) {
        big_free(t->index, sizeof(uint32_t) << t->bits);
    }
    t->entries = NULL;
    t->index = NULL;
    t->used = t->live = t->usable = 0;
    t->bits = 0;
    t->others = NULL;
    for (Py_ssize_t j = 0; j < used; j++) {
        Py_XDECREF(entries[j].obj);
    }
    big_free(entries, entries_size);
    Py_XDECREF(others);
}

/* ------------------------------------------------------------------ the type */

static PyObject *
KeyTable_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if ((kwds != NULL && PyDict_GET_SIZE(kwds)) || PyTuple_GET_SIZE(args)) {
        PyErr_SetString(PyExc_TypeError, "KeyTable() takes no arguments");
        return NULL;
    }
    KeyTable *t = (KeyTable *)type->tp_alloc(type, 0);
    if (t == NULL) {
        return NULL;
    }
    if (rebuild(t, 0) < 0) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

static void
KeyTable_dealloc(KeyTable *t)
{
    clear_all(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static Py_ssize_t
KeyTable_len(KeyTable *t)
{
    return t->live + (t->others == NULL ? 0 : PyDict_GET_SIZE(t->others));
}

static PyObject *
KeyTable_subscript(KeyTable *t, PyObject *key)
{
    PyObject *v = find_item(t, key, 0);
    if (v == NULL && !PyErr_Occurred()) {
        PyErr_SetObject(PyExc_KeyError, key);
    }
    return v;
}

static int
KeyTable_ass_subscript(KeyTable *t, PyObject *key, PyObject *value)
{
    if (value != NULL) {
        return set_item(t, key, value);
    }
    PyObject *old = find_item(t, key, 1);
    if (old == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetObject(PyExc_KeyError, key);
        }
        return -1;
    }
    Py_DECREF(old);
    return 0;
}

static int
KeyTable_contains(KeyTable *t, PyObject *key)
{
    PyObject *v = find_item(t, key, 0);
    if (v == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_DECREF(v);
    return 1;
}

static int
arity(const char *name, Py_ssize_t nargs, Py_ssize_t least, Py_ssize_t most)
{
    if (nargs < least || nargs > most) {
        PyErr_Format(PyExc_TypeError, "KeyTable.%s takes %zd to %zd arguments, not %zd",
                     name, least, most, nargs);
        return -1;
    }
    return 0;
}

static PyObject *
KeyTable_get(KeyTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (arity("get", nargs, 1, 2) < 0) {
        return NULL;
    }
    PyObject *v = find_item(t, args[0], 0);
    if (v == NULL && !PyErr_Occurred()) {
        return Py_NewRef(nargs > 1 ? args[1] : Py_None);
    }
    return v;
}

static PyObject *
KeyTable_pop(KeyTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (arity("pop", nargs, 1, 2) < 0) {
        return NULL;
    }
    PyObject *v = find_item(t, args[0], 1);
    if (v == NULL && !PyErr_Occurred()) {
        if (nargs > 1) {
            return Py_NewRef(args[1]);
        }
        PyErr_SetObject(PyExc_KeyError, args[0]);
    }
    return v;
}

static PyObject *
KeyTable_clear(KeyTable *t, PyObject *Py_UNUSED(ignored))
{
    clear_all(t);
    if (rebuild(t, 0) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* 0: keys, 1: values, 2: (key, value) pairs; the table's, then the others'. */
static PyObject *
listing(KeyTable *t, int what)
{
    PyObject *out = PyList_New(t->live);
    if (out == NULL) {
        return NULL;
    }
    Py_ssize_t n = 0;
    for (Py_ssize_t j = 0; j < t->used && n < t->live; j++) {
        Entry *e = &t->entries[j];
        if (e->off == DEAD) {
            continue;
        }
        PyObject *item;
        if (what == 1) {
            item = value_of(e);
        }
        else {
            PyObject *k = PyLong_FromUnsignedLongLong(e->key);
            if (k == NULL || what == 0) {
                item = k;
            }
            else {
                PyObject *v = value_of(e);
                item = v == NULL ? NULL : PyTuple_Pack(2, k, v);
                Py_DECREF(k);
                Py_XDECREF(v);
            }
        }
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, n++, item);
    }
    if (t->others != NULL && PyDict_GET_SIZE(t->others)) {
        PyObject *rest = what == 0   ? PyDict_Keys(t->others)
                         : what == 1 ? PyDict_Values(t->others)
                                     : PyDict_Items(t->others);
        if (rest == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        Py_ssize_t at = PyList_GET_SIZE(out);
        int failed = PyList_SetSlice(out, at, at, rest);
        Py_DECREF(rest);
        if (failed < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

static PyObject *
KeyTable_keys(KeyTable *t, PyObject *Py_UNUSED(ignored))
{
    return listing(t, 0);
}

static PyObject *
KeyTable_values(KeyTable *t, PyObject *Py_UNUSED(ignored))
{
    return listing(t, 1);
}

static PyObject *
KeyTable_items(KeyTable *t, PyObject *Py_UNUSED(ignored))
{
    return listing(t, 2);
}

static PyObject *
KeyTable_iter(KeyTable *t)
{
    PyObject *keys = listing(t, 0);
    if (keys == NULL) {
        return NULL;
    }
    PyObject *it = PyObject_GetIter(keys);
    Py_DECREF(keys);
    return it;
}

static PyObject *
KeyTable_update(KeyTable *t, PyObject *pairs)
{
    PyObject *it = PyObject_GetIter(pairs);
    if (it == NULL) {
        return NULL;
    }
    PyObject *pair;
    while ((pair = PyIter_Next(it)) != NULL) {
        PyObject *key, *value;
        int failed;
        if (PyTuple_CheckExact(pair) && PyTuple_GET_SIZE(pair) == 2) {
            key = PyTuple_GET_ITEM(pair, 0);
            value = PyTuple_GET_ITEM(pair, 1);
            failed = set_item(t, key, value);
        }
        else {
            PyErr_SetString(PyExc_TypeError, "KeyTable.update takes (key, value) tuples");
            failed = -1;
        }
        Py_DECREF(pair);
        if (failed < 0) {
            Py_DECREF(it);
            return NULL;
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* update_columns(keys, values): set keys[i] to values[i]; both buffers of native
 * 8-byte numbers, keys unsigned, values signed and not negative. */
static PyObject *
KeyTable_update_columns(KeyTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (arity("update_columns", nargs, 2, 2) < 0) {
        return NULL;
    }
    Py_buffer keys, values;
    if (PyObject_GetBuffer(args[0], &keys, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(args[1], &values, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&keys);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = keys.len / 8;
    if (keys.len % 8 || values.len != keys.len) {
        PyErr_SetString(PyExc_ValueError,
                        "update_columns takes two columns of 8-byte numbers of one length");
        goto done;
    }
    const unsigned char *kp = keys.buf, *vp = values.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t off;
        memcpy(&off, vp + 8 * i, 8);
        if (off < 0) {
            PyErr_SetString(PyExc_ValueError, "update_columns: a negative value");
            goto done;
        }
    }
    if (t->used + n > t->usable && rebuild(t, t->live + n) < 0) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t key;
        int64_t off;
        memcpy(&key, kp + 8 * i, 8);
        memcpy(&off, vp + 8 * i, 8);
        if (put(t, key, off, NULL) < 0) {
            goto done;
        }
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&keys);
    PyBuffer_Release(&values);
    return result;
}

/* `off` of an entry fill_from has not given a value yet (never seen outside it). */
#define UNSET (-3)

/* Empty `t` and give it the keys of `s` (live entries, in order), each UNSET; the
 * index is copied when `s` has no dead entry, else rebuilt. 0, or -1 with an error. */
static int
clone_keys(KeyTable *t, KeyTable *s)
{
    int bits = s->bits;
    Py_ssize_t usable = s->usable;
    if (s->used != s->live) {
        bits = bits_for(s->live);
        usable = usable_of(bits);
    }
    uint32_t *index;
    Entry *entries;
    if (alloc_arrays(bits, usable, &index, &entries) < 0) {
        return -1;
    }
    Py_ssize_t n = 0;
    if (s->used == s->live) {
        memcpy(index, s->index, sizeof(uint32_t) << bits);
        for (; n < s->used; n++) {
            entries[n].key = s->entries[n].key;
            entries[n].off = UNSET;
            entries[n].obj = NULL;
        }
    }
    else {
        memset(index, 0xFF, sizeof(uint32_t) << bits);
        size_t mask = ((size_t)1 << bits) - 1;
        for (Py_ssize_t j = 0; j < s->used; j++) {
            if (s->entries[j].off == DEAD) {
                continue;
            }
            size_t i = slot_of(s->entries[j].key, bits);
            while (index[i] != EMPTY) {
                i = (i + 1) & mask;
            }
            index[i] = (uint32_t)n;
            entries[n].key = s->entries[j].key;
            entries[n].off = UNSET;
            entries[n].obj = NULL;
            n++;
        }
    }
    clear_all(t);
    t->index = index;
    t->entries = entries;
    t->bits = bits;
    t->usable = usable;
    t->used = t->live = n;
    return 0;
}

/* fill_from(source, keys, values): into an empty table, the keys of `source` (another
 * KeyTable, none of whose keys is held in its dict of other keys) in its order, keys[i]
 * set to values[i] (later ones winning); `keys` None stands for source's keys in order.
 * `values` is a list, a column of native int64 (none negative), or a pair (a list of
 * distinct values, a column of native u32 codes into it: values[i] is
 * distinct[codes[i]]; the list must not change meanwhile). The same mapping as
 * update(zip(keys, values)) into an empty table, in one pass and no probe for a key
 * found at its own position in source. True when done; False, the table left empty,
 * when it cannot be done so (the table not empty, other keys, a key not in source, a
 * key of source given no value, a negative number): the caller then updates pair by
 * pair. */
static PyObject *
KeyTable_fill_from(KeyTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (arity("fill_from", nargs, 3, 3) < 0) {
        return NULL;
    }
    if (!PyObject_TypeCheck(args[0], &KeyTableType)) {
        PyErr_SetString(PyExc_TypeError, "fill_from: the source must be a KeyTable");
        return NULL;
    }
    KeyTable *s = (KeyTable *)args[0];
    PyObject *keys = args[1], *values = args[2];
    if (keys != Py_None && !PyList_CheckExact(keys)) {
        PyErr_SetString(PyExc_TypeError, "fill_from: keys must be a list or None");
        return NULL;
    }
    Py_buffer column;
    int is_list = PyList_CheckExact(values);
    /* a pair (distinct values, column of native u32 codes): values[i] = distinct[codes[i]] */
    PyObject *distinct = NULL;
    if (PyTuple_CheckExact(values) && PyTuple_GET_SIZE(values) == 2) {
        distinct = PyTuple_GET_ITEM(values, 0);
        if (!PyList_CheckExact(distinct)) {
            PyErr_SetString(PyExc_TypeError, "fill_from: the distinct values must be a list");
            return NULL;
        }
        values = PyTuple_GET_ITEM(values, 1);
    }
    int width = distinct == NULL ? 8 : 4;
    Py_ssize_t count;
    if (is_list) {
        count = PyList_GET_SIZE(values);
    }
    else {
        if (PyObject_GetBuffer(values, &column, PyBUF_SIMPLE) < 0) {
            return NULL;
        }
        if (column.len % width) {
            PyBuffer_Release(&column);
            PyErr_Format(PyExc_ValueError, "fill_from: a column of %d-byte numbers", width);
            return NULL;
        }
        count = column.len / width;
        if (distinct != NULL) {
            Py_ssize_t kinds = PyList_GET_SIZE(distinct);
            for (Py_ssize_t i = 0; i < count; i++) {
                uint32_t code;
                memcpy(&code, (const char *)column.buf + 4 * i, 4);
                if ((Py_ssize_t)code >= kinds) {
                    PyBuffer_Release(&column);
                    PyErr_SetString(PyExc_ValueError, "fill_from: a code past the values");
                    return NULL;
                }
            }
        }
    }
    PyObject *result = NULL;
    Py_ssize_t given = keys == Py_None ? s->live : PyList_GET_SIZE(keys);
    if (count != given) {
        PyErr_SetString(PyExc_ValueError, "fill_from: keys and values of one length");
        goto done;
    }
    if (t == s || t->live || (t->others != NULL && PyDict_GET_SIZE(t->others)) ||
        (s->others != NULL && PyDict_GET_SIZE(s->others))) {
        result = Py_NewRef(Py_False);
        goto done;
    }
    if (clone_keys(t, s) < 0) {
        goto done;
    }
    Py_ssize_t n = t->live, filled = 0, i = 0;
    int refused = 0;
    for (; i < count; i++) {
        Py_ssize_t ix = i;
        if (keys != Py_None) {
            uint64_t k;
            int is_key = table_key(PyList_GET_ITEM(keys, i), &k);
            if (is_key <= 0) {
                refused = is_key == 0;
                break;
            }
            if (i >= n || t->entries[i].key != k) {
                size_t where;
                ix = keytable_find(t, k, &where);
                if (ix < 0) {
                    refused = 1;
                    break;
                }
            }
        }
        int64_t off;
        PyObject *obj = NULL;
        if (is_list || distinct != NULL) {
            PyObject *value;
            if (is_list) {
                value = PyList_GET_ITEM(values, i);
            }
            else {
                uint32_t code;
                memcpy(&code, (const char *)column.buf + 4 * i, 4);
                value = PyList_GET_ITEM(distinct, code);
            }
            int bare = table_value(value, &off);
            if (bare < 0) {
                break;
            }
            if (!bare) {
                off = BOXED;
                obj = Py_NewRef(value);
            }
        }
        else {
            memcpy(&off, (const char *)column.buf + 8 * i, 8);
            if (off < 0) {
                refused = 1;
                break;
            }
        }
        Entry *e = &t->entries[ix];
        PyObject *old = e->obj;
        filled += e->off == UNSET;
        e->off = off;
        e->obj = obj;
        Py_XDECREF(old);
    }
    if (i == count && filled == n) {
        result = Py_NewRef(Py_True);
        goto done;
    }
    /* refused or failed: every value set so far dropped, the table left empty */
    refused |= i == count;
    clear_all(t);
    if (rebuild(t, 0) == 0 && refused) {
        result = Py_NewRef(Py_False);
    }
done:
    if (!is_list) {
        PyBuffer_Release(&column);
    }
    return result;
}

static int
compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The value of `key` as a u32: 1 and `*v` set; 0 with KeyError or ValueError set (absent,
 * or not an int in [0, 2**32)); -1 with another error set. */
static int
u32_value(KeyTable *t, PyObject *key, uint32_t *v)
{
    uint64_t k;
    int64_t value = -1;
    int is_key = table_key(key, &k);
    if (is_key < 0) {
        return -1;
    }
    if (is_key) {
        size_t where;
        Py_ssize_t ix = keytable_find(t, k, &where);
        if (ix < 0) {
            PyErr_SetObject(PyExc_KeyError, key);
            return 0;
        }
        value = t->entries[ix].off; /* BOXED (negative) when held by reference */
    }
    else {
        PyObject *obj = find_item(t, key, 0);
        if (obj == NULL) {
            if (PyErr_Occurred()) {
                return -1;
            }
            PyErr_SetObject(PyExc_KeyError, key);
            return 0;
        }
        int bare = table_value(obj, &value);
        Py_DECREF(obj);
        if (bare < 0) {
            return -1;
        }
        if (!bare) {
            value = -1;
        }
    }
    if (value < 0 || value > (int64_t)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError,
                        "sorted_values: a value that is not an int in [0, 2**32)");
        return 0;
    }
    *v = (uint32_t)value;
    return 1;
}

/* Keys looked up together by sorted_values: their index slots, then their entries, are
 * prefetched before any is read, so the cache misses of a batch overlap. */
#define BATCH 16

static void
prefetch_batch(KeyTable *t, PyObject **keys, int n)
{
#if defined(__GNUC__)
    size_t slots[BATCH];
    int m = 0;
    for (int i = 0; i < n; i++) {
        uint64_t k;
        if (PyLong_CheckExact(keys[i]) && table_key(keys[i], &k) > 0) {
            slots[m] = slot_of(k, t->bits);
            __builtin_prefetch(&t->index[slots[m]]);
            m++;
        }
    }
    PyErr_Clear(); /* u32_value reports anything table_key refused */
    for (int i = 0; i < m; i++) {
        uint32_t ix = t->index[slots[i]];
        if (ix < DUMMY) {
            __builtin_prefetch(&t->entries[ix]);
        }
    }
#else
    (void)t;
    (void)keys;
    (void)n;
#endif
}

/* sorted_values(keys): the values of `keys` as a column of native u32, ascending. */
static PyObject *
KeyTable_sorted_values(KeyTable *t, PyObject *keys)
{
    Py_ssize_t cap = PyObject_LengthHint(keys, 16);
    if (cap < 0) {
        return NULL;
    }
    cap = cap < BATCH ? BATCH : cap;
    uint32_t *out = PyMem_Malloc((size_t)cap * sizeof *out);
    if (out == NULL) {
        return PyErr_NoMemory();
    }
    PyObject *it = PyObject_GetIter(keys);
    if (it == NULL) {
        PyMem_Free(out);
        return NULL;
    }
    Py_ssize_t n = 0;
    int ascending = 1, more = 1;
    while (more && !PyErr_Occurred()) {
        PyObject *batch[BATCH];
        int got = 0;
        while (got < BATCH && (batch[got] = PyIter_Next(it)) != NULL) {
            got++;
        }
        more = got == BATCH;
        if (n + got > cap) {
            uint32_t *grown = PyMem_Realloc(out, (size_t)cap * 2 * sizeof *out);
            if (grown == NULL) {
                PyErr_NoMemory();
            }
            else {
                out = grown;
                cap *= 2;
            }
        }
        if (!PyErr_Occurred()) {
            prefetch_batch(t, batch, got);
        }
        for (int i = 0; i < got; i++) {
            if (!PyErr_Occurred() && u32_value(t, batch[i], &out[n]) > 0) {
                ascending &= n == 0 || out[n - 1] <= out[n];
                n++;
            }
            Py_DECREF(batch[i]);
        }
    }
    Py_DECREF(it);
    PyObject *result = NULL;
    if (!PyErr_Occurred()) {
        if (!ascending) {
            qsort(out, (size_t)n, sizeof *out, compare_u32);
        }
        result = PyBytes_FromStringAndSize((const char *)out, n * (Py_ssize_t)sizeof *out);
    }
    PyMem_Free(out);
    return result;
}

/* Set `key` to `value`; `*old` (when not NULL) gets its previous value, or `absent`
 * (new references). 0, or -1 with an error set (the table unchanged for this key). */
static int
swap_one(KeyTable *t, PyObject *key, PyObject *value, PyObject *absent, PyObject **old)
{
    uint64_t k;
    int is_key = table_key(key, &k);
    if (is_key < 0) {
        return -1;
    }
    if (!is_key) {
        PyObject *was = t->others == NULL ? NULL : PyDict_GetItemWithError(t->others, key);
        if (was == NULL && PyErr_Occurred()) {
            return -1;
        }
        if (old != NULL) {
            *old = Py_NewRef(was != NULL ? was : absent);
        }
        if (set_item(t, key, value) < 0) {
            if (old != NULL) {
                Py_CLEAR(*old);
            }
            return -1;
        }
        return 0;
    }
    int64_t off;
    int bare = table_value(value, &off);
    if (bare < 0) {
        return -1;
    }
    size_t where;
    Py_ssize_t ix = keytable_find(t, k, &where);
    if (ix >= 0) {
        Entry *e = &t->entries[ix];
        if (old != NULL && (*old = value_of(e)) == NULL) {
            return -1;
        }
        PyObject *prev = e->obj;
        e->off = bare ? off : BOXED;
        e->obj = bare ? NULL : Py_NewRef(value);
        Py_XDECREF(prev);
        return 0;
    }
    if (old != NULL) {
        *old = Py_NewRef(absent);
    }
    if (put(t, k, bare ? off : BOXED, bare ? NULL : Py_NewRef(value)) < 0) {
        if (old != NULL) {
            Py_CLEAR(*old);
        }
        return -1;
    }
    return 0;
}

/* swap(keys, values, absent) and assign(keys, values): set keys[i] to values[i] in
 * order (two lists of one length); swap gives the list of the values they replaced
 * (`absent` for a key that had none), what `d.get(k, absent)` then `d[k] = v` for
 * each pair in turn gives of a dict. One probe per key, index slots prefetched a
 * window at a time. On an error the pairs before it are set. */
static PyObject *
swap_many(KeyTable *t, PyObject *keys, PyObject *values, PyObject *absent)
{
    if (!PyList_CheckExact(keys) || !PyList_CheckExact(values)) {
        PyErr_SetString(PyExc_TypeError, "swap/assign: keys and values must be lists");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(keys);
    if (PyList_GET_SIZE(values) != n) {
        PyErr_SetString(PyExc_ValueError, "swap/assign: keys and values of one length");
        return NULL;
    }
    PyObject *olds = NULL;
    if (absent != NULL && (olds = PyList_New(n)) == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        /* keys and values are not changed meanwhile (no Python code runs: the values
         * replaced are released only after their slot is set) */
        if (i % BATCH == 0) {
            Py_ssize_t left = n - i;
            prefetch_batch(t, &PyList_GET_ITEM(keys, i), (int)(left < BATCH ? left : BATCH));
        }
        PyObject *old = NULL;
        if (swap_one(t, PyList_GET_ITEM(keys, i), PyList_GET_ITEM(values, i), absent,
                     olds == NULL ? NULL : &old) < 0) {
            if (olds != NULL) {
                /* the slots not yet set hold NULL: a list tolerates them on release */
                Py_DECREF(olds);
            }
            return NULL;
        }
        if (olds != NULL) {
            PyList_SET_ITEM(olds, i, old);
        }
    }
    return olds == NULL ? Py_NewRef(Py_None) : olds;
}

static PyObject *
KeyTable_swap(KeyTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (arity("swap", nargs, 3, 3) < 0) {
        return NULL;
    }
    return swap_many(t, args[0], args[1], args[2]);
}

static PyObject *
KeyTable_assign(KeyTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (arity("assign", nargs, 2, 2) < 0) {
        return NULL;
    }
    return swap_many(t, args[0], args[1], NULL);
}

/* Sort `n` values (none negative) ascending, carrying `idx` (may be NULL) along: an LSD
 * radix sort, 11 bits a pass over the bits the largest value has. 0, or -1 with an
 * error set. */
static int
radix_sort(int64_t *values, uint32_t *idx, Py_ssize_t n)
{
    enum { BITS = 11, BUCKETS = 1 << BITS };
    uint64_t top = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        top |= (uint64_t)values[i];
    }
    int64_t *vtmp = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *vtmp);
    uint32_t *itmp = idx == NULL ? NULL : PyMem_Malloc((size_t)(n ? n : 1) * sizeof *itmp);
    Py_ssize_t *count = PyMem_Malloc(BUCKETS * sizeof *count);
    if (vtmp == NULL || (idx != NULL && itmp == NULL) || count == NULL) {
        PyMem_Free(vtmp);
        PyMem_Free(itmp);
        PyMem_Free(count);
        PyErr_NoMemory();
        return -1;
    }
    int64_t *vs = values, *vd = vtmp;
    uint32_t *is = idx, *id = itmp;
    for (int shift = 0; shift < 64 && (top >> shift) != 0; shift += BITS) {
        memset(count, 0, BUCKETS * sizeof *count);
        for (Py_ssize_t i = 0; i < n; i++) {
            count[((uint64_t)vs[i] >> shift) & (BUCKETS - 1)]++;
        }
        Py_ssize_t at = 0;
        for (int b = 0; b < BUCKETS; b++) {
            Py_ssize_t c = count[b];
            count[b] = at;
            at += c;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t to = count[((uint64_t)vs[i] >> shift) & (BUCKETS - 1)]++;
            vd[to] = vs[i];
            if (is != NULL) {
                id[to] = is[i];
            }
        }
        int64_t *vt = vs;
        vs = vd;
        vd = vt;
        uint32_t *it = is;
        is = id;
        id = it;
    }
    if (vs != values) {
        memcpy(values, vs, (size_t)n * sizeof *values);
        if (idx != NULL) {
            memcpy(idx, is, (size_t)n * sizeof *idx);
        }
    }
    PyMem_Free(vtmp);
    PyMem_Free(itmp);
    PyMem_Free(count);
    return 0;
}

/* The unboxed values of the live entries in order, as a new array of `t->live` int64;
 * NULL with no error when an entry is boxed or a key sits in `others`, NULL with an
 * error on failure. */
static int64_t *
bare_values(KeyTable *t)
{
    if (t->others != NULL && PyDict_GET_SIZE(t->others)) {
        return NULL;
    }
    int64_t *out = PyMem_Malloc((size_t)(t->live ? t->live : 1) * sizeof *out);
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t n = 0;
    for (Py_ssize_t j = 0; j < t->used && n < t->live; j++) {
        int64_t off = t->entries[j].off;
        if (off == DEAD) {
            continue;
        }
        if (off == BOXED) {
            PyMem_Free(out);
            return NULL;
        }
        out[n++] = off;
    }
    return out;
}

/* sorted_offsets(): the values, every one unboxed, as a column of native int64 in
 * ascending order; None when one is boxed (or a key is not a u64 int). */
static PyObject *
KeyTable_sorted_offsets(KeyTable *t, PyObject *Py_UNUSED(ignored))
{
    int64_t *values = bare_values(t);
    if (values == NULL) {
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    }
    PyObject *out = NULL;
    if (radix_sort(values, NULL, t->live) == 0) {
        out = PyBytes_FromStringAndSize((const char *)values,
                                        t->live * (Py_ssize_t)sizeof *values);
    }
    PyMem_Free(values);
    return out;
}

/* remapped_offsets(olds, news): each value, every one unboxed, replaced by news[i]
 * where olds[i] is that value (olds ascending, both columns of native int64 of one
 * length), as a column of native int64 in the table's order; None when a value is
 * boxed or not in olds (a key in `others`: likewise). The values are sorted with their
 * positions and walked beside olds: O(n) passes, no search. Two entries may share a
 * value (a table the key map did not fill); each gets that value's new offset. */
static PyObject *
KeyTable_remapped_offsets(KeyTable *t, PyObject *const *args, Py_ssize_t nargs)
{
    if (arity("remapped_offsets", nargs, 2, 2) < 0) {
        return NULL;
    }
    Py_buffer olds, news;
    if (PyObject_GetBuffer(args[0], &olds, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(args[1], &news, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&olds);
        return NULL;
    }
    PyObject *result = NULL;
    int64_t *values = NULL;
    uint32_t *order = NULL;
    if (olds.len % 8 || news.len != olds.len) {
        PyErr_SetString(PyExc_ValueError,
                        "remapped_offsets takes two columns of 8-byte numbers of one length");
        goto done;
    }
    Py_ssize_t count = olds.len / 8;
    const int64_t *from = olds.buf, *to = news.buf;
    for (Py_ssize_t i = 1; i < count; i++) {
        if (from[i - 1] >= from[i]) {
            PyErr_SetString(PyExc_ValueError, "remapped_offsets: olds must ascend");
            goto done;
        }
    }
    values = bare_values(t);
    if (values == NULL) {
        result = PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    Py_ssize_t n = t->live;
    if (n > (Py_ssize_t)UINT32_MAX || (order = PyMem_Malloc((size_t)(n ? n : 1) * 4)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        order[j] = (uint32_t)j;
    }
    /* the values in ascending order with their positions: the k-th is found in olds at
     * or after where the (k-1)-th was (olds ascend), one pass */
    if (radix_sort(values, order, n) < 0) {
        goto done;
    }
    PyObject *column = PyBytes_FromStringAndSize(NULL, n * 8);
    if (column == NULL) {
        goto done;
    }
    int64_t *out = (int64_t *)PyBytes_AS_STRING(column);
    Py_ssize_t at = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        while (at < count && from[at] < values[k]) {
            at++;
        }
        if (at == count || from[at] != values[k]) {
            Py_DECREF(column);
            result = Py_NewRef(Py_None);
            goto done;
        }
        out[order[k]] = to[at];
    }
    result = column;
done:
    PyMem_Free(order);
    PyMem_Free(values);
    PyBuffer_Release(&olds);
    PyBuffer_Release(&news);
    return result;
}

static PyObject *
KeyTable_sizeof(KeyTable *t, PyObject *Py_UNUSED(ignored))
{
    size_t size = sizeof(KeyTable) + (sizeof(uint32_t) << t->bits) +
                  sizeof(Entry) * (size_t)t->usable;
    return PyLong_FromSize_t(size);
}

static PyMethodDef KeyTable_methods[] = {
    {"get", (PyCFunction)(void (*)(void))KeyTable_get, METH_FASTCALL,
     "get(key, default=None, /): the value of key, or default."},
    {"pop", (PyCFunction)(void (*)(void))KeyTable_pop, METH_FASTCALL,
     "pop(key, [default, ]/): remove key and give its value (KeyError, or default)."},
    {"clear", (PyCFunction)KeyTable_clear, METH_NOARGS, "Remove every key."},
    {"keys", (PyCFunction)KeyTable_keys, METH_NOARGS, "A list of the keys, in order."},
    {"values", (PyCFunction)KeyTable_values, METH_NOARGS, "A list of the values, in order."},
    {"items", (PyCFunction)KeyTable_items, METH_NOARGS,
     "A list of (key, value) pairs, in order."},
    {"update", (PyCFunction)KeyTable_update, METH_O,
     "update(pairs, /): set each (key, value) pair, in order."},
    {"update_columns", (PyCFunction)(void (*)(void))KeyTable_update_columns, METH_FASTCALL,
     "update_columns(keys, values, /): set each key of a column of native u64 to the "
     "value at its position in a column of native int64 (none negative)."},
    {"fill_from", (PyCFunction)(void (*)(void))KeyTable_fill_from, METH_FASTCALL,
     "fill_from(source, keys, values, /): into an empty table, source's keys in its order "
     "with keys[i] set to values[i] (keys None: source's keys in order); values a list, "
     "a column of native int64 or (distinct list, column of native u32 codes). False, the "
     "table left empty, where it cannot."},
    {"sorted_values", (PyCFunction)KeyTable_sorted_values, METH_O,
     "sorted_values(keys, /): the values of keys (each an int in [0, 2**32)) as a column "
     "of native u32, ascending; KeyError for an absent key, ValueError for another value."},
    {"swap", (PyCFunction)(void (*)(void))KeyTable_swap, METH_FASTCALL,
     "swap(keys, values, absent, /): set keys[i] to values[i] in order (two lists); the "
     "list of the values replaced (absent where a key had none)."},
    {"assign", (PyCFunction)(void (*)(void))KeyTable_assign, METH_FASTCALL,
     "assign(keys, values, /): set keys[i] to values[i] in order (two lists)."},
    {"sorted_offsets", (PyCFunction)KeyTable_sorted_offsets, METH_NOARGS,
     "sorted_offsets(): the values (every one an unboxed int) as a column of native int64, "
     "ascending; None when one is not."},
    {"remapped_offsets", (PyCFunction)(void (*)(void))KeyTable_remapped_offsets, METH_FASTCALL,
     "remapped_offsets(olds, news, /): each value replaced by news[i] where olds[i] (an "
     "ascending column of native int64) holds it, as a column in the table's order; None "
     "when a value is boxed or not in olds."},
    {"__sizeof__", (PyCFunction)KeyTable_sizeof, METH_NOARGS, "Bytes held."},
    {NULL, NULL, 0, NULL},
};

static PyMappingMethods KeyTable_as_mapping = {
    .mp_length = (lenfunc)KeyTable_len,
    .mp_subscript = (binaryfunc)KeyTable_subscript,
    .mp_ass_subscript = (objobjargproc)KeyTable_ass_subscript,
};

static PySequenceMethods KeyTable_as_sequence = {
    .sq_contains = (objobjproc)KeyTable_contains,
};

PyTypeObject KeyTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sowlib.topic.keytable.KeyTable",
    .tp_basicsize = sizeof(KeyTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A dict of int keys in [0, 2**64) held unboxed (see keytable.c).",
    .tp_new = KeyTable_new,
    .tp_dealloc = (destructor)KeyTable_dealloc,
    .tp_as_mapping = &KeyTable_as_mapping,
    .tp_as_sequence = &KeyTable_as_sequence,
    .tp_iter = (getiterfunc)KeyTable_iter,
    .tp_methods = KeyTable_methods,
};

static struct PyModuleDef keytable_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "sowlib.topic.keytable",
    .m_doc = "KeyTable: the key map's dict of content keys, unboxed (see keytable.c).",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit_keytable(void)
{
    if (PyType_Ready(&KeyTableType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&keytable_module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "KeyTable", (PyObject *)&KeyTableType) < 0 ||
        reader_add_type(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
