"""A random-forest training script whose only serving hook is model_fn; a CSV input_fn was tried and left
commented out, so the toolkit's default decoders serve every request."""

import argparse
import os

import joblib
import numpy as np
from sklearn.ensemble import RandomForestClassifier


def model_fn(model_dir):
    return joblib.load(os.path.join(model_dir, "model.joblib"))


# def input_fn(body, content_type):
#     if content_type == "text/csv":
#         return np.atleast_2d(np.array(body.split(","), dtype=float))
#     raise ValueError(content_type)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR"))
    parser.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN"))
    args, _ = parser.parse_known_args()

    table = np.loadtxt(os.path.join(args.train, "train.csv"), delimiter=",", skiprows=1)
    forest = RandomForestClassifier(n_estimators=args.trees, oob_score=True, n_jobs=-1)
    forest.fit(table[:, 1:], table[:, 0])
    print(f"out-of-bag score {forest.oob_score_:.3f}")
    joblib.dump(forest, os.path.join(args.model_dir, "model.joblib"))
