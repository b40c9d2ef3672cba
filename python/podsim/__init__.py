"""podsim from Python: run, check and plan a scenario, and a scenario from a live Keras model.

Each call is the command line's own code in libpodsim.so (scenarios/api.h), run in a forked
child process so that the library's process state (its stop flag, its out-of-memory exit, its
signal handlers) never touches the Python process: the same scenario gives the CLI's run_hash.

    import podsim
    r = podsim.run("scenarios/examples/quickstart.yaml")
    r["summary"]["run_hash"], r["metrics"][-1]["loss"], r["out"]

A scenario is a file's path or a dict (the YAML's mapping); keyword sections (cluster=...,
sweep=...) are merged over a dict's top level. Errors: ScenarioError (exit 2, with file, line,
col, key), JobFailed (exit 3, outputs written), ExpectFailed (exit 1), PodsimError (other).
"""
import csv
import json
import os
import tempfile

from . import _lib
from .keras import from_keras

__all__ = ["run", "check", "plan", "from_keras", "dataframe", "read_csv",
           "PodsimError", "ScenarioError", "JobFailed", "ExpectFailed"]


class PodsimError(Exception):
    """A call that did not end with exit 0: its exit status and what podsim wrote on stderr."""

    def __init__(self, message, status, messages="", result=None):
        super().__init__(message)
        self.status = status
        self.messages = messages
        self.result = result


class ScenarioError(PodsimError):
    """Exit 2: the scenario (or a file it names) was refused, or its outputs could not be written;
    nothing was written. file, line and col place the refusal (line 0: no place in a file), key
    names the scenario key; source is the YAML text podsim read when the scenario was a dict."""

    def __init__(self, message, status, messages, file, line, col, key, source=None):
        super().__init__(message, status, messages)
        self.file = file
        self.line = line
        self.col = col
        self.key = key
        self.source = source


class JobFailed(PodsimError):
    """Exit 3: the simulated job failed as TensorFlow would; result holds the outputs written
    (summary.json's error says why)."""


class ExpectFailed(PodsimError):
    """Exit 1: an `expect` assertion failed; result holds the run's outputs."""


def _scenario_text(scenario):
    """A dict as YAML (PyYAML when installed; else JSON, which is YAML too)."""
    try:
        import yaml
        return yaml.safe_dump(scenario, sort_keys=False, default_flow_style=False)
    except ImportError:
        return json.dumps(scenario, indent=2) + "\n"


class _ScenarioFile:
    """The path podsim reads: a path as given, or a dict written to a hidden file in the current
    directory (so relative paths in it resolve as the caller's own do), removed afterwards."""

    def __init__(self, scenario, sections):
        self.text = None
        self.temp = None
        if isinstance(scenario, dict):
            merged = dict(scenario)
            merged.update(sections)
            self.text = _scenario_text(merged)
            try:
                fd, self.temp = tempfile.mkstemp(prefix=".podsim-", suffix=".yaml", dir=os.getcwd())
            except OSError:
                fd, self.temp = tempfile.mkstemp(prefix="podsim-", suffix=".yaml")
            with os.fdopen(fd, "w") as f:
                f.write(self.text)
            self.path = self.temp
        elif sections:
            raise TypeError("podsim: keyword sections (%s) merge into a dict scenario; load the file into a dict first"
                            % ", ".join(sorted(sections)))
        else:
            self.path = os.fspath(scenario)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.temp:
            os.unlink(self.temp)


def _text(field):
    return field.decode("utf-8", "replace")


def _raise_for(res, sf, result=None):
    """The exception for a status other than 0; returns on 0."""
    status = res.status
    messages = _text(res.messages)
    first = messages.strip().splitlines()[0] if messages.strip() else f"podsim: exit {status}"
    if status == 0:
        return
    if status == 2:
        file = _text(res.file)
        if sf.temp and os.path.abspath(file) == os.path.abspath(sf.temp):
            file = "<dict>"
        raise ScenarioError(first, status, messages, file, res.line, res.col, _text(res.key), sf.text)
    if status == 3:
        raise JobFailed(first, status, messages, result)
    if status == 1:
        raise ExpectFailed(first, status, messages, result)
    if status in (130, 143):
        raise KeyboardInterrupt(first)
    raise PodsimError(first, status, messages, result)


def _number(text):
    """A CSV cell as int, float or the text itself."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_csv(path):
    """One of podsim's CSV outputs as a list of dicts, numbers converted."""
    with open(path, newline="") as f:
        return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]


def dataframe(rows):
    """A list of row dicts (a result's 'metrics', a plan's 'sweep') as a pandas DataFrame."""
    try:
        import pandas
    except ImportError as e:
        raise ImportError("podsim.dataframe needs pandas (pip install pandas); the rows are plain dicts") from e
    return pandas.DataFrame(rows)


def _run_result(out, res):
    summary_path = os.path.join(out, "summary.json")
    with open(summary_path) as f:
        summary = json.load(f)
    metrics_path = os.path.join(out, "metrics.csv")
    return {"summary": summary,
            "metrics": read_csv(metrics_path) if os.path.exists(metrics_path) else [],
            "out": out,
            "status": res.status}


def run(scenario, overrides=None, out=None, **sections):
    """podsim run: returns {'summary': summary.json, 'metrics': metrics.csv's rows, 'out': DIR,
    'status': 0}. overrides: {'training.steps': 20} or ['training.steps=20'] (--set); out: -o."""
    res = _lib.ApiResult()
    with _ScenarioFile(scenario, sections) as sf:
        _lib.lib().podsim_api_run(sf.path.encode(), _lib.overrides_array(overrides),
                                  os.fspath(out).encode() if out is not None else None, res)
        written = _text(res.out_dir)
        result = _run_result(written, res) if res.status in (0, 1, 3) and written else None
        _raise_for(res, sf, result)
    return result


def check(scenario, overrides=None, **sections):
    """podsim check: True, or ScenarioError. Writes nothing."""
    res = _lib.ApiResult()
    with _ScenarioFile(scenario, sections) as sf:
        _lib.lib().podsim_api_check(sf.path.encode(), _lib.overrides_array(overrides), res)
        _raise_for(res, sf)
    return True


def plan(scenario, overrides=None, out=None, jobs=0, **sections):
    """podsim plan: every point of the scenario's sweep. Returns {'sweep': sweep.csv's rows,
    'report': report.md's path, 'out': DIR, 'text': the recommendation the CLI prints}."""
    res = _lib.ApiResult()
    with _ScenarioFile(scenario, sections) as sf:
        _lib.lib().podsim_api_plan(sf.path.encode(), _lib.overrides_array(overrides),
                                   os.fspath(out).encode() if out is not None else None, int(jobs), res)
        _raise_for(res, sf)
    written = _text(res.out_dir)
    return {"sweep": read_csv(os.path.join(written, "sweep.csv")),
            "report": os.path.join(written, "report.md"),
            "out": written,
            "text": _text(res.output)}
