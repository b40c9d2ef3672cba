"""TensorFlow as the oracle: the same model, initial weights and batches trained by tf.keras and
by podsim (numerics on) give the same final weights.

A Dense MLP (4 -> 8 relu -> 3 logits), sparse categorical cross-entropy from logits, SGD at
0.1, 3 steps of 32 rows of a CSV read in order (no shuffle): tf.keras's GradientTape loop over
the same rows, its loss the batch mean (Keras's default reduction, podsim's global_batch on one
replica). podsim starts from the Keras model's own weights (from_keras writes them as
model.init.file) and writes final_weights.csv; every value agrees within 1e-5 relative (plus
1e-7 absolute, for values that pass near zero).
"""
import numpy as np
import pytest

import podsim

try:
    import tensorflow as tf
except ImportError as e:  # the suite fails without TensorFlow: it does not skip
    raise ImportError("the differential tests need the venv's tensorflow-cpu==2.21.0") from e
keras = tf.keras

STEPS, BATCH, LR = 3, 32, 0.1


def final_weights(path):
    """final_weights.csv as name -> flat float32 array."""
    values = {}
    for row in podsim.read_csv(path):
        values.setdefault(row["variable"], {})[row["flat_index"]] = row["value"]
    return {name: np.array([v[i] for i in range(len(v))], dtype=np.float32) for name, v in values.items()}


def test_dense_mlp_sgd_matches_tf(tmp_path):
    keras.utils.set_random_seed(11)
    model = keras.Sequential([keras.Input((4,), name="in"), keras.layers.Dense(8, activation="relu", name="d1"),
                              keras.layers.Dense(3, name="d2")], name="mlp")
    rng = np.random.default_rng(5)
    x = rng.normal(size=(STEPS * BATCH, 4)).astype(np.float32)
    y = rng.integers(0, 3, size=STEPS * BATCH)
    data = tmp_path / "data.csv"
    with open(data, "w") as f:
        f.write("f0,f1,f2,f3,label\n")
        for row, label in zip(x, y):
            f.write(",".join(f"{float(v):.9g}" for v in row) + f",{label}\n")
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    scenario = podsim.from_keras(model, global_batch=BATCH, steps=STEPS, optimizer=keras.optimizers.SGD(LR),
                                 loss=loss, dataset={"csv": str(data)}, directory=tmp_path)
    r = podsim.run(scenario, out=tmp_path / "run")

    opt = keras.optimizers.SGD(LR)
    tf_losses = []
    for step in range(STEPS):
        xb, yb = x[step * BATCH:(step + 1) * BATCH], y[step * BATCH:(step + 1) * BATCH]
        with tf.GradientTape() as tape:
            value = loss(yb, model(xb, training=True))
        opt.apply_gradients(zip(tape.gradient(value, model.trainable_variables), model.trainable_variables))
        tf_losses.append(float(value))

    # metrics.csv's loss is each step's batch mean before its update, as TF's loop records it
    np.testing.assert_allclose([m["loss"] for m in r["metrics"]], tf_losses, rtol=1e-5)
    got = final_weights(f"{r['out']}/final_weights.csv")
    want = {v.path.removeprefix("mlp/"): v.numpy().reshape(-1) for v in model.weights}
    assert sorted(got) == sorted(want) == ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel"]
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-7, err_msg=name)
    # the test can fail: the weights moved (3 steps at 0.1 move the first kernel by more than 1e-3)
    init = final_weights(scenario["model"]["init"]["file"])
    assert np.max(np.abs(got["d1/kernel"] - init["d1/kernel"])) > 1e-3
