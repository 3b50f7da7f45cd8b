/* The optional C form of one step of index upkeep: refile keys from their old values to
 * their new ones in a map of value -> key set (a dict of {key: None} dicts).
 *
 * move_keys(mapping, keys, olds, news, old_places, new_places, absent, added, dropped)
 *
 * For each i: a key whose new value is its old one (same type, equal) is skipped. Else
 * the key leaves the key set of its old place (unless its old value is `absent`: a new
 * key), which goes from `mapping` when emptied, and joins the key set of its new place,
 * made as {key: None} when missing. A place is the value itself when `*_places` is None,
 * else the one item of the 1-tuple `*_places[i]`. When `added` and `dropped` are sets,
 * a place put in or removed from `mapping` is noted as `SortedMap.put` / `SortedMap.drop`
 * note it. A key whose place is not such a 1-tuple, or whose key set is not a plain dict
 * (a packed one), is left untouched and its index returned in `later`: the caller moves
 * it through the Python path.
 *
 * Returns (entries added minus entries removed, later). move_key(mapping, key, old_place,
 * new_place, added, dropped) is the same step for one key between places already known. The Python loops in
 * sowlib/index/memo.py (move_numbers) and sowlib/index/hash.py (move_strings) are the
 * reference; tests/index/test_movekeys.py checks that both leave the same index.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* SortedMap.put / SortedMap.drop bookkeeping of a place: 0, or -1 with an error set. */
static int
note(PyObject *place, PyObject *into, PyObject *other)
{
    if (into == Py_None) {
        return 0;
    }
    int found = PySet_Discard(other, place); /* 1: it was there, and is not now */
    if (found < 0) {
        return -1;
    }
    return found ? 0 : PySet_Add(into, place);
}

/* The place a key is filed under: the value, or the one item of its 1-tuple; NULL
 * (no error) when it has no single place. Borrowed. */
static PyObject *
place_of(PyObject *places, Py_ssize_t i, PyObject *value)
{
    if (places == Py_None) {
        return value;
    }
    PyObject *entries = PyList_GET_ITEM(places, i);
    if (!PyTuple_CheckExact(entries) || PyTuple_GET_SIZE(entries) != 1) {
        return NULL;
    }
    PyObject *entry = PyTuple_GET_ITEM(entries, 0);
    return entry;
}

/* Move `key` from the key set under `old_place` (NULL: none, a new key) to the one under
 * `new_place` (made as {key: None} when missing), noting places put in or removed from
 * `mapping` in `added` / `dropped` (None: not noted); `*moved` takes the change in the
 * entry count. 0 when done, 1 when a key set is not a plain dict (nothing changed: the
 * caller defers to the Python path), -1 with an error set. */
static int
refile(PyObject *mapping, PyObject *key, PyObject *old_place, PyObject *new_place,
       PyObject *added, PyObject *dropped, Py_ssize_t *moved)
{
    /* Both key sets must be plain dicts (or missing) before anything changes. */
    PyObject *gone = NULL, *bucket;
    if (old_place != NULL) {
        gone = PyDict_GetItemWithError(mapping, old_place);
        if (gone == NULL && PyErr_Occurred()) {
            return -1;
        }
        if (gone != NULL && !PyDict_CheckExact(gone)) {
            return 1;
        }
    }
    bucket = PyDict_GetItemWithError(mapping, new_place);
    if (bucket == NULL && PyErr_Occurred()) {
        return -1;
    }
    if (bucket != NULL && !PyDict_CheckExact(bucket)) {
        return 1;
    }
    if (gone != NULL) {
        int fail = 0, emptied = 0;
        Py_INCREF(gone);
        if (PyDict_DelItem(gone, key) < 0) {
            if (PyErr_ExceptionMatches(PyExc_KeyError)) {
                PyErr_Clear(); /* the key was not filed there */
            } else {
                fail = 1;
            }
        } else {
            *moved -= 1;
            if (PyDict_GET_SIZE(gone) == 0) {
                emptied = 1;
                fail = PyDict_DelItem(mapping, old_place) < 0
                       || note(old_place, dropped, added) < 0;
            }
        }
        /* the old key set may have been the new one (1 and 1.0) and gone with it (no
         * other value of the mapping goes) */
        if (emptied && bucket == gone) {
            bucket = NULL;
        }
        Py_DECREF(gone);
        if (fail) {
            return -1;
        }
    }
    if (bucket == NULL) {
        PyObject *made = PyDict_New();
        int bad = made == NULL || PyDict_SetItem(made, key, Py_None) < 0
                  || PyDict_SetItem(mapping, new_place, made) < 0
                  || note(new_place, added, dropped) < 0;
        Py_XDECREF(made);
        if (bad) {
            return -1;
        }
    } else if (PyDict_SetItem(bucket, key, Py_None) < 0) {
        return -1;
    }
    *moved += 1;
    return 0;
}

