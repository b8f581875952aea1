"""Train a small PyTorch regressor, save it as TorchScript and write the sample requests with their answers.

Replace ``train`` with your own training, or put your TorchScript ``model.pt`` into ``artifacts/`` and run
``--samples-only --rows YOUR_ROWS.csv`` (``smkit train <name> --samples-only --rows YOUR_ROWS.csv``) so that
``samples/expected.json`` holds what your model answers for your rows. Runs in the model's environment:
``smkit train <name>``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import samples_io
import torch

MODEL_FILE = "model.pt"


def train(artifacts: Path) -> None:
    """Fit a two-layer network for a few hundred steps and save ``model.pt`` (TorchScript)."""
    torch.manual_seed(0)
    x, y = (torch.from_numpy(a.astype(np.float32)) for a in samples_io.regression_data())
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
    rows = samples_io.feature_rows(rows_file, np.float32)
    samples_io.write_requests(samples, rows)
    model = torch.jit.load(str(artifacts / MODEL_FILE)).eval()
    with torch.no_grad():
        predictions = model(torch.from_numpy(rows)).numpy()
    samples_io.write_expected(samples, predictions, rtol=1e-4)


if __name__ == "__main__":
    samples_io.main(__doc__, train, write_samples)
