"""Data capture: sampled requests and responses written as SageMaker writes them to S3.

One JSON Lines record per captured invocation under
``<base>/<prefix>/<EndpointName>/<VariantName>/yyyy/mm/dd/hh/`` with ``captureData.endpointInput`` /
``endpointOutput`` (``observedContentType``, ``mode``, ``data``, ``encoding`` CSV | JSON | BASE64) and
``eventMetadata`` (``eventId``, ``inferenceId``, ``inferenceTime``).
https://docs.aws.amazon.com/sagemaker/latest/dg/model-monitor-data-capture-endpoint.html
"""

from __future__ import annotations

import base64
import json
import random
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path

from smkit.config import DataCapture
from smkit.contract import CSV, JSON, JSON_LINES, media_type

# observedContentType -> encoding of the captured data (text for CSV/JSON, else base64).
ENCODINGS: dict[str, str] = {CSV: "CSV", JSON: "JSON", JSON_LINES: "JSON"}


def _payload(body: bytes, content_type: str | None, mode: str) -> dict[str, str]:
    media = media_type(content_type)
    encoding = ENCODINGS.get(media, "BASE64")
    if encoding != "BASE64":
        try:
            data = body.decode("utf-8")
        except UnicodeDecodeError:
            encoding = "BASE64"
    if encoding == "BASE64":
        data = base64.b64encode(body).decode("ascii")
    return {"observedContentType": content_type or "", "mode": mode, "data": data, "encoding": encoding}


class DataCaptureWriter:
    """Writes the sampled share of invocations of one endpoint (thread-safe appends, one file per hour)."""

    def __init__(self, spec: DataCapture, *, base: Path, endpoint: str, rng: random.Random) -> None:
        self.spec = spec
        self.root = base / spec.prefix / endpoint
        self._rng = rng
        self._lock = threading.Lock()
        self.captured = 0

    def record(
        self,
        *,
        variant: str,
        request: bytes,
        request_type: str | None,
        response: bytes,
        response_type: str | None,
        inference_id: str | None = None,
    ) -> Path | None:
        """Capture one invocation if it falls in the sample; return the file written to."""
        if self._rng.uniform(0, 100) >= self.spec.sampling_percentage:
            return None
        now = datetime.now(UTC)
        data: dict[str, dict[str, str]] = {}
        if "input" in self.spec.capture:
            data["endpointInput"] = _payload(request, request_type, "INPUT")
        if "output" in self.spec.capture:
            data["endpointOutput"] = _payload(response, response_type, "OUTPUT")
        metadata = {"eventId": str(uuid.uuid4()), "inferenceTime": now.isoformat().replace("+00:00", "Z")}
        if inference_id:
            metadata["inferenceId"] = inference_id
        line = json.dumps({"captureData": data, "eventMetadata": metadata, "eventVersion": "0"})
        path = self.root / variant / now.strftime("%Y/%m/%d/%H") / "capture.jsonl"
        with self._lock:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as out:
                out.write(line + "\n")
            self.captured += 1
        return path
