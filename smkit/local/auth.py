"""Request authentication of the local endpoint: SigV4 header signatures and SageMaker bearer tokens.

One :class:`Verifier` checks both, against the credentials the local endpoint knows
(:func:`local_credentials`), for one region and the signing name ``sagemaker``:

- **SigV4** (``Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...``): what boto3
  sends on every sagemaker-runtime call. Checked when ``LocalSettings.verify_signatures`` is on
  (``smkit local-endpoint --verify-signatures``): access key, credential scope (region, service), the
  5-minute clock-skew window, the payload hash and the signature itself.
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-troubleshooting.html
- **Bearer tokens** (``Authorization: Bearer sagemaker-api-key-<base64>``) of the OpenAI-compatible route:
  base64 of a SigV4-presigned URL of ``Action=CallWithBearerToken`` on ``sagemaker.amazonaws.com`` without its
  scheme, valid up
  to 12 hours, as aws/sagemaker-python-sdk's ``sagemaker.core.token_generator`` makes them. Always checked
  on that route: well-formed, not expired, scoped to this region and service, signed by a known key.
  https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-openai-compatible.html

Both signatures are recomputed with botocore's own signer (:class:`botocore.auth.SigV4Auth`,
:class:`botocore.auth.SigV4QueryAuth`): canonical request, string to sign and signing key are botocore's, so a
request boto3 signs correctly is accepted and any other is refused. The refusals carry the codes and messages
the service sends (docs/request-security.md).
"""

from __future__ import annotations

import base64
import binascii
import configparser
import datetime as dt
import hmac
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from botocore.auth import SIGV4_TIMESTAMP, UNSIGNED_PAYLOAD, SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import Credentials

from smkit.aws.limits import MAX_SIGNATURE_SKEW_S
from smkit.contract import MAX_TOKEN_SECONDS
from smkit.local.error_shapes import RuntimeApiError

SERVICE = "sagemaker"  # the signing name of sagemaker-runtime (botocore's service model: signingName)
ALGORITHM = "AWS4-HMAC-SHA256"
MAX_SKEW = dt.timedelta(seconds=MAX_SIGNATURE_SKEW_S)  # the service's window around its own clock
TOKEN_PREFIX = "sagemaker-api-key-"
TOKEN_HOST = "sagemaker.amazonaws.com"
TOKEN_ACTION = "CallWithBearerToken"
TOKEN_VERSION = "Version=1"  # appended after signing by the SDK's generator, so not part of the signature
# The pair LocalEndpoint.client() signs with; always known to the local endpoint.
LOCAL_KEY = ("local", "local")

MISSING_TOKEN = "Missing Authentication Token"
BAD_SIGNATURE = (
    "The request signature we calculated does not match the signature you provided. Check your AWS Secret "
    "Access Key and signing method. Consult the service documentation for details."
)
UNKNOWN_KEY = "The security token included in the request is invalid."


def missing_authentication() -> RuntimeApiError:
    """403 MissingAuthenticationTokenException: no Authorization header at all."""
    return RuntimeApiError("MissingAuthenticationTokenException", MISSING_TOKEN, status=403)


def incomplete_signature(message: str) -> RuntimeApiError:
    """400 IncompleteSignatureException: an Authorization header SigV4 cannot read."""
    return RuntimeApiError("IncompleteSignatureException", message, status=400)


def invalid_signature(message: str) -> RuntimeApiError:
    """403 InvalidSignatureException: scope, clock or signature wrong (the rest-json services' code for what
    query services call SignatureDoesNotMatch)."""
    return RuntimeApiError("InvalidSignatureException", message, status=403)


def unrecognized_client() -> RuntimeApiError:
    """403 UnrecognizedClientException: an access key the service does not know."""
    return RuntimeApiError("UnrecognizedClientException", UNKNOWN_KEY, status=403)


