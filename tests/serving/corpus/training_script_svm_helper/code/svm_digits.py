"""An SVM training script with a helper at module level that scales image arrays; serving uses model_fn
alone and sends the rows to the model as the default input_fn decoded them."""

import argparse
import os

import joblib
import numpy as np
from sklearn.svm import SVC


def flatten_images(images, scale=1.0 / 255.0, dtype=np.float32):
    """Images of any shape to one row each, scaled to [0, 1]."""
    rows = np.asarray(images).reshape(len(images), -1).astype(dtype)
    return rows * scale


def model_fn(model_dir):
    return joblib.load(os.path.join(model_dir, "model.joblib"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", default=os.environ["SM_MODEL_DIR"])
    parser.add_argument("--train", default=os.environ["SM_CHANNEL_TRAIN"])
    args = parser.parse_args()

    archive = np.load(os.path.join(args.train, "train.npz"))
    classifier = SVC(gamma=0.001, C=100.0).fit(flatten_images(archive["x"]), archive["y"])
    joblib.dump(classifier, os.path.join(args.model_dir, "model.joblib"))
