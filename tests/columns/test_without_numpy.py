"""Without numpy there is no column plan: queries scan, and answer the same."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

PROGRAM = textwrap.dedent(
    """
    import json, sys
    sys.modules["numpy"] = None  # an import of numpy now fails, as where it is missing
    import sowlib
    from sowlib import compile_filter
    from sowlib.columns import select_docs
    from sowlib.expr.vector import available

    assert not available()
    store = sowlib.SowStore(sys.argv[1])
    t = store.create_topic("orders", keys=["/id"], indexes=["/price"])
    docs = [
        {"id": i, "price": i % 7, "side": "BS"[i % 2], "region": ["EU", "US", 5][i % 3]}
        for i in range(300)
    ]
    t.publish_many([json.dumps(d) for d in docs])
    text = "(/price > 3 AND /side = 'B') OR /region IN ('EU', 5)"
    flt = compile_filter(text)
    want = sorted(d["id"] for d in docs if flt.matches(d))
    for _ in range(3):
        got = sorted(json.loads(r.data)["id"] for r in t.sow(text))
        assert got == want, (got, want)
    assert t.explain(text).kind == "scan", t.explain(text).describe()
    assert select_docs(flt.node, docs) is None
    t.publish(json.dumps({"id": 1, "price": 9, "side": "B", "region": "US"}))
    t.check()
    store.close()
    assert "numpy" not in [m for m, v in sys.modules.items() if v is not None]
    print("ok")
    """
)


def test_queries_scan_without_numpy(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(tmp_path / "s")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
