"""``sowlib import / export / query --format / --project / explain`` (issue 17): round trips
through golden files, and the exit statuses of docs/cli.md."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sowlib.cli import main
from sowlib.cli_data import csv_cell, parse_cell, unflatten
from sowlib.store import SowStore

GOLDEN = Path(__file__).parent / "golden" / "cli"


def run(*argv: str | Path) -> tuple[int, str]:
    out = io.StringIO()
    status = main([str(a) for a in argv], out=out)
    return status, out.getvalue()


def golden(name: str) -> str:
    return (GOLDEN / name).read_text(encoding="utf-8")


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    """A store with ``orders`` imported from the golden JSON lines."""
    store = tmp_path / "store"
    status, text = run("import", store, "orders", GOLDEN / "orders.jsonl", "--keys", "/orderId")
    assert (status, text) == (0, "orders: imported 5 messages\n")
    return store


def test_jsonl_import_then_export_matches_the_golden_file(imported: Path) -> None:
    status, text = run("export", imported, "orders", "--order-by", "/orderId")
    assert status == 0
    assert text == golden("orders.export.jsonl")


def test_csv_export_matches_the_golden_file(imported: Path) -> None:
    status, text = run("export", imported, "orders", "--order-by", "/orderId", "--format", "csv")
    assert status == 0
    assert text == golden("orders.csv")


@pytest.mark.parametrize("name", ["orders.export.jsonl", "orders.csv"])
def test_an_export_imports_back_to_the_same_documents(tmp_path: Path, name: str) -> None:
    again = tmp_path / "again"
    assert run("import", again, "orders", GOLDEN / name, "--keys", "/orderId")[0] == 0
    status, text = run("export", again, "orders", "--order-by", "/orderId")
    assert status == 0
    assert text == golden("orders.export.jsonl")


def test_export_to_a_file_by_its_extension(imported: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    status, text = run("export", imported, "orders", "--order-by", "/orderId", "-o", target)
    assert status == 0
    assert text == f"orders: exported 4 records to {target}\n"
    assert target.read_text(encoding="utf-8") == golden("orders.csv")


def test_csv_with_meta_adds_the_record_columns(imported: Path) -> None:
    status, text = run(
        "export", imported, "orders", "/orderId = 3", "--format", "csv", "--with-meta"
    )
    assert status == 0
    header, row = text.splitlines()
    assert header.split(",")[:4] == ["sow_key", "seq", "timestamp", "expiration"]
    assert row.split(",")[1] == "3"
    assert "+00:00" in row.split(",")[2]


def test_parquet_export_has_field_columns(imported: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    target = tmp_path / "orders.parquet"
    assert run("export", imported, "orders", "--order-by", "/orderId", "-o", target)[0] == 0
    table = pq.read_table(target)
    assert table.column_names[:5] == ["orderId", "price", "region", "leg.venue", "leg.qty"]
    assert table.column("orderId").to_pylist() == [1, 2, 3, 4]
    assert table.column("leg.venue").to_pylist() == ["XLON", "XNYS", None, None]


def test_query_table_matches_the_golden_file(imported: Path) -> None:
    args = ("query", imported, "orders", "/price > 50", "--order-by", "/price DESC")
    status, text = run(*args, "--format", "table")
    assert status == 0
    assert text == golden("orders.table.txt")


def test_query_csv_and_top_n(imported: Path) -> None:
    status, text = run(
        "query", imported, "orders", "--order-by", "/orderId", "--top-n", "2", "--format", "csv"
    )
    assert status == 0
    assert text.splitlines()[0].startswith("orderId,price,region,leg.venue")
    assert [line.split(",")[0] for line in text.splitlines()[1:]][:1] == ["1"]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "table"])
def test_query_project_applies_jmespath(imported: Path, fmt: str) -> None:
    args = ("query", imported, "orders", "/region = 'EU'", "--order-by", "/orderId")
    status, text = run(*args, "--project", "{id: orderId, venue: leg.venue}", "--format", fmt)
    assert status == 0
    if fmt == "jsonl":
        assert [json.loads(line) for line in text.splitlines()] == [
            {"id": 1, "venue": "XLON"},
            {"id": 4, "venue": None},
        ]
    else:
        assert text.splitlines()[0].split("," if fmt == "csv" else None) == ["id", "venue"]


def test_explain_names_the_plan(imported: Path) -> None:
    status, text = run("explain", imported, "orders", "/orderId = 3")
    assert status == 0
    first, second = text.splitlines()
    assert "kind=" in second
    assert "estimated=" in second
    assert first


def test_import_csv_text_mode_keeps_cells_as_text(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("id,n,leg.x\n1,12,true\n", encoding="utf-8")
    store = tmp_path / "s"
    assert run("import", store, "t", source, "--keys", "/id", "--csv-text")[0] == 0
    with SowStore(store, readonly=True) as st:
        [rec] = st.topic("t").sow()
        assert rec.doc == {"id": "1", "n": "12", "leg": {"x": "true"}}


def test_import_from_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('{"id": 1}\n{"id": 2}\n'))
    status, text = run("import", tmp_path / "s", "t", "-", "--format", "jsonl", "--keys", "/id")
    assert (status, text) == (0, "t: imported 2 messages\n")


def test_no_progress_bar_without_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run("import", tmp_path / "s", "orders", GOLDEN / "orders.jsonl", "--keys", "/orderId")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("007", "007"),
        ("12", '"12"'),
        ("", '""'),
        ("true", '"true"'),
        ("a,b", "a,b"),
        (12, "12"),
        (None, "null"),
        ([1, "x"], '[1,"x"]'),
        ({"a": 1}, '{"a":1}'),
        (1.5, "1.5"),
    ],
)
def test_csv_cells_read_back_as_the_same_value(value: object, cell: str) -> None:
    assert csv_cell(value) == cell
    assert parse_cell(cell) == value


def test_unflatten_rejects_a_field_that_is_also_an_object() -> None:
    assert unflatten({"a.b": 1, "a.c": 2, "d": 3}) == {"a": {"b": 1, "c": 2}, "d": 3}
    with pytest.raises(ValueError):
        unflatten({"a": 1, "a.b": 2})
    with pytest.raises(ValueError):
        unflatten({"a.b": 1, "a": 2})


# ---------------------------------------------------------------------------- exit statuses


@pytest.mark.parametrize(
    ("argv", "content"),
    [
        pytest.param(
            ["import", "{store}", "orders", "{file}", "--keys", "/orderId"],
            '{"orderId": 1}\n{"orderId": \n',
            id="bad-json-line",
        ),
        pytest.param(
            ["import", "{store}", "orders", "{file}", "--keys", "/orderId"],
            '{"price": 1}\n',
            id="missing-key",
        ),
        pytest.param(
            ["import", "{store}", "orders", "{file}"],
            '{"orderId": 1}\n',
            id="unknown-topic-without-keys",
        ),
        pytest.param(
            ["import", "{store}", "orders", "{missing}", "--keys", "/orderId"],
            None,
            id="missing-file",
        ),
        pytest.param(
            ["import", "{store}", "orders", "{txt}", "--keys", "/orderId"],
            "x",
            id="unknown-extension",
        ),
        pytest.param(
            ["import", "{store}", "orders", "{csv}", "--keys", "/orderId"],
            "orderId,x\n1,2,3\n",
            id="ragged-csv",
        ),
        pytest.param(
            ["import", "{store}", "orders", "{csv}", "--keys", "/orderId"],
            "orderId,leg,leg.x\n1,2,3\n",
            id="csv-field-and-object",
        ),
        pytest.param(
            ["export", "{store}", "orders", "--format", "parquet"], None, id="parquet-to-stdout"
        ),
        pytest.param(["export", "{store}", "orders", "--with-meta"], None, id="jsonl-with-meta"),
        pytest.param(
            ["query", "{store}", "orders", "--project", "{id: "], None, id="bad-projection"
        ),
        pytest.param(["explain", "{store}", "orders", "/a = = 1"], None, id="bad-filter"),
        pytest.param(["explain", "{store}", "nope"], None, id="unknown-topic"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    argv: list[str],
    content: str | None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = tmp_path / "store"
    with SowStore(store) as st:
        if argv[0] != "import" or "--keys" in argv:  # an import without --keys needs the topic
            st.create_topic("orders", keys=["/orderId"]).publish({"orderId": 99})
    files = {
        "{file}": tmp_path / "in.jsonl",
        "{csv}": tmp_path / "in.csv",
        "{txt}": tmp_path / "in.txt",
    }
    for marker, path in files.items():
        if marker in argv and content is not None:
            path.write_text(content, encoding="utf-8")
    args = [str(files.get(a, a)).replace("{store}", str(store)) for a in argv]
    args = [a.replace("{missing}", str(tmp_path / "missing.jsonl")) for a in args]
    status, _ = run(*args)
    assert status == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert err.startswith(f"sowlib {argv[0]}: ")


def test_a_bad_line_is_named_and_its_batch_is_not_published(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1}\n\n{"id": 2}\nnot json\n', encoding="utf-8")
    assert run("import", tmp_path / "s", "t", source, "--keys", "/id")[0] == 2
    assert "line 4" in capsys.readouterr().err
    with SowStore(tmp_path / "s", readonly=True) as st:
        assert len(st.topic("t")) == 0
