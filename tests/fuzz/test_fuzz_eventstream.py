"""The event-stream encoder (smkit/local/eventstream.py): every message it writes, botocore's parser reads back.

Arbitrary payloads, header values and error texts; each encoded message is decoded by
``botocore.eventstream.EventStreamBuffer`` (what boto3's ``InvokeEndpointWithResponseStream`` uses), in
arbitrary pieces, with the same headers and payload and a valid CRC.
"""

from __future__ import annotations

import json

from botocore.eventstream import EventStreamBuffer
from hypothesis import given
from hypothesis import strategies as st

from smkit.local import eventstream

names = st.text(min_size=1, max_size=40).filter(lambda s: len(s.encode()) <= 255)
values = st.text(max_size=300)


def _decode(data: bytes, cut: int) -> list[tuple[dict[str, object], bytes]]:
    buffer = EventStreamBuffer()
    out = []
    for at in range(0, len(data), max(cut, 1)):
        buffer.add_data(data[at : at + max(cut, 1)])
        out.extend((m.headers, m.payload) for m in buffer)
    return out


@given(
    st.lists(st.tuples(names, values), max_size=6, unique_by=lambda h: h[0]),
    st.binary(max_size=4096),
    st.integers(1, 5000),
)
def test_messages_decode_to_their_headers_and_payload(
    headers: list[tuple[str, str]], payload: bytes, cut: int
) -> None:
    [(decoded, body)] = _decode(eventstream.message(headers, payload), cut)
    assert decoded == dict(headers) and body == payload


@given(st.binary(max_size=20_000), st.integers(1, 9000))
def test_payload_parts_carry_the_bytes_in_order(data: bytes, cut: int) -> None:
    decoded = _decode(b"".join(eventstream.payload_parts(data)), cut)
    assert b"".join(payload for _, payload in decoded) == data
    assert all(h[":event-type"] == "PayloadPart" for h, _ in decoded)


@given(
    st.sampled_from([eventstream.MODEL_STREAM_ERROR, eventstream.INTERNAL_STREAM_FAILURE]),
    st.text(max_size=500),
    values,
)
def test_exception_events_carry_the_message_as_json(kind: str, text: str, code: str) -> None:
    [(headers, payload)] = _decode(eventstream.exception(kind, text, ErrorCode=code), 7)
    assert headers[":exception-type"] == kind and headers[":message-type"] == "exception"
    assert json.loads(payload) == {"Message": text, "ErrorCode": code}
