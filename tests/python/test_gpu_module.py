"""The CUDA module (cuda/, built as syslab_cuda.so when nvcc is found): the
program holds no CUDA code and loads the module only when a GPU is asked
for; where the module is missing or cannot be used, what the user sees says
why (docs/gpu.md).

A fake module, compiled here against cuda/gpu.h, stands in for one with a
GPU: the loader's refusals are checked with it (a module of another version,
one that leaves an entry of its table empty), and, with a device it claims,
that each GPU benchmark case asks the module for its own kernel version by
name, whatever its row in the table, and that the machine's GPU rows and
`version` come from the module."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, SYSLAB_BIN

BUILD = pathlib.Path(SYSLAB_BIN).resolve().parent
MODULE = BUILD / "syslab_cuda.so"

# Every entry answers "no" unless the test's module sets it: the loader only
# checks that none is empty. Each call the module is asked is logged.
FAKE = r"""
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gpu.h"

static void logf_(const char *fmt, ...) {
  const char *path = getenv("FAKE_LOG");
  FILE *f = path ? fopen(path, "a") : NULL;
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

static const char *const kinds[] = {
  [SLG_GEMM_NAIVE] = "SLG_GEMM_NAIVE", [SLG_GEMM_TILED] = "SLG_GEMM_TILED", [SLG_GEMM_CUBLAS] = "SLG_GEMM_CUBLAS",
  [SLG_GEMM_CUBLAS_DIRECT] = "SLG_GEMM_CUBLAS_DIRECT", [SLG_ATTN_NAIVE] = "SLG_ATTN_NAIVE",
  [SLG_ATTN_FUSED] = "SLG_ATTN_FUSED", [SLG_ATTN_FUSED_TRAIN] = "SLG_ATTN_FUSED_TRAIN",
  [SLG_MXINT8_DEQUANT] = "SLG_MXINT8_DEQUANT", [SLG_COPY] = "SLG_COPY", [SLG_ATTN_NAIVE_TRAIN] = "SLG_ATTN_NAIVE_TRAIN",
  [SLG_ATTN_FUSED_V1] = "SLG_ATTN_FUSED_V1", [SLG_ATTN_FUSED_V1_TRAIN] = "SLG_ATTN_FUSED_V1_TRAIN",
  [SLG_GEMM_TILED_V1] = "SLG_GEMM_TILED_V1", [SLG_ATTN_FUSED_BF16] = "SLG_ATTN_FUSED_BF16",
  [SLG_ATTN_FUSED_BF16_TRAIN] = "SLG_ATTN_FUSED_BF16_TRAIN", [SLG_GEMM_CUBLAS_BF16] = "SLG_GEMM_CUBLAS_BF16",
  [SLG_LINEAR_BF16] = "SLG_LINEAR_BF16", [SLG_ATTN_FA2_BF16] = "SLG_ATTN_FA2_BF16",
  [SLG_ATTN_FA2_BF16_TRAIN] = "SLG_ATTN_FA2_BF16_TRAIN",
};

static int none(void) { return -1; }
static int one(void) { return 1; }
static const char *describe(void) { return "fake GPU, 1.0 GiB"; }
static int cases;
static void *case_new(int kind, int size, int batch, int heads, int dim, int causal, char *err, size_t errlen) {
  logf_("case_new %s %d", kind >= 0 && kind <= SLG_ATTN_FA2_BF16_TRAIN ? kinds[kind] : "?", size);
  cases++;
  return &cases;
}
static double case_run(void *c) { return 1e-3; }
static const char *case_error(void) { return ""; }
static size_t case_bytes(void *c) { return 0; }
static void case_free(void *c) { cases--; }
/* what the harness's check downloads: every float FAKE_FILL (0 unless set), so that the kernels, which compute
** nothing, pass their checks with all-zero operands and outputs, and fail them with ones */
static void *case_buffer(void *c, int i) { return &cases; }
static int download(void *host, const void *dev, size_t bytes, char *err, size_t errlen) {
  const char *v = getenv("FAKE_FILL");
  float x = v ? (float)atof(v) : 0;
  memset(host, 0, bytes);
  for (size_t i = 0; i < bytes / sizeof x; i++) memcpy((char *)host + i * sizeof x, &x, sizeof x);
  return 0;
}
static int machine(double *gflops, double *gbs) { *gflops = 123, *gbs = 45; return 0; }

const slG_Backend *slG_backend(void) {
  static slG_Backend t;
  logf_("slG_backend");
  t.version = VERSION;
  void (**entry)(void) = (void (**)(void))&t.device_count;
  size_t n = (sizeof t - ((char *)&t.device_count - (char *)&t)) / sizeof *entry;
  for (size_t i = 0; i < n; i++) entry[i] = (void (*)(void))none;
  t.describe = describe;
  if (DEVICE) t.device_count = one;
  t.case_new = case_new, t.case_run = case_run, t.case_error = case_error;
  t.case_bytes = case_bytes, t.case_free = case_free, t.machine = machine;
  t.case_buffer = case_buffer, t.download = download;
  if (EMPTY >= 0) entry[EMPTY] = NULL;
  return &t;
}
"""


def fake(tmp_path, name, version="SLG_BACKEND_VERSION", device=1, empty=-1, symbol=True):
    """a fake module compiled from FAKE; symbol=False: one without slG_backend"""
    cc = shutil.which("cc") or pytest.skip("no C compiler")
    src = tmp_path / f"{name}.c"
    text = FAKE if symbol else FAKE.replace("slG_backend(void)", "not_the_table(void)")
    src.write_text(f"#define VERSION {version}\n#define DEVICE {device}\n#define EMPTY {empty}\n" + text)
    out = tmp_path / f"{name}.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(out), str(src), f"-I{ROOT}"], check=True)
    return out


def run(code, **env):
    e = dict(os.environ)
    e.update({k: str(v) for k, v in env.items()})
    return subprocess.run([SYSLAB_BIN, "run", "-"], input=code, capture_output=True, text=True, env=e, timeout=300)


def gpu_line(**env):
    return run("print (version).gpu\n", **env).stdout.strip()


def test_the_program_holds_no_cuda_code(syslab_bin):
    """the CUDA runtime and cuBLAS are the module's; the program names none of their symbols, in either build"""
    if not shutil.which("nm"):
        pytest.skip("nm (binutils) is not installed")
    undefined = subprocess.run(["nm", "-u", SYSLAB_BIN], capture_output=True, text=True, check=True).stdout
    assert not [s for s in undefined.split() if "cuda" in s.lower()]
    symbols = subprocess.run(["nm", SYSLAB_BIN], capture_output=True, text=True, check=True).stdout
    runtime = re.findall(r" ((?:cuda[A-Z]|__cuda|cublas)\w*)$", symbols, re.M)
    assert not runtime, runtime[:10]
    needed = subprocess.run(["readelf", "-d", SYSLAB_BIN], capture_output=True, text=True).stdout
    assert "libcuda" not in needed and "libcudart" not in needed


def test_the_module_exports_its_table_alone(syslab_bin):
    if not MODULE.is_file():
        pytest.skip("this build has no CUDA module (no nvcc)")
    exported = subprocess.run(["nm", "-D", "--defined-only", str(MODULE)], capture_output=True, text=True,
                              check=True).stdout
    assert [line.split()[-1] for line in exported.splitlines()] == ["slG_backend"]
    # the module of this build is the one the program finds, and it says what the machine lacks
    why = gpu_line()
    assert why.startswith("no GPU") or "compute capability" in why
    assert "cannot be loaded" not in why and "built without CUDA" not in why


def test_a_module_that_cannot_be_loaded_says_why(syslab_bin, tmp_path):
    missing = tmp_path / "nowhere" / "syslab_cuda.so"
    why = gpu_line(SYSLAB_CUDA_MODULE=missing)
    assert why.startswith("no GPU: the CUDA module") and str(missing) in why and "No such file" in why, why
    # where a GPU is asked for, the error carries the same reason
    r = run("m = model mlp hidden=[8] device=gpu\n", SYSLAB_CUDA_MODULE=missing)
    assert r.returncode != 0 and "cannot be loaded" in r.stderr and "cpu runs everywhere" in r.stderr, r.stderr
    not_elf = tmp_path / "notes.txt"
    not_elf.write_text("not a module\n")
    assert "cannot be loaded" in gpu_line(SYSLAB_CUDA_MODULE=not_elf)
    no_table = gpu_line(SYSLAB_CUDA_MODULE=fake(tmp_path, "no_table", symbol=False))
    assert "slG_backend" in no_table, no_table


def test_a_module_of_another_version_or_with_a_hole_is_refused(syslab_bin, tmp_path):
    why = gpu_line(SYSLAB_CUDA_MODULE=fake(tmp_path, "old", version=999))
    assert re.search(r"is version 999, this program needs \d+", why), why
    why = gpu_line(SYSLAB_CUDA_MODULE=fake(tmp_path, "holed", empty=5))
    assert "leaves entry 5 of its table empty" in why, why
    r = run("r = bench gemm_cuda_tiled sizes=[64] reps=1\n", SYSLAB_CUDA_MODULE=fake(tmp_path, "holed2", empty=5))
    assert r.returncode != 0 and "runs on a GPU" in r.stderr and "leaves entry 5" in r.stderr, r.stderr


def test_the_module_is_loaded_only_when_a_gpu_is_asked_for(syslab_bin, tmp_path):
    log = tmp_path / "calls.log"
    module = fake(tmp_path, "counting")
    r = run("d = dataset synthetic train=64 test=16 features=8 classes=2\nm = model mlp data=d hidden=[8]\n"
            "h = train m d epochs=1 batch=16\nprint (evaluate m d).accuracy > 0\n", SYSLAB_CUDA_MODULE=module,
            FAKE_LOG=log)
    assert r.returncode == 0, r.stderr
    assert not log.exists(), log.read_text()
    assert run("print (version).gpu\n", SYSLAB_CUDA_MODULE=module, FAKE_LOG=log).stdout.strip() == "fake GPU, 1.0 GiB"
    assert log.read_text().splitlines() == ["slG_backend"]


def test_each_gpu_case_asks_for_its_own_kernel(syslab_bin, tmp_path):
    """by name, not by row: the table's GPU cases and cuda/gpu.h's versions"""
    cases = {
        "gemm_cuda_naive": "SLG_GEMM_NAIVE", "gemm_cuda_tiled": "SLG_GEMM_TILED", "gemm_cublas": "SLG_GEMM_CUBLAS",
        "gemm_cublas_direct": "SLG_GEMM_CUBLAS_DIRECT", "attention_cuda_naive": "SLG_ATTN_NAIVE",
        "attention_cuda_fused": "SLG_ATTN_FUSED", "attention_cuda_fused_train": "SLG_ATTN_FUSED_TRAIN",
        "mxint8_cuda_dequant": "SLG_MXINT8_DEQUANT", "copy_cuda": "SLG_COPY",
        "attention_cuda_naive_train": "SLG_ATTN_NAIVE_TRAIN", "attention_cuda_fused_v1": "SLG_ATTN_FUSED_V1",
        "attention_cuda_fused_v1_train": "SLG_ATTN_FUSED_V1_TRAIN", "gemm_cuda_tiled_v1": "SLG_GEMM_TILED_V1",
        "attention_cuda_fused_bf16": "SLG_ATTN_FUSED_BF16", "attention_cuda_fused_bf16_train": "SLG_ATTN_FUSED_BF16_TRAIN",
        "gemm_cublas_bf16": "SLG_GEMM_CUBLAS_BF16", "linear_cuda_bf16": "SLG_LINEAR_BF16",
        "attention_cuda_fa2_bf16": "SLG_ATTN_FA2_BF16", "attention_cuda_fa2_bf16_train": "SLG_ATTN_FA2_BF16_TRAIN",
    }
    log = tmp_path / "calls.log"
    listed = run('k = kernels\nprint (where k device "==" "gpu").nrows\n').stdout.strip()
    assert listed == str(len(cases)), listed   # every GPU case of the table is here
    names = ", ".join(f'"{n}"' for n in reversed(list(cases)))   # the order of the request, not of the table
    r = run(f"r = bench [{names}] sizes=[96] reps=2 warmup=1\nprint r.nrows\nprint (machine get=gpu_sgemm_gflops)\n"
            "print (machine get=gpus)\n", SYSLAB_CUDA_MODULE=fake(tmp_path, "device"), FAKE_LOG=log)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-3:] == [str(len(cases)), "123", "1"], r.stdout
    made = [line.split()[1:] for line in log.read_text().splitlines() if line.startswith("case_new")]
    # each case first at its check's size (1000 elements for the copies and decoders, 64 for the others), then timed
    check_size = {"mxint8_cuda_dequant": "1000", "copy_cuda": "1000"}
    assert made[:2 * len(cases)] == [[cases[n], size] for n in reversed(list(cases))
                                     for size in (check_size.get(n, "64"), "96")]


