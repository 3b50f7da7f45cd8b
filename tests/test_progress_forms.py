"""Issue 27, progress that never crashes: ``progress=True``, a callable or a tqdm bar on
every long operation, through ``tqdm.auto`` (a notebook without ipywidgets too), with
scaled units."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from sowlib import SowStore
from sowlib import progress as progress_mod
from sowlib.errors import ConfigError
from sowlib.progress import reporter

tqdm_std = pytest.importorskip("tqdm").tqdm


def _bar(total: int | None = None) -> Any:
    return tqdm_std(total=total, file=io.StringIO(), disable=False)


class Watched:
    """A person watching a terminal: what the bars drew on stderr."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self._capsys = capsys
        self._seen = ""

    def getvalue(self) -> str:
        self._seen += self._capsys.readouterr().err
        return self._seen


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Watched:
    monkeypatch.setattr(progress_mod, "interactive", lambda: True)
    return Watched(capsys)


@pytest.mark.parametrize("persistent", [True, False])
def test_compact_takes_true_and_a_tqdm_bar(
    tmp_path: Path, persistent: bool, watched: Watched
) -> None:
    store = SowStore(tmp_path / "s") if persistent else SowStore()
    with store:
        topic = store.create_topic("orders", keys=["/id"])
        topic.publish_many([{"id": i % 3000, "v": i} for i in range(9000)], progress=True)
        topic.compact(progress=True)  # was: TypeError 'bool' object is not callable
        assert "compact orders" in watched.getvalue()
        topic.publish_many([{"id": i, "v": -i} for i in range(3000)])
        bar = _bar()
        topic.compact(progress=bar)
        assert bar.n == 3000
        assert bar.total == 3000
        assert not bar.disable  # the caller's bar is left open for the caller
        bar.close()
        topic.compact(progress=False)
        assert len(topic) == 3000


def test_publish_many_advances_a_given_bar() -> None:
    topic = SowStore().create_topic("t", keys=["/id"])
    bar = _bar()
    topic.publish_many(({"id": i} for i in range(1234)), progress=bar)
    assert bar.n == 1234
    bar.close()


def test_store_progress_takes_true_and_a_bar_for_index_rebuilds(tmp_path: Path) -> None:
    with SowStore(tmp_path / "s") as store:
        topic = store.create_topic("t", keys=["/id"], indexes=["/v"])
        topic.publish_many([{"id": i, "v": i % 7} for i in range(5000)])
    for index_file in (tmp_path / "s").glob("*.ckpt*"):
        index_file.unlink()  # saved indexes gone: the open rebuilds them
    seen: list[tuple[int, int | None]] = []
    for progress in (True, _bar(), lambda done, total: seen.append((done, total))):
        with SowStore(tmp_path / "s", progress=progress) as store:
            assert len(store.topic("t").sow("/v = 3")) == 714
    with pytest.raises(ConfigError):
        SowStore(tmp_path / "s", progress="yes")  # type: ignore[arg-type]


def test_bytes_are_scaled_not_raw(watched: Watched) -> None:
    with reporter(True, total=64_951_050, desc="import", unit="B") as rep:
        rep.advance(24_363_008)
    text = watched.getvalue()
    assert "64951050" not in text
    assert "/61.9M" in text  # 64,951,050 bytes in MiB
    assert "B/s" in text
    with reporter(True, total=2_500_000, desc="publish", unit="messages") as rep:
        rep.advance(1_250_000)
    assert "/2.50M" in watched.getvalue()


def test_no_bar_is_drawn_for_an_operation_with_nothing_to_do(watched: Watched) -> None:
    with reporter(True, desc="rebuild t") as rep:
        pass
    assert rep.done == 0
    assert "rebuild" not in watched.getvalue()


def test_notebook_without_ipywidgets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's notebook: a real kernel, no ipywidgets, ``progress=True`` everywhere."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    if importlib.util.find_spec("ipykernel") is None:  # not imported: this is no kernel
        pytest.skip("ipykernel is not installed")
    root = Path(__file__).resolve().parents[1]
    cells = [
        "import sowlib\n"
        f"store = sowlib.SowStore({str(tmp_path / 'nb')!r}, progress=True)\n"
        "t = store.create_topic('orders', keys=['/id'])",
        "t.publish_many([{'id': i % 500, 'v': i} for i in range(2000)], progress=True)",
        "t.compact(progress=True)\nprint('records', len(t))",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    jupyter = tmp_path / "jupyter"
    spec = jupyter / "kernels" / "sowlib-progress"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "p", "language": "python"})
    )
    monkeypatch.setenv("JUPYTER_PATH", str(jupyter))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delenv("CI", raising=False)  # a person is watching: bars are drawn
    client = nbclient.NotebookClient(
        nb, kernel_name="sowlib-progress", timeout=120, resources={"metadata": {"path": tmp_path}}
    )
    client.execute()
    outputs = [o for cell in nb.cells for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"], outputs
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "records 500" in text
    if importlib.util.find_spec("ipywidgets") is None:  # the text bar, in the cell's stderr
        assert "compact orders" in text
