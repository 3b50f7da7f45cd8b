"""Topic configuration: the model (:mod:`~sowlib.config.model`) and the AMPS XML reader
(:mod:`~sowlib.config.amps_xml`, which only the store and its callers need).

The reader imports the model, never the other way round.
"""

from sowlib.config.amps_xml import AMPS_VERSION, IGNORED_SOW_ELEMENTS, load_config, load_xml_config
from sowlib.config.model import (
    CHAINING_OPTIONS,
    DURABILITIES,
    MAX_COMPONENT_BYTES,
    MAX_PATH_BYTES,
    TopicConfig,
    check_file_name,
    expand_file_name,
    topic_to_xml,
)

__all__ = [
    "AMPS_VERSION",
    "CHAINING_OPTIONS",
    "DURABILITIES",
    "IGNORED_SOW_ELEMENTS",
    "MAX_COMPONENT_BYTES",
    "MAX_PATH_BYTES",
    "TopicConfig",
    "check_file_name",
    "expand_file_name",
    "load_config",
    "load_xml_config",
    "topic_to_xml",
]
