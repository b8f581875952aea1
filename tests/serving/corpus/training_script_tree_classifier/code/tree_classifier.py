"""A decision-tree classifier trained by the same file that serves it: hyperparameters and SageMaker's
folders from argparse, and a model_fn that returns the fitted tree."""

import argparse
import os

import joblib
import pandas as pd
from sklearn.tree import DecisionTreeClassifier

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-leaf-nodes", type=int, default=None)
    parser.add_argument("--model-dir", default=os.environ["SM_MODEL_DIR"])
    parser.add_argument("--train", default=os.environ["SM_CHANNEL_TRAIN"])
    args = parser.parse_args()

    data = pd.read_csv(os.path.join(args.train, "train.csv"), header=None)
    tree = DecisionTreeClassifier(max_leaf_nodes=args.max_leaf_nodes)
    tree.fit(data.iloc[:, 1:], data.iloc[:, 0])
    joblib.dump(tree, os.path.join(args.model_dir, "model.joblib"))


def model_fn(model_dir):
    """The fitted tree the main block saved."""
    return joblib.load(os.path.join(model_dir, "model.joblib"))
