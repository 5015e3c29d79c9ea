# Dumps what torch.compile generates for layer norm at one shape, and times it
# (CUDA events, median of 20 after 3 warm-ups, launch gap hidden by a spin).
import os, sys, torch, torch.nn.functional as F
rows, cols, dt, res = int(sys.argv[1]), int(sys.argv[2]), getattr(torch, sys.argv[3]), sys.argv[4] == "res"
torch.manual_seed(0)
x = torch.randn(rows, cols, device="cuda", dtype=dt)
r = torch.randn(rows, cols, device="cuda", dtype=dt)
w = torch.randn(cols, device="cuda", dtype=dt)
b = torch.randn(cols, device="cuda", dtype=dt)
if res:
    def fn(x, r, w, b):
        h = x + r
        return h, F.layer_norm(h, (cols,), w, b, 1e-5)
    args = (x, r, w, b)
    nbytes = 4 * rows * cols * x.element_size()
else:
    def fn(x, w, b):
        return F.layer_norm(x, (cols,), w, b, 1e-5)
    args = (x, w, b)
    nbytes = 2 * rows * cols * x.element_size()
c = torch.compile(fn, fullgraph=True)
for _ in range(3):
    c(*args)
torch.cuda.synchronize()
ts = []
for _ in range(20):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(2_000_000)
    s.record(); c(*args); e.record()
    torch.cuda.synchronize()
    ts.append(s.elapsed_time(e))
ts.sort()
us = ts[len(ts) // 2] * 1e3
print(f"torch.compile {sys.argv[1:]} {us:.1f} us {nbytes / us / 1e3:.0f} GB/s")
