"""The optional C modules (the checked read of the common record and the digests it uses,
a read-only store's look at its directories,
the key map's table of content keys with the one reader of records by key, top-level
fields of flat JSON objects, the moves of index upkeep and the grouping of a rebuild);
everything else is in pyproject.toml.

The extensions are optional: where no C compiler is found, the build goes on and
sowlib takes their Python paths (the references the C forms are tested against). They
link against nothing but Python.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sowlib.storage.recordread",
            sources=["sowlib/storage/recordread.c"],
            depends=["sowlib/storage/recordread.h", "sowlib/storage/digest.h"],
            optional=True,
        ),
        Extension(
            "sowlib.storage.dirtimes",
            sources=["sowlib/storage/dirtimes.c"],
            optional=True,
        ),
        Extension(
            "sowlib.storage.framepack",
            sources=["sowlib/storage/framepack.c"],
            depends=["sowlib/storage/digest.h"],
            optional=True,
        ),
        Extension(
            "sowlib.topic.keytable",
            sources=["sowlib/topic/keytable.c", "sowlib/topic/keyread.c", "sowlib/topic/reader.c"],
            depends=[
                "sowlib/topic/keytable.h",
                "sowlib/storage/recordread.h",
                "sowlib/storage/digest.h",
            ],
            optional=True,
        ),
        Extension(
            "sowlib.index.movekeys",
            sources=["sowlib/index/movekeys.c"],
            optional=True,
        ),
        Extension(
            "sowlib.codecs.jsonfields",
            sources=["sowlib/codecs/jsonfields.c", "sowlib/codecs/jsonmapped.c"],
            depends=["sowlib/codecs/jsonfields.h", "sowlib/storage/recordread.h"],
            optional=True,
        ),
    ]
)
