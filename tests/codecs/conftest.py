"""Fixtures for the codec tests; also loads ``strategies.py`` as ``codec_strategies``.

The test directories have no ``__init__.py``, so a sibling imported as ``strategies``
would collide with ``tests/strategies.py``; a unique module name avoids that.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from sowlib.codecs import Codec, get_codec

_NAME = "codec_strategies"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, Path(__file__).with_name("strategies.py"))
    assert _spec is not None
    assert _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _module
    _spec.loader.exec_module(_module)

FIELD_CODECS = ["json", "xml", "fix", "nvfix", "msgpack"]


@pytest.fixture(params=FIELD_CODECS)
def field_codec(request: pytest.FixtureRequest) -> Codec:
    """Every codec whose documents have fields."""
    return get_codec(request.param)
