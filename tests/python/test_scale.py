"""Scale-out on MPI (Open MPI, loopback only): a script's searches spread
over mpirun's ranks give the serial study; a worker killed with SIGKILL has
its trial re-run elsewhere and the study completes; kill -9 of the
coordinator, then the same command again, resumes from the journal to the
serial table; a notebook's search with workers=2 starts its workers from
the kernel and gives the serial study.

Studies are compared through their journals (parameters in binary64 with 17
digits, exact), without the times."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import SYSLAB_BIN, syslab

MPIRUN = shutil.which("mpirun")
if MPIRUN is None:
    pytest.skip("mpirun not found: install openmpi-bin (make test does)", allow_module_level=True)

# --oversubscribe: more ranks than this machine's cores; loopback only;
# --allow-run-as-root for containers that run as root
MPI = [MPIRUN, "--oversubscribe", "--allow-run-as-root", "--mca", "btl", "self,vader,tcp",
       "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]

SEARCH = """s = search trials=TRIALS sampler=SAMPLER seed=7 WORKERS journal=JOURNAL GRID {
  x = suggest "x" float (-3) 3
  k = suggest "k" int 1 4
  c = suggest "c" categorical ["a", "b"]
  sleep SLEEP
  objective (x - 1) ** 2 + k
}
print s.best_value
"""
GRID = 'x=[-1, 0, 0.5, 2] k=[1, 3] c=["a", "b"]'


def script(tmp_path, sampler="random", trials=12, sleep=0.02, workers=0, name="study.jsonl"):
    journal = tmp_path / name
    code = (SEARCH.replace("TRIALS", str(trials)).replace("SAMPLER", sampler).replace("SLEEP", str(sleep))
            .replace("WORKERS", f"workers={workers}" if workers else "")
            .replace("GRID", GRID if sampler == "grid" else "").replace("JOURNAL", json.dumps(str(journal))))
    path = tmp_path / (name + ".syslab")
    path.write_text(code)
    return path, journal


def read_journal(path):
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert "syslab_study" in lines[0]
    return [{k: v for k, v in line.items() if k != "seconds"} for line in lines[1:] if "trial" in line]


def serial(tmp_path, **kw):
    d = tmp_path / "serial"
    d.mkdir(exist_ok=True)
    path, journal = script(d, **kw)
    r = syslab("run", str(path))
    assert r.returncode == 0, r.stderr
    return read_journal(journal), r.stdout


def mpirun(n, *args, env=None, recovery=False, **kw):
    e = dict(os.environ, SYSLAB_MPI_TIMEOUT="3", **(env or {}))
    cmd = MPI + (["--enable-recovery"] if recovery else []) + ["-n", str(n), SYSLAB_BIN, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=e, **kw)


@pytest.mark.parametrize("sampler", ["random", "grid"])
def test_three_ranks_equal_serial(syslab_bin, tmp_path, sampler):
    want, out = serial(tmp_path, sampler=sampler)
    path, journal = script(tmp_path, sampler=sampler)
    r = mpirun(3, "run", str(path))
    assert r.returncode == 0, r.stderr
    assert read_journal(journal) == want
    assert r.stdout == out  # rank 0 alone prints, and prints what the serial run prints


def test_distributed_tpe_is_reproducible(syslab_bin, tmp_path):
    runs = []
    for i in range(2):
        d = tmp_path / str(i)
        d.mkdir()
        path, journal = script(d, sampler="tpe", trials=14, sleep=0.01)
        r = mpirun(3, "run", str(path))
        assert r.returncode == 0, r.stderr
        runs.append(read_journal(journal))
    assert runs[0] == runs[1]
    assert len(runs[0]) == 14


def rank_pid(root_pid, rank):
    """the pid of the syslab process of a given rank under mpirun root_pid"""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if b"syslab" in cmd and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env and b"run" in cmd:
            return int(pid)
    return None


def wait_for_trials(journal, n, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if journal.exists() and sum('"trial"' in l for l in journal.read_text().splitlines()) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"fewer than {n} trials in {journal}")


def test_killed_worker_trial_runs_elsewhere(syslab_bin, tmp_path):
    want, _ = serial(tmp_path, trials=10, sleep=0.3)
    path, journal = script(tmp_path, trials=10, sleep=0.3)
    e = dict(os.environ, SYSLAB_MPI_TIMEOUT="2")
    proc = subprocess.Popen(MPI + ["--enable-recovery", "-n", "3", SYSLAB_BIN, "run", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
    wait_for_trials(journal, 2)
    victim = rank_pid(proc.pid, 2)
    assert victim, "rank 2 not found"
    os.kill(victim, signal.SIGKILL)  # in the middle of a trial: they take 0.3 s and run back to back
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert "worker 2 stopped answering" in err
    assert read_journal(journal) == want


def test_kill_9_coordinator_then_resume(syslab_bin, tmp_path):
    want, _ = serial(tmp_path, trials=16, sleep=0.3)
    path, journal = script(tmp_path, trials=16, sleep=0.3)
    proc = subprocess.Popen(MPI + ["-n", "3", SYSLAB_BIN, "run", str(path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_trials(journal, 3)
    os.kill(rank_pid(proc.pid, 0), signal.SIGKILL)
    proc.wait(timeout=60)  # mpirun ends the job when a rank dies
    done = read_journal(journal)
    assert 3 <= len(done) < 16
    assert [t["trial"] for t in done] == list(range(len(done)))  # a prefix of the study, in order
    r = mpirun(3, "run", str(path))
    assert r.returncode == 0, r.stderr
    assert f"resuming from {journal}: {len(done)} finished trials" in r.stdout
    assert read_journal(journal) == want


def test_unshippable_variable_named_before_any_trial(syslab_bin, tmp_path):
    path = tmp_path / "q.syslab"
    path.write_text("""old = search trials=2 sampler=random { x = suggest "x" float 0 1
  objective x }
