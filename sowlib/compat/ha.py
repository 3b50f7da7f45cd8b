"""``HAClient`` and ``DefaultServerChooser``: the AMPS high-availability client, in process.

There is no failover to do: an ``HAClient`` connects to the chooser's first URI
and stays there. Programs written against the HA API run unchanged. Imports
``compat.client``, ``compat.exceptions`` and ``compat.message``.
"""

from __future__ import annotations

from sowlib.compat.client import Client
from sowlib.compat.exceptions import DisconnectedException, translating
from sowlib.compat.message import Message, add_camel_case
from sowlib.store import SowStore

__all__ = ["DefaultAuthenticator", "DefaultServerChooser", "HAClient"]


class DefaultAuthenticator:
    """The AMPS client's authenticator that answers with the password it was given.

    ``logon(authenticator=...)`` calls :meth:`authenticate` and :meth:`completed`;
    nothing checks the password in process.

    Example:
        >>> DefaultAuthenticator().authenticate("alice", "secret")
        'secret'
    """

    def authenticate(self, username: str, password: str) -> str:
        return password

    def retry(self, username: str, password: str) -> str:
        return password

    def completed(self, username: str, password: str, reason: str) -> None:
        """Told the outcome of a logon; nothing to do."""


class DefaultServerChooser:
    """A list of server URIs (the first one is used; failures are recorded only).

    Example:
        >>> chooser = DefaultServerChooser()
        >>> chooser.add("tcp://primary:9007/amps/json")
        >>> chooser.get_current_uri()
        'tcp://primary:9007/amps/json'
    """

    def __init__(self) -> None:
        self._uris: list[str] = []
        self.failures: list[str] = []
        self.successes: list[object] = []

    def add(self, uri: str) -> None:
        self._uris.append(uri)

    def add_all(self, uris: list[str]) -> None:
        self._uris.extend(uris)

    def get_current_uri(self) -> str | None:
        return self._uris[0] if self._uris else None

    def get_current_authenticator(self) -> DefaultAuthenticator:
        """A :class:`DefaultAuthenticator` (nothing is checked in process)."""
        return DefaultAuthenticator()

    def report_failure(self, exception: BaseException, connection_info: object = None) -> None:
        """Recorded in :attr:`failures`; nothing fails over."""
        self.failures.append(str(exception))

    def report_success(self, connection_info: object = None) -> None:
        """Recorded in :attr:`successes` (the connection information)."""
        self.successes.append(connection_info)

    def get_error(self) -> str:
        return self.failures[-1] if self.failures else ""


class HAClient(Client):
    """The AMPS ``HAClient``: a :class:`Client` that connects through a server chooser.

    Example:
        >>> import sowlib.compat as AMPS
        >>> client = AMPS.HAClient("ha")
        >>> chooser = AMPS.DefaultServerChooser()
        >>> chooser.add("tcp://localhost:9007/amps/json")
        >>> client.set_server_chooser(chooser)
        >>> client.connect_and_logon()
        ''
        >>> AMPS.reset()
    """

    def __init__(self, name: str = "sowlib", store: SowStore | None = None) -> None:
        super().__init__(name, store)
        self._chooser: DefaultServerChooser | None = None

    def set_server_chooser(self, chooser: DefaultServerChooser) -> None:
        self._chooser = chooser

    def get_server_chooser(self) -> DefaultServerChooser | None:
        return self._chooser

    @translating
    def connect_and_logon(self, timeout: int = 0) -> str:
        """Connect to the chooser's current URI and log on.

        The chooser's :meth:`~DefaultServerChooser.report_success` (or
        ``report_failure``) hears how it went, with ``{"client_name", "uri"}``.

        Raises:
            DisconnectedException: no chooser, or it has no URI.
        """
        chooser = self._chooser
        uri = chooser.get_current_uri() if chooser is not None else None
        if chooser is None or uri is None:
            raise DisconnectedException(
                "connect_and_logon: set_server_chooser() with at least one URI first"
            )
        info = {"client_name": self.name, "uri": uri}
        try:
            self.connect(uri)
            result = self.logon(timeout, chooser.get_current_authenticator())
        except Exception as exc:
            chooser.report_failure(exc, info)
            raise
        chooser.report_success(info)
        return result

    def discard(self, message: Message) -> None:
        """Mark a bookmark-subscription message processed in the bookmark store
        (as :meth:`ack`)."""
        self.ack(message)


add_camel_case(HAClient)
