"""Data-parallel training on Open MPI (loopback only): `train` and `lm_train`
with parallel="data" on N processes equal the serial run with accumulate=N
bit for bit (the saved model with its optimizer and random state, and the
losses), for every way gradients travel (per parameter, one flat buffer,
buckets during the backward) with and without a sharded optimizer, under
mpirun -n 2 and -n 3 and from a script with workers=2, for the MLP, the image
transformer and the tiny language model. A rank killed with SIGKILL stops
the step with an error naming it, every other process ends, and the same
command resumes from the last checkpoint to the uninterrupted run. Serial
use loads no MPI.

Models and losses are compared as files: `save` writes a model's bytes
(weights, AdamW's moments, the dropout stream), and a table's CSV holds
binary64 numbers with 17 digits."""
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import SYSLAB_BIN, syslab
from test_scale import command, descendants, running, wait_for

MPIRUN = shutil.which("mpirun")
if MPIRUN is None:
    pytest.skip("mpirun not found: install openmpi-bin (make test does)", allow_module_level=True)

MPI = [MPIRUN, "--oversubscribe", "--allow-run-as-root", "--mca", "btl", "self,vader,tcp",
       "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]

# each model: its setup, then a training call with PAR for the variant's arguments
MODELS = {
    "mlp": ('d = dataset synthetic train=240 test=40 features=8 classes=3 seed=1\n'
            'base = model mlp data=d hidden=[16] dropout=0.2 seed=2\n',
            'h = train m d epochs=2 batch=24 lr=0.05 optimizer=adamw weight_decay=0.01 PAR',
            '["epoch", "loss", "train_accuracy", "test_accuracy", "test_loss"]'),
    "transformer": ('d = dataset synthetic train=72 test=24 features=196 classes=4 seed=1\n'
                    'base = model transformer data=d depth=1 width=16 heads=2 mlp_ratio=2 patch=7 dropout=0.1 seed=2\n',
                    'h = train m d epochs=1 batch=18 lr=0.01 optimizer=adamw PAR',
                    '["epoch", "loss", "train_accuracy", "test_accuracy", "test_loss"]'),
    "lm": ('base = lm tiny vocab=128 context=16 seed=3\n',
           'h = lm_train m steps=4 batch=6 context=16 every=2 lr=0.01 PAR',
           '["step", "loss"]'),
}
VARIANTS = ['reduce="param"', 'reduce="flat"', 'reduce="bucket" bucket_mb=0', 'reduce="bucket" bucket_mb=0.002']


def script(kind, runs, out):
    """trains a copy of the model once per (name, arguments) and saves each"""
    setup, call, columns = MODELS[kind]
    code = [setup]
    for name, par in runs:
        code.append("m = copy base\n" + call.replace("PAR", par) + "\n")
        code.append(f'save m "{out}/{name}.slm"\nsave (select h columns={columns}) "{out}/{name}.csv"\n')
    path = out / f"{kind}.syslab"
    path.write_text("".join(code))
    return path


def parallel_runs():
    return [(f"v{i}s{int(shard)}", f'parallel="data" {v} shard_optimizer={"true" if shard else "false"}')
            for i, v in enumerate(VARIANTS) for shard in (False, True)]


def serial(kind, n, out):
    out.mkdir(exist_ok=True)
    r = syslab("run", str(script(kind, [("serial", f"accumulate={n}")], out)))
    assert r.returncode == 0, r.stderr
    return (out / "serial.slm").read_bytes(), (out / "serial.csv").read_text()


# The runs that must equal the serial one keep syslab's own 30 s timeout for
# starting workers and hearing from ranks: on a loaded machine starting a
# worker took over 6 s. The tests of dying ranks set shorter ones.
EQUAL_ENV = {"SYSLAB_MPI_TIMEOUT": "30"}


def mpirun(n, *args, env=None, recovery=False, timeout=240):
    e = dict(os.environ, **EQUAL_ENV, **(env or {}))
    cmd = MPI + (["--enable-recovery"] if recovery else []) + ["-n", str(n), SYSLAB_BIN, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)


def same(out, runs, want_model, want_csv):
    for name, par in runs:
        assert (out / f"{name}.slm").read_bytes() == want_model, f"{name} ({par}): the model differs"
        assert (out / f"{name}.csv").read_text() == want_csv, f"{name} ({par}): the losses differ"


@pytest.mark.parametrize("kind", sorted(MODELS))
@pytest.mark.parametrize("n", [2, 3])
def test_mpirun_equals_serial_accumulation(syslab_bin, tmp_path, kind, n):
    want = serial(kind, n, tmp_path / "serial")
    runs = parallel_runs()
    r = mpirun(n, "run", str(script(kind, runs, tmp_path)))
    assert r.returncode == 0, r.stderr
    same(tmp_path, runs, *want)


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_workers_from_a_script_equal_serial_accumulation(syslab_bin, tmp_path, kind):
    want = serial(kind, 2, tmp_path / "serial")
    runs = [(name, par + " workers=2") for name, par in parallel_runs()[::3]]
    r = syslab("run", str(script(kind, runs, tmp_path)), env=dict(os.environ, **EQUAL_ENV), timeout=240)
    assert r.returncode == 0, r.stderr
    same(tmp_path, runs, *want)


def test_processes_that_start_from_other_models_are_refused(syslab_bin, tmp_path):
    """two ranks whose scripts build the model from different seeds (mpirun's
    MPMD form runs one script per rank)"""
    paths = []
    for seed in (2, 3):
        p = tmp_path / f"s{seed}.syslab"
        p.write_text(MODELS["mlp"][0].replace("seed=2", f"seed={seed}") +
                     'm = copy base\nh = train m d epochs=1 batch=24 parallel="data"\n')
        paths.append(str(p))
    cmd = MPI + ["-n", "1", SYSLAB_BIN, "run", paths[0], ":", "-n", "1", SYSLAB_BIN, "run", paths[1]]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=dict(os.environ, SYSLAB_MPI_TIMEOUT="5"))
    assert "rank 1 starts from another model, data set or settings than rank 0" in r.stderr