s = search trials=3 sampler=random workers=2 {
  x = suggest "x" float 0 1
  y = old.best_value
  objective x
}""")
    r = syslab("run", str(path))
    assert r.returncode != 0
    assert "the variable 'old' cannot be shipped to the workers: a study cannot leave this process" in r.stderr
    assert "0 finished trials" in r.stderr


def serial_and_two_workers(tmp_path, code, stem):
    """the standard output of a script whose search runs serially, then on two workers"""
    outs = []
    for workers in ("", "workers=2"):
        path = tmp_path / f"{stem}{len(outs)}.syslab"
        path.write_text(code.replace("WORKERS", workers))
        r = syslab("run", str(path))
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    return outs


def test_quantised_model_ships_to_workers(syslab_bin, tmp_path):
    code = """data = dataset synthetic train=200 test=50 features=8 classes=3 seed=1
q = quantize_model (model mlp data=data hidden=[16] seed=2) format=integer width=8 frac=4
s = search trials=4 sampler=random seed=5 WORKERS {
  lr = suggest "lr" float 0.01 0.1
  m = copy q
  h = train m data epochs=1 lr=lr batch=32
  objective (evaluate m data).accuracy
}
print (select s.trials columns=["number", "lr", "value"])
"""
    outs = serial_and_two_workers(tmp_path, code, "q")
    assert outs[0] == outs[1]


def test_language_model_in_bf16_ships_to_workers(syslab_bin, tmp_path):
    """a language model travels with its context and a model with its
    precision mode: each trial on a worker trains the bf16 language model
    the serial search trains, to the same losses"""
    code = """l = precision (lm vocab=64 d_model=16 d_ff=32 layers=1 heads=2 context=16 seed=1) bf16
