"""TensorFlow as the oracle: the same model, initial weights and batches trained by tf.keras and
by podsim (numerics on) give the same losses and final weights.

Small models of 4 to 32 inputs (or ids) and 3 logits over all 25 of docs/layers.md's layer kinds:
Dense, Embedding, Conv2D, DepthwiseConv2D, MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D,
Flatten, Reshape, Dropout, LayerNormalization, RMSNormalization, BatchNormalization, UnitNormalization,
Activation (relu, gelu, tanh, sigmoid, silu), Softmax, Add, Multiply, Concatenate and
MultiHeadAttention, and in tests of their own the kinds Keras lacks, each written as its formula:
KerasHub's TokenAndPositionEmbedding (its two tables), TF Recommenders' DotInteraction (in a
DLRM) and TF-GNN's GraphSAGE with its graph input and first-node readout (on the graphsage
golden's subgraphs); sparse categorical cross-entropy from logits (or from a Softmax's
probabilities), SGD (plain, Nesterov momentum), Adam and Adagrad, 3 steps of 32 rows of a CSV
read in order (no shuffle): tf.keras's GradientTape loop over the same rows, its loss the batch
mean (Keras's default reduction, podsim's global_batch on one replica). podsim starts from the
Keras model's own weights (from_keras writes them as model.init.file) and writes
final_weights.csv; every value agrees within 1e-5 relative (plus 1e-7 absolute, for values that
pass near zero). Dropout compares bit for bit because podsim draws Keras 3's own masks from the
layer's seed (docs/layers.md, "Dropout's masks, as Keras draws them"), on one replica and two.
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

STEPS, BATCH, LR = 3, 32, 0.1


def final_weights(path):
    """final_weights.csv as name -> flat float32 array, under Keras 3's names (podsim keeps Keras 2's
    and TF.js's DepthwiseConv2D depthwise_kernel, which Keras 3 calls kernel; it reads either)."""
    values = {}
    for row in podsim.read_csv(path):
        name = row["variable"].replace("/depthwise_kernel", "/kernel")
        values.setdefault(name, {})[row["flat_index"]] = row["value"]
    return {name: np.array([v[i] for i in range(len(v))], dtype=np.float32) for name, v in values.items()}


def tf_losses_of(step_loss, variables, opt, steps=STEPS):
    """Trains `variables` by `opt` for `steps` steps in a GradientTape loop, step_loss(step) giving
    the step's loss tensor; returns each step's loss before its update, as metrics.csv records it."""
    losses = []
    for step in range(steps):
        with tf.GradientTape() as tape:
            value = step_loss(step)
        opt.apply_gradients(zip(tape.gradient(value, variables), variables))
        losses.append(float(value))
    return losses


def write_weights(path, variables):
    """podsim's weights CSV (variable,flat_index,value, 9 digits) of {podsim name: Keras variable}."""
    with open(path, "w") as f:
        f.write("variable,flat_index,value\n")
        for name, var in variables.items():
            for i, v in enumerate(var.numpy().reshape(-1)):
                f.write(f"{name},{i},{float(v):.9g}\n")


def batch_of(array, step, size=BATCH):
    return array[step * size:(step + 1) * size]


def dense_mlp():
    return [keras.layers.Dense(8, activation="relu", name="d1"), keras.layers.Dense(3, name="d2")]


def batchnorm_mlp():
    """No bias before the normalization: its gradient is zero but for rounding, which Adam's
    m / (sqrt(v) + eps) would turn into steps of the learning rate's size, different in each
    implementation (TF and podsim then differ by 6e-5 in that bias, every other variable agreeing)."""
    return [keras.layers.Dense(8, use_bias=False, name="d1"), keras.layers.BatchNormalization(name="bn"),
            keras.layers.Activation("relu", name="act"), keras.layers.Dense(3, name="d2")]


def layernorm_mlp():
    return [keras.layers.Dense(8, activation="gelu", name="d1"), keras.layers.LayerNormalization(name="ln"),
            keras.layers.Dense(3, name="d2")]


def rmsnorm_mlp():
    """Llama's normalisation (keras.layers.RMSNormalization) between two Dense layers."""
    return [keras.layers.Dense(8, activation="gelu", name="d1"), keras.layers.RMSNormalization(name="rms"),
            keras.layers.Dense(3, name="d2")]


