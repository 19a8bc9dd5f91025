"""Search against Optuna 4.2 (from PyPI, in the test venv): the random and
grid samplers propose exactly Optuna's trials for the same seed, TPE's
start-up trials are Optuna's and its model-based suggestions equal Optuna's
on histories without repeated values, the median pruner decides as Optuna's
does, and a study journal survives kill -9.

syslab's parameters are read from the study journal, which records them in
binary64 with 17 digits, so equality is exact."""
import json
import math
import os
import random
import signal
import subprocess
import time

import pytest

optuna = pytest.importorskip("optuna")
optuna.logging.set_verbosity(optuna.logging.ERROR)

from conftest import SYSLAB_BIN, syslab  # noqa: E402

CHOICES = ["relu", "gelu", "tanh"]


def run_search(tmp_path, code, name="study.jsonl"):
    journal = tmp_path / name
    script = tmp_path / "search.syslab"
    script.write_text(code.replace("JOURNAL", json.dumps(str(journal))))
    r = syslab("run", str(script))
    assert r.returncode == 0, r.stderr
    return read_journal(journal)


def read_journal(path):
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert "syslab_study" in lines[0]
    return [line for line in lines[1:] if "trial" in line]


def syslab_params(trial):
    return {p["name"]: p["internal"] for p in trial["params"]}


def optuna_params(trial):
    return {n: d.to_internal_repr(trial.params[n]) for n, d in trial.distributions.items()}


MIXED_SPACE = """
  w = suggest "width" int 16 256 by=16
  n = suggest "layers" int 1 64 log=true
  lr = suggest "lr" float 1e-5 1e-1 log=true
  d = suggest "dropout" float 0 0.5
  q = suggest "q" float 0 1 by=0.1
  a = suggest "act" categorical ["relu", "gelu", "tanh"]
  one = suggest "fixed" int 3 3
"""


def optuna_mixed(t):
    t.suggest_int("width", 16, 256, step=16)
    t.suggest_int("layers", 1, 64, log=True)
    t.suggest_float("lr", 1e-5, 1e-1, log=True)
    t.suggest_float("dropout", 0, 0.5)
    t.suggest_float("q", 0, 1, step=0.1)
    t.suggest_categorical("act", CHOICES)
    t.suggest_int("fixed", 3, 3)
    return 0.0


@pytest.mark.parametrize("seed", [0, 1, 42, 2**32 - 1])
def test_random_sampler_equals_optuna(syslab_bin, tmp_path, seed):
    mine = run_search(tmp_path, f"s = search trials=25 sampler=random seed={seed} journal=JOURNAL {{{MIXED_SPACE}  objective 0\n}}")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    study.optimize(optuna_mixed, n_trials=25)
    assert [syslab_params(t) for t in mine] == [optuna_params(t) for t in study.trials]


@pytest.mark.parametrize("seed", [0, 3, 2024])
def test_grid_sampler_order_and_exhaustion_equal_optuna(syslab_bin, tmp_path, seed):
    code = f"""s = search trials=50 sampler=grid seed={seed} width=[32, 64, 128] act=["relu", "gelu"] depth=[1, 2] journal=JOURNAL {{
  w = suggest "width" int 32 128
  a = suggest "act" categorical ["relu", "gelu"]
  d = suggest "depth" int 1 2
  objective w * d
}}"""
    mine = run_search(tmp_path, code)
    grid = {"width": [32, 64, 128], "act": ["relu", "gelu"], "depth": [1, 2]}
    study = optuna.create_study(sampler=optuna.samplers.GridSampler(grid, seed=seed))

    def objective(t):
        return t.suggest_int("width", 32, 128) * t.suggest_int("depth", 1, 2) + 0 * len(t.suggest_categorical("act", ["relu", "gelu"]))

    study.optimize(objective, n_trials=50)
    assert len(mine) == len(study.trials) == 12  # the grid's size, not the 50 asked for
    ours = [{k: v for k, v in syslab_params(t).items()} for t in mine]
    theirs = [optuna_params(t) for t in study.trials]
    assert ours == theirs


CONTINUOUS_SPACE = """
  x = suggest "x" float (-5) 5
  y = suggest "y" float 1e-3 10 log=true
  c = suggest "c" categorical ["a", "b", "c"]
  cb = 0
  if c == "b" { cb = 1 }
  objective (x - 1) ** 2 + (y - 0.5) ** 2 + cb
"""


