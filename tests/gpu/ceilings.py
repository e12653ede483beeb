#!/usr/bin/env python3
"""Measures the GPU ceilings docs/perf.md quotes, with PyTorch on the GPU machine:
device-to-device copy bandwidth (bytes read + written), large square GEMM rates in
FP32, TF32 and BF16 on random data, and PyTorch's own rate on the learner GEMM shapes
of `vulpes bench gemm` (same layouts, same timing method: a CUDA graph of 20 products,
median of 5 launches). Prints a table and one JSON line per figure."""
import json
import statistics

import torch

REPS, ITERS = 5, 20
SHAPES = [(65536, 256, 548), (524288, 256, 128), (524288, 64, 256), (196608, 256, 256), (8192, 256, 256)]


def graph_ms(fn, iters=ITERS, reps=REPS):
    """Milliseconds per call of fn: a graph of `iters` calls, median of `reps` launches."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(iters):
            fn()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / iters)
    return statistics.median(times)


def eager_ms(fn, iters=ITERS, reps=REPS):
    """Milliseconds per call of fn issued eagerly: `iters` calls between two events."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / iters)
    return statistics.median(times)


def emit(rows, what, **kw):
    kw = {"figure": what, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, **kw}
    rows.append(kw)
    print(json.dumps(kw), flush=True)


def main():
    torch.manual_seed(0)
    rows = []
    # copy bandwidth: 4 GiB f32 copied device to device, counting bytes read + written
    n = 1 << 30
    src = torch.rand(n, device="cuda")
    dst = torch.empty_like(src)
    # eagerly (the driver copies with a kernel), in a graph (a memcpy node may go to a
    # copy engine), and as an element-wise kernel (src + 0 written to dst)
    for how, ms in (("copy_ eager", eager_ms(lambda: dst.copy_(src), iters=10)),
                    ("copy_ in graph", graph_ms(lambda: dst.copy_(src), iters=10)),
                    ("add kernel in graph", graph_ms(lambda: torch.add(src, 0.0, out=dst), iters=10))):
        emit(rows, "copy " + how, bytes=2 * 4 * n, ms=ms, tb_per_s=2 * 4 * n / ms / 1e9)
    del src, dst
    # large square products on random data
    for prec in ("fp32", "tf32", "bf16"):
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        dt = torch.bfloat16 if prec == "bf16" else torch.float32
        a = torch.randn(8192, 8192, device="cuda", dtype=dt)
        b = torch.randn(8192, 8192, device="cuda", dtype=dt)
        c = torch.empty(8192, 8192, device="cuda", dtype=dt)
        ms = graph_ms(lambda: torch.mm(a, b, out=c), iters=10)
        emit(rows, "gemm 8192^3", precision=prec, ms=ms, tflops=2 * 8192**3 / ms / 1e9)
        del a, b, c
    # PyTorch on the learner shapes, layouts of a linear layer (bf16 products write bf16)
    for prec in ("tf32", "bf16"):
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        dt = torch.bfloat16 if prec == "bf16" else torch.float32
        for m, k, n in SHAPES:
            x = torch.rand(m, k, device="cuda", dtype=dt) * 2 - 1
            w = torch.rand(n, k, device="cuda", dtype=dt) * 2 - 1
            dy = torch.rand(m, n, device="cuda", dtype=dt) * 2 - 1
            for layout, fn, (M, N, K) in (
                ("fwd", lambda: x @ w.t(), (m, n, k)),
                ("dX", lambda: dy @ w, (m, k, n)),
                ("dW", lambda: dy.t() @ x, (n, k, m)),
            ):
                ms = graph_ms(fn)
                emit(rows, "torch learner gemm", precision=prec, layout=layout, m=M, n=N, k=K, ms=ms,
                     tflops=2 * M * N * K / ms / 1e9)
            del x, w, dy
            torch.cuda.empty_cache()
    # table
    print(f"\n{'figure':<24} {'precision':<9} {'layout':<6} {'M N K':<22} {'ms':>9} {'rate':>14}")
    for r in rows:
        mnk = f"{r['m']} {r['n']} {r['k']}" if "m" in r else ""
        rate = f"{r['tb_per_s']:.2f} TB/s" if "tb_per_s" in r else f"{r['tflops']:.1f} TFLOP/s"
        print(f"{r['figure']:<24} {r.get('precision', ''):<9} {r.get('layout', ''):<6} {mnk:<22} {r['ms']:>9.4f} {rate:>14}")


if __name__ == "__main__":
    main()
