#!/usr/bin/env python3
"""The PyTorch reference of `vulpes bench attn`: the same attention shapes through
torch.nn.functional.scaled_dot_product_attention, timed the same way.

q, k, v, dout are FP32 [B, L, NH * D] tensors, viewed as [B, NH, L, D] (the layout a model has
after its projections, as vulpes reads them); scale 1 / sqrt(D), causal where the shape is. Each
SDPA backend is timed on its own where it accepts FP32 (memory-efficient, math; flash attention
takes only half precision) beside "auto", PyTorch's own choice. Forward: the SDPA call;
forward+backward: the call then torch.autograd.grad for q, k and v (no accumulation into .grad).
Each is validated first (out and the gradients of the first sequence against a float64 reference),
then timed as --iters calls captured in one CUDA graph (eagerly when capture fails), one warm-up
launch, median of 5 launches between CUDA events (bench/torch_timing.py). TF32 is off: FP32
products, as vulpes does. With --device cpu (a smoke check), B is divided by 256 and the host
clock times eager calls.

`--vulpes FILE` reads `vulpes bench attn --json FILE`: its shapes (else the default ones below,
those of bench/bench_attn.c) and its times; the ratio torch/vulpes is PyTorch's ms over vulpes's
(above 1, vulpes is faster). FLOPs as vulpes counts them: 4 B NH Lq Lk D forward, 3.5 times that
forward+backward, causal halved. Prints a table and JSON lines.

Usage: python3 bench/torch_attn.py [--vulpes attn.jsonl] [--json out.jsonl] [--backends auto,efficient,math]
                                   [--iters 20] [--device cpu]
"""
import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from torch_timing import read_vulpes, time_launches  # noqa: E402  (bench/, this script's folder)

# (batch, heads, L, D, causal, what): bench/bench_attn.c's SHAPES
SHAPES = [(8192, 4, 8, 16, 0, "encoder, 8 tokens"), (8192, 4, 16, 32, 0, "encoder, 16 tokens"),
          (8192, 4, 32, 32, 0, "encoder, 32 tokens"), (8192, 4, 64, 16, 0, "encoder, 64 tokens"),
          (8192, 4, 64, 64, 0, "encoder, 64 x D 64"), (8192, 2, 64, 64, 1, "encoder, causal"),
          (512, 4, 192, 32, 1, "decision transformer"), (256, 2, 192, 64, 1, "decision transformer, D 64")]
TOL_FWD, TOL_BWD = 2e-5, 2e-4  # as bench/bench_attn.c validates vulpes (norm-wise relative)


def sdpa_context(backend):
    """A context manager that restricts SDPA to `backend` ("auto": PyTorch chooses)."""
    if backend == "auto":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel({"efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH,
                        "flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend])


def make_case(c, dev):
    """The inputs of a case: q, k, v (of bases requiring grad) and dout, [B, NH, L, D] views of [B, L, NH * D]."""
    B, NH, L, D = c["batch"], c["heads"], c["lq"], c["dim"]
    g = torch.Generator(device=dev).manual_seed(0xa77e)

    def rand(lk, grad):
        x = (torch.rand(B, lk, NH * D, generator=g, device=dev) * 2 - 1).requires_grad_(grad)
        return x.view(B, lk, NH, D).transpose(1, 2)
    return rand(L, True), rand(c["lk"], True), rand(c["lk"], True), rand(L, False)


def reference(q, k, v, dout, causal, scale):
    """out and (dq, dk, dv) of the first sequence in float64, by the plain formula."""
    q0, k0, v0, g0 = (x[:1].detach().double().requires_grad_() for x in (q, k, v, dout))
    s = (q0 @ k0.transpose(-1, -2)) * scale
    if causal:
        s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), float("-inf"))
    out = torch.softmax(s, dim=-1) @ v0
    grads = torch.autograd.grad(out, (q0, k0, v0), g0.detach())
    return out.detach(), grads


def rel(a, b):
    """||a - b|| / ||b|| in float64."""
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-300))


def time_host(fn, iters):
    """ms per call on the host clock (CPU smoke runs): one warm-up, median of 5."""
    fn()
    per = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        per.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(per), ""


