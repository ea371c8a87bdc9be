import torch
n = 1 << 28
x = torch.rand(n, device="cuda", dtype=torch.float32)
y = torch.empty_like(x)
def t(fn, reps=20):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn(); torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts)//2]
c = t(lambda: y.copy_(x)); r = t(lambda: x.sum())
print(f"torch copy 1 GiB: {c:.3f} ms = {2*4*n/c/1e9:.2f} TB/s (read+write); torch.sum: {r:.3f} ms = {4*n/r/1e9:.2f} TB/s")
