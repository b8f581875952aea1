"""The gateway reads a call's headers and a container's answer straight from the parser's byte pairs: the
same values as reading them through :class:`Headers`, the first of repeated fields, nothing else decoded."""

from __future__ import annotations

import pytest

from smkit.contract import CLOSED_SESSION_ID, NEW_SESSION_ID
from smkit.local.containers import whole_reply
from smkit.local.runtime_api import Headers, Invocation

FIELDS = [
    (b"host", b"localhost:8080"),
    (b"content-type", b"text/csv; charset=utf-8"),
    (b"accept", b"application/json"),
    (b"x-amzn-sagemaker-accept", b"application/jsonlines"),
    (b"x-amzn-sagemaker-custom-attributes", b"trace=1;caf\xe9"),
    (b"x-amzn-sagemaker-target-model", b"model-a.tar.gz"),
    (b"x-amzn-sagemaker-target-model", b"model-b.tar.gz"),  # repeated: the first is the one read
    (b"x-amzn-sagemaker-target-variant", b"blue"),
    (b"x-amzn-sagemaker-target-container-hostname", b"second"),
    (b"x-amzn-sagemaker-inference-id", b"id-1"),
    (b"x-amzn-sagemaker-inference-component", b"component-1"),
    (b"x-amzn-sagemaker-session-id", b"NEW_SESSION"),
    (b"content-length", b"3"),
]


@pytest.mark.parametrize("stream", [False, True])
def test_fields_are_read_as_headers_read_them(stream: bool) -> None:
    read = Invocation.from_fields(FIELDS, b"1,2", stream=stream)
    assert read == Invocation.from_headers(Headers.of(FIELDS), b"1,2", stream=stream)
    assert read.target_model == "model-a.tar.gz"
    assert read.accept == ("application/jsonlines" if stream else "application/json")
    assert read.custom_attributes == "trace=1;café"


def test_a_call_without_runtime_fields_reads_none_of_them() -> None:
    read = Invocation.from_fields([(b"host", b"x"), (b"content-length", b"0")], b"")
    assert read == Invocation(b"")


def test_a_reply_takes_its_type_attributes_and_session_fields_from_the_answer() -> None:
    fields = [
        (b"date", b"Sun, 29 Nov 2026 01:32:24 GMT"),
        (b"content-type", b"application/json"),
        (b"content-type", b"text/plain"),
        (b"x-amzn-sagemaker-custom-attributes", b"model=1"),
        (NEW_SESSION_ID.lower().encode(), b"abc; Expires=2026-11-29T02:00:00Z"),
        (CLOSED_SESSION_ID.lower().encode(), b""),  # empty: not passed on
        (b"content-length", b"2"),
    ]
    reply = whole_reply(200, fields, b"{}")
    assert (reply.status, reply.body, reply.content_type, reply.custom_attributes) == (
        200,
        b"{}",
        "application/json",
        "model=1",
    )
    assert reply.session_headers == {NEW_SESSION_ID: "abc; Expires=2026-11-29T02:00:00Z"}
    assert reply.stream is None


def test_a_reply_without_those_fields_has_none() -> None:
    reply = whole_reply(500, [(b"content-length", b"0")], b"")
    assert (reply.content_type, reply.custom_attributes, reply.session_headers, reply.ok) == (
        None,
        None,
        {},
        False,
    )
