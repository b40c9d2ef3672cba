"""Golden run of tf_keras's Model.fit under ParameterServerStrategy (tests/golden/README.md, ps_fit).

Keras 3 has no ParameterServerStrategy support in fit, so this is tf_keras 2.21.0 (Keras 2) on
TensorFlow 2.21.0: python3 -m venv V && V/bin/pip install tensorflow-cpu==2.21.0 tf_keras==2.21.0,
then `V/bin/python tests/golden/ps_fit/gen.py tests/golden/ps_fit`. An in-process cluster (one
worker, one ps: tf.distribute.Server and SimpleClusterResolver, as the TF tutorial's
create_in_process_cluster), mlp_momentum's model, data and initial values, compile(SGD(0.05,
momentum 0.9), metrics accuracy and sparse_categorical_crossentropy, steps_per_execution=4,
pss_evaluation_shards=1), fit(data.repeat().batch(32), epochs=4, steps_per_epoch=12,
validation_data=data.batch(20)): History's logs into expected_history.csv.
"""
import csv, os, socket, sys
os.environ["GRPC_FAIL_FAST"] = "use_caller"
import numpy as np
import tensorflow as tf
import tf_keras as keras

G = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mlp_momentum") + "/"
rows = list(csv.reader(open(G + "data.csv")))[1:]
x = np.array([[float(v) for v in r[:8]] for r in rows], np.float32)
y = np.array([int(r[8]) for r in rows], np.int64)
init = {}
for r in list(csv.reader(open(G + "init.csv")))[1:]:
    init.setdefault(r[0], []).append((int(r[1]), float(r[2])))

def port():
    s = socket.socket(); s.bind(("localhost", 0)); p = s.getsockname()[1]; s.close(); return p
spec = tf.train.ClusterSpec({"worker": ["localhost:%d" % port()], "ps": ["localhost:%d" % port()]})
tf.distribute.Server(spec, job_name="worker", task_index=0, protocol="grpc")
tf.distribute.Server(spec, job_name="ps", task_index=0, protocol="grpc")
resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(spec, rpc_layer="grpc")
strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
with strategy.scope():
    model = keras.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)), keras.layers.Dense(3)])
    for layer, name in zip(model.layers, ["dense", "dense_1"]):
        k = np.zeros(layer.kernel.shape, np.float32).reshape(-1)
        for i, v in init[name + "/kernel"]: k[i] = v
        b = np.zeros(layer.bias.shape, np.float32)
        for i, v in init[name + "/bias"]: b[i] = v
        layer.set_weights([k.reshape(layer.kernel.shape), b])
    model.compile(keras.optimizers.SGD(0.05, momentum=0.9),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy", "sparse_categorical_crossentropy"], steps_per_execution=4,
                  pss_evaluation_shards=1)
train = tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(32)
val = tf.data.Dataset.from_tensor_slices((x, y)).batch(20)
h = model.fit(train, epochs=4, steps_per_epoch=12, validation_data=val, verbose=0)
keys = ["loss", "accuracy", "sparse_categorical_crossentropy", "val_loss", "val_accuracy",
        "val_sparse_categorical_crossentropy"]
with open(os.path.join(sys.argv[1], "expected_history.csv"), "w") as f:
    f.write("epoch," + ",".join(keys) + "\n")
    for e in range(4):
        f.write("%d," % e + ",".join("%.9g" % h.history[k][e] for k in keys) + "\n")
