"""A scenario dict from a live Keras 3 model (tf.keras in TensorFlow 2.16+ is Keras 3).

The model's config is model.to_json() in a file the scenario names (model: {keras: FILE});
podsim reads it as it reads any Keras export (docs/scenario-format.md), the layers' DTypePolicy
giving the model's dtype_policy. With weights=True (the default) its current values are written
as podsim's weights CSV (variable,flat_index,value; Keras's variable paths) for model.init.file,
so podsim starts from the same numbers.
"""
import hashlib
import os
import json
import re
import tempfile
import warnings

# Keras optimizer classes podsim has, and the config keys it reads for each (the rest must be
# at Keras's defaults or the optimizer is refused: podsim would compute something else).
_OPTIMIZERS = {
    "SGD": ("sgd", ("momentum", "nesterov")),
    "Adam": ("adam", ("beta_1", "beta_2", "epsilon")),
    "Adagrad": ("adagrad", ("initial_accumulator_value", "epsilon")),
    "AdamW": ("adamw", ("beta_1", "beta_2", "epsilon", "weight_decay")),
    "Lamb": ("lamb", ("beta_1", "beta_2", "epsilon")),
}
_LOSSES = ("sparse_categorical_crossentropy", "categorical_crossentropy", "binary_crossentropy",
           "mean_squared_error")


def _snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# keras.optimizers.schedules classes podsim computes, and the keys of their configs it takes
_SCHEDULES = {
    "ExponentialDecay": ("exponential_decay", ("initial_learning_rate", "decay_steps", "decay_rate", "staircase")),
    "InverseTimeDecay": ("inverse_time_decay", ("initial_learning_rate", "decay_steps", "decay_rate", "staircase")),
    "PolynomialDecay": ("polynomial_decay", ("initial_learning_rate", "decay_steps", "end_learning_rate", "power",
                                             "cycle")),
    "PiecewiseConstantDecay": ("piecewise_constant_decay", ("boundaries", "values")),
    "CosineDecay": ("cosine_decay", ("initial_learning_rate", "decay_steps", "alpha", "warmup_target",
                                     "warmup_steps")),
}


def _learning_rate(cls, rate):
    """An optimizer config's learning_rate as the scenario's: a number, or a schedule's mapping
    (its serialized form {class_name, config}, as get_config writes it)."""
    if isinstance(rate, (int, float)):
        return float(rate)
    name = rate.get("class_name") if isinstance(rate, dict) else type(rate).__name__
    if name not in _SCHEDULES:
        raise ValueError(f"podsim.from_keras: optimizer {cls}: learning-rate schedule {name}: podsim has "
                         f"{', '.join(sorted(_SCHEDULES))}")
    kind, keys = _SCHEDULES[name]
    config = rate["config"]
    spec = {"kind": kind}
    for key in keys:
        value = config.get(key)
        if value is None:
            continue
        spec[key] = value  # JSON types as Keras wrote them: the loader checks each key's range
    return spec


def _optimizer(opt):
    """A Keras optimizer (object, or its name) as the scenario's optimizer mapping."""
    if opt is None:
        return {"kind": "sgd", "learning_rate": 0.01}
    if isinstance(opt, dict):
        return dict(opt)
    if isinstance(opt, str):
        return {"kind": opt.lower()}
    cls = type(opt).__name__
    if cls not in _OPTIMIZERS:
        raise ValueError(f"podsim.from_keras: optimizer {cls}: podsim has {', '.join(sorted(_OPTIMIZERS))}")
    kind, keys = _OPTIMIZERS[cls]
    config = opt.get_config()
    for key in ("clipnorm", "global_clipnorm", "clipvalue", "loss_scale_factor"):
        if config.get(key) is not None:
            raise ValueError(f"podsim.from_keras: optimizer {cls} with {key}={config[key]}: podsim computes without it")
    if config.get("use_ema"):
        raise ValueError(f"podsim.from_keras: optimizer {cls} with use_ema: podsim computes without it")
    if kind != "adamw" and config.get("weight_decay"):
        raise ValueError(f"podsim.from_keras: optimizer {cls} with weight_decay: podsim has it in adamw only")
    spec = {"kind": kind, "learning_rate": _learning_rate(cls, config["learning_rate"])}
    for key in keys:
        if key in config and config[key] is not None:
            value = config[key]
            spec[key] = bool(value) if isinstance(value, bool) else float(value)
    return spec


def _loss(loss, model):
    """A Keras loss (object, name or None) as the scenario's loss mapping; None: sparse
    categorical cross-entropy, from logits when the last layer has no softmax."""
    if isinstance(loss, dict):
        return dict(loss)
    if loss is None:
        last = model.layers[-1].get_config().get("activation", "linear")
        return {"kind": "sparse_categorical_crossentropy", "from_logits": last != "softmax"}
    if isinstance(loss, str):
        kind, from_logits = loss, None
    else:
        kind = _snake(type(loss).__name__)
        from_logits = getattr(loss, "from_logits", None)
        if from_logits is None:
            from_logits = loss.get_config().get("from_logits")
    if kind not in _LOSSES:
        raise ValueError(f"podsim.from_keras: loss {kind}: podsim has {', '.join(_LOSSES)}")
    spec = {"kind": kind}
    if from_logits is not None and kind != "mean_squared_error":
        spec["from_logits"] = bool(from_logits)
    return spec


