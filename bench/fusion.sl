# Eager against fused execution (docs/performance.md, "Fusion and buffer planning"):
#   build/syslab run bench/fusion.sl
# The last lines of bench/systems.sl, plus the image transformer with its
# attention left op by op.
print "== eager against fused"
print (fusion_bench (model mlp hidden=[256, 128]) batch=128 steps=20)
print (fusion_bench (model transformer depth=2 width=64 heads=2) batch=128 steps=10)
print (fusion_bench (model transformer depth=2 width=64 heads=2) batch=128 steps=10 attention=false)
m = lm small context=256
print (fusion_bench m batch=4 context=128 steps=3)
