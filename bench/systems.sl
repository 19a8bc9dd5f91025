# Full-size systems tables for docs/performance.md (CPU, 2 cores):
#   build/syslab run bench/systems.sl
# The presets' memory from their configuration alone, the small preset
# benchmarked over contexts and warm-ups, its profile, its predicted against
# measured peak memory, and eager against fused execution.
print "== memory of the presets, batch 4, training with AdamW, budget 80GB"
print (memory_predict presets=["small", "medium", "large", "xl", "2.7B"] contexts=[128, 256, 512, 1024] batch=4 run=train budget="80GB")
print "== the same against this machine's MemAvailable"
print (memory_predict presets=["small", "medium", "large", "xl", "2.7B"] contexts=[128, 256] batch=4 run=train)
print "== small: benchmark, batch 4"
print (lm_bench presets=["small"] contexts=[128, 256] warmups=[0, 1, 5] steps=3 batch=4)
m = lm small context=256
print "== small: predicted against measured peak, batch 4, context 128 and 256"
print (memory_check m batch=4 context=128)
print (memory_check m batch=4 context=256)
print "== small: profile, batch 4, context 128"
p = profile m batch=4 context=128 steps=2
print p.by_op
print p.gemm
print p.attention
print "== small: bf16 against fp32, batch 4, context 128"
print (lm_bench presets=["small"] contexts=[128] warmups=[1] steps=3 batch=4 precision=bf16)
print (memory_check (precision m bf16) batch=4 context=128)
print "== eager against fused"
print (fusion_bench (model mlp hidden=[256, 128]) batch=128 steps=20)
print (fusion_bench (model transformer depth=2 width=64 heads=2) batch=128 steps=10)
print (fusion_bench m batch=4 context=128 steps=3)
