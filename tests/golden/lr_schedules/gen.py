"""Golden runs of Keras 3's learning-rate schedules (tests/golden/README.md, lr_schedules).

Made with TensorFlow 2.21.0 (Keras 3, CPU): python3 -m venv V && V/bin/pip install
tensorflow-cpu==2.21.0, then `V/bin/python tests/golden/lr_schedules/gen.py tests/golden/lr_schedules`.
The model, data and initial values are mlp_optimizers/adamw's (Dense(6, tanh) -> Dense(3) logits,
64 rows, global batch 16 in file order, 20 steps); the optimizer is keras.optimizers.SGD with
momentum 0.9 and each schedule; the loop is a GradientTape step with the loss before the update.
"""
import csv, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import keras
import tensorflow as tf

S = keras.optimizers.schedules
# name -> (schedule, the scenario's learning_rate mapping)
CASES = {
    "exponential": (S.ExponentialDecay(0.2, 4, 0.7, staircase=True),
                    "{kind: exponential_decay, initial_learning_rate: 0.2, decay_steps: 4, decay_rate: 0.7, staircase: true}"),
    "inverse_time": (S.InverseTimeDecay(0.2, 3, 0.5),
                     "{kind: inverse_time_decay, initial_learning_rate: 0.2, decay_steps: 3, decay_rate: 0.5}"),
    "polynomial": (S.PolynomialDecay(0.2, 6, end_learning_rate=0.02, power=2.0, cycle=True),
                   "{kind: polynomial_decay, initial_learning_rate: 0.2, decay_steps: 6, end_learning_rate: 0.02, power: 2.0, cycle: true}"),
    "piecewise": (S.PiecewiseConstantDecay([4, 11], [0.2, 0.05, 0.01]),
                  "{kind: piecewise_constant_decay, boundaries: [4, 11], values: [0.2, 0.05, 0.01]}"),
    "cosine_warmup": (S.CosineDecay(0.0, 12, alpha=0.1, warmup_target=0.3, warmup_steps=5),
                      "{kind: cosine_decay, initial_learning_rate: 0.0, decay_steps: 12, alpha: 0.1, warmup_target: 0.3, warmup_steps: 5}"),
}
STEPS, BATCH = 20, 16

def main(root):
    src = os.path.join(root, "..", "mlp_optimizers", "adamw")
    rows = list(csv.DictReader(open(os.path.join(src, "data.csv"))))
    x = np.array([[float(r["f%d" % i]) for i in range(8)] for r in rows], np.float32)
    y = np.array([int(r["label"]) for r in rows], np.int64)
    init = {}
    for r in csv.DictReader(open(os.path.join(src, "init.csv"))):
        init.setdefault(r["variable"], []).append((int(r["flat_index"]), np.float32(r["value"])))
    for name, (schedule, yaml_lr) in CASES.items():
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(6, activation="tanh", name="dense"),
                                  keras.layers.Dense(3, name="dense_1")])
        for v in model.trainable_variables:
            key = v.path if v.path in init else "/".join(v.path.split("/")[-2:])
            flat = np.zeros(int(np.prod(v.shape)), np.float32)
            for i, val in init[key]:
                flat[i] = val
            v.assign(flat.reshape(v.shape))
        opt = keras.optimizers.SGD(learning_rate=schedule, momentum=0.9)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        out = os.path.join(root, name, "r1")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "expected_loss.csv"), "w") as f:
            f.write("step,loss\n")
            for s in range(STEPS):
                lo = (s * BATCH) % len(rows)
                xb, yb = x[lo:lo + BATCH], y[lo:lo + BATCH]
                with tf.GradientTape() as tape:
                    loss = loss_fn(yb, model(xb))
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
                f.write("%d,%.9g\n" % (s, float(loss)))
        with open(os.path.join(out, "expected_final.csv"), "w") as f:
            f.write("variable,flat_index,value\n")
            for v in model.trainable_variables:
                key = "/".join(v.path.split("/")[-2:])
                for i, val in enumerate(np.asarray(v).reshape(-1)):
                    f.write("%s,%d,%.9g\n" % (key, i, val))
        with open(os.path.join(out, "scenario.yaml"), "w") as f:
            f.write(SCENARIO % {"name": name, "lr": yaml_lr})

SCENARIO = """# Golden case lr_schedules/%(name)s/r1 (TensorFlow 2.21 / Keras 3 reference, ../../gen.py, tests/golden/README.md).
name: golden-lr-schedules-%(name)s-r1
seed: 1
cluster:
  workers: {count: 1, machine: n2-standard-8}
  fabric: {topology: star, link_bandwidth: 100GB/s, latency: 5us}
strategy: {kind: one_device}
model:
  input: {features: 8}
  layers:
    - dense: {units: 6, activation: tanh}
    - dense: {units: 3}
  loss: {kind: sparse_categorical_crossentropy, from_logits: true}
  init: {file: ../../../mlp_optimizers/adamw/init.csv}
optimizer:
  kind: sgd
  momentum: 0.9
  learning_rate: %(lr)s
dataset:
  csv: ../../../mlp_optimizers/adamw/data.csv
  label: label
  global_batch: 16
training:
  steps: 20
  loss_reduction: global_batch
outputs: {dir: out/golden-lr-schedules-%(name)s-r1, plots: [loss]}
"""

if __name__ == "__main__":
    main(sys.argv[1])
