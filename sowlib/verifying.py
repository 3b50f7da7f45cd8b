"""``sowlib.verify``: check a log file (and salvage it), with ``progress=`` in every form.

Imports ``storage`` and ``progress`` only. The storage layer's own
:func:`sowlib.storage.verify` takes a plain ``progress(done, total)`` callable, since
storage imports nothing above ``errors``; this is the same call with ``True``, a tqdm
bar or a callable, as every other long operation takes them.
"""

from __future__ import annotations

import os

from sowlib.progress import ProgressArg, callback_for
from sowlib.storage import VerifyReport
from sowlib.storage import verify as verify_log

__all__ = ["verify"]


def verify(
    path: str | os.PathLike[str], repair: bool = False, progress: ProgressArg = None
) -> VerifyReport:
    """Check every record of the log at ``path``; with ``repair``, salvage every intact one.

    Args:
        path: a topic's ``.sow`` file.
        repair: salvage into a new file when corruption is found (see
            :func:`sowlib.storage.verify`, which this calls).
        progress: None, True (a ``tqdm.auto`` bar in a terminal or notebook), a tqdm bar to
            advance, or a callable ``progress(bytes_examined, file_size)``.
    Returns:
        The :class:`~sowlib.storage.VerifyReport`.
    Raises:
        ConfigError: a bad ``progress``.
        FormatVersionError, CorruptRecordError, StoreLockedError, StorePathError,
            StoreFullError: as :func:`sowlib.storage.verify` raises them.

    Example:
        >>> import sowlib, tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     with sowlib.SowStore(d) as store:
        ...         t = store.create_topic("t", keys=["/id"])
        ...         _ = t.publish({"id": 1})
        ...         path = t.path
        ...     sowlib.verify(path, progress=lambda done, total: None).ok
        True
    """
    with callback_for(progress, desc="verify", unit="B") as callback:
        return verify_log(path, repair=repair, progress=callback)
