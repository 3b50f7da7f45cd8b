"""sowlib: an embeddable AMPS-style State of the World (last-value cache)."""

from sowlib import errors
from sowlib.document import MISSING, Element
from sowlib.errors import SowError
from sowlib.paths import FieldPath, parse_path

__version__ = "0.1.0"

__all__ = [
    "MISSING",
    "Element",
    "FieldPath",
    "SowError",
    "__version__",
    "errors",
    "parse_path",
]
