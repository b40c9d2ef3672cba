"""Writes the Keras 3 fixtures tests/models/test_keras.c reads (keras315_*.json): model.to_json()
of the installed Keras (3.15.1 when written), one layer object per line so the tests can name
each layer's line. Run with the venv's python: python gen_keras315.py"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras


def write(model, path):
    config = json.loads(model.to_json())
    layers = config["config"]["layers"]
    config["config"]["layers"] = "@LAYERS@"
    head, tail = json.dumps(config).split('"@LAYERS@"')
    lines = [head + "["] + [json.dumps(l) + ("," if i + 1 < len(layers) else "") for i, l in enumerate(layers)]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "]" + tail + "\n")


keras.mixed_precision.set_global_policy("mixed_bfloat16")
write(keras.Sequential([keras.Input((4,), name="in"), keras.layers.Dense(8, activation="relu", name="d1"),
                        keras.layers.BatchNormalization(name="bn"), keras.layers.Dense(3, name="d2")], name="mlp"),
      "keras315_mlp_bf16.json")
keras.mixed_precision.set_global_policy("float32")
x = inp = keras.Input((6, 8), name="in")
x = keras.layers.MultiHeadAttention(2, 4, name="mha")(x, x)
x = keras.layers.LayerNormalization(name="ln")(x)
x = keras.layers.Flatten(name="flat")(x)
write(keras.Model(inp, keras.layers.Dense(3, name="out")(x), name="attn"), "keras315_attention.json")