def local_credentials(extra: Iterable[tuple[str, str]] = ()) -> dict[str, str]:
    """Access key -> secret key the local endpoint accepts: ``LOCAL_KEY``, the environment's
    ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, the shared credentials file's profile
    (``AWS_PROFILE``, else ``default``), then ``extra``. No instance metadata lookup: nothing here waits on
    a network."""
    keys = dict([LOCAL_KEY])
    env_key, env_secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if env_key and env_secret:
        keys[env_key] = env_secret
    path = Path(os.environ.get("AWS_SHARED_CREDENTIALS_FILE", Path.home() / ".aws" / "credentials"))
    if path.is_file():
        parser = configparser.ConfigParser()
        try:
            parser.read(path)
        except configparser.Error:
            parser = configparser.ConfigParser()
        section = os.environ.get("AWS_PROFILE", "default")
        if parser.has_option(section, "aws_access_key_id") and parser.has_option(
            section, "aws_secret_access_key"
        ):
            keys[parser.get(section, "aws_access_key_id")] = parser.get(section, "aws_secret_access_key")
    keys.update(extra)
    return keys


@dataclass(frozen=True)
class CredentialScope:
    """The parts of a credential scope ``AKID/YYYYMMDD/region/service/aws4_request``."""

    access_key: str
    date: str
    region: str
    service: str

    @classmethod
    def parse(cls, credential: str) -> CredentialScope | None:
        parts = credential.split("/")
        if len(parts) != 5 or parts[4] != "aws4_request":
            return None
        return cls(*parts[:4])


class _SignedHeadersOnly(SigV4Auth):  # type: ignore[misc]  # botocore ships no type information
    """botocore's signer, canonicalizing exactly the headers the client listed in SignedHeaders."""

    def __init__(self, credentials: Credentials, region: str, signed: list[str]) -> None:
        super().__init__(credentials, SERVICE, region)
        self._signed = signed

    def headers_to_sign(self, request: AWSRequest) -> HTTPHeaders:
        headers = HTTPHeaders()
        for name in self._signed:
            for value in request.headers.get_all(name) or []:
                headers[name] = value
        return headers


