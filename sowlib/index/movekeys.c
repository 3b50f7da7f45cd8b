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
    {"move_key", (PyCFunction)(void (*)(void))move_key, METH_FASTCALL,
     "move_key(mapping, key, old_place, new_place, added, dropped): refile one key from the "
     "key set of old_place (None: a new key) to that of new_place; the change in the entry "
     "count, or None when a key set is not a plain dict (nothing changed)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "sowlib.index.movekeys",
    "The optional C form of moving keys between the key sets of an index.",
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
