# Models on the GPU against the same models on the CPU (docs/gpu.md,
# "Models on the GPU"), at sizes that run in a minute or two:
#   syslab run ROOT/bench/gpu_models.sl
# Each pair starts from the same weights (the GPU model is `to` of the CPU
# one), so the losses of a row agree within the tolerances of
# tests/unit/test_gpu_graph.c; the times are each device's.
if (machine get="gpus") == 0 {
  print "no GPU here: the models were not run on a GPU"
} else {
  data = dataset synthetic train=4096 test=1024 features=784 classes=10 seed=1
  print "== MLP 784-256-128-10, 2 epochs, batch 128, SGD"
  m = model mlp data=data hidden=[256, 128] seed=1
  g = to m gpu
  print (train m data epochs=2 batch=128 lr=0.05)
  print (train g data epochs=2 batch=128 lr=0.05)
  print (difference m (to g cpu) data)
  print "== image transformer, depth 2, width 64, 2 heads, attention op by op, 1 epoch, AdamW"
  t = model transformer data=data depth=2 width=64 heads=2 patch=7 seed=1
  tg = to t gpu
  print (train t data epochs=1 batch=128 optimizer="adamw" lr=0.001)
  print (train tg data epochs=1 batch=128 optimizer="adamw" lr=0.001)
  print "== the same image transformer in bf16: the products on the tensor cores, float32 sums"
  t0 = model transformer data=data depth=2 width=64 heads=2 patch=7 seed=1
  t16 = precision t0 bf16
  t16g = to t16 gpu
  print (train t16 data epochs=1 batch=128 optimizer="adamw" lr=0.001)
  print (train t16g data epochs=1 batch=128 optimizer="adamw" lr=0.001)
  print "== language model tiny, context 64, 20 AdamW steps on random tokens"
  l = lm tiny context=64 seed=1
  lg = to l gpu
  print (lm_train l steps=20 batch=8 context=64 every=10)
  print (lm_train lg steps=20 batch=8 context=64 every=10)
  print "== lm_bench on the GPU: forward and forward+backward, float32 and bf16 (tensor cores), one build a preset"
  print (lm_bench presets=["tiny", "small"] contexts=[128, 256] warmups=[1] steps=5 device="gpu" precisions=["fp32", "bf16"])
  print "== the device's memory by category: one training step of the small model"
  s = lm small context=128 device="gpu"
  mp = memory_profile s batch=4 context=128 run="train"
  print mp.device
  print (memory)
}