def swiglu_block():
    """Llama's feed-forward block as Keras layers: RMSNormalization, then down(silu(gate(x)) * up(x))
    (no biases, KerasHub's LlamaDecoder), added to its input, and a Dense head. Trained with SGD: under
    Adam (m / (sqrt(v) + eps) turns a gradient's last-bit differences into steps of the rate's size)
    2 of down's 48 weights, both near 0.0045, differ by 1.9e-7 after 3 steps, the losses agreeing."""
    def build(x):
        h = keras.layers.Dense(6, name="d1")(x)
        n = keras.layers.RMSNormalization(name="rms")(h)
        gate = keras.layers.Dense(8, activation="silu", use_bias=False, name="gate")(n)
        up = keras.layers.Dense(8, use_bias=False, name="up")(n)
        down = keras.layers.Dense(6, use_bias=False, name="down")(keras.layers.Multiply(name="mul")([gate, up]))
        return keras.layers.Dense(3, name="d2")(keras.layers.Add(name="add")([h, down]))
    return build


def image_input(shape):
    """A model over rows of prod(shape) features, reshaped to `shape` by its first layer (Reshape),
    so the CSV dataset carries images and sequences as it carries features."""
    def mark(build):
        build.features = int(np.prod(shape))
        build.shape = shape
        return build
    return mark


@image_input((4, 4, 1))
def conv_maxpool():
    """Conv2D (same padding, relu), MaxPooling2D and Flatten before the Dense head."""
    return [keras.layers.Reshape((4, 4, 1), name="img"), keras.layers.Conv2D(4, 3, padding="same", activation="relu",
                                                                             name="conv"),
            keras.layers.MaxPooling2D(2, name="pool"), keras.layers.Flatten(name="flat"), keras.layers.Dense(3, name="d2")]


@image_input((4, 4, 2))
def depthwise_avgpool():
    """DepthwiseConv2D (valid padding), AveragePooling2D, GlobalAveragePooling2D."""
    return [keras.layers.Reshape((4, 4, 2), name="img"), keras.layers.DepthwiseConv2D(3, name="dw"),
            keras.layers.AveragePooling2D(1, name="avg"), keras.layers.GlobalAveragePooling2D(name="gap"),
            keras.layers.Dense(3, name="d2")]


def concat_unitnorm():
    """Two Dense branches joined by Concatenate, UnitNormalization, the Dense head."""
    def build(x):
        a = keras.layers.Dense(4, activation="tanh", name="d1")(x)
        b = keras.layers.Dense(4, activation="sigmoid", name="d3")(x)
        joined = keras.layers.UnitNormalization(name="unit")(keras.layers.Concatenate(name="cat")([a, b]))
        return keras.layers.Dense(3, name="d2")(joined)
    return build


@image_input((4, 4))
def self_attention():
    """MultiHeadAttention over a sequence of 4 tokens of 4 features (2 heads of key_dim 3), a
    residual Add, Flatten and the head."""
    def build(x):
        seq = keras.layers.Reshape((4, 4), name="seq")(x)
        att = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha")(seq, seq)
        h = keras.layers.Flatten(name="flat")(keras.layers.Add(name="add")([seq, att]))
        return keras.layers.Dense(3, name="d2")(keras.layers.Dense(8, activation="relu", name="d1")(h))
    return build


def embedding_ids():
    """An Embedding of one id an example (a vocabulary of 10) under Flatten and a Dense MLP: the
    id column of the CSV is the input (podsim's one-row embedding). With SGD: Keras 3's Adagrad
    and Adam take the embedding's IndexedSlices gradient through keras.src.backend.tensorflow.
    sparse's union-of-indices ops, which with an id repeated in a batch square each occurrence
    apart (not the summed row) and for some shapes fail inside TF (GatherV2 "indices[0] = 3 is
    not in [0, 3)" for ids [0, 0] of a 3-row table), so they are no oracle for repeated ids."""
    def build(ids):
        rows = keras.layers.Flatten(name="flat")(keras.layers.Embedding(10, 4, name="emb")(ids))
        return keras.layers.Dense(3, name="d2")(keras.layers.Dense(8, activation="relu", name="d1")(rows))
    build.ids = 10
    return build


