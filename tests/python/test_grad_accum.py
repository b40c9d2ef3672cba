"""Gradient accumulation against Keras 3 itself: an optimizer with gradient_accumulation_steps N
applied every micro-step of B rows (keras/src/optimizers/base_optimizer.py: the gradients of N
micro-steps summed in accumulators, their mean applied at every Nth, `iterations` (adam's t)
counting applies) against podsim's training.gradient_accumulation_steps N, whose step runs
N micro-batches of one global batch of N B rows and applies once (podsim.from_keras maps the one
onto the other). The same rows in the same order: every step's loss (podsim's, the mean of the
N B rows before the update, is the mean of Keras's N micro-step losses, all before it) and the
final weights agree within float32 tolerance; and they differ from training without
accumulation, so the test can fail.
"""
import numpy as np
import pytest

import podsim
from test_tf_differential import final_weights, model_and_rows, dense_mlp, dropout_mlp, keras, tf

MICRO, STEPS = 4, 2   # model_and_rows gives 3 batches of 32 rows; 2 steps of 4 x 8 = 64 of them
B = 8


def keras_accumulating(model, x, y, optimizer, loss):
    """Keras's loop over micro-batches of B rows, applying every one (the optimizer accumulates)."""
    losses = []
    for k in range(MICRO * STEPS):
        xb, yb = x[k * B:(k + 1) * B], y[k * B:(k + 1) * B]
        with tf.GradientTape() as tape:
            value = loss(yb, model(xb, training=True))
        optimizer.apply_gradients(zip(tape.gradient(value, model.trainable_variables), model.trainable_variables))
        losses.append(float(value))
    assert int(optimizer.iterations) == STEPS  # iterations counts applies: _iterations // N
    return np.array(losses).reshape(STEPS, MICRO).mean(axis=1)


def sgd_momentum():
    return keras.optimizers.SGD(0.1, momentum=0.9, gradient_accumulation_steps=MICRO)


# dropout: each of Keras's micro-steps is a training call, one SeedGenerator draw, so podsim's
# step N draws micro-batch k's mask at N * MICRO + k (docs/layers.md)
@pytest.mark.parametrize("make, layers", [(sgd_momentum, dense_mlp),
                                          (lambda: keras.optimizers.Adam(0.01, gradient_accumulation_steps=MICRO),
                                           dense_mlp),
                                          (sgd_momentum, dropout_mlp)],
                         ids=["sgd_momentum", "adam", "sgd_momentum_dropout"])
def test_accumulation_matches_keras(make, layers, tmp_path):
    model, x, y, data = model_and_rows(layers, tmp_path)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    scenario = podsim.from_keras(model, global_batch=B, steps=MICRO * STEPS, optimizer=make(), loss=loss,
                                 dataset={"csv": str(data)}, directory=tmp_path)
    assert scenario["dataset"]["global_batch"] == MICRO * B
    assert scenario["training"] == {"steps": STEPS, "gradient_accumulation_steps": MICRO}
    r = podsim.run(scenario, out=tmp_path / "run")
    init = final_weights(scenario["model"]["init"]["file"])
    tf_losses = keras_accumulating(model, x, y, make(), loss)
    np.testing.assert_allclose([m["loss"] for m in r["metrics"]], tf_losses, rtol=1e-5)
    got = final_weights(f"{r['out']}/final_weights.csv")
    want = {v.path.removeprefix("mlp/"): v.numpy().reshape(-1) for v in model.weights}
    assert sorted(got) == sorted(want) == ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel"]
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-7, err_msg=name)
    # Without accumulation the same micro-batches would be 8 updates, not 2: far from these weights.
    plain = dict(scenario, training={"steps": MICRO * STEPS}, dataset=dict(scenario["dataset"], global_batch=B))
    other = final_weights(f"{podsim.run(plain, out=tmp_path / 'plain')['out']}/final_weights.csv")
    assert np.max(np.abs(other["d1/kernel"] - got["d1/kernel"])) > 1e-3
    assert np.max(np.abs(got["d1/kernel"] - init["d1/kernel"])) > 1e-3
