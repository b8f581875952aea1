"""``smkit token``: a bearer token made offline, in the SDK's format, that the local endpoint's verifier
accepts; its options' errors name the option, the value and the fix."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from smkit.cli import main
from smkit.local.auth import TOKEN_PREFIX, Verifier, local_credentials


def _token(*args: str, env: dict[str, str | None] | None = None):
    return CliRunner().invoke(main, ["token", *args], env=env)


def test_local_token_is_accepted_by_the_local_endpoint():
    result = _token("--local", "--region", "us-east-1", "--expires", "600")
    assert result.exit_code == 0, result.output
    token = result.output.strip()
    assert token.startswith(TOKEN_PREFIX)
    url = base64.b64decode(token[len(TOKEN_PREFIX) :]).decode()
    assert url.startswith(
        "sagemaker.amazonaws.com/?Action=CallWithBearerToken&X-Amz-Algorithm=AWS4-HMAC-SHA256"
    )
    assert "X-Amz-Expires=600" in url and url.endswith("&Version=1")
    Verifier("us-east-1", local_credentials()).check_bearer(f"Bearer {token}")


def test_environment_credentials_sign_the_token(monkeypatch, tmp_path):
    env = {
        "AWS_ACCESS_KEY_ID": "AKIDFROMENV",
        "AWS_SECRET_ACCESS_KEY": "secret-from-env",
        "AWS_SESSION_TOKEN": "session-from-env",
        "AWS_REGION": "eu-west-1",
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
    }
    result = _token(env=env)
    assert result.exit_code == 0, result.output
    token = result.output.strip()
    assert "X-Amz-Security-Token=session-from-env" in base64.b64decode(token[len(TOKEN_PREFIX) :]).decode()
    Verifier("eu-west-1", {"AKIDFROMENV": "secret-from-env"}).check_bearer(f"Bearer {token}")


def test_no_region_is_an_error_naming_the_fix():
    result = _token("--local", env={"AWS_REGION": None, "AWS_DEFAULT_REGION": None})
    assert result.exit_code == 2
    assert "no region: pass --region (e.g. us-east-1) or set AWS_REGION" in result.output


@pytest.mark.parametrize("expires", ["0", "43201"])
def test_a_lifetime_outside_twelve_hours_is_an_error(expires):
    result = _token("--local", "--region", "us-east-1", "--expires", expires)
    assert result.exit_code == 2
    assert f"{expires}: a bearer token lives 1 to 43200 seconds (12 hours)" in result.output


def test_no_credentials_is_an_error_naming_the_fix(tmp_path):
    env = {
        "AWS_ACCESS_KEY_ID": None,
        "AWS_SECRET_ACCESS_KEY": None,
        "AWS_SESSION_TOKEN": None,
        "AWS_PROFILE": None,
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": None,
        "AWS_CONTAINER_CREDENTIALS_FULL_URI": None,
    }
    result = _token("--region", "us-east-1", env=env)
    assert result.exit_code == 1
    assert "no AWS credentials found" in result.output and "pass --local" in result.output


def test_the_doc_describes_the_token_smkit_makes():
    """docs/openai-compatible.md's decoded token is what ``smkit token`` encodes: the URL without its scheme."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "openai-compatible.md").read_text()
    section = doc[doc.index("## Bearer tokens") :]
    section = section[: section.index("\n## ", 1) if "\n## " in section[1:] else len(section)]
    (decoded,) = re.findall(r"the decoded token reads `([^`]+)`", section.replace("\n", " "))
    head, _, tail = decoded.partition("...")
    token = _token("--local", "--region", "us-east-1").output.strip()
    url = base64.b64decode(token[len(TOKEN_PREFIX) :]).decode()
    assert url.startswith(head) and url.endswith(tail), (decoded, url)
    assert "base64 of a SigV4-presigned URL without its scheme" in " ".join(section.split())
