# The CS336 systems tables on the GPU (bench/gpu_check.sh, step lm, runs
# this in its output folder, beside bench/torch_lm_gpu.py's PyTorch rows):
#   cd OUT && syslab run ROOT/bench/gpu_lm.sl
# `lm_bench` of the presets small to 2.7B on the device, float32 and bf16
# (the products on the tensor cores), forward and forward+backward, batch 4,
# each preset built once for both precisions; a row that does not fit the
# device is an OOM row with its predicted size, one that faults says why.
if (machine get="gpus") == 0 {
  print "no GPU here: the language models were not benchmarked on a GPU"
} else {
  presets = ["small", "medium", "large", "xl", "2.7B"]
  print "== lm_bench on the GPU, float32 and bf16"
  t = lm_bench presets=presets contexts=[128, 512] warmups=[1] steps=3 batch=4 device="gpu" precisions=["fp32", "bf16"]
  save t "lm.csv"
  print t
}
