"""Keras 3's Model.fit, evaluate and predict under tf.distribute.MirroredStrategy over two logical
CPU devices, for test_keras_fit.py, in a process of its own (logical devices must be set before
TensorFlow starts its runtime). Reads an .npz (x, y, the initial weights w0, w1, ... in
model.weights' order, epochs, batch, lr, split), builds the binary classifier test_keras_fit
builds, compiled with metrics ["accuracy", "auc"], and writes to argv[2] (.npz): fit's History
(validation_split, shuffle=False) as arrays by key, then from the initial weights again
evaluate()'s [loss, accuracy, auc] and predict()'s outputs over the whole x; and from the initial
weights a fit of es_epochs epochs with EarlyStopping(monitor="val_loss", min_delta=es_min_delta,
patience=1, restore_best_weights=True) and TensorBoard(log_dir=argv[3]): its History, the
callback's stopped_epoch and best_epoch, and the weights fit ends with."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
                                           [tf.config.LogicalDeviceConfiguration()] * 2)
keras = tf.keras
d = np.load(sys.argv[1])
epochs, batch, lr, split = int(d["epochs"]), int(d["batch"]), float(d["lr"]), float(d["split"])
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
assert strategy.num_replicas_in_sync == 2


def compiled():
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,), name="in"), keras.layers.Dense(8, activation="relu", name="d1"),
                                  keras.layers.Dense(1, activation="sigmoid", name="d2")], name="mlp")
        model.set_weights([d[f"w{i}"] for i in range(len(model.weights))])
        model.compile(optimizer=keras.optimizers.SGD(lr), loss="binary_crossentropy", metrics=["accuracy", "auc"])
    return model


history = compiled().fit(d["x"], d["y"], batch_size=batch, epochs=epochs, validation_split=split, shuffle=False,
                         verbose=0).history
fresh = compiled()
evaluated = fresh.evaluate(d["x"], d["y"], batch_size=batch, verbose=0)
predicted = fresh.predict(d["x"], batch_size=batch, verbose=0)
early = keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=float(d["es_min_delta"]), patience=1,
                                      restore_best_weights=True)
stopped = compiled()
es_history = stopped.fit(d["x"], d["y"], batch_size=batch, epochs=int(d["es_epochs"]), validation_split=split,
                         shuffle=False, verbose=0,
                         callbacks=[early, keras.callbacks.TensorBoard(log_dir=sys.argv[3])]).history
np.savez(sys.argv[2], evaluated=np.array(evaluated), predicted=predicted,
         es_stopped_epoch=early.stopped_epoch, es_best_epoch=early.best_epoch,
         **{f"es_w{i}": w for i, w in enumerate(stopped.get_weights())},
         **{f"es_history_{k}": np.array(v) for k, v in es_history.items()},
         **{f"history_{k}": np.array(v) for k, v in history.items()})
