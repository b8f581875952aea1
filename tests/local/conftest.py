"""Shared fixtures of the local-endpoint tests: every test talks to a real gateway over 127.0.0.1 with
boto3's unmodified ``sagemaker-runtime`` client, in front of real serving-runtime processes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo() -> Path:
    """The repository root (configs, model_code/ samples, build/ archives)."""
    return REPO


@pytest.fixture(scope="session")
def sample() -> Callable[[str, str], bytes]:
    """``sample("tabular", "request.csv")``: a sample payload of an example model."""

    def read(model: str, name: str) -> bytes:
        return (REPO / "model_code" / model / "samples" / name).read_bytes()

    return read


@pytest.fixture(scope="session")
def client_error() -> Callable[..., ClientError]:
    """``client_error(call, code, match)``: run ``call``, assert the ClientError's code and message."""

    def check(call: Callable[[], Any], code: str, match: str) -> ClientError:
        with pytest.raises(ClientError) as info:
            call()
        error = info.value.response["Error"]
        assert error["Code"] == code, info.value.response
        assert match in error["Message"], error["Message"]
        return info.value

    return check


@pytest.fixture(scope="session")
def no_openai_route() -> Callable[[Any, str], None]:
    """``no_openai_route(endpoint, match)``: the start banner prints no OpenAI ``base_url`` for ``endpoint``, and
    the route's chat completion, from the real ``openai`` client, is refused with a 400 naming ``match``."""
    import openai

    from smkit.cli.local_endpoint import _describe

    def check(endpoint: Any, match: str) -> None:
        assert "OpenAI(base_url=" not in _describe(endpoint)
        client = openai.OpenAI(base_url=endpoint.openai_base_url(), api_key=endpoint.token(), max_retries=0)
        with pytest.raises(openai.BadRequestError, match=match):
            client.chat.completions.create(model="", messages=[{"role": "user", "content": "hello"}])

    return check
