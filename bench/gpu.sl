# The GPU benchmarks of `make gpu-check` (bench/gpu_check.sh runs this in
# its output folder, so the .csv files land there):
#   cd OUT && syslab run ROOT/bench/gpu.sl
# Every CUDA kernel over the sizes of docs/gpu.md, each table saved as CSV
# for bench/gpu_summary.py, which sets them beside PyTorch's rows of the
# same run (bench/torch_gpu.py) and the machine's measured roofs.
if (machine get="gpus") == 0 {
  print (machine)
  print "no GPU here: the GPU benchmarks were not run"
} else {
  roofs = machine get="table"
  save roofs "machine.csv"
  print roofs
  print "== GEMM, float32, n x n times n x n"
  gemm = bench ["gemm_cuda_naive", "gemm_cuda_tiled_v1", "gemm_cuda_tiled", "gemm_cublas", "gemm_cublas_direct"] sizes=[1024, 2048, 4096, 8192] reps=10 warmup=3
  save gemm "gemm.csv"
  print (select gemm columns=["kernel", "size", "median_ms", "gflops"])
  print "== bf16 products on the tensor cores: cuBLAS on pre-rounded operands; the linear layer as a bf16 model runs it"
  b16 = bench ["gemm_cublas_bf16", "linear_cuda_bf16"] sizes=[2048, 4096, 8192] reps=10 warmup=3
  save b16 "gemm_bf16.csv"
  print b16
  print "== attention forward, batch 1, 16 heads, head dim 64, float32"
  fwd = bench ["attention_cuda_naive", "attention_cuda_fused_v1", "attention_cuda_fused"] sizes=[1024, 2048, 4096, 8192, 16384] batch=1 heads=16 dim=64 reps=10 warmup=3
  save fwd "attention_forward.csv"
  print fwd
  print "== attention forward, causal"
  fwdc = bench ["attention_cuda_naive", "attention_cuda_fused"] sizes=[1024, 4096, 16384] batch=1 heads=16 dim=64 causal=true reps=10 warmup=3
  save fwdc "attention_causal.csv"
  print fwdc
  print "== attention forward and backward"
  fb = bench ["attention_cuda_naive_train", "attention_cuda_fused_v1_train", "attention_cuda_fused_train"] sizes=[1024, 2048, 4096, 8192, 16384] batch=1 heads=16 dim=64 reps=10 warmup=3
  save fb "attention_train.csv"
  print fb
  print "== attention on the tensor cores, forward and forward+backward: bf16, batch 1, 16 heads, head dim 128"
  tc = bench ["attention_cuda_fused_bf16", "attention_cuda_fa2_bf16", "attention_cuda_fused_bf16_train", "attention_cuda_fa2_bf16_train"] sizes=[1024, 2048, 4096, 8192, 16384] batch=1 heads=16 dim=128 reps=10 warmup=3
  save tc "attention_bf16.csv"
  print tc
  print "== attention memory, the same shapes"
  print (attention_memory sizes=[1024, 2048, 4096, 8192, 16384] batch=1 heads=16 dim=64)
  print "== MXINT8 decoding against a device-to-device copy"
  mx = bench ["copy_cuda", "mxint8_cuda_dequant"] sizes=[16777216, 67108864, 268435456] reps=10 warmup=3
  save mx "mxint8.csv"
  print mx
  print (speedup mx baseline="copy_cuda" kernel="mxint8_cuda_dequant")
}