def dropout_mlp():
    """Dropout between two Dense layers, its seed left to Keras (drawn under set_random_seed):
    from_keras writes the layer's SeedGenerator seed into the config, and podsim draws Keras 3's
    masks from it (Philox stateless uniforms of seed [seed, step], u >= rate kept, scaled by
    1 / (1 - rate)), so the losses and weights agree as for the other kinds. Rate 0.3: the
    comparison is in float32 (TF's u >= float32(0.3)) and the scale 1 / 0.7 is rounded."""
    return [keras.layers.Dense(8, activation="relu", name="d1"), keras.layers.Dropout(0.3, name="drop"),
            keras.layers.Dense(3, name="d2")]


def softmax_probs():
    """A Softmax layer and cross-entropy on probabilities (from_logits False)."""
    return [keras.layers.Dense(8, activation="relu", name="d1"), keras.layers.Dense(3, name="d2"),
            keras.layers.Softmax(name="probs")]


# (layers, optimizer, the variables podsim and Keras both have)
CASES = {
    "dense_sgd": (dense_mlp, lambda: keras.optimizers.SGD(LR), ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel"]),
    "dense_sgd_nesterov": (dense_mlp, lambda: keras.optimizers.SGD(LR, momentum=0.9, nesterov=True),
                           ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel"]),
    "dense_adam": (dense_mlp, lambda: keras.optimizers.Adam(0.01), ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel"]),
    "batchnorm_adam": (batchnorm_mlp, lambda: keras.optimizers.Adam(0.01),
                       ["bn/beta", "bn/gamma", "bn/moving_mean", "bn/moving_variance", "d1/kernel", "d2/bias",
                        "d2/kernel"]),
    "layernorm_gelu_adagrad": (layernorm_mlp, lambda: keras.optimizers.Adagrad(0.1),
                               ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel", "ln/beta", "ln/gamma"]),
    "rmsnorm_adam": (rmsnorm_mlp, lambda: keras.optimizers.Adam(0.01),
                     ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel", "rms/scale"]),
    "swiglu_sgd": (swiglu_block, lambda: keras.optimizers.SGD(0.1),
                   ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel", "down/kernel", "gate/kernel", "rms/scale",
                    "up/kernel"]),
    "conv_maxpool_sgd": (conv_maxpool, lambda: keras.optimizers.SGD(LR),
                         ["conv/bias", "conv/kernel", "d2/bias", "d2/kernel"]),
    "depthwise_avgpool_adam": (depthwise_avgpool, lambda: keras.optimizers.Adam(0.01),
                               ["d2/bias", "d2/kernel", "dw/bias", "dw/kernel"]),
    "concat_unitnorm_sgd": (concat_unitnorm, lambda: keras.optimizers.SGD(LR),
                            ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel", "d3/bias", "d3/kernel"]),
    "attention_sgd": (self_attention, lambda: keras.optimizers.SGD(LR),
                      ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel", "mha/attention_output/bias",
                       "mha/attention_output/kernel", "mha/key/bias", "mha/key/kernel", "mha/query/bias",
                       "mha/query/kernel", "mha/value/bias", "mha/value/kernel"]),
    "embedding_sgd": (embedding_ids, lambda: keras.optimizers.SGD(LR),
                          ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel", "emb/embeddings"]),
    "dropout_sgd": (dropout_mlp, lambda: keras.optimizers.SGD(LR), ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel"]),
    "softmax_sgd": (softmax_probs, lambda: keras.optimizers.SGD(LR), ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel"]),
}


def model_and_rows(layers, tmp_path):
    """The Sequential model of `layers` (seeded) and STEPS batches of rows, also as podsim's CSV."""
    keras.utils.set_random_seed(11)
    built = layers()  # a list of layers (Sequential), or a function of the input (a functional model)
    vocab = getattr(built, "ids", 0)  # an id input: one integer column below vocab
    features = 1 if vocab else getattr(layers, "features", 4)
    if callable(built):
        inputs = keras.Input((features,), dtype="int32" if vocab else "float32", name="in")
        model = keras.Model(inputs, built(inputs), name="mlp")
    else:
        model = keras.Sequential([keras.Input((features,), name="in")] + built, name="mlp")
    rng = np.random.default_rng(5)
    x = (rng.integers(0, vocab, size=(STEPS * BATCH, 1)) if vocab
         else rng.normal(size=(STEPS * BATCH, features)).astype(np.float32))
    y = rng.integers(0, 3, size=STEPS * BATCH)
    data = tmp_path / "data.csv"
    with open(data, "w") as f:
        f.write(",".join(f"f{i}" for i in range(features)) + ",label\n")
        for row, label in zip(x, y):
            f.write(",".join(f"{v}" if vocab else f"{float(v):.9g}" for v in row) + f",{label}\n")
    return model, x, y, data


def train_both(layers, optimizer, tmp_path):
    """The model of `layers` trained by podsim and by tf.keras from the same weights and rows:
    (podsim's losses, TF's, podsim's final weights, Keras's, the initial weights), weights by name."""
    model, x, y, data = model_and_rows(layers, tmp_path)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=not isinstance(model.layers[-1], keras.layers.Softmax))
    scenario = podsim.from_keras(model, global_batch=BATCH, steps=STEPS, optimizer=optimizer(),
                                 loss=loss, dataset={"csv": str(data)}, directory=tmp_path)
    r = podsim.run(scenario, out=tmp_path / "run")

    tf_losses = tf_losses_of(lambda step: loss(batch_of(y, step), model(batch_of(x, step), training=True)),
                             model.trainable_variables, optimizer())
    # metrics.csv's loss is each step's batch mean before its update, as TF's loop records it
    return ([m["loss"] for m in r["metrics"]], tf_losses, final_weights(f"{r['out']}/final_weights.csv"),
            {v.path.removeprefix("mlp/"): v.numpy().reshape(-1) for v in model.weights},
            final_weights(scenario["model"]["init"]["file"]))


@pytest.mark.parametrize("case", sorted(CASES))
def test_training_matches_tf(case, tmp_path):
    layers, optimizer, names = CASES[case]
    losses, tf_losses, got, want, init = train_both(layers, optimizer, tmp_path)
    np.testing.assert_allclose(losses, tf_losses, rtol=1e-5)
    assert sorted(got) == sorted(want) == names
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-7, err_msg=name)
    # the test can fail: the weights moved (3 steps move some variable by more than 1e-3)
    assert max(np.max(np.abs(got[name] - init[name])) for name in init) > 1e-3


def test_mixed_bfloat16_matches_tf(tmp_path):
    """The Dense MLP under keras.mixed_precision's mixed_bfloat16: from_keras's config carries each
    layer's DTypePolicy, so podsim rounds where Keras casts (docs/layers.md, "Precision"). Not bit
    for bit (TF's kernels round inside an op where podsim does not), so the bound is the one
    test_golden.c derives: unit roundoff u = 2^-9, L = 2 layer boundaries, every step's loss within
    4 L u = 1.6e-2 relative and the final weights within 4 L u of the largest weight. Measured:
    losses 5.7e-4 relative, weights 2.3e-4 absolute (largest weight ~0.7)."""
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        losses, tf_losses, got, want, init = train_both(dense_mlp, lambda: keras.optimizers.SGD(LR), tmp_path)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    bound = 4 * 2 * 2.0 ** -9
    np.testing.assert_allclose(losses, tf_losses, rtol=bound)
    largest = max(np.max(np.abs(w)) for w in want.values())
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=bound * largest, err_msg=name)
    # the bound is not trivially met: it is below the distance the weights moved
    assert np.max(np.abs(want["d1/kernel"] - init["d1/kernel"])) > bound * largest


@pytest.mark.parametrize("layers", [dense_mlp, dropout_mlp], ids=["dense", "dropout"])
def test_mirrored_two_replicas_matches_tf(layers, tmp_path):
    """Two replicas: tf.distribute.MirroredStrategy over two logical CPUs (tests/python/
    tf_mirrored.py, its own process) against podsim's mirrored strategy on two devices, the Dense
    MLP with SGD, and with a Dropout between its layers. Each global batch of 32 splits 16 + 16,
    each replica's loss is scaled by the global batch (tf.nn.compute_average_loss) and the
    gradients are summed: the same numbers as one device but for the order of the sums, so the
    float32 tolerance holds. Under the strategy both replicas draw the Dropout's seed [seed, step]
    from its one SeedGenerator state, so each applies the same mask to its own 16 rows: podsim's
    replicas draw at the same step, and a per-replica stream would fail here."""
    model, x, y, data = model_and_rows(layers, tmp_path)
    drop = [layer for layer in model.layers if isinstance(layer, keras.layers.Dropout)]
    extra = {"dropout": [drop[0].rate, int(drop[0].seed_generator.state.numpy()[0])]} if drop else {}
    np.savez(tmp_path / "in.npz", x=x, y=y, steps=STEPS, batch=BATCH, lr=LR, **extra,
             **{f"w{i}": w for i, w in enumerate(model.get_weights())})
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run([sys.executable, os.path.join(here, "tf_mirrored.py"), str(tmp_path / "in.npz"),
                    str(tmp_path / "out.npz")], check=True)
    tf_out = np.load(tmp_path / "out.npz")
    scenario = podsim.from_keras(model, global_batch=BATCH, steps=STEPS, optimizer=keras.optimizers.SGD(LR),
                                 loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                                 dataset={"csv": str(data)}, directory=tmp_path, **TWO_GPUS)
    r = podsim.run(scenario, out=tmp_path / "run")
    assert r["summary"]["num_replicas_in_sync"] == 2
    np.testing.assert_allclose([m["loss"] for m in r["metrics"]], tf_out["losses"], rtol=1e-5)
    got = final_weights(f"{r['out']}/final_weights.csv")
    assert sorted(got) == ["d1/bias", "d1/kernel", "d2/bias", "d2/kernel"]
    for name in got:
        np.testing.assert_allclose(got[name], tf_out[name], rtol=1e-5, atol=1e-7, err_msg=name)
    init = final_weights(scenario["model"]["init"]["file"])
    assert np.max(np.abs(got["d1/kernel"] - init["d1/kernel"])) > 1e-3


def test_token_and_position_embedding_matches_tf(tmp_path):
    """KerasHub's TokenAndPositionEmbedding (not in Keras itself, so written here as its two
    Embedding tables added: token row of each id + position row of each place), Flatten and a
    Dense head, on sequences of 5 ids below 11: podsim's `token_and_position_embedding` layer from
    a scenario of its own, the same weights (an init file in podsim's names) and rows, 3 SGD steps."""
    seq, vocab, dim = 5, 11, 4
    keras.utils.set_random_seed(11)
    ids = keras.Input((seq,), dtype="int32", name="in")
    token = keras.layers.Embedding(vocab, dim, name="token")
    position = keras.layers.Embedding(seq, dim, name="position")

    class Positions(keras.layers.Layer):
        """The position rows looked up when the model runs (a layer called on a constant while a
        functional model is built runs then, and its table would get no gradient); the table an
        attribute, so the model trains it."""
        def __init__(self, table, **kwargs):
            super().__init__(**kwargs)
            self.table = table

        def call(self, x):
            return self.table(keras.ops.zeros_like(x) + keras.ops.arange(seq)[None, :])

    rows = keras.layers.Add(name="add")([token(ids), Positions(position, name="positions")(ids)])
    head = keras.layers.Dense(3, name="dense")
    model = keras.Model(ids, head(keras.layers.Flatten(name="flat")(rows)), name="tpe")
    names = {"token_and_position_embedding/token_embedding/embeddings": token.embeddings,
             "token_and_position_embedding/position_embedding/embeddings": position.embeddings,
             "dense/kernel": head.kernel, "dense/bias": head.bias}
    init = tmp_path / "init.csv"
    write_weights(init, names)
    rng = np.random.default_rng(5)
    x = rng.integers(0, vocab, size=(STEPS * BATCH, seq))
    y = rng.integers(0, 3, size=STEPS * BATCH)
    data = tmp_path / "seq.csv"
    with open(data, "w") as f:
        f.write(",".join(f"t{i}" for i in range(seq)) + ",label\n")
        for row, label in zip(x, y):
            f.write(",".join(str(v) for v in row) + f",{label}\n")
    scenario = {"name": "tpe", "seed": 1, "numerics": "full",
                "cluster": {"workers": {"count": 1, "machine": "n2-standard-8"}},
                "model": {"input": {"ids": seq, "vocab": vocab},
                          "layers": [{"token_and_position_embedding": {"vocab": vocab, "dim": dim}}, {"flatten": {}},
                                     {"dense": {"units": 3}}],
                          "loss": {"kind": "sparse_categorical_crossentropy", "from_logits": True},
                          "init": {"file": str(init)}},
                "optimizer": {"kind": "sgd", "learning_rate": LR},
                "dataset": {"csv": str(data), "global_batch": BATCH},
                "training": {"steps": STEPS}}
    r = podsim.run(scenario, out=tmp_path / "run")
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    tf_losses = tf_losses_of(lambda step: loss(batch_of(y, step), model(batch_of(x, step), training=True)),
                             model.trainable_variables, keras.optimizers.SGD(LR))
    got, start = final_weights(f"{r['out']}/final_weights.csv"), final_weights(str(init))
    np.testing.assert_allclose([m["loss"] for m in r["metrics"]], tf_losses, rtol=1e-5)
    assert sorted(got) == sorted(names)
    for name, var in names.items():
        np.testing.assert_allclose(got[name], var.numpy().reshape(-1), rtol=1e-5, atol=1e-7, err_msg=name)
    assert max(np.max(np.abs(got[n] - start[n])) for n in names) > 1e-3


def test_dot_interaction_matches_tf(tmp_path):
    """A DLRM (TF Recommenders' DotInteraction is not in Keras, so it is written here as DLRM's
    formula: the bottom MLP's output, then the dot products of every pair (i, j), j < i, of the
    F = 4 vectors, row by row, TFRS's self_interaction=False order): a dense input of 4 floats,
    three id columns each with its table (sum of one row), binary cross-entropy from a logit,
    SGD with momentum, 3 steps of 32 rows, against podsim's `dot_interaction` on model.inputs."""
    vocabs, dim = [6, 5, 4], 8
    keras.utils.set_random_seed(11)
    numeric = keras.Input((4,), name="numeric")
    cats = [keras.Input((1,), dtype="int32", name=f"c{k}") for k in range(3)]
    bottom = [keras.layers.Dense(dim, activation="relu", name="dense"),
              keras.layers.Dense(dim, activation="relu", name="dense_1")]
    tables = [keras.layers.Embedding(v, dim, name="embedding" + (f"_{k}" if k else "")) for k, v in enumerate(vocabs)]
    top = [keras.layers.Dense(dim, activation="relu", name="dense_2"), keras.layers.Dense(1, name="dense_3")]

    class DotInteraction(keras.layers.Layer):
        def call(self, vectors):
            pairs = [keras.ops.sum(vectors[i] * vectors[j], axis=-1, keepdims=True)
                     for i in range(len(vectors)) for j in range(i)]
            return keras.ops.concatenate([vectors[0]] + pairs, axis=-1)

    x = bottom[1](bottom[0](numeric))
    rows = [keras.ops.squeeze(t(c), axis=1) for t, c in zip(tables, cats)]
    logit = top[1](top[0](DotInteraction(name="dot")([x] + rows)))
    model = keras.Model([numeric] + cats, logit, name="dlrm")

    init = tmp_path / "init.csv"
    variables = {f"{layer.name}/{w.name}": w for layer in bottom + tables + top for w in layer.weights}
    write_weights(init, variables)
    rng = np.random.default_rng(5)
    n = STEPS * BATCH
    dense_x = rng.normal(size=(n, 4)).astype(np.float32)
    ids = [rng.integers(0, v, size=(n, 1)) for v in vocabs]
    y = rng.integers(0, 2, size=(n, 1)).astype(np.float32)
    data = tmp_path / "data.csv"
    with open(data, "w") as f:
        f.write("f0,f1,f2,f3,c0,c1,c2,y0\n")
        for r in range(n):
            f.write(",".join(f"{float(v):.9g}" for v in dense_x[r]) + "," +
                    ",".join(str(int(c[r, 0])) for c in ids) + f",{int(y[r, 0])}\n")
    scenario = {"name": "dlrm-tf", "seed": 1, "numerics": "full",
                "cluster": {"workers": {"count": 1, "machine": "n2-standard-8"}},
                "model": {"inputs": [{"name": "numeric", "features": 4}] +
                                    [{"name": f"c{k}", "ids": 1, "vocab": v} for k, v in enumerate(vocabs)],
                          "layers": [{"dense": {"units": dim, "activation": "relu", "inputs": ["numeric"]}},
                                     {"dense": {"units": dim, "activation": "relu"}}] +
                                    [{"embedding": {"vocab": v, "dim": dim, "combiner": "sum", "inputs": [f"c{k}"]}}
                                     for k, v in enumerate(vocabs)] +
                                    [{"dot_interaction": {"inputs": ["dense_1", "embedding", "embedding_1",
                                                                     "embedding_2"]}},
                                     {"dense": {"units": dim, "activation": "relu"}}, {"dense": {"units": 1}}],
                          "loss": {"kind": "binary_crossentropy", "from_logits": True},
                          "init": {"file": str(init)}},
                "optimizer": {"kind": "sgd", "learning_rate": LR, "momentum": 0.9},
                "dataset": {"csv": str(data), "labels": ["y0"], "global_batch": BATCH},
                "training": {"steps": STEPS}}
    r = podsim.run(scenario, out=tmp_path / "run")
    loss = keras.losses.BinaryCrossentropy(from_logits=True)
    tf_losses = tf_losses_of(
        lambda step: loss(batch_of(y, step), model([batch_of(dense_x, step)] + [batch_of(c, step) for c in ids],
                                                   training=True)),
        model.trainable_variables, keras.optimizers.SGD(LR, momentum=0.9))
    np.testing.assert_allclose([m["loss"] for m in r["metrics"]], tf_losses, rtol=1e-5)
    got, start = final_weights(f"{r['out']}/final_weights.csv"), final_weights(str(init))
    assert sorted(got) == sorted(variables)
    for name, var in variables.items():
        np.testing.assert_allclose(got[name], var.numpy().reshape(-1), rtol=1e-5, atol=1e-7, err_msg=name)
    assert max(np.max(np.abs(got[k] - start[k])) for k in variables) > 1e-3


def test_graph_sage_matches_tf(tmp_path):
    """TF-GNN's GraphSAGE (tensorflow_gnn is not installed, so written here as its formula) on the
    graphsage golden's sampled subgraphs (tests/golden/graphsage: 5 nodes and 7 edges padded, 3
    features): graph_node_features, graph_sage (mean pooling, concat combine, relu),
    unit_normalization, graph_sage (sum pooling, sum combine, tanh), readout_first_node and a
    Dense head, 12 steps of SGD with momentum, podsim's scenario r1 from the golden's weights. A
    batch merged into one graph (GraphTensor.merge_batch_to_components) has no edge between its
    examples, so each example's subgraph is computed alone here: a [5, 5] matrix of edge counts
    from source to target, its product with the states pooling them (over the in-degree, at least
    1, for mean)."""
    golden = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden", "graphsage")
    nodes, edges, feats, steps, batch, lr = 5, 7, 3, 12, 16, 0.05
    init = final_weights(os.path.join(golden, "init.csv"))
    rows = np.array([[float(v) for v in row.values()] for row in podsim.read_csv(os.path.join(golden, "data.csv"))],
                    dtype=np.float32)
    x = rows[:, :nodes * feats].reshape(-1, nodes, feats)
    src, tgt = rows[:, nodes * feats:nodes * feats + edges].astype(int), rows[:, nodes * feats + edges:-1].astype(int)
    labels = rows[:, -1].astype(int)
    counts = np.zeros((len(rows), nodes, nodes), np.float32)  # counts[b, t, s]: edges s -> t
    for b in range(len(rows)):
        for s, t in zip(src[b], tgt[b]):
            if s >= 0:
                counts[b, t, s] += 1
    degree = np.maximum(counts.sum(axis=2, keepdims=True), 1)
    shapes = {"graph_sage/neighbor/kernel": (3, 4), "graph_sage/self/kernel": (3, 4), "graph_sage/bias": (8,),
              "graph_sage_1/neighbor/kernel": (8, 4), "graph_sage_1/self/kernel": (8, 4), "graph_sage_1/bias": (4,),
              "dense/kernel": (4, 3), "dense/bias": (3,)}
    w = {k: tf.Variable(init[k].reshape(s)) for k, s in shapes.items()}

    def logits(b):
        a, h = tf.constant(counts[b]), tf.constant(x[b])
        pooled = tf.matmul(a, h) / degree[b]
        h = tf.nn.relu(tf.concat([h @ w["graph_sage/self/kernel"], pooled @ w["graph_sage/neighbor/kernel"]], -1)
                       + w["graph_sage/bias"])
        h = tf.math.l2_normalize(h, axis=-1, epsilon=1e-12)
        h = tf.tanh(h @ w["graph_sage_1/self/kernel"] + tf.matmul(a, h) @ w["graph_sage_1/neighbor/kernel"]
                    + w["graph_sage_1/bias"])
        return h[:, 0, :] @ w["dense/kernel"] + w["dense/bias"]

    def step_loss(step):
        b = [(step * batch + i) % len(rows) for i in range(batch)]
        return tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(labels[b], logits(b))) / batch

    tf_losses = tf_losses_of(step_loss, list(w.values()), keras.optimizers.SGD(lr, momentum=0.9), steps)
    scenario = os.path.join(golden, "r1", "scenario.yaml")
    r = podsim.run(scenario, out=tmp_path / "run")
    np.testing.assert_allclose([m["loss"] for m in r["metrics"]], tf_losses, rtol=1e-5)
    got = final_weights(f"{r['out']}/final_weights.csv")
    assert sorted(got) == sorted(shapes)
    for name in shapes:
        np.testing.assert_allclose(got[name], w[name].numpy().reshape(-1), rtol=1e-5, atol=1e-7, err_msg=name)
    assert max(np.max(np.abs(got[k] - init[k])) for k in shapes) > 1e-3


# Keras 3 learning-rate schedules, each stepping within the 3 steps (decay_steps 2, boundaries at 1
# and 2, a warmup of 2), as podsim.from_keras maps them to the scenario's optimizer.learning_rate
SCHEDULES = {
    "exponential_staircase": lambda: keras.optimizers.schedules.ExponentialDecay(0.2, 2, 0.5, staircase=True),
    "inverse_time": lambda: keras.optimizers.schedules.InverseTimeDecay(0.2, 2, 0.5),
    "polynomial_cycle": lambda: keras.optimizers.schedules.PolynomialDecay(0.2, 2, 0.01, power=2.0, cycle=True),
    "piecewise_constant": lambda: keras.optimizers.schedules.PiecewiseConstantDecay([1, 2], [0.2, 0.1, 0.05]),
    "cosine_warmup": lambda: keras.optimizers.schedules.CosineDecay(0.0, 2, alpha=0.1, warmup_target=0.3,
                                                                    warmup_steps=2),
}


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_schedule_matches_tf(schedule, tmp_path):
    """The Dense MLP under SGD with momentum whose learning rate is a Keras schedule: podsim takes
    the schedule from the optimizer's config (from_keras) and evaluates it on `iterations` before
    each update as Keras does, so losses and weights agree at float32 tolerance, and metrics.csv's
    learning_rate column holds the rate each update used."""
    losses, tf_losses, got, want, init = train_both(
        dense_mlp, lambda: keras.optimizers.SGD(SCHEDULES[schedule](), momentum=0.9), tmp_path)
    np.testing.assert_allclose(losses, tf_losses, rtol=1e-5)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-7, err_msg=name)
    assert max(np.max(np.abs(got[n] - init[n])) for n in init) > 1e-3
    rates = [m["learning_rate"] for m in podsim.read_csv(str(tmp_path / "run" / "metrics.csv"))]
    keras_rates = [float(SCHEDULES[schedule]()(step)) for step in range(STEPS)]
    np.testing.assert_array_equal(np.float32(rates), np.float32(keras_rates))
    assert len(set(keras_rates)) > 1  # the schedule moved within the run


def test_schedule_podsim_lacks_is_refused(tmp_path):
    """A schedule podsim does not compute is a ValueError naming it and what podsim has, never a
    run at a constant rate."""
    model, _, _, data = model_and_rows(dense_mlp, tmp_path)
    restarts = keras.optimizers.schedules.CosineDecayRestarts(0.1, 2)
    with pytest.raises(ValueError, match="learning-rate schedule CosineDecayRestarts: podsim has CosineDecay, "):
        podsim.from_keras(model, optimizer=keras.optimizers.SGD(restarts), dataset={"csv": str(data)},
                          directory=tmp_path)