def optuna_continuous(t):
    x = t.suggest_float("x", -5, 5)
    y = t.suggest_float("y", 1e-3, 10, log=True)
    c = t.suggest_categorical("c", ["a", "b", "c"])
    return (x - 1) ** 2 + (y - 0.5) ** 2 + (c == "b")


@pytest.mark.parametrize("seed", [1, 7])
def test_tpe_equals_optuna_on_a_continuous_space(syslab_bin, tmp_path, seed):
    mine = run_search(tmp_path, f"s = search trials=30 sampler=tpe seed={seed} journal=JOURNAL {{{CONTINUOUS_SPACE}}}")
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
    study.optimize(optuna_continuous, n_trials=30)
    for number, (a, b) in enumerate(zip(mine, study.trials)):
        ours, theirs = syslab_params(a), optuna_params(b)
        if number < 10:  # start-up: Optuna's inner RandomSampler(seed), exactly
            assert ours == theirs
        for name in theirs:  # the error function comes from libm: allow the last bits
            assert ours[name] == pytest.approx(theirs[name], rel=1e-9, abs=1e-12), (number, name)


def write_history_journal(path, seed, history, directions=("minimize",)):
    header = {"syslab_study": 1, "sampler": "tpe", "seed": seed, "directions": list(directions),
              "objectives": ["value"], "pruner": "none", "tpe": {"startup": 10, "candidates": 24}}
    lines = [json.dumps(header)]
    for number, (params, value) in enumerate(history):
        lines.append(json.dumps({"trial": number, "state": "complete", "params": params, "values": [value],
                                 "intermediate": [], "seconds": 0.0, "draws": [0, 0]}))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("seed,n", [(0, 12), (5, 30), (9, 40)])
def test_tpe_next_suggestion_on_a_fixed_history_equals_optuna(syslab_bin, tmp_path, seed, n):
    """The same observations in, the same choice out: a history of distinct
    values (numpy orders tied kernels by machine-dependent sorting)."""
    rnd = random.Random(seed)
    dists = {
        "w": optuna.distributions.IntDistribution(1, 1000),
        "k": optuna.distributions.IntDistribution(1, 4096, log=True),
        "lr": optuna.distributions.FloatDistribution(1e-5, 1.0, log=True),
        "x": optuna.distributions.FloatDistribution(-3.0, 3.0),
        "c": optuna.distributions.CategoricalDistribution(["p", "q", "r", "s"]),
    }
    ws = rnd.sample(range(1, 1001), n)
    ks = rnd.sample(range(1, 4097), n)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed))
    history = []
    for i in range(n):
        params = {"w": ws[i], "k": ks[i], "lr": 10 ** rnd.uniform(-5, 0), "x": rnd.uniform(-3, 3), "c": rnd.choice("pqrs")}
        value = rnd.uniform(0, 1)
        study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, value=value))
        journal_params = []
        for name in ["w", "k", "lr", "x", "c"]:
            d = dists[name]
            if name == "c":
                dist = {"kind": "categorical", "choices": ["p", "q", "r", "s"]}
            else:
                dist = {"kind": "int" if name in "wk" else "float", "low": d.low, "high": d.high,
                        "step": float(d.step or 0), "log": d.log}
            journal_params.append({"name": name, "distribution": dist, "internal": d.to_internal_repr(params[name])})
        history.append((journal_params, value))
    journal = tmp_path / "history.jsonl"
    write_history_journal(journal, seed, history)
    trial = study.ask()
    expected = {"w": trial.suggest_int("w", 1, 1000), "k": trial.suggest_int("k", 1, 4096, log=True),
                "lr": trial.suggest_float("lr", 1e-5, 1.0, log=True), "x": trial.suggest_float("x", -3.0, 3.0),
                "c": "pqrs".index(trial.suggest_categorical("c", ["p", "q", "r", "s"]))}
    script = tmp_path / "next.syslab"
    script.write_text(f"""s = search trials={n + 1} sampler=tpe seed={seed} pruner=none journal={json.dumps(str(journal))} {{
  w = suggest "w" int 1 1000
  k = suggest "k" int 1 4096 log=true
  lr = suggest "lr" float 1e-5 1 log=true
  x = suggest "x" float (-3) 3
  c = suggest "c" categorical ["p", "q", "r", "s"]
  objective 0
}}""")
    r = syslab("run", str(script))
    assert r.returncode == 0, r.stderr
    ours = syslab_params(read_journal(journal)[-1])
    for name, value in expected.items():
        assert ours[name] == pytest.approx(value, rel=1e-9), name


