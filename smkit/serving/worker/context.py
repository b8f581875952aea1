"""The ``context`` argument handed to hooks that accept one.

On AWS framework images that argument is Multi Model Server's ``Context``; scripts written for it use
``context.system_properties["model_dir"]``, ``context.request_processor[0].get_request_properties()``,
``context.get_request_header(0, name)``, ``context.set_response_header(0, name, value)`` and
``context.set_response_status(code, phrase)``. The same methods exist here (index 0 is the only request,
as the toolkit never batches), so such scripts run unchanged. Header lookups ignore case.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from smkit import contract


class RequestHeaders(Mapping[str, str]):
    """A read-only, case-insensitive view of request headers."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        self._items: dict[str, tuple[str, str]] = {}
        for key, value in (items or {}).items():
            self._items[key.lower()] = (key, value)

    @classmethod
    def from_raw(cls, raw: list[tuple[bytes, bytes]] | list[list[bytes]]) -> RequestHeaders:
        """From ASGI's ``[(name, value), ...]`` byte pairs (repeated names are joined with ", ")."""
        headers = cls()
        items = headers._items
        for name_bytes, value_bytes in raw:
            name = name_bytes.decode("latin-1")
            key = name.lower()
            value = value_bytes.decode("latin-1")
            if key in items:
                value = f"{items[key][1]}, {value}"
            items[key] = (name, value)
        return headers

    @classmethod
    def from_pairs(cls, pairs: list[list[str]] | list[tuple[str, str]]) -> RequestHeaders:
        """From ``[[name, value], ...]`` text pairs (repeated names are joined with ", ")."""
        headers = cls()
        items = headers._items
        for name, value in pairs:
            key = name.lower()
            if key in items:
                value = f"{items[key][1]}, {value}"
            items[key] = (name, value)
        return headers

    def __getitem__(self, key: str) -> str:
        return self._items[key.lower()][1]

    def get(self, key: str, default: Any = None) -> Any:
        """The header's value or ``default`` (case-insensitive)."""
        item = self._items.get(key.lower())
        return default if item is None else item[1]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return (original for original, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Headers({dict(self.items())!r})"


class RequestProcessor:
    """Per-request properties (MMS ``RequestProcessor``): request headers in, response headers out."""

    def __init__(self, request_headers: Mapping[str, str]) -> None:
        self._request = (
            request_headers
            if isinstance(request_headers, RequestHeaders)
            else RequestHeaders(request_headers)
        )
        self.response_headers: dict[str, str] = {}
        self.status_code: int | None = None
        self.reason_phrase: str = ""

    def get_request_property(self, key: str) -> str | None:
        """One request header (case-insensitive), or None."""
        return self._request.get(key)

    def get_request_properties(self) -> RequestHeaders:
        """All request headers."""
        return self._request

    def add_response_property(self, key: str, value: str) -> None:
        """Set a response header."""
        self.response_headers[key] = value

    def get_response_headers(self) -> dict[str, str]:
        """The response headers set so far."""
        return self.response_headers

    def get_response_header(self, key: str) -> str | None:
        """One response header set so far, or None."""
        return self.response_headers.get(key)

    def report_status(self, code: int, reason_phrase: str = "") -> None:
        """Set the response status."""
        self.status_code = int(code)
        self.reason_phrase = reason_phrase


class Context:
    """What a hook's trailing ``context`` parameter receives.

    Attributes:
        model_name: the model's name (``"model"`` in single-model mode).
        model_dir: the extracted model directory.
        system_properties: ``{"model_dir", "gpu_id", "batch_size", "server_name", "server_version"}``.
        request_processor: a one-element list of :class:`RequestProcessor`.
    """

    def __init__(self, *, model_name: str, model_dir: str, headers: Mapping[str, str] | None = None) -> None:
        self.model_name = model_name
        self.model_dir = model_dir
        self.system_properties: dict[str, Any] = {
            "model_dir": model_dir,
            "gpu_id": None,
            "batch_size": 1,
            "server_name": "smkit",
            "server_version": "0.1.0",
        }
        self.request_processor = [RequestProcessor(headers or {})]
        self.request_ids = {0: ""}
        self.response_content_type: str | None = None
        # session_start_fn / session_close_fn only: the session's scratch directory under
        # SAGEMAKER_SESSIONS_PATH, removed when the session ends.
        self.session_dir: str | None = None

    @property
    def request_headers(self) -> RequestHeaders:
        """The request headers (case-insensitive)."""
        return self.request_processor[0].get_request_properties()

    @property
    def session_id(self) -> str | None:
        """The stateful session this request belongs to (``X-Amzn-SageMaker-Session-Id``), or None.

        The front end has checked it: the session exists, and this worker holds it
        (docs/sessions-and-adapters.md).
        """
        value = self.request_headers.get(contract.SESSION_ID)
        return value if value and value != "NEW_SESSION" else None

    @property
    def adapter_id(self) -> str | None:
        """The LoRA adapter this request selects (``X-Amzn-SageMaker-Adapter-Identifier``), or None.

        The front end has checked that it is registered (docs/sessions-and-adapters.md).
        """
        return self.request_headers.get(contract.ADAPTER_IDENTIFIER) or None

    @property
    def response_headers(self) -> dict[str, str]:
        """Headers the hooks asked to add to the response."""
        return self.request_processor[0].response_headers

    def get_request_id(self, idx: int = 0) -> str:
        """The request id (MMS API)."""
        return self.request_ids.get(idx, "")

    def get_request_header(self, idx: int, key: str) -> str | None:
        """One request header (MMS API)."""
        return self.request_processor[idx].get_request_property(key)

    def get_all_request_header(self, idx: int) -> RequestHeaders:
        """All request headers (MMS API)."""
        return self.request_processor[idx].get_request_properties()

    def set_response_header(self, idx: int, key: str, value: str) -> None:
        """Add a response header, e.g. ``X-Amzn-SageMaker-Custom-Attributes`` (MMS API)."""
        self.request_processor[idx].add_response_property(key, value)

    def get_response_headers(self, idx: int) -> dict[str, str]:
        """Response headers set so far (MMS API)."""
        return self.request_processor[idx].get_response_headers()

    def set_response_content_type(self, idx: int, value: str) -> None:
        """Override the response Content-Type (MMS API)."""
        self.response_content_type = value

    def get_response_content_type(self, idx: int) -> str | None:
        """The Content-Type set with :meth:`set_response_content_type` (MMS API)."""
        return self.response_content_type

    def set_response_status(self, code: int = 200, phrase: str = "", idx: int = 0) -> None:
        """Override the response status (MMS API)."""
        self.request_processor[idx].report_status(code, phrase)

    def get_response_status(self, idx: int) -> tuple[int | None, str]:
        """The status set with :meth:`set_response_status` (MMS API)."""
        processor = self.request_processor[idx]
        return processor.status_code, processor.reason_phrase
