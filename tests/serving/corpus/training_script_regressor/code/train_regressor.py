"""A training script that is also the handler: run as a program it fits a decision-tree regressor on the
CSV files of its train channel (label first) and saves it; imported by the model server, only model_fn is
used, and the toolkit's default hooks do the rest."""

import argparse
import os

import joblib
import pandas as pd
from sklearn.tree import DecisionTreeRegressor


def read_channel(folder):
    frames = [pd.read_csv(os.path.join(folder, name), header=None) for name in sorted(os.listdir(folder))]
    if not frames:
        raise ValueError(f"no CSV files in {folder}")
    table = pd.concat(frames)
    return table.iloc[:, 1:], table.iloc[:, 0]


def model_fn(model_dir):
    return joblib.load(os.path.join(model_dir, "model.joblib"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-depth", type=int, default=None)
    parser.add_argument("--model-dir", default=os.environ["SM_MODEL_DIR"])
    parser.add_argument("--train", default=os.environ["SM_CHANNEL_TRAIN"])
    options = parser.parse_args()

    features, labels = read_channel(options.train)
    regressor = DecisionTreeRegressor(max_depth=options.max_depth).fit(features, labels)
    joblib.dump(regressor, os.path.join(options.model_dir, "model.joblib"))
    print("saved; training score", regressor.score(features, labels))
