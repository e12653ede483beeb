#!/usr/bin/env python3
"""A CleanRL-style PPO (ppo_multidiscrete.py's structure: one file, rollout buffers, GAE, clipped
surrogate, value clipping, entropy bonus) in PyTorch on vulpes's Gymnasium VectorEnv: observations
{"window": [K, F], "portfolio": [P]}, a MultiDiscrete(3, 4, 3, 3) action (direction, size,
take-profit, stop-loss) with one categorical head per branch.

    python examples/python/ppo_cleanrl.py --iterations 20
    python examples/python/ppo_cleanrl.py --device cuda --num-envs 1024   # the CUDA envs, DLPack

The envs restart an ended episode in the same step (SAME_STEP autoreset): a truncated step (the
episode window's end) bootstraps from the value of the observation returned, which is already the
next episode's, so truncations are treated as terminations here (CleanRL does the same)."""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

import vulpes

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=os.path.join(HERE, "..", "eurusd.yaml"), help="vulpes config (the market)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda: where the envs step and the network trains")
    ap.add_argument("--num-envs", type=int, default=16)
    ap.add_argument("--num-steps", type=int, default=64, help="steps per env per rollout")
    ap.add_argument("--iterations", type=int, default=10, help="rollouts + updates")
    ap.add_argument("--episode-bars", type=int, default=256)
    ap.add_argument("--lr", type=float, default=2.5e-4)
    ap.add_argument("--gamma", type=float, default=0.99)
    ap.add_argument("--gae-lambda", type=float, default=0.95)
    ap.add_argument("--num-minibatches", type=int, default=4)
    ap.add_argument("--update-epochs", type=int, default=4)
    ap.add_argument("--clip-coef", type=float, default=0.2)
    ap.add_argument("--ent-coef", type=float, default=0.01)
    ap.add_argument("--vf-coef", type=float, default=0.5)
    ap.add_argument("--max-grad-norm", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    return ap.parse_args()


def layer(i, o, std=np.sqrt(2), bias=0.0):
    lin = nn.Linear(i, o)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, bias)
    return lin


class Agent(nn.Module):
    def __init__(self, K, F, P, nvec):
        super().__init__()
        self.nvec = list(nvec)
        self.body = nn.Sequential(layer(K * F + P, 128), nn.Tanh(), layer(128, 128), nn.Tanh())
        self.actor = layer(128, sum(self.nvec), std=0.01)
        self.critic = layer(128, 1, std=1.0)

    def features(self, window, portfolio):
        return self.body(torch.cat([window.flatten(1), portfolio], 1))

    def get_value(self, window, portfolio):
        return self.critic(self.features(window, portfolio))

    def get_action_and_value(self, window, portfolio, action=None):
        h = self.features(window, portfolio)
        dists = [Categorical(logits=lg) for lg in torch.split(self.actor(h), self.nvec, dim=1)]
        if action is None:
            action = torch.stack([d.sample() for d in dists], 1)
        logp = torch.stack([d.log_prob(a) for d, a in zip(dists, action.T)], 1).sum(1)
        ent = torch.stack([d.entropy() for d in dists], 1).sum(1)
        return action, logp, ent, self.critic(h)


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    envs = vulpes.VectorEnv(args.config, {"env.episode_bars": args.episode_bars}, num_envs=args.num_envs,
                            device=args.device)
    K, F = envs.single_observation_space["window"].shape
    P = envs.single_observation_space["portfolio"].shape[0]
    agent = Agent(K, F, P, envs.single_action_space.nvec).to(dev)
    opt = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    T, N = args.num_steps, args.num_envs
    obs_w = torch.zeros((T, N, K, F), device=dev)
    obs_p = torch.zeros((T, N, P), device=dev)
    actions = torch.zeros((T, N, 4), dtype=torch.long, device=dev)
    logprobs, rewards, dones, values = (torch.zeros((T, N), device=dev) for _ in range(4))
    batch = T * N
    minibatch = batch // args.num_minibatches

    def to_t(x):
        return torch.as_tensor(x, device=dev, dtype=torch.float32)

    obs, _ = envs.reset(seed=args.seed)
    w, p = to_t(obs["window"]), to_t(obs["portfolio"])
    next_done = torch.zeros(N, device=dev)
    start, steps, ep_return, finished = time.time(), 0, torch.zeros(N, device=dev), []
    for it in range(1, args.iterations + 1):
        for t in range(T):
            obs_w[t], obs_p[t], dones[t] = w, p, next_done
            with torch.no_grad():
                a, lp, _, v = agent.get_action_and_value(w, p)
            actions[t], logprobs[t], values[t] = a, lp, v.flatten()
            obs, r, term, trunc, _ = envs.step(a if envs.cuda else a.cpu().numpy())
            rewards[t] = to_t(r)
            next_done = to_t(np.logical_or(term, trunc) if not envs.cuda else (term | trunc))
            w, p = to_t(obs["window"]), to_t(obs["portfolio"])
            ep_return += rewards[t]
            finished += ep_return[next_done > 0].tolist()
            ep_return *= 1 - next_done
            steps += N
        # GAE
        with torch.no_grad():
            next_value = agent.get_value(w, p).flatten()
            adv = torch.zeros_like(rewards)
            last = 0
            for t in reversed(range(T)):
                nonterminal = 1.0 - (next_done if t == T - 1 else dones[t + 1])
                nv = next_value if t == T - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * nv * nonterminal - values[t]
                adv[t] = last = delta + args.gamma * args.gae_lambda * nonterminal * last
            returns = adv + values
        bw, bp = obs_w.reshape(batch, K, F), obs_p.reshape(batch, P)
        ba, blp = actions.reshape(batch, 4), logprobs.reshape(batch)
        badv, bret, bval = adv.reshape(batch), returns.reshape(batch), values.reshape(batch)
        for _ in range(args.update_epochs):
            perm = torch.randperm(batch, device=dev)
            for s in range(0, batch, minibatch):
                mb = perm[s:s + minibatch]
                _, newlp, ent, newv = agent.get_action_and_value(bw[mb], bp[mb], ba[mb])
                ratio = (newlp - blp[mb]).exp()
                madv = (badv[mb] - badv[mb].mean()) / (badv[mb].std() + 1e-8)
                pg = torch.max(-madv * ratio, -madv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                newv = newv.flatten()
                v_clip = bval[mb] + (newv - bval[mb]).clamp(-args.clip_coef, args.clip_coef)
                v_loss = 0.5 * torch.max((newv - bret[mb]) ** 2, (v_clip - bret[mb]) ** 2).mean()
                loss = pg - args.ent_coef * ent.mean() + args.vf_coef * v_loss
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                opt.step()
        mean_ret = float(np.mean(finished[-100:])) if finished else float("nan")
        print(f"iteration {it}/{args.iterations}: {steps} env steps, {steps / (time.time() - start):.0f} steps/s, "
              f"policy loss {pg.item():.4f}, value loss {v_loss.item():.4f}, entropy {ent.mean().item():.3f}, "
              f"mean episode return {mean_ret:.4f} over {len(finished)} episodes", flush=True)
    envs.close()


if __name__ == "__main__":
    main()
