"""What this installation of sowlib was built with: its version, Python, and the compiled modules.

Imports nothing from sowlib; the compiled modules are looked up by name, never imported here.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import warnings

__all__ = [
    "COMPILED_MODULES",
    "PURE_PYTHON_ENV",
    "VERSION",
    "build_info",
    "missing_compiled",
    "warn_missing_compiled",
]

#: The package version (``sowlib.__version__``).
VERSION = "0.1.0"

#: The optional C modules; each has a pure-Python fallback.
COMPILED_MODULES = (
    "sowlib.storage.recordread",
    "sowlib.storage.framepack",
    "sowlib.storage.dirtimes",
    "sowlib.topic.keytable",
    "sowlib.codecs.jsonfields",
    "sowlib.index.movekeys",
)


#: Set (not empty) before sowlib is imported: the pure-Python paths run, by choice.
PURE_PYTHON_ENV = "SOWLIB_PURE_PYTHON"

_warned = False


def _pure() -> bool:
    return bool(os.environ.get(PURE_PYTHON_ENV))


def _built(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


def missing_compiled() -> list[str]:
    """The compiled modules of :data:`COMPILED_MODULES` this installation lacks."""
    return [name for name in COMPILED_MODULES if not _built(name)]


def warn_missing_compiled() -> None:
    """Warn (a ``RuntimeWarning``, once per process) when a compiled module is missing.

    Nothing is said when every module is built, or when ``SOWLIB_PURE_PYTHON`` asks for
    the pure-Python paths.
    """
    global _warned
    if _warned or _pure():
        return
    missing = missing_compiled()
    if not missing:
        return
    _warned = True
    warnings.warn(
        f"sowlib runs its slower pure-Python paths: the compiled module(s) {', '.join(missing)} "
        "were not built when sowlib was installed (no C compiler or Python headers were "
        "found). Reinstall from source where a C compiler is present ('pip install -v .' "
        f"shows the compiler's error), or set {PURE_PYTHON_ENV}=1 to choose the pure-Python "
        "paths and silence this warning.",
        RuntimeWarning,
        stacklevel=2,
    )


def build_info(version: str) -> dict[str, object]:
    """Describe this build: ``version``, ``python`` and, per compiled module, whether it is built.

    Args:
        version: the package version to report.
    Returns:
        ``{"version", "python", "pure_python", "compiled": {module: bool}}``; a module
        counts as in use when it is built and ``SOWLIB_PURE_PYTHON`` is not set.
    """
    pure = _pure()
    compiled = {name: _built(name) and not pure for name in COMPILED_MODULES}
    return {
        "version": version,
        "python": platform.python_version(),
        "pure_python": pure,
        "compiled": compiled,
    }