s = search trials=4 sampler=random seed=5 WORKERS {
  lr = suggest "lr" float 0.001 0.01
  m = copy l
  h = lm_train m steps=3 batch=2 lr=lr every=3
  objective h.loss[0]
}
print (select s.trials columns=["number", "state", "lr", "value"])
"""
    outs = serial_and_two_workers(tmp_path, code, "l")
    assert outs[0].count("complete") == 4, outs[0]
    assert outs[0] == outs[1]


def run_cell(kc, code, timeout=120):
    """executes code; returns (stdout text, error or None)"""
    msg_id = kc.execute(code)
    out, error = [], None
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        t, c = msg["msg_type"], msg["content"]
        if t == "stream" and c["name"] == "stdout":
            out.append(c["text"])
        elif t == "error":
            error = c["evalue"]
        elif t == "status" and c["execution_state"] == "idle":
            return "".join(out), error


def test_notebook_search_with_two_workers(syslab_bin, kernel, tmp_path):
    km, kc = kernel
    body = """{
  x = suggest "x" float (-3) 3
  k = suggest "k" int 1 4
  m = copy base
  h = train m data epochs=1 lr=0.05 * k batch=32
  objective (evaluate m data).accuracy + x * 0
}"""
    setup = ("data = dataset synthetic train=200 test=50 features=8 classes=3 seed=1\n"
             "base = model mlp data=data hidden=[16] seed=2\n")
    out, err = run_cell(kc, setup)
    assert err is None, err
    out, err = run_cell(kc, f"s = search trials=6 sampler=random seed=3 workers=2 {body}\nprint s.trials")
    assert err is None, err
    par = out
    out, err = run_cell(kc, f"s1 = search trials=6 sampler=random seed=3 {body}\nprint s1.trials")
    assert err is None, err
    strip = lambda text: [line.split()[:-1] for line in text.splitlines()]  # without the seconds column
    assert strip(par) == strip(out)
    assert len(strip(out)) == 8  # header, 6 trials, row count


REPORT_NBS = ["tests/report/report_test.ipynb", "tests/report/second.ipynb", "notebooks/example.ipynb"]


def strip_timing(md):
    import re
    return re.sub(r'<span class="syslab-timing">[^<]*</span>', "T", md)


def test_parallel_reports_equal_the_serial_report(syslab_bin, tmp_path):
    from conftest import ROOT
    nbs = [str(ROOT / p) for p in REPORT_NBS]
    outs = {}
    for name, cmd in [("serial", [SYSLAB_BIN, "report"]), ("j2", [SYSLAB_BIN, "report", "-j", "2"]),
                      ("mpi", MPI + ["-n", "3", SYSLAB_BIN, "report"])]:
        out = tmp_path / name
        r = subprocess.run(cmd + nbs + ["-o", str(out), "--no-pdf", "--no-cache"], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == str(out / "report.md")  # printed once, by rank 0
        outs[name] = out
    want = strip_timing((outs["serial"] / "report.md").read_text())
    for name in ("j2", "mpi"):
        assert strip_timing((outs[name] / "report.md").read_text()) == want, name
        for fig in (outs["serial"] / "figures").iterdir():
            assert (outs[name] / "figures" / fig.name).read_bytes() == fig.read_bytes()
        assert sorted(p.name for p in (outs[name] / "notebooks").iterdir()) == \
            sorted(p.name for p in (outs["serial"] / "notebooks").iterdir())


# ------------------------------------------------- starting workers (workers=N)

def descendants(pid):
    """the pids of every process below pid"""
    children = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            stat = open(f"/proc/{p}/stat").read()
        except OSError:
            continue
        children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(p))
    found, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def running(pid):
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def command(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def wait_for(predicate, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError("timed out")


SLOW = """s = search trials=20 sampler=random seed=1 workers=2 {
  x = suggest "x" float 0 1
  sleep SLEEP
  objective x
}
print s.best_value
"""


def test_more_workers_than_slots_refused_at_once(syslab_bin, tmp_path):
    """workers=1000 on a 2-core machine started processes until the runtime
    ran out of descriptors (552 ORTE_ERROR_LOG lines), then hung"""
    path = tmp_path / "many.syslab"
    path.write_text(SLOW.replace("workers=2", "workers=1000").replace("SLEEP", "0"))
    t = time.time()
    r = syslab("run", str(path), timeout=30)
    assert r.returncode != 0
    assert time.time() - t < 5
    assert "1000 workers need 1000 slots, and MPI has" in r.stderr
    assert "SYSLAB_OVERSUBSCRIBE=1" in r.stderr
    assert "ORTE_ERROR_LOG" not in r.stderr
    # oversubscribed, the descriptors limit them
    import resource
    limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    r = syslab("run", str(path), timeout=30, env=dict(os.environ, SYSLAB_OVERSUBSCRIBE="1"), preexec_fn=limit)
    assert r.returncode != 0
    assert "1000 workers need about 4064 file descriptors in the MPI runtime (4 each), over this process's limit " \
           "of 256 (ulimit -n): give workers=48 or fewer" in r.stderr


def test_spawn_that_cannot_finish_is_an_error(syslab_bin, tmp_path):
    """a spawn whose workers never all start (here: the runtime's daemon
    stopped once it has begun starting them) hung for ever"""
    path = tmp_path / "stuck.syslab"
    path.write_text(SLOW.replace("SLEEP", "0.1"))
    proc = subprocess.Popen([SYSLAB_BIN, "run", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, SYSLAB_MPI_TIMEOUT="3"))
    below = []
    try:
        daemon = wait_for(lambda: next((p for p in descendants(proc.pid) if "orted" in command(p)), None))
        wait_for(lambda: descendants(daemon), timeout=30)  # it has begun starting workers
        below = descendants(proc.pid)
        os.kill(daemon, signal.SIGSTOP)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        for p in below:
            if running(p):
                os.kill(p, signal.SIGKILL)
    assert proc.returncode != 0
    assert "starting 2 workers did not finish within 4 s, so the MPI runtime was stopped" in err


def test_killed_syslab_leaves_no_runtime_behind(syslab_bin, tmp_path):
    """the runtime's daemon (orted) held the caller's output pipe, so a
    shell's $(...) around syslab waited for it after syslab was killed, and
    daemons could stay behind"""
    path = tmp_path / "killed.syslab"
    path.write_text(SLOW.replace("SLEEP", "2"))
    sh = subprocess.Popen(["sh", "-c", f'out=$("{SYSLAB_BIN}" run "{path}" 2>&1); echo returned'],
                          stdout=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: sum("syslab worker" in command(p) for p in descendants(sh.pid)) == 2)
        time.sleep(0.5)  # the workers are in their trials
        victim = next(p for p in descendants(sh.pid) if " run " in command(p))
        below = descendants(victim)
        assert any("orted" in command(p) for p in below)
        os.kill(victim, signal.SIGKILL)
        t = time.time()
        assert sh.stdout.readline() == "returned\n"
        assert time.time() - t < 0.5, f"$(...) returned {time.time() - t:.2f} s after syslab was killed"
        wait_for(lambda: not any(running(p) for p in below), timeout=5)
    finally:
        sh.kill()


def test_killed_worker_recovery_prints_no_runtime_noise(syslab_bin, tmp_path):
    """a worker's death printed Open MPI's "PMIX ERROR: BAD-PARAM" and a
    help text about a peer that disconnected"""
    path = tmp_path / "recover.syslab"
    path.write_text(SLOW.replace("trials=20", "trials=8").replace("SLEEP", "1"))
    proc = subprocess.Popen([SYSLAB_BIN, "run", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, SYSLAB_MPI_TIMEOUT="3"))
    try:
        workers = wait_for(lambda: [p for p in descendants(proc.pid) if "syslab worker" in command(p)][1:] or None)
        time.sleep(1.5)
        os.kill(workers[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "stopped answering; trial" in err
    for noise in ("PMIX ERROR", "ORTE_ERROR_LOG", "-----", "unexpectedly disconnected"):
        assert noise not in err, err
