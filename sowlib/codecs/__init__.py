"""Message types: decode bytes into documents, encode them back, merge deltas.

See ``docs/codecs.md``. Imports only ``errors``, ``document`` and ``paths``; never
``expr``, ``storage`` or ``topic``.
"""

from sowlib.codecs.binary_codec import BinaryCodec
from sowlib.codecs.infer import infer_scalar, render_scalar
from sowlib.codecs.json_codec import JsonCodec
from sowlib.codecs.merge import copy_document, merge_documents
from sowlib.codecs.msgpack_codec import MsgpackCodec
from sowlib.codecs.registry import (
    Codec,
    CodecFactory,
    available_codecs,
    get_codec,
    register_codec,
)
from sowlib.codecs.tagvalue import FixCodec, NvfixCodec
from sowlib.codecs.xml_codec import XmlCodec

__all__ = [
    "Codec",
    "CodecFactory",
    "available_codecs",
    "get_codec",
    "register_codec",
    "merge_documents",
    "copy_document",
    "infer_scalar",
    "render_scalar",
    "BinaryCodec",
    "FixCodec",
    "JsonCodec",
    "MsgpackCodec",
    "NvfixCodec",
    "XmlCodec",
]
