"""Issue 27, the CLI as a shell user meets it: options after the filter, ``--format
json|jsonl|csv|table|parquet``, ``--version``, help written for the shell, a quiet exit
on a closed pipe, errors that name the command to type."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from sowlib import SowStore, __version__
from sowlib.cli import main

ROOT = Path(__file__).resolve().parent.parent


def run(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err):
        status = main([str(a) for a in argv], out=out)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "s"
    with SowStore(path) as s:
        trades = s.create_topic("trades", keys=["/id"])
        trades.publish_many([{"id": i, "px": i / 30, "sym": f"S{i % 7}"} for i in range(3000)])
    return path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def test_a_filter_after_an_option(store: Path) -> None:
    status, out, err = run("query", store, "trades", "--top-n", "1", "/px > 99.9")
    assert (status, err) == (0, "")
    assert json.loads(out) == {"id": 2998, "px": 2998 / 30, "sym": "S2"}
    status, out, _ = run("query", "--format", "csv", store, "trades", "/id = 3", "--top-n", "5")
    assert status == 0
    assert out.splitlines() == ["id,px,sym", "3,0.1,S3"]


def test_format_json_is_one_array(store: Path, tmp_path: Path) -> None:
    status, out, _ = run(
        "query", store, "trades", "/id < 3", "--format", "json", "--order-by", "/id"
    )
    assert status == 0
    assert [d["id"] for d in json.loads(out)] == [0, 1, 2]
    status, out, _ = run(
        "query", store, "trades", "/id < 2", "--format", "json", "--project", "sym"
    )
    assert sorted(json.loads(out)) == ["S0", "S1"]
    target = tmp_path / "out.json"
    status, _, _ = run("export", store, "trades", "/id < 4", "-o", target, "--format", "json")
    assert status == 0
    assert len(json.loads(target.read_text())) == 4


def test_format_table_for_export_and_parquet_for_query(store: Path, tmp_path: Path) -> None:
    status, out, _ = run("export", store, "trades", "/id = 1", "--format", "table")
    assert status == 0
    assert out.splitlines()[0].split() == ["id", "px", "sym"]
    assert out.splitlines()[-1] == "(1 records)"
    pq = pytest.importorskip("pyarrow.parquet")
    target = tmp_path / "q.parquet"
    with target.open("wb") as fh:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "sowlib",
                "query",
                str(store),
                "trades",
                "/id < 10",
                "--format",
                "parquet",
            ],
            stdout=fh,
            stderr=subprocess.PIPE,
            text=False,
            env=_env(),
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert pq.read_table(target).num_rows == 10
    # parquet is binary: not onto a text stream
    status, out, err = run("query", store, "trades", "--format", "parquet")
    assert status == 2
    assert "redirect standard output" in err


def test_version_and_help_are_for_shell_users(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"sowlib {__version__}"
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    assert "Usage: sowlib" in text
    for command in ("import", "export", "query", "explain", "verify", "stats", "compact"):
        assert f"  {command} " in text
    assert "Sits on top" not in text  # no module docstring
    assert main(["query", "--help"]) == 0
    text = capsys.readouterr().out
    assert "DIRECTORY TOPIC [FILTER]" in text
    assert "jsonl|json|csv|table|parquet" in text


def test_errors_name_what_to_type(store: Path) -> None:
    status, out, err = run("query", store, "nope")
    assert (status, out) == (2, "")
    assert len(err.splitlines()) == 1
    assert "UnknownTopicError" in err
    assert "sowlib import" in err
    assert "create_topic" not in err
    status, _, err = run("query", store, "trades", "--top-n", "many")
    assert status == 2
    assert len(err.splitlines()) == 1
    assert "--top-n" in err
    assert "sowlib query --help" in err
    status, _, err = run("query", store, "trades", "--format", "xml")
    assert status == 2
    assert "--format" in err
    status, _, err = run("frobnicate")
    assert status == 2
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("command", [["query", "{s}", "trades"], ["export", "{s}", "trades"]])
def test_a_closed_pipe_ends_quietly(store: Path, command: list[str]) -> None:
    argv = [a.replace("{s}", str(store)) for a in command]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sowlib", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    first = proc.stdout.readline()
    assert first  # `| head -1`: read one line, then close the pipe
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0
    assert "Error" not in err
    assert "Traceback" not in err


def test_import_and_export_draw_progress_for_a_watcher(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sowlib import progress as progress_mod

    monkeypatch.setattr(progress_mod, "interactive", lambda: True)
    target = tmp_path / "all.jsonl"
    assert main(["export", str(store), "trades", "-o", str(target)]) == 0
    assert "export" in capsys.readouterr().err
    assert main(["import", str(tmp_path / "copy"), "t", str(target), "--keys", "/id"]) == 0
    assert "import" in capsys.readouterr().err
    assert main(["export", str(store), "trades", "-o", str(target), "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
    with SowStore(tmp_path / "copy", readonly=True) as copy:
        assert len(copy.topic("t")) == 3000
