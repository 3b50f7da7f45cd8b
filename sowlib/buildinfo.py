"""What this installation of sowlib was built with: its version, Python, and the compiled modules.

Imports nothing from sowlib; the compiled modules are looked up by name, never imported here.
"""

from __future__ import annotations

import importlib.util
import os
import platform

__all__ = ["COMPILED_MODULES", "VERSION", "build_info"]

#: The package version (``sowlib.__version__``).
VERSION = "0.1.0"

#: The optional C modules; each has a pure-Python fallback.
COMPILED_MODULES = (
    "sowlib.storage.recordread",
    "sowlib.topic.keytable",
    "sowlib.codecs.jsonfields",
    "sowlib.index.movekeys",
)


def build_info(version: str) -> dict[str, object]:
    """Describe this build: ``version``, ``python`` and, per compiled module, whether it is built.

    Args:
        version: the package version to report.
    Returns:
        ``{"version", "python", "pure_python", "compiled": {module: bool}}``; a module
        counts as in use when it is built and ``SOWLIB_PURE_PYTHON`` is not ``1``.
    """
    pure = os.environ.get("SOWLIB_PURE_PYTHON") == "1"
    compiled = {}
    for name in COMPILED_MODULES:
        try:
            built = importlib.util.find_spec(name) is not None
        except ImportError:
            built = False
        compiled[name] = built and not pure
    return {
        "version": version,
        "python": platform.python_version(),
        "pure_python": pure,
        "compiled": compiled,
    }
