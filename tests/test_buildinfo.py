"""Issue 27: a user asks which compiled modules this install uses."""

import pytest

import sowlib
from sowlib.cli import main


def test_build_info_names_the_four_compiled_modules() -> None:
    info = sowlib.build_info()
    assert info["version"] == sowlib.__version__
    compiled = info["compiled"]
    assert isinstance(compiled, dict)
    assert set(compiled) == {
        "sowlib.storage.recordread",
        "sowlib.topic.keytable",
        "sowlib.codecs.jsonfields",
        "sowlib.index.movekeys",
    }


def test_cli_version_flag_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert sowlib.__version__ in capsys.readouterr().out
