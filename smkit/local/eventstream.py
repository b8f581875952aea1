"""The AWS event-stream wire format (``application/vnd.amazon.eventstream``), encoding side.

``InvokeEndpointWithResponseStream`` answers with a sequence of binary messages, each::

    prelude:  total length (uint32) | headers length (uint32) | CRC32 of those 8 bytes (uint32)
    headers:  name length (uint8) | name | value type (uint8, 7 = string) | value length (uint16) | value
    payload
    CRC32 of everything before it (uint32)

(https://docs.aws.amazon.com/AmazonS3/latest/API/RESTSelectObjectAppendix.html describes the same framing
for S3 Select). botocore only *parses* this format (``botocore.eventstream``) and the Python libraries that
encode it (``smithy-aws-event-stream``) need Python 3.12, so the few lines of encoding live here; the tests
decode every message with botocore's own parser.

Events of the ``ResponseStream`` union (botocore ``sagemaker-runtime`` model,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_ResponseStream.html): ``PayloadPart``
carries the bytes as its payload; ``ModelStreamError`` (``Message``, ``ErrorCode``) and
``InternalStreamFailure`` (``Message``) are exception messages with a JSON payload.
"""

from __future__ import annotations

import json
import struct
import zlib

_PRELUDE = struct.Struct("!II")
_CRC = struct.Struct("!I")
_STRING = 7
# botocore refuses payloads over 24 MiB; a larger chunk is sent as several parts.
MAX_PART_BYTES = 8 * 1024 * 1024

MODEL_STREAM_ERROR = "ModelStreamError"
INTERNAL_STREAM_FAILURE = "InternalStreamFailure"
# ModelStreamError codes (API_runtime_ResponseStream).
INVOCATION_TIME_EXCEEDED = "ModelInvocationTimeExceeded"
STREAM_BROKEN = "StreamBroken"


def _header(name: str, value: str) -> bytes:
    key = name.encode("utf-8")
    data = value.encode("utf-8")
    return struct.pack("!B", len(key)) + key + struct.pack("!BH", _STRING, len(data)) + data


def message(headers: list[tuple[str, str]], payload: bytes) -> bytes:
    """One event-stream message with string ``headers`` and ``payload``."""
    encoded = b"".join(_header(name, value) for name, value in headers)
    prelude = _PRELUDE.pack(12 + len(encoded) + len(payload) + 4, len(encoded))
    head = prelude + _CRC.pack(zlib.crc32(prelude)) + encoded
    crc = zlib.crc32(payload, zlib.crc32(head))
    return head + payload + _CRC.pack(crc)


_PART_HEADERS = [
    (":event-type", "PayloadPart"),
    (":content-type", "application/octet-stream"),
    (":message-type", "event"),
]


def payload_parts(data: bytes) -> list[bytes]:
    """``PayloadPart`` events carrying ``data`` (one, unless it is over :data:`MAX_PART_BYTES`)."""
    return [
        message(_PART_HEADERS, data[at : at + MAX_PART_BYTES]) for at in range(0, len(data), MAX_PART_BYTES)
    ]


def exception(kind: str, message_text: str, **fields: str) -> bytes:
    """An exception event (``ModelStreamError``, ``InternalStreamFailure``) ending the stream."""
    body = json.dumps({"Message": message_text, **fields}).encode("utf-8")
    headers = [
        (":exception-type", kind),
        (":content-type", "application/json"),
        (":message-type", "exception"),
    ]
    return message(headers, body)
