/* The optional C form of a read-only store's look at its directories before each
 * refresh (`sowlib.store_files.TopicFiles.unchanged`, whose Python loop over `os.stat`
 * is the reference it is tested against in tests/test_store_dirtimes.py).
 *
 * `same_times(paths, times)`: True when every path (bytes, a directory) can be looked
 * at and its modification time in nanoseconds equals the time at the same position,
 * else False (a path that cannot be looked at counts as changed, as in the reference).
 * One `stat` per path with no Python object built for its result: what a refresh that
 * finds its directories unchanged pays, many times a second.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sys/stat.h>

static long long
mtime_ns(const struct stat *st)
{
#if defined(__APPLE__)
    return (long long)st->st_mtimespec.tv_sec * 1000000000LL + st->st_mtimespec.tv_nsec;
#else
    return (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
#endif
}

static PyObject *
same_times(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyTuple_CheckExact(args[0]) || !PyTuple_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "same_times(paths, times) takes two tuples");
        return NULL;
    }
    PyObject *paths = args[0], *times = args[1];
    Py_ssize_t count = PyTuple_GET_SIZE(paths);
    if (PyTuple_GET_SIZE(times) != count) {
        PyErr_SetString(PyExc_ValueError, "same_times: as many times as paths");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *path = PyTuple_GET_ITEM(paths, i);
        if (!PyBytes_CheckExact(path)) {
            PyErr_SetString(PyExc_TypeError, "same_times: paths must be bytes");
            return NULL;
        }
        long long then = PyLong_AsLongLong(PyTuple_GET_ITEM(times, i));
        if (then == -1 && PyErr_Occurred()) {
            return NULL;
        }
        const char *name = PyBytes_AS_STRING(path);
        if ((Py_ssize_t)strlen(name) != PyBytes_GET_SIZE(path)) {
            Py_RETURN_FALSE; /* a NUL inside: no such path (the reference cannot look either) */
        }
        struct stat st;
        int failed;
        Py_BEGIN_ALLOW_THREADS
        failed = stat(name, &st);
        Py_END_ALLOW_THREADS
        if (failed != 0 || mtime_ns(&st) != then) {
            Py_RETURN_FALSE;
        }
    }
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"same_times", (PyCFunction)(void (*)(void))same_times, METH_FASTCALL,
     "same_times(paths, times): whether every directory's modification time (ns) is "
     "still the one given."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "sowlib.storage.dirtimes",
    "The optional C form of a read-only store's look at its directories.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit_dirtimes(void)
{
    return PyModule_Create(&module_def);
}
