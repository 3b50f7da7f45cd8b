"""Issue 28 item 6: the CLI's work is bounded and every failure is one line, status 2.

Written as the operator hit them: an exponential ``--project``, input files that are
nested too deeply, not UTF-8 or have a huge CSV cell, NaN in an import, a CSV export
opened in a spreadsheet, a huge rejected pattern.
"""

from __future__ import annotations

import csv
import io
import json
import time
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from sowlib import projection
from sowlib.cli import MAX_MESSAGE, main
from sowlib.cli_data import csv_cell, parse_cell
from sowlib.errors import QueryOptionError
from sowlib.store import SowStore


def run(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err):
        status = main([str(a) for a in argv], out=out)
    return status, out.getvalue(), err.getvalue()


def one_line_failure(status: int, err: str) -> None:
    assert status == 2
    assert len(err.splitlines()) == 1, err[:2000]
    assert "Traceback" not in err
    assert len(err) < MAX_MESSAGE + 200


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "s"
    with SowStore(str(path)) as s:
        s.create_topic("t", keys=["/id"]).publish('{"id": 1, "v": "x"}')
    return path


@pytest.mark.parametrize("stages", [25, 40])
def test_issue28_chained_projection_is_refused_quickly(store: Path, stages: int) -> None:
    expression = "|".join(["{a:@,b:@}"] * stages)  # 25 stages printed 1.14 GB in 27 s
    started = time.monotonic()
    status, out, err = run("query", store, "t", "--project", expression)
    assert time.monotonic() - started < 10
    one_line_failure(status, err)
    assert "QueryOptionError" in err
    assert out == ""


def test_issue28_projection_doubling_work_is_refused() -> None:
    with pytest.raises(QueryOptionError, match="steps"):
        projection.search("[@,@][]" * 30, {"a": 1})


def test_issue28_projection_within_bounds_still_works(store: Path) -> None:
    status, out, _ = run("query", store, "t", "--project", "{a:@,b:@}|{a:@,b:@}")
    assert status == 0
    value = {"id": 1, "v": "x"}
    assert json.loads(out) == {"a": {"a": value, "b": value}, "b": {"a": value, "b": value}}


@pytest.mark.parametrize(
    "expression", ["(" * 1500 + "a" + ")" * 1500, "!" * 3000 + "v", "[" * 2000]
)
def test_issue28_deep_projection_is_one_line(store: Path, expression: str) -> None:
    status, _, err = run("query", store, "t", "--project", expression)
    one_line_failure(status, err)


BAD_INPUTS = {
    "deep.jsonl": ("{" + '"a":{' * 100_000 + "}" * 100_001 + "\n").encode(),
    "deep_array.jsonl": ('{"id": 2, "v": ' + "[" * 100_000 + "]" * 100_000 + "}\n").encode(),
    "latin1.jsonl": b'{"id": 2, "v": "caf\xe9"}\n',
    "latin1.csv": b"id,v\n2,caf\xe9\n",
    "huge_cell.csv": b"id,v\n2," + b"x" * 140_000 + b"\n",
    "nan.jsonl": b'{"id": 2, "v": NaN}\n',
    "infinity.jsonl": b'{"id": 2, "v": -Infinity}\n',
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_issue28_bad_import_file_is_one_line_and_stores_nothing(
    store: Path, tmp_path: Path, name: str
) -> None:
    source = tmp_path / name
    source.write_bytes(BAD_INPUTS[name])
    status, _, err = run("import", store, "t", source, "--no-progress")
    one_line_failure(status, err)
    assert "DecodeError" in err
    with SowStore(str(store), readonly=True) as s:
        assert len(s.topic("t")) == 1


def test_issue28_import_of_nan_in_csv_keeps_it_as_text(store: Path, tmp_path: Path) -> None:
    source = tmp_path / "nan.csv"
    source.write_text("id,v,w\n3,NaN,Infinity\n", encoding="utf-8")
    status, _, _ = run("import", store, "t", source, "--no-progress")
    assert status == 0
    with SowStore(str(store), readonly=True) as s:
        record = s.topic("t").lookup(3)
        assert record is not None
        assert record.doc == {"id": 3, "v": "NaN", "w": "Infinity"}


FORMULAS = ['=HYPERLINK("http://x","y")', "+1+2", "-1+2", "@SUM(A1)", "\tx", "\rx", "'=a"]


def test_issue28_csv_export_escapes_formulas_and_imports_back(store: Path, tmp_path: Path) -> None:
    with SowStore(str(store)) as s:
        topic = s.topic("t")
        for i, text in enumerate(FORMULAS, 10):
            topic.publish(json.dumps({"id": i, "v": text, "n": -i}))
    status, out, _ = run("export", store, "t", "--format", "csv", "--order-by", "/id")
    assert status == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 1 + len(FORMULAS)
    for row in rows:
        assert row["v"][:1] not in set("=+-@\t\r"), row  # what a spreadsheet sees
    target = tmp_path / "out.csv"
    target.write_text(out, encoding="utf-8")
    status, _, _ = run("import", tmp_path / "again", "t", target, "--keys", "/id", "--no-progress")
    assert status == 0
    with SowStore(str(store), readonly=True) as a, SowStore(str(tmp_path / "again")) as b:
        assert sorted(r.doc["id"] for r in b.topic("t").sow()) == sorted(
            r.doc["id"] for r in a.topic("t").sow()
        )
        for rec in a.topic("t").sow():
            other = b.topic("t").lookup(rec.doc["id"])
            assert other is not None
            assert other.doc == rec.doc


@pytest.mark.parametrize("text", [*FORMULAS, "''=b", "'plain", "plain", "-"])
def test_issue28_csv_cell_of_formula_text_reads_back(text: str) -> None:
    cell = csv_cell(text)
    assert parse_cell(cell) == text
    assert cell[:1] not in set("=+-@\t\r")  # a JSON literal starts with a quote


def test_issue28_huge_rejected_pattern_gives_a_short_message(store: Path) -> None:
    pattern = "a(" * 250_000  # a 500 KB pattern made a 1 MB message
    status, _, err = run("query", store, "t", f"/v LIKE '{pattern}'")
    one_line_failure(status, err)
    assert "InvalidPatternError" in err


def test_issue28_huge_bad_line_is_quoted_briefly(store: Path, tmp_path: Path) -> None:
    source = tmp_path / "long.jsonl"
    source.write_text('{"id": ' + "9" * 500_000 + "x}\n", encoding="utf-8")
    status, _, err = run("import", store, "t", source, "--no-progress")
    one_line_failure(status, err)


@pytest.mark.parametrize(("stages", "allowed"), [(17, True), (18, False)])
def test_issue28_output_bound_counts_shared_values_as_serialized(
    stages: int, allowed: bool
) -> None:
    # {"id": 1, "v": "x"} is 3 values; each {a:@,b:@} stage makes 1 + 2 x as many:
    # 17 stages serialize to 524,287 values, 18 to 1,048,575 (past MAX_OUTPUT_VALUES).
    expression = "|".join(["{a:@,b:@}"] * stages)
    doc = {"id": 1, "v": "x"}
    if allowed:
        result = projection.search(expression, doc)
        for _ in range(stages):
            assert result["a"] is result["b"]
            result = result["a"]
        assert result == doc
    else:
        with pytest.raises(QueryOptionError, match="values"):
            projection.search(expression, doc)