static PyObject *
move_keys(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError,
                        "move_keys(mapping, keys, olds, news, old_places, new_places, absent, "
                        "added, dropped) takes 9 arguments");
        return NULL;
    }
    PyObject *mapping = args[0], *keys = args[1], *olds = args[2], *news = args[3];
    PyObject *old_places = args[4], *new_places = args[5], *absent = args[6];
    PyObject *added = args[7], *dropped = args[8];
    if (!PyDict_CheckExact(mapping) || !PyList_CheckExact(keys) || !PyList_CheckExact(olds)
        || !PyList_CheckExact(news)
        || (old_places != Py_None && !PyList_CheckExact(old_places))
        || (new_places != Py_None && !PyList_CheckExact(new_places))) {
        PyErr_SetString(PyExc_TypeError, "move_keys: a dict, then lists (places: or None)");
        return NULL;
    }
    if ((added == Py_None) != (dropped == Py_None)
        || (added != Py_None && (!PySet_CheckExact(added) || !PySet_CheckExact(dropped)))) {
        PyErr_SetString(PyExc_TypeError, "move_keys: added and dropped are two sets or None");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(keys);
    if (PyList_GET_SIZE(olds) != count || PyList_GET_SIZE(news) != count
        || (old_places != Py_None && PyList_GET_SIZE(old_places) != count)
        || (new_places != Py_None && PyList_GET_SIZE(new_places) != count)) {
        PyErr_SetString(PyExc_ValueError, "move_keys: the lists differ in length");
        return NULL;
    }
    PyObject *later = PyList_New(0);
    if (later == NULL) {
        return NULL;
    }
    Py_ssize_t moved = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        /* Comparisons and hashes below may run Python code (values are plain numbers and
         * strings on the callers' paths): every item is held while it is used. */
        if (i >= PyList_GET_SIZE(keys) || i >= PyList_GET_SIZE(olds)
            || i >= PyList_GET_SIZE(news)
            || (old_places != Py_None && i >= PyList_GET_SIZE(old_places))
            || (new_places != Py_None && i >= PyList_GET_SIZE(new_places))) {
            PyErr_SetString(PyExc_RuntimeError, "move_keys: a list changed size");
            goto error;
        }
        PyObject *key = Py_NewRef(PyList_GET_ITEM(keys, i));
        PyObject *was = Py_NewRef(PyList_GET_ITEM(olds, i));
        PyObject *value = Py_NewRef(PyList_GET_ITEM(news, i));
        PyObject *old_place = NULL, *new_place = NULL;
        int fail = 0, defer = 0;
        if (Py_TYPE(was) == Py_TYPE(value)) {
            int same = PyObject_RichCompareBool(was, value, Py_EQ);
            if (same < 0) {
                fail = 1;
                goto next;
            }
            if (same) {
                goto next;
            }
        }
        if (was != absent) {
            old_place = place_of(old_places, i, was);
            if (old_place == NULL) {
                defer = 1;
                goto next;
            }
            Py_INCREF(old_place);
        }
        new_place = place_of(new_places, i, value);
        if (new_place == NULL) {
            defer = 1;
            goto next;
        }
        Py_INCREF(new_place);
        int got = refile(mapping, key, old_place, new_place, added, dropped, &moved);
        if (got < 0) {
            fail = 1;
        } else if (got > 0) {
            defer = 1;
        }
    next:
        Py_XDECREF(old_place);
        Py_XDECREF(new_place);
        Py_DECREF(key);
        Py_DECREF(was);
        Py_DECREF(value);
        if (fail) {
            goto error;
        }
        if (defer) {
            PyObject *at = PyLong_FromSsize_t(i);
            if (at == NULL || PyList_Append(later, at) < 0) {
                Py_XDECREF(at);
                goto error;
            }
            Py_DECREF(at);
        }
    }
    return Py_BuildValue("(nN)", moved, later);