def weights_csv(model, path):
    """Writes model's weights as podsim's weights CSV (variable,flat_index,value, 9 significant
    digits: float32 read back bit for bit), each under its layer's path ('dense/kernel': Keras's
    variable.path without the model's name)."""
    prefix = model.name + "/"
    with open(path, "w") as f:
        f.write("variable,flat_index,value\n")
        for v in model.weights:
            name = v.path[len(prefix):] if v.path.startswith(prefix) else v.path
            values = v.numpy().reshape(-1)
            for i, x in enumerate(values):
                f.write(f"{name},{i},{float(x):.9g}\n")


def _classes(model):
    units = model.layers[-1].get_config().get("units")
    if not units:
        shape = model.outputs[0].shape if getattr(model, "outputs", None) else None
        units = shape[-1] if shape is not None else 2
    return max(int(units), 2)


def _features(model):
    size = 1
    for d in model.inputs[0].shape[1:]:
        size *= int(d)
    return size


def _layers_of(model):
    """Every layer of the model by name, the layers of nested models too."""
    found = {}
    for layer in getattr(model, "layers", []):
        found[layer.name] = layer
        found.update(_layers_of(layer))
    return found


def _seeded_dropout(model, config):
    """The config with each Dropout's `seed` set to its SeedGenerator's seed, state[0]: Keras
    drew one (python random, seeded by keras.utils.set_random_seed) where the config says null,
    and Dropout(seed=state[0]) draws the same masks from state [seed, 0], so podsim draws Keras's
    masks (docs/layers.md, "Dropout"). A layer that has drawn already (state[1] > 0: trained)
    has no config that starts there: it keeps its config's seed, with a warning that the masks
    are not Keras's next ones."""
    layers = _layers_of(model)

    def walk(node):
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            layer = layers.get(node.get("config", {}).get("name")) if node.get("class_name") == "Dropout" else None
            generator = getattr(layer, "seed_generator", None)
            if generator is not None:
                seed, draws = (int(v) for v in generator.state.numpy())
                if draws == 0:
                    node["config"]["seed"] = seed
                else:
                    warnings.warn(f"podsim.from_keras: Dropout {layer.name} has drawn {draws} seeds already; "
                                  "podsim draws its masks from the config's seed, not from Keras's next draw")
            for value in node.values():
                walk(value)
    tree = json.loads(config)
    walk(tree)
    return json.dumps(tree)


def from_keras(model, global_batch=32, steps=10, optimizer=None, loss=None, name=None, directory=None,
               weights=True, dataset=None, **sections):
    """A scenario dict for a built Keras model: model: {keras: FILE (model.to_json())}, its loss
    and optimizer (the compiled ones when not given), a synthetic dataset of the input's width and
    the last layer's classes (or `dataset`), training.steps. The files go to `directory`
    (default: a temporary one, named after the config's hash so the same model reuses them);
    further keyword sections (cluster=..., strategy=..., outputs=...) are the scenario's."""
    config = _seeded_dropout(model, model.to_json())
    digest = hashlib.sha256(config.encode()).hexdigest()[:12]
    directory = os.path.abspath(directory or os.path.join(tempfile.gettempdir(), "podsim-keras"))
    os.makedirs(directory, exist_ok=True)
    stem = os.path.join(directory, f"{model.name}-{digest}")
    with open(stem + ".json", "w") as f:
        f.write(config)
    if optimizer is None and getattr(model, "optimizer", None) is not None:
        optimizer = model.optimizer
    if loss is None:
        loss = getattr(model, "loss", None)
    model_spec = {"keras": stem + ".json", "loss": _loss(loss, model)}
    if weights:
        weights_csv(model, stem + "-init.csv")
        model_spec["init"] = {"file": stem + "-init.csv"}
    scenario = {
        "name": name or model.name,
        "cluster": {"workers": {"count": 1, "machine": "n2-standard-8"}},
        "model": model_spec,
        "optimizer": _optimizer(optimizer),
        "dataset": dataset or {"synthetic": {"rows": max(1024, global_batch), "features": _features(model),
                                             "classes": _classes(model)},
                               "global_batch": global_batch},
        "training": {"steps": steps},
    }
    if dataset is not None and "global_batch" not in scenario["dataset"]:
        scenario["dataset"]["global_batch"] = global_batch
    # gradient_accumulation_steps N: fit's batch of global_batch is a micro-batch, and podsim's step
    # is Keras's N micro-steps (docs/scenario-format.md, training.gradient_accumulation_steps).
    accumulate = optimizer.get_config().get("gradient_accumulation_steps") if hasattr(optimizer, "get_config") else None
    if accumulate:
        if steps % accumulate:
            raise ValueError(f"podsim.from_keras: steps={steps} is not a multiple of the optimizer's "
                             f"gradient_accumulation_steps={accumulate} (podsim's step applies once)")
        scenario["dataset"]["global_batch"] *= accumulate
        scenario["training"].update(steps=steps // accumulate, gradient_accumulation_steps=accumulate)
    scenario.update(sections)
    return scenario
