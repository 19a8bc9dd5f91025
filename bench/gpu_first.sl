# The kernels' figures of the first GPU command, in three parts that
# bench/gpu_first.sh runs as three processes in its tables folder (so that
# a kernel that fails loses its own part alone, and the .csv files land
# there):
#   cd TABLES && (echo 'part = "roofs"'; cat ROOT/bench/gpu_first.sl) | syslab run -
# What the summary needs, in seconds of the device:
#   roofs      cuBLAS sgemm at n = 8192 and a 1 GiB device-to-device copy
#   bf16       bf16 products on the tensor cores: cuBLAS on pre-rounded
#              operands, and the linear layer as a bf16 model runs it
#   attention  the tensor-core attention, forward and forward+backward;
#              version 2 (registers) at head dims 128, 80 and 64
# PyTorch's rows of the same shapes come from bench/torch_gpu.py
# (TORCH_ROWS="roofs bf16 attention_bf16").
if (machine get="gpus") == 0 {
  print "no GPU here: the kernels were not benchmarked"
} else {
  if part == "roofs" {
    roofs = machine get="table"
    save roofs "machine.csv"
    print roofs
    print "== the float32 roof: cuBLAS sgemm, n = 8192"
    gemm = bench ["gemm_cublas"] sizes=[8192] reps=10 warmup=3
    save gemm "gemm.csv"
    print gemm
    print "== the bandwidth roof: a device-to-device copy"
    d2d = bench ["copy_cuda"] sizes=[268435456] reps=10 warmup=3
    save d2d "copy.csv"
    print d2d
  }
  if part == "bf16" {
    print "== bf16 products on the tensor cores: cuBLAS on pre-rounded operands; the linear layer as a bf16 model runs it"
    b16 = bench ["gemm_cublas_bf16", "linear_cuda_bf16"] sizes=[2048, 4096, 8192] reps=10 warmup=3
    save b16 "gemm_bf16.csv"
    print b16
  }
  if part == "attention" {
    print "== attention on the tensor cores, forward and forward+backward: bf16, batch 1, 16 heads, head dim 128"
    tc = bench ["attention_cuda_fused_bf16", "attention_cuda_fa2_bf16", "attention_cuda_fused_bf16_train", "attention_cuda_fa2_bf16_train"] sizes=[1024, 4096, 16384] batch=1 heads=16 dim=128 reps=10 warmup=3
    save tc "attention_bf16.csv"
    print tc
    print "== version 2, forward and forward+backward, at the 2.7B model's head dim, 80 (32 heads), and at 64"
    tc80 = bench ["attention_cuda_fa2_bf16", "attention_cuda_fa2_bf16_train"] sizes=[1024, 4096] batch=1 heads=32 dim=80 reps=10 warmup=3
    tc64 = bench ["attention_cuda_fa2_bf16", "attention_cuda_fused_bf16", "attention_cuda_fa2_bf16_train", "attention_cuda_fused_bf16_train"] sizes=[1024, 4096] batch=1 heads=16 dim=64 reps=10 warmup=3
    save tc80 "attention_bf16_d80.csv"
    save tc64 "attention_bf16_d64.csv"
    print tc80
    print tc64
  }
}
