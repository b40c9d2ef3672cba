"""podsim.run, check and plan over libpodsim.so: the CLI's numbers, its errors as exceptions.

The CLI's run_hash of scenarios/examples/quickstart.yaml is b820bab471fa701a (022f201f15efa60d
before the HBM reservation came from buffer liveness, bee2f3b83e2f4bc5 before metrics.csv had
host_s); the library calls the CLI's own code, so it must give the same.
"""
import json
import os
import subprocess

import pytest

import podsim
from conftest import ROOT

QUICKSTART = os.path.join(ROOT, "scenarios", "examples", "quickstart.yaml")
QUICKSTART_HASH = "b820bab471fa701a"

TINY = {
    "name": "tiny",
    "seed": 3,
    "cluster": {"workers": {"count": 2, "machine": "n2-standard-8"}},
    "strategy": {"kind": "multi_worker_mirrored"},
    "model": {"input": {"features": 4}, "layers": [{"dense": {"units": 8, "activation": "relu"}}, {"dense": {"units": 3}}],
              "loss": {"kind": "sparse_categorical_crossentropy", "from_logits": True}},
    "optimizer": {"kind": "sgd", "learning_rate": 0.1},
    "dataset": {"synthetic": {"rows": 256, "features": 4, "classes": 3}, "global_batch": 32},
    "training": {"steps": 6},
}


def test_run_gives_the_cli_run_hash(tmp_path):
    r = podsim.run(QUICKSTART, out=tmp_path / "q")
    assert r["summary"]["run_hash"] == QUICKSTART_HASH
    assert r["out"] == str(tmp_path / "q")
    assert r["status"] == 0
    # training.steps: 300 in the file: one metrics row a step, loss falling from ~ln 4 = 1.39
    assert len(r["metrics"]) == 300
    assert r["metrics"][0]["step"] == 0 and isinstance(r["metrics"][0]["loss"], float)
    assert r["metrics"][-1]["loss"] < r["metrics"][0]["loss"]
    with open(tmp_path / "q" / "summary.json") as f:
        assert json.load(f) == r["summary"]


def test_run_twice_in_one_process_is_the_same(tmp_path):
    """Each call runs in a child of its own: a second call sees no state the first left."""
    a = podsim.run(TINY, out=tmp_path / "a")
    b = podsim.run(TINY, out=tmp_path / "b")
    assert a["summary"]["run_hash"] == b["summary"]["run_hash"]
    assert a["metrics"] == b["metrics"]


def test_dict_scenario_matches_the_cli_on_the_same_yaml(tmp_path):
    r = podsim.run(TINY, out=tmp_path / "py")
    path = tmp_path / "tiny.yaml"
    path.write_text(json.dumps(TINY))  # JSON is YAML
    cli = subprocess.run([os.path.join(ROOT, "podsim"), "run", str(path), "-o", str(tmp_path / "cli"), "--quiet"],
                         capture_output=True, text=True, check=True)
    assert cli.stdout.strip() == "run_hash " + r["summary"]["run_hash"]


def test_overrides_dict_and_list(tmp_path):
    a = podsim.run(TINY, overrides={"training.steps": 2}, out=tmp_path / "a")
    b = podsim.run(TINY, overrides=["training.steps=2"], out=tmp_path / "b")
    assert a["summary"]["steps_completed"] == 2 == len(a["metrics"])
    assert a["summary"]["run_hash"] == b["summary"]["run_hash"]


def test_sections_merge_into_a_dict(tmp_path):
    r = podsim.run(TINY, out=tmp_path / "s", training={"steps": 3})
    assert r["summary"]["steps_completed"] == 3
    with pytest.raises(TypeError):
        podsim.run(QUICKSTART, training={"steps": 3})


def test_check():
    assert podsim.check(QUICKSTART) is True
    assert podsim.check(TINY) is True


def test_scenario_error_carries_the_place(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ntraining:\n  steps: -4\n")
    with pytest.raises(podsim.ScenarioError) as e:
        podsim.check(bad)
    # "steps: -4" is line 3; the value starts at column 10
    assert (e.value.file, e.value.line, e.value.col) == (str(bad), 3, 10)
    assert e.value.key == "training.steps"
    assert e.value.status == 2
    assert str(e.value).startswith(f"{bad}:3:10: training.steps")
    with pytest.raises(podsim.ScenarioError):
        podsim.run(bad, out=tmp_path / "never")
    assert not (tmp_path / "never").exists()  # exit 2 writes nothing


def test_scenario_error_in_a_dict_names_its_yaml(tmp_path):
    with pytest.raises(podsim.ScenarioError) as e:
        podsim.run(dict(TINY, training={"steps": 0}), out=tmp_path / "x")
    assert e.value.file == "<dict>"
    assert e.value.key == "training.steps"
    lines = e.value.source.splitlines()
    assert "steps" in lines[e.value.line - 1]  # the line of the YAML podsim read
    assert not [f for f in os.listdir(".") if f.startswith(".podsim-")]  # the dict's file is gone


def test_job_failed_is_exit_3_with_outputs(tmp_path):
    """tests/data/inputs/oom.yaml does not fit in its devices' HBM: TF's ResourceExhaustedError,
    exit 3, the outputs written (as tests/cli.sh checks of the CLI)."""
    with pytest.raises(podsim.JobFailed) as e:
        podsim.run(os.path.join(ROOT, "tests", "data", "inputs", "oom.yaml"), out=tmp_path / "oom")
    assert e.value.status == 3
    assert e.value.result["summary"]["error"]["kind"] == "ResourceExhaustedError"
    assert e.value.result["out"] == str(tmp_path / "oom")


def test_expect_failed_is_exit_1_with_outputs(tmp_path):
    """TINY runs 6 steps; an expect of 7 fails: exit 1, the run's outputs kept."""
    with pytest.raises(podsim.ExpectFailed) as e:
        podsim.run(TINY, out=tmp_path / "x", expect=[{"metric": "steps_completed", "eq": 7}])
    assert e.value.status == 1
    assert "steps_completed" in e.value.messages
    assert e.value.result["summary"]["steps_completed"] == 6


def test_plan(tmp_path):
    r = podsim.plan(os.path.join(ROOT, "scenarios", "examples", "plan_tpu_v4.yaml"), out=tmp_path / "p", jobs=2)
    assert r["out"] == str(tmp_path / "p")
    assert len(r["sweep"]) > 1 and os.path.exists(r["report"])
    assert r["text"]  # the recommendation the CLI prints


def test_dataframe():
    pandas = pytest.importorskip("pandas")
    df = podsim.dataframe([{"step": 0, "loss": 1.5}, {"step": 1, "loss": 1.25}])
    assert isinstance(df, pandas.DataFrame) and list(df["loss"]) == [1.5, 1.25]
