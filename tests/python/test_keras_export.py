"""podsim.from_keras on live Keras 3 models of the installed TensorFlow (tensorflow-cpu 2.21,
Keras 3.15 when written): their model.to_json() loads, with the keys recent releases write at
their defaults and per-layer DTypePolicy objects; podsim builds the variables Keras has (every
name, and count_params()); a key at a value podsim cannot honour stays exit 2."""
import math
import os

import pytest

import podsim

try:
    import keras
except ImportError as e:  # the suite fails without TensorFlow: it does not skip
    raise ImportError("tests/python needs the venv's tensorflow-cpu==2.21.0 (Keras 3)") from e


@pytest.fixture(autouse=True)
def float32_policy():
    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


def mlp(name="mlp", dropout_seed=None):
    return keras.Sequential([keras.Input((16,), name="in"), keras.layers.Dense(32, activation="relu", name="d1"),
                             keras.layers.BatchNormalization(name="bn"),
                             keras.layers.Dropout(0.1, seed=dropout_seed, name="drop"),
                             keras.layers.Dense(4, name="d2")], name=name)


def attention():
    x = inp = keras.Input((8, 16), name="in")
    x = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8, name="mha")(x, x)
    x = keras.layers.LayerNormalization(name="ln")(x)
    x = keras.layers.Flatten(name="flat")(x)
    return keras.Model(inp, keras.layers.Dense(3, name="out")(x), name="attn")


def podsim_variables(out):
    """variables.csv's model variables: name -> element count."""
    counts = {}
    for row in podsim.read_csv(os.path.join(out, "variables.csv")):
        if row["kind"] == "variable":
            counts[row["name"]] = math.prod(int(d) for d in str(row["shape"]).split("x"))
    return counts


@pytest.mark.parametrize("build", [mlp, attention])
def test_export_runs_with_keras_variables(build, tmp_path):
    model = build()
    scenario = podsim.from_keras(model, global_batch=32, steps=3, directory=tmp_path)
    assert podsim.check(scenario)
    r = podsim.run(scenario, out=tmp_path / "run")
    assert r["summary"]["steps_completed"] == 3
    # Keras 3 paths: "mlp/d1/kernel" in a Sequential model, "mha/query/kernel" in a Functional one
    keras_vars = {v.path.removeprefix(model.name + "/"): int(math.prod(v.shape)) for v in model.weights}
    assert podsim_variables(r["out"]) == keras_vars
    assert sum(keras_vars.values()) == model.count_params()


def test_mixed_bfloat16_policy_is_the_models(tmp_path):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    model = mlp("mixed")
    scenario = podsim.from_keras(model, steps=2, directory=tmp_path)
    assert "dtype_policy" not in scenario["model"]  # the layers' DTypePolicy objects give it
    r = podsim.run(scenario, out=tmp_path / "bf16")
    assert r["summary"]["steps_completed"] == 2
    # The same model agreeing with its layers loads; disagreeing is refused at model.dtype_policy.
    scenario["model"]["dtype_policy"] = "mixed_bfloat16"
    assert podsim.check(scenario)
    scenario["model"]["dtype_policy"] = "float32"
    with pytest.raises(podsim.ScenarioError) as e:
        podsim.check(scenario)
    assert e.value.key == "model.dtype_policy"
    assert "have the dtype policy mixed_bfloat16" in str(e.value)


def test_mixed_policy_changes_the_numbers(tmp_path):
    """The policy is honoured, not just accepted: bf16 rounding changes the losses. Both models
    draw the same dropout masks (one seed): two unseeded Dropouts draw a seed each, as in Keras,
    and from_keras exports it, which moves the loss by more than bf16's rounding (5.3%)."""
    model = mlp("p", dropout_seed=7)
    f32 = podsim.run(podsim.from_keras(model, steps=2, directory=tmp_path), out=tmp_path / "a")
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    mixed = mlp("p", dropout_seed=7)
    mixed.set_weights(model.get_weights())
    bf16 = podsim.run(podsim.from_keras(mixed, steps=2, directory=tmp_path), out=tmp_path / "b")
    assert f32["metrics"][0]["loss"] != bf16["metrics"][0]["loss"]
    assert abs(f32["metrics"][0]["loss"] - bf16["metrics"][0]["loss"]) < 0.05 * f32["metrics"][0]["loss"]


@pytest.mark.parametrize("layer, option", [
    (lambda: keras.layers.MultiHeadAttention(2, 8, use_gate=True, name="mha"), "use_gate: true"),
    (lambda: keras.layers.MultiHeadAttention(2, 8, sliding_window=4, name="mha"), "sliding_window: 4"),
])
def test_non_default_new_keys_are_refused(layer, option, tmp_path):
    try:
        made = layer()
    except TypeError:
        pytest.skip("this Keras has no such option")
    x = inp = keras.Input((8, 16), name="in")
    x = keras.layers.Flatten(name="flat")(made(x, x))
    model = keras.Model(inp, keras.layers.Dense(3, name="out")(x), name="gated")
    with pytest.raises(podsim.ScenarioError) as e:
        podsim.check(podsim.from_keras(model, directory=tmp_path))
    assert e.value.key == "model.keras"
    assert f"layer 1 mha (class_name MultiHeadAttention): unsupported option {option}" in str(e.value)


def test_python_md_example_runs(tmp_path, monkeypatch):
    """docs/python.md's notebook example, its python blocks run in order (so it cannot go stale)."""
    from conftest import ROOT
    with open(os.path.join(ROOT, "docs", "python.md")) as f:
        text = f.read()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    assert len(blocks) == 3
    monkeypatch.chdir(tmp_path)
    scope = {}
    for block in blocks:
        exec(compile(block, "docs/python.md", "exec"), scope)
    assert scope["r"]["summary"]["steps_completed"] == 20
    assert len(scope["p"]["sweep"]) == 4  # 2 slice types x 2 batches
    assert "recommend" in scope["p"]["text"].lower()


def test_dropout_seed_is_the_seed_generators(tmp_path):
    """from_keras writes each Dropout's SeedGenerator seed into the config it exports: the one
    Keras drew where the layer's seed is None, the layer's own where given; once the layer has
    drawn (a training call moves its state to [seed, 1]) no config starts at Keras's next draw,
    so the seed stays the config's and from_keras warns."""
    import json
    model = mlp()
    drawn = int(model.get_layer("drop").seed_generator.state.numpy()[0])
    config = json.load(open(podsim.from_keras(model, directory=tmp_path)["model"]["keras"]))
    drop = [layer for layer in config["config"]["layers"] if layer["class_name"] == "Dropout"]
    assert [layer["config"]["seed"] for layer in drop] == [drawn]
    assert model.get_layer("drop").get_config()["seed"] is None  # the model's own config is untouched
    model(keras.ops.ones((2, 16)), training=True)  # one draw: state [drawn, 1]
    with pytest.warns(UserWarning, match="Dropout drop has drawn 1 seeds already"):
        config = json.load(open(podsim.from_keras(model, directory=tmp_path)["model"]["keras"]))
    assert [layer["config"]["seed"] for layer in config["config"]["layers"] if layer["class_name"] == "Dropout"] == [None]
