"""outputs.tensorboard: the quickstart's event file read back by TensorBoard's own reader
(EventAccumulator), its scalars against metrics.csv's columns and summary.json's goodput.

The file's bytes come from podsim (scenarios/report/tfevents.c), not from TensorFlow, so this is
the check that they are what TensorBoard expects: framing, CRCs, Event and Summary fields.
"""
import csv
import glob
import os

import pytest

import podsim
from conftest import ROOT

QUICKSTART = os.path.join(ROOT, "scenarios", "examples", "quickstart.yaml")
QUICKSTART_HASH = "b820bab471fa701a"
# the quickstart is a sync run without faults or a schedule: metrics.csv's sync columns
COLUMNS = ["loss", "step_time_s", "examples_per_s", "compute_s", "comm_s", "idle_s", "input_s",
           "compile_s", "hbm_bytes"]


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    out = tmp_path_factory.mktemp("tb") / "q"
    r = podsim.run(QUICKSTART, overrides={"outputs.tensorboard": True}, out=out)
    return out, r


def load(out):
    from tensorboard.backend.event_processing import event_accumulator
    acc = event_accumulator.EventAccumulator(str(out / "train"), size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return acc


def test_event_file_is_named_and_placed_as_tensorboard_expects(quickstart):
    out, r = quickstart
    assert [os.path.basename(p) for p in glob.glob(str(out / "train" / "*"))] == \
        ["events.out.tfevents.0000000000.podsim"]
    # the event file is a view of metrics.csv: the run_hash is the one without it
    assert r["summary"]["run_hash"] == QUICKSTART_HASH


def test_scalars_are_metrics_csv_columns_and_goodput(quickstart):
    out, r = quickstart
    acc = load(out)
    assert acc.file_version == 2.0  # "brain.Event:2"
    assert sorted(acc.Tags()["scalars"]) == sorted(COLUMNS + ["goodput"])
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 300
    for tag in COLUMNS:
        events = acc.Scalars(tag)
        assert [e.step for e in events] == [int(row["step"]) for row in rows]
        # simple_value is a float32: 2^-24 relative, and wall time is sim_time_s (exact in a double)
        for e, row in zip(events, rows):
            assert e.value == pytest.approx(float(row[tag]), rel=1e-7, abs=1e-30)
            assert e.wall_time == pytest.approx(float(row["sim_time_s"]), rel=1e-12)
    # no faults: every step counts, goodput is compile-free step time over time so far, 1.0 at the
    # end as summary.json says (the quickstart compiles nothing)
    goodput = acc.Scalars("goodput")
    assert goodput[-1].value == pytest.approx(r["summary"]["goodput"], rel=1e-7)
    useful = sum(float(row["step_time_s"]) - float(row["compile_s"]) for row in rows[:150])
    assert goodput[149].value == pytest.approx(useful / float(rows[149]["sim_time_s"]), rel=1e-6)


def test_event_file_is_the_same_bytes_every_run(quickstart, tmp_path):
    out, _ = quickstart
    podsim.run(QUICKSTART, overrides={"outputs.tensorboard": True}, out=tmp_path / "again")
    name = "train/events.out.tfevents.0000000000.podsim"
    assert (out / name).read_bytes() == (tmp_path / "again" / name).read_bytes()