def _parse_time(stamp: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(stamp, SIGV4_TIMESTAMP).replace(tzinfo=dt.UTC)
    except ValueError:
        return None


def _stamp(when: dt.datetime) -> str:
    return when.strftime(SIGV4_TIMESTAMP)


class Verifier:
    """Checks SigV4 and bearer-token requests for ``region`` against ``credentials`` (access key -> secret)."""

    def __init__(self, region: str, credentials: Mapping[str, str]) -> None:
        self.region = region
        self.credentials = dict(credentials)

    @staticmethod
    def now() -> dt.datetime:
        """The clock the 5-minute window is measured against."""
        return dt.datetime.now(dt.UTC)

    # --- shared checks -------------------------------------------------------------------------------

    def _secret(self, scope: CredentialScope) -> str:
        secret = self.credentials.get(scope.access_key)
        if secret is None:
            raise unrecognized_client()
        return secret

    def _check_scope(self, scope: CredentialScope, stamp: str) -> None:
        if scope.region != self.region:
            raise invalid_signature(f"Credential should be scoped to a valid region, not '{scope.region}'. ")
        if scope.service != SERVICE:
            raise invalid_signature(f"Credential should be scoped to correct service: '{SERVICE}'. ")
        if scope.date != stamp[:8]:
            raise invalid_signature(
                f"Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: "
                f"'{scope.date}' != '{stamp[:8]}', from 'x-amz-date'."
            )

    def _check_clock(self, signed_at: dt.datetime) -> None:
        now = self.now().replace(microsecond=0)
        if signed_at < now - MAX_SKEW:
            raise invalid_signature(
                f"Signature expired: {_stamp(signed_at)} is now earlier than {_stamp(now - MAX_SKEW)} "
                f"({_stamp(now)} - 5 min.)"
            )
        if signed_at > now + MAX_SKEW:
            raise invalid_signature(
                f"Signature not yet current: {_stamp(signed_at)} is still later than {_stamp(now + MAX_SKEW)} "
                f"({_stamp(now)} + 5 min.)"
            )

    # --- SigV4 header signatures ---------------------------------------------------------------------

    def check_request(
        self, *, method: str, host: str, raw_path: str, query: str, headers: Mapping[str, str], body: bytes
    ) -> None:
        """Raise the service's error unless ``Authorization`` is a valid SigV4 signature of this request.

        ``raw_path`` and ``query`` are the request target as sent (still percent-encoded): the signer
        canonicalized exactly those bytes. ``headers`` must be case-insensitive.
        """
        authorization = headers.get("authorization")
        if not authorization:
            raise missing_authentication()
        fields = _authorization_fields(authorization)
        stamp = headers.get("x-amz-date")
        if stamp is None:
            raise incomplete_signature(
                "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. "
                f"Authorization={authorization}"
            )
        signed_at = _parse_time(stamp)
        if signed_at is None:
            raise incomplete_signature(f"Date must be in ISO-8601 'basic format'. Got '{stamp}'.")
        scope = CredentialScope.parse(fields["Credential"])
        if scope is None:
            raise incomplete_signature(
                f"Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/"
                f"term, got '{fields['Credential']}'"
            )
        secret = self._secret(scope)
        self._check_scope(scope, stamp)
        self._check_clock(signed_at)
        declared = headers.get("x-amz-content-sha256")
        if declared is not None and declared != UNSIGNED_PAYLOAD and declared != sha256(body).hexdigest():
            raise invalid_signature(BAD_SIGNATURE)  # the body is not the one the client signed
        signed = [name.strip().lower() for name in fields["SignedHeaders"].split(";") if name.strip()]
        url = f"http://{host}{raw_path}" + (f"?{query}" if query else "")
        request = AWSRequest(method=method, url=url, data=body)
        request.headers = HTTPHeaders()
        for name in signed:
            if name == "host":
                request.headers["host"] = host
            elif (value := headers.get(name)) is not None:
                request.headers[name] = value
        request.context["timestamp"] = stamp
        signer = _SignedHeadersOnly(Credentials(scope.access_key, secret), self.region, signed)
        expected = signer.signature(
            signer.string_to_sign(request, signer.canonical_request(request)), request
        )
        if not hmac.compare_digest(expected, fields["Signature"]):
            raise invalid_signature(BAD_SIGNATURE)

    # --- bearer tokens -------------------------------------------------------------------------------

    def check_bearer(self, authorization: str | None) -> None:
        """Raise the service's error unless ``authorization`` is ``Bearer <valid SageMaker bearer token>``."""
        if not authorization:
            raise missing_authentication()
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token.startswith(TOKEN_PREFIX):
            raise invalid_signature(
                f"Authorization must be 'Bearer {TOKEN_PREFIX}<token>' (got '{scheme} ...'); make one with "
                "smkit token, or sagemaker.core.token_generator.generate_token(region=...)."
            )
        try:
            url = base64.b64decode(token[len(TOKEN_PREFIX) :], validate=True).decode("ascii")
        except (binascii.Error, UnicodeDecodeError):
            raise invalid_signature(
                f"The bearer token is not {TOKEN_PREFIX} followed by base64 of a presigned URL."
            ) from None
        parts = urlsplit(f"https://{url}")
        params = dict(parse_qsl(parts.query, keep_blank_values=True))
        needed = ("X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-Signature")
        missing = [name for name in needed if name not in params]
        if parts.hostname != TOKEN_HOST or params.get("Action") != TOKEN_ACTION or missing:
            raise invalid_signature(
                f"The bearer token is not a presigned {TOKEN_ACTION} URL of {TOKEN_HOST}"
                + (f" (missing {', '.join(missing)})" if missing else "")
                + "."
            )
        scope = CredentialScope.parse(params["X-Amz-Credential"])
        signed_at = _parse_time(params["X-Amz-Date"])
        if scope is None or signed_at is None or params["X-Amz-Algorithm"] != ALGORITHM:
            raise invalid_signature(
                "The bearer token's X-Amz-Credential, X-Amz-Date or X-Amz-Algorithm is malformed."
            )
        try:
            expires = int(params["X-Amz-Expires"])
        except ValueError:
            expires = -1
        if not 0 < expires <= MAX_TOKEN_SECONDS:
            raise invalid_signature(
                f"X-Amz-Expires must be between 1 and {MAX_TOKEN_SECONDS} seconds (12 hours); got "
                f"{params['X-Amz-Expires']!r}."
            )
        secret = self._secret(scope)
        self._check_scope(scope, params["X-Amz-Date"])
        now = self.now().replace(microsecond=0)
        if signed_at > now + MAX_SKEW:
            self._check_clock(signed_at)
        if now > signed_at + dt.timedelta(seconds=expires):
            raise invalid_signature(
                f"The bearer token expired at {_stamp(signed_at + dt.timedelta(seconds=expires))} "
                f"(signed {params['X-Amz-Date']}, valid {expires} s); make a new one."
            )
        signed_params = [
            (key, value)
            for key, value in parse_qsl(parts.query, keep_blank_values=True)
            if key != "X-Amz-Signature" and f"{key}={value}" != TOKEN_VERSION
        ]
        request = AWSRequest(method="POST", url=f"https://{TOKEN_HOST}/", headers={"host": TOKEN_HOST})
        request.params = signed_params
        request.context["timestamp"] = params["X-Amz-Date"]
        signer = SigV4QueryAuth(Credentials(scope.access_key, secret), SERVICE, self.region, expires=expires)
        expected = signer.signature(
            signer.string_to_sign(request, signer.canonical_request(request)), request
        )
        if not hmac.compare_digest(expected, params["X-Amz-Signature"]):
            raise invalid_signature(BAD_SIGNATURE)


def _authorization_fields(authorization: str) -> dict[str, str]:
    """``Credential``, ``SignedHeaders`` and ``Signature`` of a SigV4 Authorization header."""
    algorithm, _, rest = authorization.strip().partition(" ")
    if algorithm != ALGORITHM:
        raise incomplete_signature(
            f"Authorization header requires the '{ALGORITHM}' algorithm (got '{algorithm}'). "
            f"Authorization={authorization}"
        )
    fields: dict[str, str] = {}
    for part in rest.split(","):
        name, sep, value = part.strip().partition("=")
        if sep:
            fields[name] = value
    missing = [name for name in ("Credential", "SignedHeaders", "Signature") if name not in fields]
    if missing:
        raise incomplete_signature(
            " ".join(f"Authorization header requires '{name}' parameter." for name in missing)
            + f" Authorization={authorization}"
        )
    return fields


def make_token(
    access_key: str,
    secret_key: str,
    region: str,
    *,
    expires_s: int = MAX_TOKEN_SECONDS,
    session_token: str | None = None,
) -> str:
    """A SageMaker bearer token, made as aws/sagemaker-python-sdk's ``sagemaker.core.token_generator`` makes
    it: ``sagemaker-api-key-`` + base64 of a presigned ``POST https://sagemaker.amazonaws.com/?Action=
    CallWithBearerToken`` URL without its ``https://`` (SigV4 query signature, signing name ``sagemaker``;
    temporary credentials put their session token in the URL as ``X-Amz-Security-Token``), then
    ``&Version=1``."""
    if not 0 < expires_s <= MAX_TOKEN_SECONDS:
        raise ValueError(
            f"expires_s={expires_s}: a bearer token lives 1 s to {MAX_TOKEN_SECONDS} s (12 hours)"
        )
    request = AWSRequest(
        method="POST",
        url=f"https://{TOKEN_HOST}/",
        headers={"host": TOKEN_HOST},
        params={"Action": TOKEN_ACTION},
    )
    credentials = Credentials(access_key, secret_key, session_token)
    SigV4QueryAuth(credentials, SERVICE, region, expires=expires_s).add_auth(request)
    url = request.url.removeprefix("https://") + "&" + TOKEN_VERSION
    return TOKEN_PREFIX + base64.b64encode(url.encode("utf-8")).decode("ascii")
