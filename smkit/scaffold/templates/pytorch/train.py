"""Train a small PyTorch regressor, save it as TorchScript and write the sample requests with their answers.

Replace ``train`` with your own training, or put your TorchScript ``model.pt`` into ``artifacts/`` and run
``--samples-only --rows YOUR_ROWS.csv`` (``smkit train <name> --samples-only --rows YOUR_ROWS.csv``) so that
``samples/expected.json`` holds what your model answers for your rows. Runs in the model's environment:
``smkit train <name>``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
MODEL_FILE = "model.pt"


def data(n: int = 400, features: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic synthetic regression data (no download)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, features))
    y = x @ np.linspace(1.0, -1.0, features) + 0.1 * rng.normal(size=n)
    return x.astype(np.float32), y.astype(np.float32)


def train(artifacts: Path) -> None:
    """Fit a two-layer network for a few hundred steps and save ``model.pt`` (TorchScript)."""
    torch.manual_seed(0)
    x, y = (torch.from_numpy(a) for a in data())
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(300):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y)
        loss.backward()
        optimizer.step()
    artifacts.mkdir(parents=True, exist_ok=True)
    torch.jit.save(torch.jit.script(model.eval()), str(artifacts / MODEL_FILE))


def write_samples(artifacts: Path, samples: Path, rows_file: Path | None = None) -> None:
    """Sample requests (CSV and JSON) and ``expected.json`` computed with the saved model."""
    rows = data()[0][:5]
    if rows_file is not None:  # your own rows: features only, comma-separated, no header
        rows = np.loadtxt(rows_file, delimiter=",", ndmin=2).astype(rows.dtype)
    model = torch.jit.load(str(artifacts / MODEL_FILE)).eval()
    with torch.no_grad():
        predictions = model(torch.from_numpy(rows)).numpy()
    samples.mkdir(parents=True, exist_ok=True)
    (samples / "request.csv").write_text("".join(",".join(repr(float(v)) for v in r) + "\n" for r in rows))
    (samples / "request.json").write_text(json.dumps(rows.tolist()) + "\n")
    expected = {"predictions": predictions.tolist(), "rtol": 1e-4}
    (samples / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=Path, default=HERE / "artifacts")
    parser.add_argument("--samples", type=Path, default=HERE / "samples")
    parser.add_argument("--samples-only", action="store_true", help="keep artifacts/, rewrite samples/")
    parser.add_argument("--rows", type=Path, help="CSV of your own feature rows for the samples (no header)")
    args = parser.parse_args()
    if not args.samples_only:
        train(args.artifacts)
    write_samples(args.artifacts, args.samples, args.rows)


if __name__ == "__main__":
    main()
