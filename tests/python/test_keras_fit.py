"""Keras 3's fit with validation under MirroredStrategy (two logical CPUs: tests/python/tf_fit.py)
against podsim's mirrored strategy on two devices: the same binary classifier (Dense 8 relu,
Dense 1 sigmoid, binary cross-entropy, SGD), initial weights and rows; metrics accuracy and auc.

fit(validation_split=0.2, shuffle=False) trains on the first 256 of 320 rows in 8 batches of 32
(16 a replica) and validates on the last 64 after each epoch: history.csv's loss, accuracy, auc,
val_loss, val_accuracy and val_auc per epoch equal Keras's History within float32 reordering
(rtol 1e-5; the accuracies and AUC are ratios of counts, equal unless a prediction sits on a
threshold). Ports keras/src/trainers/trainer_test.py's test_fit_with_val_split (History has loss
and val_loss after fit(validation_split=0.2)), with values, under a strategy; and Keras's
_should_eval (keras/src/trainers/trainer.py) for a list validation_freq: the epoch logs hold
val_ values only where validation ran.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import podsim
from two_gpus import TWO_GPUS

try:
    import tensorflow as tf
except ImportError as e:  # the suite fails without TensorFlow: it does not skip
    raise ImportError("the differential tests need the venv's tensorflow-cpu==2.21.0") from e
keras = tf.keras

ROWS, BATCH, EPOCHS, LR, SPLIT = 320, 32, 3, 0.5, 0.2
ES_EPOCHS, ES_MIN_DELTA = 12, 0.005
COLUMNS = ["loss", "accuracy", "auc", "val_loss", "val_accuracy", "val_auc"]


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """(podsim's run dict, Keras's outputs, the scenario) for the shared model and rows."""
    tmp = tmp_path_factory.mktemp("fit")
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((4,), name="in"), keras.layers.Dense(8, activation="relu", name="d1"),
                              keras.layers.Dense(1, activation="sigmoid", name="d2")], name="mlp")
    rng = np.random.default_rng(7)
    x = rng.normal(size=(ROWS, 4)).astype(np.float32)
    # a learnable label with noise, so accuracy and AUC move over the epochs
    y = ((x[:, 0] + 0.5 * x[:, 1] + 0.7 * rng.normal(size=ROWS)) > 0).astype(np.float32)
    data = tmp / "data.csv"
    with open(data, "w") as f:
        f.write("f0,f1,f2,f3,label\n")
        for row, label in zip(x, y):
            f.write(",".join(f"{float(v):.9g}" for v in row) + f",{label:g}\n")
    np.savez(tmp / "in.npz", x=x, y=y, epochs=EPOCHS, batch=BATCH, lr=LR, split=SPLIT, es_epochs=ES_EPOCHS,
             es_min_delta=ES_MIN_DELTA,
             **{f"w{i}": w for i, w in enumerate(model.get_weights())})
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run([sys.executable, os.path.join(here, "tf_fit.py"), str(tmp / "in.npz"), str(tmp / "out.npz"),
                    str(tmp / "keras_logs")], check=True)
    tf_out = dict(np.load(tmp / "out.npz"))
    scenario = podsim.from_keras(model, global_batch=BATCH, optimizer=keras.optimizers.SGD(LR),
                                 loss=keras.losses.BinaryCrossentropy(), dataset={"csv": str(data), "label": "label"},
                                 directory=tmp, **TWO_GPUS)
    scenario["training"] = {"epochs": EPOCHS, "validation_split": SPLIT, "metrics": ["accuracy", "auc"]}
    return scenario, tf_out, tmp


def history(out):
    return podsim.read_csv(os.path.join(out, "history.csv"))


def test_fit_history_matches_keras(both):
    scenario, tf_out, tmp = both
    r = podsim.run(scenario, out=tmp / "fit")
    rows = history(r["out"])
    assert [row["epoch"] for row in rows] == list(range(EPOCHS))
    for col in COLUMNS:
        np.testing.assert_allclose([row[col] for row in rows], tf_out[f"history_{col}"], rtol=1e-5, err_msg=col)
    # the test can fail: the model learned (the loss fell by more than the tolerance)
    assert rows[-1]["loss"] < 0.95 * rows[0]["loss"]


def test_validation_freq_list(both):
    """validation_freq=[2]: val_ cells only on the second epoch (Keras's _should_eval with a
    list), whose values are the every-epoch run's (evaluation changes no weight)."""
    scenario, tf_out, tmp = both
    scenario = dict(scenario, training=dict(scenario["training"], validation_freq=[2]))
    rows = history(podsim.run(scenario, out=tmp / "freq")["out"])
    assert [row["val_loss"] == "" for row in rows] == [True, False, True]
    np.testing.assert_allclose(rows[1]["val_loss"], tf_out["history_val_loss"][1], rtol=1e-5)


