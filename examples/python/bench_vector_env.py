#!/usr/bin/env python3
"""Env steps per second of vulpes.VectorEnv through Gymnasium's API (reset, then step with random
actions made where the envs live: numpy on the CPU, a CUDA tensor on the GPU), for comparison
with the C bench (`vulpes bench env`).

    python examples/python/bench_vector_env.py --device cuda --num-envs 4096 --steps 500"""
import argparse
import os
import time

import numpy as np

import vulpes

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=os.path.join(HERE, "..", "eurusd.yaml"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--num-envs", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()
    envs = vulpes.VectorEnv(args.config, num_envs=args.num_envs, device=args.device, copy=False)
    envs.reset(seed=1)
    n, nvec = envs.num_envs, envs.single_action_space.nvec
    if envs.cuda:
        import torch

        hi = torch.as_tensor(nvec, device="cuda")

        def actions():
            return (torch.rand((n, len(nvec)), device="cuda") * hi).to(torch.int32)
    else:
        rng = np.random.default_rng(0)

        def actions():
            return rng.integers(0, nvec, size=(n, len(nvec)), dtype=np.int32)
    for _ in range(args.warmup):
        envs.step(actions())
    t0 = time.perf_counter()
    for _ in range(args.steps):
        envs.step(actions())
    dt = time.perf_counter() - t0
    print(f"VectorEnv on {envs.device}: {n} envs x {args.steps} steps in {dt:.3f} s = {n * args.steps / dt:,.0f} "
          f"env steps/s ({dt / args.steps * 1e6:.0f} us per step call)")
    envs.close()


if __name__ == "__main__":
    main()
