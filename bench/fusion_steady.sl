# Steady-state inference of the small models with more steps than
# bench/fusion.sl, for the cost of buffer planning (docs/performance.md):
#   build/syslab run bench/fusion_steady.sl
print (fusion_bench (model mlp hidden=[256, 128]) batch=128 steps=300)
print (fusion_bench (model transformer depth=2 width=64 heads=2) batch=128 steps=60)
print (fusion_bench (model transformer depth=2 width=64 heads=2) batch=128 steps=60 attention=false)
