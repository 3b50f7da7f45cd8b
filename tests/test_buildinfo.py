"""Issue 27: a user asks which compiled modules this install uses."""

import sowlib


def test_build_info_names_the_three_compiled_modules() -> None:
    info = sowlib.build_info()
    assert info["version"] == sowlib.__version__
    assert set(info["compiled"]) == {  # type: ignore[arg-type]
        "sowlib.storage.recordread",
        "sowlib.topic.keytable",
        "sowlib.codecs.jsonfields",
    }