@pytest.mark.parametrize("seed,direction", [(0, "maximize"), (1, "minimize"), (2, "maximize")])
def test_median_pruner_decisions_equal_optuna(syslab_bin, tmp_path, seed, direction):
    rnd = random.Random(seed)
    trials, steps = 25, 6
    curves = [[round(rnd.uniform(0, 1), 3) if rnd.random() > 0.05 else float("nan") for _ in range(steps)]
              for _ in range(trials)]
    literal = "[" + ", ".join("[" + ", ".join("nan_value" if math.isnan(v) else repr(v) for v in c) + "]" for c in curves) + "]"
    code = f"""nan_value = 1e308 * 10 - 1e308 * 10
hist = {literal}
s = search trials={trials} sampler=random seed={seed} direction={direction} pruner=median warmup=1 journal=JOURNAL {{
  for e in 0..{steps - 1} {{ intermediate hist[trial][e] at=e }}
  objective hist[trial][{steps - 1}] + 0.001
}}"""
    mine = run_search(tmp_path, code)
    pruner = optuna.pruners.MedianPruner(n_warmup_steps=1)
    study = optuna.create_study(direction=direction, pruner=pruner, sampler=optuna.samplers.RandomSampler(seed=seed))

    def objective(t):
        for e in range(steps):
            t.report(curves[t.number][e], e)
            if t.should_prune():
                raise optuna.TrialPruned()
        return curves[t.number][steps - 1] + 0.001

    study.optimize(objective, n_trials=trials)
    names = {"COMPLETE": "complete", "PRUNED": "pruned", "FAIL": "failed"}
    theirs = [(names[t.state.name], max(t.intermediate_values) if t.intermediate_values else None) for t in study.trials]
    ours = [(t["state"], max(s for s, _ in t["intermediate"]) if t["intermediate"] else None) for t in mine]
    assert ours == theirs
    assert any(state == "pruned" for state, _ in ours)


SLOW_SEARCH = """s = search trials=10 sampler=tpe startup=4 seed=11 direction=maximize journal=JOURNAL {
  x = suggest "x" float (-2) 2
  k = suggest "k" categorical [1, 2, 3]
  for e in 0..2 { intermediate -(x * x) * k / (e + 1) at=e }
  sleep 0.25
  objective -(x * x) * k
}
"""


def trials_without_time(trials):
    return [{k: v for k, v in t.items() if k != "seconds"} for t in trials]


def test_journal_survives_kill_9_and_resumes_to_the_same_table(syslab_bin, tmp_path):
    whole = tmp_path / "whole"
    whole.mkdir()
    reference = run_search(whole, SLOW_SEARCH)
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    journal = crashed / "study.jsonl"
    script = crashed / "search.syslab"
    script.write_text(SLOW_SEARCH.replace("JOURNAL", json.dumps(str(journal))))
    proc = subprocess.Popen([SYSLAB_BIN, "run", str(script)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:  # kill in the middle of the study, after some trials
        if journal.exists() and sum('"trial"' in line for line in journal.read_text().splitlines()) >= 4:
            break
        time.sleep(0.05)
    time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = read_journal(journal)
    assert 4 <= len(done) < 10
    with open(journal, "a") as f:  # and a torn last line, as a crash in the middle of a write leaves
        f.write('{"trial": 99, "state": "compl')
    r = syslab("run", str(script))
    assert r.returncode == 0, r.stderr
    assert "incomplete" in r.stderr and "ignored" in r.stderr
    assert f"resuming from {journal}: {len(done)} finished trials" in r.stdout
    assert trials_without_time(read_journal(journal)) == trials_without_time(reference)


def test_foreign_journal_is_refused_naming_the_difference(syslab_bin, tmp_path):
    run_search(tmp_path, "s = search trials=3 sampler=random seed=1 journal=JOURNAL { x = suggest \"x\" float 0 1\n objective x }")
    script = tmp_path / "other.syslab"
    journal = json.dumps(str(tmp_path / "study.jsonl"))
    script.write_text(f"s = search trials=3 sampler=tpe seed=1 journal={journal} {{ x = suggest \"x\" float 0 1\n objective x }}")
    r = syslab("run", str(script))
    assert r.returncode != 0
    assert "its sampler is \"random\", this search's is \"tpe\"" in r.stderr
    script.write_text(f"s = search trials=5 sampler=random seed=1 journal={journal} {{ x = suggest \"x\" float 0 2\n objective x }}")
    r = syslab("run", str(script))
    assert r.returncode != 0
    assert "'x' was suggested as float 0..1 and is now suggested as float 0..2" in r.stderr
