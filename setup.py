"""The optional C reader of the common record; everything else is in pyproject.toml.

The extension is optional: where no C compiler is found, the build goes on and
sowlib reads every record through its Python path (the reference the C form is
tested against).
"""

import sys

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sowlib.storage.recordread",
            sources=["sowlib/storage/recordread.c"],
            # dlsym (see recordread.c) lives in libdl on glibc before 2.34
            libraries=["dl"] if sys.platform.startswith("linux") else [],
            optional=True,
        )
    ]
)
