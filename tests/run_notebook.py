"""Run ``examples/notebook.ipynb`` headless (``nox -s notebook``); exit 1 if a cell fails.

The kernel is this interpreter (a kernel spec written to a temporary Jupyter
path), so the notebook runs against the environment that runs this script. The
notebook runs in a temporary working directory; its outputs are not saved.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "notebook.ipynb"
KERNEL = "sowlib-notebook-python"


def _kernel_spec(root: Path) -> None:
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "sowlib notebook", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")


def main(path: Path = NOTEBOOK, timeout: int = 600) -> int:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        jupyter = Path(tmp) / "jupyter"
        _kernel_spec(jupyter)
        os.environ["JUPYTER_PATH"] = os.pathsep.join(
            p for p in (str(jupyter), os.environ.get("JUPYTER_PATH")) if p
        )
        client = NotebookClient(
            nb, timeout=timeout, kernel_name=KERNEL, resources={"metadata": {"path": tmp}}
        )
        try:
            client.execute()
        except CellExecutionError as exc:
            print(f"{path.name}: a cell failed:\n{exc}", file=sys.stderr)
            return 1
    kinds = [k for cell in nb.cells for out in cell.get("outputs", []) for k in out.get("data", {})]
    html, images = kinds.count("text/html"), kinds.count("image/png")
    print(f"{path.name}: {len(nb.cells)} cells ran; {html} HTML outputs, {images} images")
    if html < 3:  # the store, the topic and a query result
        print(f"{path.name}: expected the HTML views of store, topic and results", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else NOTEBOOK))
