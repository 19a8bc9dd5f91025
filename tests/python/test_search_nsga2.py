"""NSGA-II against Optuna 4.2's NSGAIISampler (from PyPI, in the test venv):
for the same seed syslab proposes exactly Optuna's trials over several
generations (selection, crossover and mutation draws in Optuna's order),
on a mixed space with two objectives, minimised and maximised."""
import pytest

optuna = pytest.importorskip("optuna")
optuna.logging.set_verbosity(optuna.logging.ERROR)

from test_search import optuna_params, run_search, syslab_params  # noqa: E402

SPACE = """
  w = suggest "width" int 16 256 by=16
  n = suggest "layers" int 1 64 log=true
  lr = suggest "lr" float 1e-5 1e-1 log=true
  d = suggest "dropout" float 0 0.5
  q = suggest "q" float 0 1 by=0.1
  a = suggest "act" categorical ["relu", "gelu", "tanh"]
  one = suggest "fixed" int 3 3
  ab = 0
  if a == "gelu" { ab = 1 }
  objective [(d - 0.2) ** 2 + w / 256 + ab, n / 64 - q + lr * 10]
"""


def optuna_objective(t):
    w = t.suggest_int("width", 16, 256, step=16)
    n = t.suggest_int("layers", 1, 64, log=True)
    lr = t.suggest_float("lr", 1e-5, 1e-1, log=True)
    d = t.suggest_float("dropout", 0, 0.5)
    q = t.suggest_float("q", 0, 1, step=0.1)
    a = t.suggest_categorical("act", ["relu", "gelu", "tanh"])
    t.suggest_int("fixed", 3, 3)
    return (d - 0.2) ** 2 + w / 256 + (a == "gelu"), n / 64 - q + lr * 10


@pytest.mark.parametrize("seed,population,directions", [
    (0, 6, ["minimize", "minimize"]),
    (3, 8, ["minimize", "maximize"]),
    (2024, 4, ["maximize", "minimize"]),
])
def test_nsga2_equals_optuna(syslab_bin, tmp_path, seed, population, directions):
    trials = population * 6  # five generations of children
    dirs = "[" + ", ".join(f'"{d}"' for d in directions) + "]"
    mine = run_search(tmp_path, f"s = search trials={trials} sampler=nsga2 population={population} seed={seed} "
                                f"directions={dirs} journal=JOURNAL {{{SPACE}}}")
    study = optuna.create_study(directions=directions,
                                sampler=optuna.samplers.NSGAIISampler(population_size=population, seed=seed))
    study.optimize(optuna_objective, n_trials=trials)
    ours, theirs = [syslab_params(t) for t in mine], [optuna_params(t) for t in study.trials]
    assert len(ours) == len(theirs) == trials
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, f"trial {i} (generation {i // population}) differs: syslab {a}, Optuna {b}"
