"""Pricing handler for the TensorFlow Serving image: quotation ids zipped back onto the predictions.

Requests come as JSON (``{"signature_name": "predict", "instances": [{...}, ...]}``, or the bare list of
objects) or as ``;``-separated latin-1 CSV rows ``quotation_id;year;month;stage_id;company_id;
product_modality_id;cover_3[;price]`` (batch files carry the real price last; it is dropped). The rows go
to TensorFlow Serving's ``predict`` signature through ``context.rest_uri`` and the answer is
``{"predictions": [[quotation_id, price], ...]}`` in request order, or ``quotation_id;price`` lines when
the client accepts ``text/csv``. TF Serving's own errors are passed on (raised, so the container answers
500 with their text).
"""

from __future__ import annotations

import csv
import json
from typing import Any

import requests

# The CSV columns in file order, each with the default that also fixes its type.
COLUMNS: dict[str, Any] = {
    "quotation_id": 0,
    "year": "",
    "month": "",
    "stage_id": 0,
    "company_id": 0,
    "product_modality_id": 0,
    "cover_3": 0,
}
SIGNATURE = "predict"


def set_type(value: str, default: Any) -> Any:
    """A CSV field as the type of its column's default; empty numeric fields count as 0."""
    if isinstance(default, float):
        return float(value) if value != "" else 0.0
    if isinstance(default, int):
        return int(value) if value != "" else 0
    return str(value)


def _process_input(data: Any, context: Any) -> tuple[str, list[int]]:
    """The TF Serving request body and the quotation ids, in request order."""
    if context.request_content_type == "application/json":
        document = json.loads(data.read().decode("utf-8"))
        instances = document["instances"] if isinstance(document, dict) else document
        signature = document.get("signature_name", SIGNATURE) if isinstance(document, dict) else SIGNATURE
    elif context.request_content_type == "text/csv":
        text = data.read().decode("latin-1")
        rows = [row for row in csv.reader(text.splitlines(), delimiter=";") if row]
        # Batch files carry the real price as an extra last column: zip stops at the known columns.
        instances = [
            {name: set_type(value, COLUMNS[name]) for name, value in zip(COLUMNS, row, strict=False)}
            for row in rows
        ]
        signature = SIGNATURE
    else:
        raise ValueError(f"unsupported content type {context.request_content_type or 'unknown'}")
    ids = [instance["quotation_id"] for instance in instances]
    return json.dumps({"signature_name": signature, "instances": instances}), ids


def _process_output(response: requests.Response, context: Any) -> list[float]:
    """The prices from TF Serving's answer; its error text raised as is."""
    if response.status_code != 200:
        raise ValueError(response.content.decode("utf-8"))
    return json.loads(response.content)["predictions"]  # type: ignore[no-any-return]


def handler(data: Any, context: Any) -> tuple[bytes, str]:
    """One request: rows to TF Serving, ids zipped back onto its predictions."""
    body, ids = _process_input(data, context)
    response = requests.post(context.rest_uri, data=body)
    prices = _process_output(response, context)
    pairs = list(zip(ids, prices, strict=True))
    if context.accept_header == "text/csv":
        lines = "".join(f"{quotation_id};{price}\n" for quotation_id, price in pairs)
        return lines.encode("latin-1"), "text/csv"
    return json.dumps({"predictions": pairs}).encode("utf-8"), "application/json"
