"""training.callbacks' TensorBoard callback: keras_fit_tpu.yaml's logs/train event file read back
by TensorBoard's own reader (EventAccumulator), with the tags Keras 3's TensorBoard callback
writes (keras/src/callbacks/tensorboard.py): epoch_loss, epoch_accuracy and epoch_learning_rate at
each epoch's end (step = the epoch), and with update_freq N the batch_* scalars every N
executions (step = _global_train_batch, counted per steps_per_execution launch).

The values are checked against metrics.csv: an epoch's accuracy is the last row of the epoch (the
running metric Keras resets at each epoch's start), its learning rate the optimizer's after the
epoch's last update, its loss the mean of the epoch's step losses (every step has the same 256
examples).
"""
import csv
import os

import pytest

import podsim
from conftest import ROOT

EXAMPLE = os.path.join(ROOT, "scenarios", "examples", "keras_fit_tpu.yaml")
STEPS_PER_EPOCH = 28  # 7168 rows of 8192 after validation_split 0.125, batch 256
EPOCHS = 4
STEPS_PER_EXECUTION = 8


def load(out):
    from tensorboard.backend.event_processing import event_accumulator
    acc = event_accumulator.EventAccumulator(str(out / "logs" / "train"),
                                             size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return acc


def kept_rows(out):
    """metrics.csv's rows of the steps that count: a restart's redone steps replace the rows
    the preemption rolled back."""
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    by_step = {}
    for row in rows:
        by_step[int(row["step"])] = row
    return [by_step[s] for s in sorted(by_step)]


@pytest.fixture(scope="module")
def fit(tmp_path_factory):
    out = tmp_path_factory.mktemp("kcb") / "fit"
    podsim.run(EXAMPLE, overrides=["training.callbacks=[{backup_and_restore: {save_freq: epoch}}, "
                                   "{tensorboard: {update_freq: 2}}]"], out=out)
    return out


def test_epoch_tags_are_keras_tensorboard_callbacks(fit):
    acc = load(fit)
    tags = set(acc.Tags()["scalars"])
    assert {"epoch_loss", "epoch_accuracy", "epoch_learning_rate"} <= tags
    rows = kept_rows(fit)
    assert len(rows) == EPOCHS * STEPS_PER_EPOCH
    for tag in ("epoch_loss", "epoch_accuracy", "epoch_learning_rate"):
        assert [e.step for e in acc.Scalars(tag)] == list(range(EPOCHS))
    for epoch in range(EPOCHS):
        epoch_rows = rows[epoch * STEPS_PER_EPOCH:(epoch + 1) * STEPS_PER_EPOCH]
        last = epoch_rows[-1]
        assert acc.Scalars("epoch_accuracy")[epoch].value == pytest.approx(float(last["accuracy"]), rel=1e-6)
        mean = sum(float(r["loss"]) for r in epoch_rows) / STEPS_PER_EPOCH
        assert acc.Scalars("epoch_loss")[epoch].value == pytest.approx(mean, rel=1e-5)
        # the rate after the epoch's last update is the next step's (the schedule is monotonic
        # after warmup, so a rate read one step off would differ)
        if epoch + 1 < EPOCHS:
            nxt = rows[(epoch + 1) * STEPS_PER_EPOCH]
            assert acc.Scalars("epoch_learning_rate")[epoch].value == pytest.approx(float(nxt["learning_rate"]), rel=1e-6)


def test_batch_tags_every_update_freq_executions(fit):
    acc = load(fit)
    batch_loss = acc.Scalars("batch_loss")
    # 4 executions an epoch (8, 8, 8 and 4 of its 28 steps); the attempts count _global_train_batch
    # from 1 each (a restarted job is a new process): the first ran 10 executions (epochs 0, 1 and
    # the executions of steps 56 and 64 of epoch 2) before the preemption at step 75, writing at 2,
    # 4, 6, 8, 10; the second ran 8 (epochs 2 and 3), writing at 2, 4, 6, 8.
    assert [e.step for e in batch_loss] == [2, 4, 6, 8, 10, 2, 4, 6, 8]
    assert "batch_accuracy" in acc.Tags()["scalars"]
    assert "batch_learning_rate" not in acc.Tags()["scalars"]


SPE_ORACLE = os.path.join(ROOT, "tests", "data", "callbacks", "spe_oracle.yaml")


def keras_saves(backup_freq, checkpoint_freq, tmp_path):
    """The (epoch, batch) of each BackupAndRestore and ModelCheckpoint save of Keras 3's fit of
    spe_oracle.yaml's shape: 20 examples, batch 2, steps_per_execution 2, 2 epochs."""
    import numpy as np
    import keras

    backups, checkpoints = [], []

    class Backup(keras.callbacks.BackupAndRestore):
        def _save_model(self):
            backups.append((self._current_epoch, self._last_batch_seen))
            super()._save_model()

    class Checkpoint(keras.callbacks.ModelCheckpoint):
        def _save_model(self, epoch, batch, logs):
            checkpoints.append((epoch, batch))
            super()._save_model(epoch, batch, logs)

    x = np.random.default_rng(0).random((20, 3)).astype("float32")
    y = np.arange(20) % 2
    model = keras.Sequential([keras.layers.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  steps_per_execution=2)
    model.fit(x, y, batch_size=2, epochs=2, verbose=0, shuffle=False,
              callbacks=[Backup(str(tmp_path / "backup"), save_freq=backup_freq),
                         Checkpoint(str(tmp_path / "m.weights.h5"), save_weights_only=True,
                                    save_freq=checkpoint_freq)])
    return backups, checkpoints


def test_batch_level_saves_count_batches_as_keras(tmp_path):
    pytest.importorskip("tensorflow")
    backups, checkpoints = keras_saves(3, 4, tmp_path)
    # Keras 3.15.1: backups after batches 3 and 7 of epoch 0 (the first execution counts 1, not 2:
    # _last_batch_seen starts at 0), then 1, 5, 9 of epoch 1; checkpoints (_last_batch_seen None)
    # after 3, 7 of epoch 0 and 1, 5, 9 of epoch 1
    assert backups == [(0, 3), (0, 7), (1, 1), (1, 5), (1, 9)]
    out = tmp_path / "podsim"
    r = podsim.run(SPE_ORACLE, out=out)
    assert r["summary"]["checkpoints"] == len(backups)
    with open(out / "checkpoints.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(int(row["epoch"]), int(row["batch"])) for row in rows] == checkpoints
