"""The client's codec tables: SDK serializers by request Content-Type, SDK deserializers by the
response's Content-Type."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from smkit.client.codecs import deserialize, serialize, serialize_literal, to_jsonable
from smkit.contract import media_type


def test_python_objects_are_serialized_by_content_type():
    assert serialize([[1, 2], [3, 4]], "text/csv") == b"1,2\n3,4"
    assert json.loads(serialize({"instances": np.array([1.5])}, "application/json")) == {"instances": [1.5]}
    assert np.load(io.BytesIO(serialize([[1.0, 2.0]], "application/x-npy"))).tolist() == [[1.0, 2.0]]
    assert serialize([{"a": 1}, {"a": 2}], "application/jsonlines") == b'{"a": 1}\n{"a": 2}'


def test_encoded_bytes_pass_through_unchanged():
    for content_type in ("text/csv", "application/json", "application/x-npy", "image/png"):
        assert serialize(b"\x00raw,bytes", content_type) == b"\x00raw,bytes"


def test_literals_are_parsed_as_json_for_json_and_npy():
    assert serialize_literal("[[1, 2]]", "application/json") == b"[[1, 2]]"
    assert np.load(io.BytesIO(serialize_literal("[[1, 2]]", "application/x-npy"))).tolist() == [[1, 2]]
    assert serialize_literal("1,2,3", "text/csv") == b"1,2,3"
    with pytest.raises(ValueError, match="is not valid JSON for Content-Type application/json"):
        serialize_literal("1,2", "application/json")


def test_responses_are_deserialized_by_their_own_content_type():
    assert deserialize(b'{"predictions": [1.5]}', "application/json") == {"predictions": [1.5]}
    assert deserialize(b"1.5\n2.5\n", "text/csv; charset=utf-8") == [["1.5"], ["2.5"]]
    buffer = io.BytesIO()
    np.save(buffer, np.array([1.0, 2.0]))
    assert deserialize(buffer.getvalue(), "application/x-npy").tolist() == [1.0, 2.0]
    assert deserialize(b'{"a": 1}\n{"a": 2}\n', "application/jsonlines") == [{"a": 1}, {"a": 2}]
    assert deserialize(b"\x89PNG", "image/png") == b"\x89PNG"


def test_pickled_npy_is_refused():
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle"):
        deserialize(buffer.getvalue(), "application/x-npy")


def test_helpers():
    assert media_type("Text/CSV; charset=utf-8") == "text/csv"
    assert to_jsonable({"a": np.array([1, 2]), "b": [b"x", b"\xff"]}) == {
        "a": [1, 2],
        "b": ["x", "<1 bytes>"],
    }


JSON_CORPUS = [
    {"instances": [[1.5, 2.0]]},
    [[1, 2], [3, 4]],
    {"a": np.array([1.0, 2.5]), "b": "ü"},
    np.array([[1, 2]]),
    "text",
    3.25,
    None,
]


@pytest.mark.parametrize("data", JSON_CORPUS, ids=range(len(JSON_CORPUS)))
def test_standard_library_json_serializer_matches_the_sdk(data):
    from sagemaker.core.serializers import JSONSerializer

    assert serialize(data, "application/json") == JSONSerializer().serialize(data).encode("utf-8")


@pytest.mark.parametrize(
    ("body", "content_type", "sdk_class"),
    [
        (b'{"predictions": [1.5, "\xc3\xbc"]}', "application/json", "JSONDeserializer"),
        (b"[1, 2]", "application/json; charset=utf-8", "JSONDeserializer"),
        (b"caf\xc3\xa9\n", "text/plain", "StringDeserializer"),
        (b"\x00\xff", "application/octet-stream", "BytesDeserializer"),
    ],
)
def test_standard_library_deserializers_match_the_sdk(body, content_type, sdk_class):
    from sagemaker.core import deserializers

    expected = getattr(deserializers, sdk_class)().deserialize(io.BytesIO(body), content_type)
    assert deserialize(body, content_type) == expected


def test_invalid_utf8_json_answer_fails_as_in_the_sdk():
    with pytest.raises(UnicodeDecodeError):
        deserialize(b'{"a": "\xff"}', "application/json")
