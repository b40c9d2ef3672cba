"""tf.keras under tf.distribute.MirroredStrategy over two logical CPU devices, for
test_tf_differential.py, in a process of its own: logical devices must be set before TensorFlow
starts its runtime, which the test's process has done. Reads an .npz (x, y, the initial weights
w0, w1, ... in model.weights' order, steps, batch, lr), trains the Dense MLP test_tf_differential
builds (with a Dropout(rate, seed) between its layers when the .npz has dropout = [rate, seed]),
writes the per-step losses and final weights to argv[2] (.npz)."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
                                           [tf.config.LogicalDeviceConfiguration()] * 2)
keras = tf.keras
d = np.load(sys.argv[1])
steps, batch, lr = int(d["steps"]), int(d["batch"]), float(d["lr"])
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
assert strategy.num_replicas_in_sync == 2
with strategy.scope():
    # the Dropout's SeedGenerator state is created under the strategy: every replica reads the one
    # state, so each draws the same seed [seed, step] (and mask) over its own half of the batch
    middle = ([keras.layers.Dropout(float(d["dropout"][0]), seed=int(d["dropout"][1]), name="drop")]
              if "dropout" in d else [])
    model = keras.Sequential([keras.Input((4,), name="in"), keras.layers.Dense(8, activation="relu", name="d1")]
                             + middle + [keras.layers.Dense(3, name="d2")], name="mlp")
    model.set_weights([d[f"w{i}"] for i in range(len(model.weights))])
    opt = keras.optimizers.SGD(lr)
per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
# Each global batch in order, split between the replicas (the first half to replica 0).
rows = tf.data.Dataset.from_tensor_slices((d["x"], d["y"])).batch(batch)
batches = iter(strategy.experimental_distribute_dataset(rows))


@tf.function
def step(xb, yb):
    def replica_step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(per_example(yb, model(xb, training=True)), global_batch_size=batch)
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss
    return strategy.reduce("SUM", strategy.run(replica_step, args=(xb, yb)), axis=None)


losses = [float(step(*next(batches))) for _ in range(steps)]
np.savez(sys.argv[2], losses=np.array(losses), **{v.path.removeprefix("mlp/"): v.numpy().reshape(-1)
                                                  for v in model.weights})
