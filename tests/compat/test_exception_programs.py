"""Programs that catch the AMPS client's exceptions by name."""

from __future__ import annotations

import sys

import pytest

import sowlib.compat as AMPS  # was: import AMPS
from sowlib.errors import (
    FilterError,
    InvalidSowKeyError,
    MissingKeyFieldError,
    QueryOptionError,
    SowError,
    StorageError,
    UnknownTopicError,
)


def connected(uri):
    client = AMPS.Client("errors")
    client.connect(uri)
    client.logon()
    return client


def test_bad_filter_is_caught_as_amps_and_as_sowlib_error(uri):
    client = connected(uri)
    try:
        client.sow("orders", "/qty >")
    except AMPS.BadFilterException as exc:
        caught = exc
    assert isinstance(caught, AMPS.CommandException)
    assert isinstance(caught, AMPS.AMPSException)
    assert isinstance(caught, FilterError)
    assert "/qty >" in str(caught)
    with pytest.raises(FilterError):
        client.subscribe("orders", "/qty >")


@pytest.mark.parametrize(
    ("call", "amps_class", "sow_class"),
    [
        (lambda c: c.sow("nowhere"), AMPS.InvalidTopicException, UnknownTopicError),
        (lambda c: c.sow("orders[", None), AMPS.BadRegexTopicException, SowError),
        (lambda c: c.subscribe(print, "(bad"), AMPS.BadRegexTopicException, SowError),
        (lambda c: c.publish("orders", '{"qty": 1}'), AMPS.PublishException, MissingKeyFieldError),
        (lambda c: c.publish("orders", "{not json"), AMPS.PublishException, SowError),
        (
            lambda c: c.sow_delete_by_keys("orders", "not a key!"),
            AMPS.BadSowKeyException,
            InvalidSowKeyError,
        ),
        (
            lambda c: c.sow("orders", order_by="/a SIDEWAYS"),
            AMPS.InvalidOptionsException,
            QueryOptionError,
        ),
        (
            lambda c: c.sow("orders", options="bogus"),
            AMPS.InvalidOptionsException,
            QueryOptionError,
        ),
        (
            lambda c: c.bookmark_subscribe(print, "orders", "garbage|"),
            AMPS.InvalidBookmarkException,
            QueryOptionError,
        ),
        (
            lambda c: c.bookmark_subscribe(print, "positions", "0"),
            AMPS.InvalidTopicException,
            UnknownTopicError,
        ),
        (lambda c: c.set_bookmark_store(object()), AMPS.UsageException, SowError),
    ],
)
def test_errors_by_amps_name(uri, call, amps_class, sow_class):
    client = connected(uri)
    with pytest.raises(amps_class) as info:
        call(client)  # type: ignore[operator]
    assert isinstance(info.value, sow_class)
    assert isinstance(info.value, AMPS.AMPSException)
    assert str(info.value)


def test_connection_errors(uri):
    client = AMPS.Client("lonely")
    with pytest.raises(AMPS.DisconnectedException):
        client.publish("orders", '{"id": 1}')
    client.connect(uri)
    with pytest.raises(AMPS.AlreadyConnectedException):
        client.connect(uri)
    client.disconnect()
    with pytest.raises(AMPS.DisconnectedException):
        client.sow("orders")
    with pytest.raises(AMPS.InvalidURIException):
        client.connect("not a uri")
    with pytest.raises(AMPS.MessageTypeNotFoundException):
        client.connect("tcp://localhost:9007/amps/carrier-pigeon")


def test_closed_store_disconnects(uri, instance):
    client = connected(uri)
    client.store.close()
    with pytest.raises(AMPS.DisconnectedException):
        client.publish("orders", '{"id": 1}')


def test_read_only_store_is_not_entitled(tmp_path):
    from sowlib import SowStore

    path = str(tmp_path) + "/ro"
    writer = SowStore(path)
    writer.create_topic("orders", keys=["/id"])
    writer.close()
    reader = SowStore(path, readonly=True)
    client = AMPS.Client("reader", reader)
    with pytest.raises(AMPS.NotEntitledException) as info:
        client.publish("orders", '{"id": 1}')
    assert isinstance(info.value, StorageError)
    reader.close()


def test_install_makes_import_amps_work(uri):
    saved = sys.modules.pop("AMPS", None)
    try:
        AMPS.install()
        from AMPS import Client, InvalidTopicException  # type: ignore[import-not-found]

        client = Client("installed")
        client.connect(uri)
        client.logon()
        with pytest.raises(InvalidTopicException):
            client.sow("chat")
    finally:
        sys.modules.pop("AMPS", None)
        if saved is not None:
            sys.modules["AMPS"] = saved