def test_evaluate_matches_keras(both):
    """mode: evaluate from the initial weights over the 320 rows (10 batches of 32, 16 a replica):
    summary.json's evaluate {loss, accuracy, auc} is Keras's model.evaluate under the strategy."""
    scenario, tf_out, tmp = both
    scenario = dict(scenario, mode="evaluate", training={"metrics": ["accuracy", "auc"]})
    r = podsim.run(scenario, out=tmp / "evaluate")
    got = r["summary"]["evaluate"]
    assert got["examples"] == ROWS and r["summary"]["steps_completed"] == 0
    np.testing.assert_allclose([got["loss"], got["accuracy"], got["auc"]], tf_out["evaluated"], rtol=1e-5)
    # evaluation takes simulated time: 10 forward passes and an all-reduce on each replica
    assert r["summary"]["sim_time_s"] > 0


def test_predict_matches_keras(both):
    """mode: predict: predictions.csv holds a row per example in the dataset's order, each replica
    having predicted its half of every batch: Keras's model.predict within float32 rounding."""
    scenario, tf_out, tmp = both
    scenario = dict(scenario, mode="predict", training={})
    r = podsim.run(scenario, out=tmp / "predict")
    rows = podsim.read_csv(os.path.join(r["out"], "predictions.csv"))
    assert [row["row"] for row in rows] == list(range(ROWS))
    np.testing.assert_allclose([[row["output_0"]] for row in rows], tf_out["predicted"], rtol=1e-5, atol=1e-7)


def scalars(logdir):
    """{tag: [(step, value)]} of an event directory: podsim writes simple_value scalars, TF2's
    tf.summary.scalar (Keras's writer) tensors with the scalars plugin; EventAccumulator keeps
    them apart."""
    from tensorboard.backend.event_processing import event_accumulator
    acc = event_accumulator.EventAccumulator(str(logdir), size_guidance={event_accumulator.SCALARS: 0,
                                                                         event_accumulator.TENSORS: 0})
    acc.Reload()
    out = {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    for tag in acc.Tags()["tensors"]:
        out[tag] = [(e.step, float(tf.make_ndarray(e.tensor_proto))) for e in acc.Tensors(tag)]
    return out


def test_early_stopping_on_val_loss_matches_keras(both):
    """EarlyStopping(monitor="val_loss", min_delta, patience=1, restore_best_weights=True) reads
    the epoch's logs after the evaluation, as Keras's fit calls on_epoch_end with val_ values
    (keras/src/callbacks/early_stopping_test.py's test_early_stopping monitors val_loss): podsim
    stops after the epoch Keras stops after, its History has as many epochs, and the weights fit
    ends with are the best epoch's, Keras's within float32 reordering. The TensorBoard callback's
    logs/validation holds Keras's tags (epoch_loss, epoch_accuracy, epoch_auc at each epoch's end,
    evaluation_<name>_vs_iterations at each evaluation's, step optimizer.iterations)."""
    scenario, tf_out, tmp = both
    stopped = int(tf_out["es_stopped_epoch"])
    assert 0 < stopped < ES_EPOCHS - 1  # the case can fail: Keras stopped early
    training = dict(scenario["training"], epochs=ES_EPOCHS,
                    callbacks=[{"early_stopping": {"monitor": "val_loss", "min_delta": ES_MIN_DELTA, "patience": 1,
                                                   "restore_best_weights": True}}, "tensorboard"])
    r = podsim.run(dict(scenario, training=training), out=tmp / "es")
    summary = r["summary"]
    assert summary["stopped_by"] == "early_stopping"
    assert summary["stopped_epoch"] == stopped
    assert summary["best_epoch"] == int(tf_out["es_best_epoch"])
    rows = history(r["out"])
    assert len(rows) == len(tf_out["es_history_val_loss"]) == stopped + 1
    np.testing.assert_allclose([row["val_loss"] for row in rows], tf_out["es_history_val_loss"], rtol=1e-5)
    weights = podsim.read_csv(os.path.join(r["out"], "final_weights.csv"))
    got = np.array([row["value"] for row in weights], dtype=np.float32)
    want = np.concatenate([tf_out[f"es_w{i}"].ravel() for i in range(4)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    ours, theirs = scalars(os.path.join(r["out"], "logs", "validation")), scalars(tmp / "keras_logs" / "validation")
    assert sorted(ours) == sorted(theirs) and "epoch_loss" in theirs
    for tag in theirs:
        assert [step for step, _ in ours[tag]] == [step for step, _ in theirs[tag]], tag
        np.testing.assert_allclose([v for _, v in ours[tag]], [v for _, v in theirs[tag]], rtol=1e-5, err_msg=tag)