error:
    Py_DECREF(later);
    return NULL;
}

/* Where a 64-bit pattern's probe starts in a table of 1 << bits slots. */
static size_t
slot_at(uint64_t key, int bits)
{
    return (size_t)(((key ^ (key >> 29)) * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

/* The codes of a list of floats (none NaN) or of ints (each within int64), grouped as a
 * dict groups them (-0.0 and 0.0 are one value), through a table of their 64-bit
 * patterns: no hash or comparison call per value. 1 done; 0 (nothing set) when a value
 * is not such a number; -1 with an error set. */
static int
number_codes(PyObject *values, Py_ssize_t n, int floats, uint32_t *codes, PyObject *distinct,
             uint32_t **counts_out, Py_ssize_t *d_out)
{
    int size_bits = 10;
    size_t size = (size_t)1 << size_bits;
    uint64_t *slot_bits = NULL;
    int64_t *slot_code = NULL;
    uint32_t *counts = NULL;
    Py_ssize_t d = 0, cap = 0;
    int result = -1;
    slot_bits = PyMem_Malloc(sizeof(uint64_t) * size);
    slot_code = PyMem_Malloc(sizeof(int64_t) * size);
    if (slot_bits == NULL || slot_code == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t j = 0; j < size; j++) {
        slot_code[j] = -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = PyList_GET_ITEM(values, i);
        uint64_t key;
        if (floats) {
            if (!PyFloat_CheckExact(value)) {
                result = 0;
                goto done;
            }
            double x = PyFloat_AS_DOUBLE(value);
            if (x != x) {
                result = 0; /* NaN: equal to nothing, not even another NaN */
                goto done;
            }
            if (x == 0.0) {
                x = 0.0; /* -0.0 == 0.0 */
            }
            memcpy(&key, &x, sizeof key);
        }
        else {
            if (!PyLong_CheckExact(value)) {
                result = 0;
                goto done;
            }
            int overflow;
            long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (v == -1 && PyErr_Occurred()) {
                goto done;
            }
            if (overflow) {
                result = 0;
                goto done;
            }
            key = (uint64_t)v;
        }
        size_t mask = size - 1;
        size_t at = slot_at(key, size_bits);
        while (slot_code[at] >= 0 && slot_bits[at] != key) {
            at = (at + 1) & mask;
        }
        int64_t c = slot_code[at];
        if (c < 0) {
            if (d == cap) {
                Py_ssize_t grown = cap ? cap * 2 : 64;
                uint32_t *more = PyMem_Realloc(counts, sizeof(uint32_t) * (size_t)grown);
                if (more == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                counts = more;
                cap = grown;
            }
            if (PyList_Append(distinct, value) < 0) {
                goto done;
            }
            c = d;
            counts[d++] = 0;
            slot_bits[at] = key;
            slot_code[at] = c;
            if ((size_t)d * 2 > size) { /* grow: rehash every value seen */
                size_t bigger = size * 2;
                uint64_t *nb = PyMem_Malloc(sizeof(uint64_t) * bigger);
                int64_t *nc = PyMem_Malloc(sizeof(int64_t) * bigger);
                if (nb == NULL || nc == NULL) {
                    PyMem_Free(nb);
                    PyMem_Free(nc);
                    PyErr_NoMemory();
                    goto done;
                }
                for (size_t j = 0; j < bigger; j++) {
                    nc[j] = -1;
                }
                for (size_t j = 0; j < size; j++) {
                    if (slot_code[j] < 0) {
                        continue;
                    }
                    uint64_t k = slot_bits[j];
                    size_t to = slot_at(k, size_bits + 1);
                    while (nc[to] >= 0) {
                        to = (to + 1) & (bigger - 1);
                    }
                    nb[to] = k;
                    nc[to] = slot_code[j];
                }
                PyMem_Free(slot_bits);
                PyMem_Free(slot_code);
                slot_bits = nb;
                slot_code = nc;
                size = bigger;
                size_bits++;
            }
        }
        codes[i] = (uint32_t)c;
        counts[c]++;
    }
    *counts_out = counts;
    *d_out = d;
    counts = NULL;
    result = 1;
done:
    PyMem_Free(slot_bits);
    PyMem_Free(slot_code);
    PyMem_Free(counts);
    return result;
}

/* group_positions(values, start) -> (distinct, counts, positions)
 *
 * The positions start + i of a list of values grouped by value (dict equality, so the
 * caller passes values of one plain type): `distinct` the values in order of first
 * appearance, `counts` (native u32) how many positions each has, `positions` (native
 * u32) the positions of the first value, then of the second, ..., ascending within
 * each. A counting sort: one dict probe per value (for floats other than NaN and ints
 * within int64, a probe of a table of their bit patterns), no object per position. The Python
 * loop of sowlib/index/values.py (KeyGroups.add) is the reference;
 * tests/index/test_group_positions.py checks that both group alike.
 */
static PyObject *
group_positions(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "group_positions takes 2 arguments");
        return NULL;
    }
    PyObject *values = args[0];
    if (!PyList_CheckExact(values)) {
        PyErr_SetString(PyExc_TypeError, "group_positions: values must be a list");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(values);
    if (start < 0 || (unsigned long long)start + (unsigned long long)n > 0x100000000ULL) {
        PyErr_SetString(PyExc_ValueError, "group_positions: positions past 2**32");
        return NULL;
    }
    PyObject *result = NULL, *where = NULL, *distinct = NULL;
    uint32_t *codes = PyMem_Malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
    uint32_t *out = PyMem_Malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
    uint32_t *counts = NULL;
    Py_ssize_t d = 0, cap = 0;
    if (codes == NULL || out == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    where = PyDict_New();
    distinct = PyList_New(0);
    if (where == NULL || distinct == NULL) {
        goto done;
    }
    PyObject *first = n ? PyList_GET_ITEM(values, 0) : NULL;
    if (first != NULL && (PyFloat_CheckExact(first) || PyLong_CheckExact(first))) {
        int got = number_codes(values, n, PyFloat_CheckExact(first), codes, distinct, &counts, &d);
        if (got < 0) {
            goto done;
        }
        if (got == 0 && PyList_SetSlice(distinct, 0, PyList_GET_SIZE(distinct), NULL) < 0) {
            goto done;
        }
        if (got) {
            goto grouped;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i >= PyList_GET_SIZE(values)) {
            PyErr_SetString(PyExc_RuntimeError, "group_positions: the list changed");
            goto done;
        }
        PyObject *value = Py_NewRef(PyList_GET_ITEM(values, i));
        PyObject *code = PyDict_GetItemWithError(where, value);
        size_t c;
        if (code != NULL) {
            c = PyLong_AsSize_t(code);
        }
        else if (PyErr_Occurred()) {
            Py_DECREF(value);
            goto done;
        }
        else {
            if (d == cap) {
                Py_ssize_t grown = cap ? cap * 2 : 64;
                uint32_t *more = PyMem_Realloc(counts, sizeof(uint32_t) * (size_t)grown);
                if (more == NULL) {
                    Py_DECREF(value);
                    PyErr_NoMemory();
                    goto done;
                }
                counts = more;
                cap = grown;
            }
            c = (size_t)d;
            PyObject *number = PyLong_FromSsize_t(d);
            int failed = number == NULL || PyDict_SetItem(where, value, number) < 0 ||
                         PyList_Append(distinct, value) < 0;
            Py_XDECREF(number);
            if (failed) {
                Py_DECREF(value);
                goto done;
            }
            counts[d++] = 0;
        }
        Py_DECREF(value);
        codes[i] = (uint32_t)c;
        counts[c]++;
    }
grouped:;
    /* counts -> where each value's positions start, then the positions in place */
    uint32_t *next = PyMem_Malloc(sizeof(uint32_t) * (size_t)(d ? d : 1));
    if (next == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    uint32_t sum = 0;
    for (Py_ssize_t j = 0; j < d; j++) {
        next[j] = sum;
        sum += counts[j];
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[next[codes[i]]++] = (uint32_t)(start + i);
    }
    PyMem_Free(next);
    PyObject *counted = PyBytes_FromStringAndSize((const char *)counts, d * 4);
    PyObject *positions = PyBytes_FromStringAndSize((const char *)out, n * 4);
    if (counted != NULL && positions != NULL) {
        result = PyTuple_Pack(3, distinct, counted, positions);
    }
    Py_XDECREF(counted);
    Py_XDECREF(positions);
done:
    PyMem_Free(codes);
    PyMem_Free(out);
    PyMem_Free(counts);
    Py_XDECREF(where);
    Py_XDECREF(distinct);
    return result;
}

/* u32_below(column, bound): True when every native u32 of the buffer `column` is below
 * `bound` (an int >= 0); the reference is `max(column) < bound` (True when empty). */
static PyObject *
u32_below(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "u32_below takes 2 arguments");
        return NULL;
    }
    unsigned long long bound = PyLong_AsUnsignedLongLong(args[1]);
    if (bound == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (view.len % 4) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "u32_below: a column of 4-byte numbers");
        return NULL;
    }
    uint32_t top = 0;
    const unsigned char *p = view.buf;
    for (Py_ssize_t i = 0; i < view.len / 4; i++) {
        uint32_t v;
        memcpy(&v, p + 4 * i, 4);
        top = v > top ? v : top;
    }
    int below = view.len == 0 || (unsigned long long)top < bound;
    PyBuffer_Release(&view);
    return PyBool_FromLong(below);
}

/* move_key(mapping, key, old_place, new_place, added, dropped): one key's move (see the
 * top of this file) between two places already known, `old_place` None for a new key; the
 * change in the entry count, or None when a key set is not a plain dict (nothing changed:
 * the caller takes the Python path). */
static PyObject *
move_key(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "move_key(mapping, key, old_place, new_place, added, dropped) takes "
                        "6 arguments");
        return NULL;
    }
    PyObject *mapping = args[0], *added = args[4], *dropped = args[5];
    if (!PyDict_CheckExact(mapping) || (added == Py_None) != (dropped == Py_None)
        || (added != Py_None && (!PySet_CheckExact(added) || !PySet_CheckExact(dropped)))) {
        PyErr_SetString(PyExc_TypeError, "move_key: a dict, then added and dropped: sets or None");
        return NULL;
    }
    Py_ssize_t moved = 0;
    PyObject *old_place = args[2] == Py_None ? NULL : args[2];
    int got = refile(mapping, args[1], old_place, args[3], added, dropped, &moved);
    if (got < 0) {
        return NULL;
    }
    if (got > 0) {
        Py_RETURN_NONE;
    }
    return PyLong_FromSsize_t(moved);
}

static PyMethodDef methods[] = {
    {"move_keys", (PyCFunction)(void (*)(void))move_keys, METH_FASTCALL,
     "move_keys(mapping, keys, olds, news, old_places, new_places, absent, added, dropped): "
     "refile keys from their old values' key sets to their new ones; (entries added minus "
     "removed, indexes left for the Python path)."},
    {"u32_below", (PyCFunction)(void (*)(void))u32_below, METH_FASTCALL,
     "u32_below(column, bound): True when every native u32 of column is below bound."},
    {"group_positions", (PyCFunction)(void (*)(void))group_positions, METH_FASTCALL,
     "group_positions(values, start): the positions start + i grouped by values[i]; "
     "(distinct values, counts as native u32, positions as native u32)."},
    {"move_key", (PyCFunction)(void (*)(void))move_key, METH_FASTCALL,
     "move_key(mapping, key, old_place, new_place, added, dropped): refile one key from the "
     "key set of old_place (None: a new key) to that of new_place; the change in the entry "
     "count, or None when a key set is not a plain dict (nothing changed)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "sowlib.index.movekeys",
    "The optional C forms of moving keys between the key sets of an index and of "
    "grouping positions by value.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit_movekeys(void)
{
    return PyModule_Create(&module_def);
}
