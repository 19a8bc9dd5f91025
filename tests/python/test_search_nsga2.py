"""NSGA-II against Optuna 4.2's NSGAIISampler (from PyPI, in the test venv):
for the same seed syslab proposes exactly Optuna's trials over several
generations (selection, crossover and mutation draws in Optuna's order),
on a mixed space with two objectives, minimised and maximised."""
import pytest

optuna = pytest.importorskip("optuna")
optuna.logging.set_verbosity(optuna.logging.ERROR)

from test_search import MIXED_SPACE, optuna_mixed, optuna_params, run_search, syslab_params  # noqa: E402

# the mixed space of the other sampler tests, with two objectives
SPACE = MIXED_SPACE + """  ab = 0
  if a == "gelu" { ab = 1 }
  objective [(d - 0.2) ** 2 + w / 256 + ab, n / 64 - q + lr * 10]
"""


def optuna_objective(t):
    optuna_mixed(t)
    p = t.params
    return (p["dropout"] - 0.2) ** 2 + p["width"] / 256 + (p["act"] == "gelu"), p["layers"] / 64 - p["q"] + p["lr"] * 10


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