# ------------------------------------------------------------ dying ranks

LONG = """d = dataset synthetic train=4000 test=100 features=16 classes=3 seed=1
m = model mlp data=d hidden=[32] dropout=0.1 seed=2
h = train m d epochs=EPOCHS batch=8 lr=0.02 optimizer=adamw PAR
save m "OUT/model.slm"
save (select h columns=["epoch", "loss", "train_accuracy", "test_accuracy", "test_loss"]) "OUT/losses.csv"
"""


def long_script(out, par, epochs=2):
    out.mkdir(exist_ok=True)
    path = out / "long.syslab"
    path.write_text(LONG.replace("PAR", par).replace("OUT", str(out)).replace("EPOCHS", str(epochs)))
    return path


def rank_pid(proc, rank):
    """the syslab process of a rank, below mpirun"""
    for pid in descendants(proc.pid):
        try:
            env = open(f"/proc/{pid}/environ", "rb").read()
        except OSError:
            continue
        if f"OMPI_COMM_WORLD_RANK={rank}\0".encode() in env and " run " in command(pid):
            return pid
    return None


def leftovers(marker):
    """the command lines of processes still running that hold marker"""
    return [command(int(p)) for p in os.listdir("/proc") if p.isdigit() and running(int(p)) and marker in command(int(p))]


