"""The optional C reader of the common record; everything else is in pyproject.toml.

The extension is optional: where no C compiler is found, the build goes on and
sowlib reads every record through its Python path (the reference the C form is
tested against).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sowlib.storage.recordread",
            sources=["sowlib/storage/recordread.c"],
            optional=True,
        )
    ]
)