def run_case(c, backend, dev, iters):
    """(fwd ms, fwd+bwd ms, rel err forward, rel err backward, note) of one case on one backend."""
    q, k, v, dout = make_case(c, dev)
    causal, scale = bool(c["causal"]), 1.0 / math.sqrt(c["dim"])
    with sdpa_context(backend):
        def fwd():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)

        def fwd_bwd():
            return torch.autograd.grad(fwd(), (q, k, v), dout)
        # validate first
        out = fwd()
        grads = fwd_bwd()
        ro, rg = reference(q, k, v, dout, causal, scale)
        ef = rel(out[:1].detach(), ro)
        eb = max(rel(g[:1], r) for g, r in zip(grads, rg))
        del out, grads
        if dev == "cuda":
            ms_f, note_f, gf = time_launches(lambda: fwd(), iters, False)
            del gf
            ms_b, note_b, gb = time_launches(lambda: fwd_bwd(), iters, False)
            del gb
            note = "; ".join(n for n in (note_f, note_b) if n)
        else:
            (ms_f, _), (ms_b, _) = time_host(lambda: fwd().detach(), iters), time_host(fwd_bwd, iters)
            note = "host clock, eager"
    del q, k, v, dout
    if dev == "cuda":
        torch.cuda.empty_cache()
    return ms_f, ms_b, ef, eb, note


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vulpes", default=None, help="vulpes bench attn --json output: its shapes and times")
    ap.add_argument("--json", default=None, help="append JSON lines here")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--backends", default="auto,efficient,math", help="SDPA backends to time (auto: PyTorch's choice)")
    ap.add_argument("--iters", type=int, default=20, help="calls per timed launch")
    a = ap.parse_args()
    dev = a.device
    if dev == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_attn.py: no CUDA device (--device cpu runs the smoke check)")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if a.vulpes:
        cases = [r for r in read_vulpes(a.vulpes, "attn")]
        if not cases:
            sys.exit(f"torch_attn.py: {a.vulpes} has no \"bench\":\"attn\" line")
    else:
        div = 256 if dev == "cpu" else 1
        cases = [dict(batch=max(B // div, 1), heads=NH, lq=L, lk=L, dim=D, causal=cz, shape=w, fwd_ms=None,
                      fwdbwd_ms=None) for B, NH, L, D, cz, w in SHAPES]
    name = torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    js = open(a.json, "a") if a.json else None
    print(f"PyTorch {torch.__version__} on {name}: scaled_dot_product_attention, FP32, {a.iters} calls per launch")
    print(f"{'shape':<28} {'backend':<9} {'B':>6} {'NH':>3} {'L':>4} {'D':>4} {'cau':>3} {'fwd ms':>9} {'TFLOP/s':>8} "
          f"{'f+b ms':>9} {'TFLOP/s':>8} {'rel err':>8} {'fwd t/v':>8} {'f+b t/v':>8}  note")
    rc = 0
    for c in cases:
        flops = 4.0 * c["batch"] * c["heads"] * c["lq"] * c["lk"] * c["dim"] * (0.5 if c["causal"] else 1.0)
        for backend in a.backends.split(","):
            try:
                ms_f, ms_b, ef, eb, note = run_case(c, backend, dev, a.iters)
            except Exception as e:  # noqa: BLE001  (a backend refusing a shape must not hide the others)
                print(f"{c.get('shape', ''):<28} {backend:<9} failed: {type(e).__name__}: {str(e).splitlines()[0]}")
                continue
            ok = ef <= TOL_FWD and eb <= TOL_BWD
            if not ok:
                note = f"FAILED validation (forward {ef:.1e}, backward {eb:.1e}); " + note
                rc = 1
            vf, vb = c.get("fwd_ms"), c.get("fwdbwd_ms")
            rf, rb = (ms_f / vf if vf else None), (ms_b / vb if vb else None)
            print(f"{c.get('shape', ''):<28} {backend:<9} {c['batch']:>6} {c['heads']:>3} {c['lq']:>4} {c['dim']:>4} "
                  f"{c['causal']:>3} {ms_f:>9.4f} {flops / ms_f * 1e-9:>8.3f} {ms_b:>9.4f} "
                  f"{3.5 * flops / ms_b * 1e-9:>8.3f} {max(ef, eb):>8.1e} {(f'{rf:.2f}' if rf else '-'):>8} "
                  f"{(f'{rb:.2f}' if rb else '-'):>8}  {note}")
            rec = dict(bench="torch_attn", backend=backend, device=name, shape=c.get("shape"), batch=c["batch"],
                       heads=c["heads"], lq=c["lq"], lk=c["lk"], dim=c["dim"], causal=c["causal"], iters=a.iters,
                       fwd_ms=ms_f, fwdbwd_ms=ms_b, fwd_tflops=flops / ms_f * 1e-9,
                       fwdbwd_tflops=3.5 * flops / ms_b * 1e-9, rel_err_fwd=ef, rel_err_bwd=eb, vulpes_fwd_ms=vf,
                       vulpes_fwdbwd_ms=vb, torch_over_vulpes_fwd=rf, torch_over_vulpes_fwdbwd=rb, note=note,
                       torch=torch.__version__)
            if js:
                js.write(json.dumps(rec) + "\n")
                js.flush()
    if js:
        js.close()
    if any(c.get("fwd_ms") for c in cases):
        print("t/v = PyTorch ms / vulpes ms (`vulpes bench attn`): above 1, vulpes is faster")
    sys.exit(rc)


if __name__ == "__main__":
    main()