@pytest.mark.parametrize("n,victim", [(2, 1), (3, 2)])
def test_killed_rank_stops_the_step_and_the_run_resumes(syslab_bin, tmp_path, n, victim):
    ref = long_script(tmp_path / "ref", f"accumulate={n}")
    r = syslab("run", str(ref), timeout=240)
    assert r.returncode == 0, r.stderr
    ckpt = tmp_path / "run.ckpt"
    path = long_script(tmp_path / "par", f'parallel="data" checkpoint="{ckpt}" checkpoint_every=25')
    e = dict(os.environ, SYSLAB_MPI_TIMEOUT="3")
    proc = subprocess.Popen(MPI + ["--enable-recovery", "-n", str(n), SYSLAB_BIN, "run", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
    try:
        wait_for(ckpt.exists)
        os.kill(wait_for(lambda: rank_pid(proc, victim)), signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert f"rank {victim} stopped answering" in err
    assert not (tmp_path / "par" / "model.slm").exists()   # the script stopped at the error
    assert leftovers(str(path)) == []
    r = mpirun(n, "run", str(path))
    assert r.returncode == 0, r.stderr
    assert f"resumed from {ckpt}" in r.stdout
    assert (tmp_path / "par" / "model.slm").read_bytes() == (tmp_path / "ref" / "model.slm").read_bytes()
    assert (tmp_path / "par" / "losses.csv").read_text() == (tmp_path / "ref" / "losses.csv").read_text()


def test_killed_worker_is_an_error_and_nothing_is_left(syslab_bin, tmp_path):
    # long enough (half a minute on a quiet 2-core machine) that the kill lands inside the training
    path = long_script(tmp_path / "w", 'parallel="data" workers=3', epochs=300)
    e = dict(os.environ, SYSLAB_MPI_TIMEOUT="3", SYSLAB_OVERSUBSCRIBE="1")
    proc = subprocess.Popen([SYSLAB_BIN, "run", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=e)
    try:
        workers = lambda: [p for p in descendants(proc.pid) if " worker" in command(p)]
        victim = wait_for(lambda: len(workers()) == 2 and workers()[0])
        below = {p: command(p) for p in descendants(proc.pid)}   # the runtime's daemon and the workers
        time.sleep(1)   # inside the training
        os.kill(victim, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert "stopped answering" in err and "rank " in err
    assert not (tmp_path / "w" / "model.slm").exists()
    assert any("orted" in c for c in below.values())
    wait_for(lambda: not any(running(p) for p in below), timeout=10)


# --------------------------------------------------------- serial, no MPI

def test_serial_accumulation_and_checkpoints_need_no_mpi(syslab_bin, tmp_path):
    out = subprocess.run(["ldd", SYSLAB_BIN], capture_output=True, text=True).stdout
    assert "libmpi" not in out
    path = long_script(tmp_path / "s", f'accumulate=2 checkpoint="{tmp_path}/s.ckpt" checkpoint_every=500')
    e = dict(os.environ, SYSLAB_MPI_MODULE=str(tmp_path / "no-such-module.so"))
    r = syslab("run", str(path), env=e, timeout=240)
    assert r.returncode == 0, r.stderr
    par = tmp_path / "p.syslab"
    par.write_text(MODELS["mlp"][0] + 'm = copy base\nh = train m d parallel="data" workers=2\n')
    r = syslab("run", str(par), env=e)
    assert r.returncode != 0 and "cannot load the MPI module" in r.stderr


def test_a_call_in_parentheses_reaches_the_workers(syslab_bin, tmp_path):
    """the workers run the call's own source, which ended with the ')' around it"""
    path = tmp_path / "b.syslab"
    path.write_text('t = (allreduce_bench sizes=[0.001, 0.1] repeats=2 workers=2)\nprint t.ranks\n')
    r = syslab("run", str(path), env=dict(os.environ, SYSLAB_MPI_TIMEOUT="5"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[2, 2]"


# ------------------------------------------------------- from a notebook

def test_notebook_interrupt_stops_every_rank_at_one_step(syslab_bin, kernel, tmp_path):
    """an interrupt of the kernel (rank 0) reaches the workers with the
    step's losses: every rank stops after the same step, without its update,
    the workers end and the kernel goes on; the checkpoint of the last step
    made, resumed in one process with accumulate=2, ends where the
    uninterrupted run ends"""
    from conftest import run
    km, kc = kernel
    content, _ = run(kc, LONG.split("h = train")[0] + "base = copy m\n")
    assert content["status"] == "ok", content
    call = f'h = train m d epochs=2 batch=8 lr=0.02 optimizer=adamw checkpoint="{tmp_path}/int.ckpt" checkpoint_every=1'
    msg_id = kc.execute(call + ' parallel="data" workers=2')
    pid = km.provisioner.process.pid
    wait_for(lambda: (tmp_path / "int.ckpt").exists(), timeout=120)   # training, past its first step
    workers = [p for p in descendants(pid) if " worker" in command(p)]
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=120)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["ename"] == "Interrupt", reply["content"]
    wait_for(lambda: workers and not any(running(p) for p in workers), timeout=30)
    content, outputs = run(kc, "m = copy base\n" + call + " accumulate=2\n"
                           f'save m "{tmp_path}/resumed.slm"\nr = copy base\n'
                           "h = train r d epochs=2 batch=8 lr=0.02 optimizer=adamw accumulate=2\n"
                           f'save r "{tmp_path}/whole.slm"', timeout=300)
    assert content["status"] == "ok", content
    assert "resumed from" in "".join(m["content"].get("text", "") for m in outputs)
    assert (tmp_path / "resumed.slm").read_bytes() == (tmp_path / "whole.slm").read_bytes()


def test_allreduce_bench_stops_at_an_interrupt(syslab_bin, kernel):
    """allreduce_bench moves nothing alone; with workers each run is a real
    transfer (minutes for a thousand repeats here): an interrupt stops it
    within a second, nothing is assigned, and the workers end"""
    km, kc = kernel
    msg_id = kc.execute("v = allreduce_bench sizes=[50, 50, 50] repeats=1000 workers=2")
    pid = km.provisioner.process.pid
    wait_for(lambda: any(" worker" in command(p) for p in descendants(pid)), timeout=120)
    workers = [p for p in descendants(pid) if " worker" in command(p)]
    time.sleep(2)   # past the spawn, into the timed transfers
    sent = time.monotonic()
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=60)
    stopped = time.monotonic() - sent
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["ename"] == "Interrupt", reply["content"]
    assert stopped < 1.0, f"stopped {stopped:.2f} s after the interrupt"
    wait_for(lambda: not any(running(p) for p in workers), timeout=30)
    from conftest import run
    content, _ = run(kc, "v")
    assert content["status"] == "error" and content["ename"] == "NameError", content
