"""model_fn comes first, then the training code under the main guard; the script imports its metrics and
pandas at the top, which the model server imports too when it loads the handler."""

import argparse
import glob
import os

import joblib
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import accuracy_score


def model_fn(model_dir):
    return joblib.load(os.path.join(model_dir, "model.joblib"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--max-iter", type=int, default=50)
    parser.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR"))
    parser.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN"))
    parser.add_argument("--validation", default=os.environ.get("SM_CHANNEL_VALIDATION"))
    args, _unknown = parser.parse_known_args()

    train = pd.concat(pd.read_csv(path) for path in glob.glob(os.path.join(args.train, "*.csv")))
    check = pd.concat(pd.read_csv(path) for path in glob.glob(os.path.join(args.validation, "*.csv")))
    model = HistGradientBoostingClassifier(learning_rate=args.learning_rate, max_iter=args.max_iter)
    model.fit(train.iloc[:, 1:].to_numpy(), train.iloc[:, 0].to_numpy())
    print("validation accuracy", accuracy_score(check.iloc[:, 0], model.predict(check.iloc[:, 1:].to_numpy())))
    joblib.dump(model, os.path.join(args.model_dir, "model.joblib"))
