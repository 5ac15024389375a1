"""One read of a session's messages per analysis pass (privacy/message_scan.py)."""

from __future__ import annotations

import pytest

from privacy import message_scan
from privacy.detect import pii
from tests.factories import conversation, make_session, wire_message

pytestmark = pytest.mark.django_db


def test_messages_are_read_whole_and_in_order_across_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(message_scan, "_CHUNK", 3)
    # sent out of order, in two batches: the read follows seq, not insertion order
    session = make_session(messages=conversation(5, start=5))
    make_session(session.project, external_id=session.external_id, messages=conversation(5))
    read = message_scan.engine_messages(session)
    assert [m.seq for m in read] == list(range(10))


def test_only_messages_past_the_mark_are_scanned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(message_scan, "_CHUNK", 2)
    cpf = "CPF 529.982.247-25"
    session = make_session(messages=[wire_message(n, content=cpf) for n in range(0, 10, 2)])
    first_pk = session.messages.order_by("seq").values_list("pk", flat=True)[1]
    messages, found = message_scan.messages_read(session, scan_after=first_pk, scan=pii.scan)
    assert len(messages) == 5
    assert [hit.seq for hit in found.hits] == [4, 6, 8]
    assert found.last_pk == session.messages.order_by("-pk").values_list("pk", flat=True)[0]
