/* What the sources of the `sowlib.codecs.jsonfields` extension share: the parser of
 * flat JSON objects (jsonfields.c owns it) and the reads in a log's map (jsonmapped.c). */
#ifndef SOWLIB_JSONFIELDS_H
#define SOWLIB_JSONFIELDS_H

#include <Python.h>

/* The most names one read takes. */
#define MAX_NAMES 32

/* Read one payload's fields (the names, a tuple of bytes) into found[]: 0, 1 (outside
 * the subset; what was found is left for the caller to release) or -1 (an error). */
int jsonfields_read_payload(const unsigned char *data, Py_ssize_t size, PyObject *names,
                            Py_ssize_t count, PyObject **found);

/* The columns, one list of `rows` places per name (filled by the caller), or NULL. */
PyObject *jsonfields_new_columns(Py_ssize_t count, Py_ssize_t rows);

/* Whether every name is bytes (else a TypeError is set). */
int jsonfields_names_ok(PyObject *names);

/* The module's functions over a log's map (jsonmapped.c). */
PyObject *top_columns_at(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *top_codes_at(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