def test_a_gpu_case_is_checked_against_the_cpu_before_it_is_timed(syslab_bin, tmp_path):
    """the harness compares a GPU case's downloaded outputs with the CPU's reference on its downloaded operands:
    with every float 1, a product of 64 terms should be 64 and the fake's is 1; a copy of ones is right"""
    module, log = fake(tmp_path, "ones"), tmp_path / "calls.log"
    r = run("r = bench gemm_cuda_tiled sizes=[96] reps=2\n", SYSLAB_CUDA_MODULE=module, FAKE_FILL=1, FAKE_LOG=log)
    assert r.returncode != 0 and "gemm_cuda_tiled at size 96: C differs from its reference by 63" in r.stderr, r.stderr
    assert "tolerance" in r.stderr and "in its check at size 64: not timed" in r.stderr, r.stderr
    error = [line for line in r.stderr.splitlines() if "differs from its reference" in line]
    assert len(error) == 1 and error[0].count("gemm_cuda_tiled") == 1, r.stderr   # named once, by the caller
    assert [line for line in log.read_text().splitlines() if line.startswith("case_new")] == \
        ["case_new SLG_GEMM_TILED 64"]   # never set up for timing
    r = run("r = bench copy_cuda sizes=[96] reps=2\nprint r.nrows\n", SYSLAB_CUDA_MODULE=module, FAKE_FILL=1)
    assert r.returncode == 0 and r.stdout.split()[-1] == "1", r.stderr
