"""Gymnasium environments over the C market environments (vulpes/env.h) through the flat C API:
a VectorEnv of n envs on the CPU (numpy views of the library's buffers) or on CUDA (PyTorch
tensors over the device buffers through DLPack, no copy), and a single-env gymnasium.Env for
Gymnasium's env checker and single-env code."""
import ctypes

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from . import _dlpack, _lib

__all__ = ["CEnv", "VectorEnv", "VulpesEnv"]

_BUFFERS = ("window", "portfolio", "bar", "reward", "done", "actions", "features")
_TIME_LEFT = 6  # portfolio entry: (window_end - t) / episode_bars (docs/env.md)


def _override_list(overrides):
    """"key=value" strings from a mapping or a list of them."""
    if overrides is None:
        return []
    if isinstance(overrides, dict):
        out = []
        for k, v in overrides.items():
            if isinstance(v, bool):
                v = "true" if v else "false"
            out.append(f"{k}={v}")
        return out
    return [str(o) for o in overrides]


class CEnv:
    """The C envs of one vp_api_env handle: their settings (info) and buffers (numpy arrays on the
    CPU; on CUDA, torch tensors over device memory). Used by VectorEnv; close() frees them."""

    def __init__(self, config=None, overrides=None, num_envs=0, span="train", device="cpu"):
        L = _lib.lib()
        arr, n = _lib.strings(_override_list(overrides))
        self._h = ctypes.c_void_p()
        _lib.check(L.vp_api_env_open(_lib.opt(config), arr, n, span.encode(), device.encode(), int(num_envs or 0),
                                     ctypes.byref(self._h)))
        self.info = {}
        v = ctypes.c_int64()
        for k in ("n_envs", "window", "n_features", "n_portfolio", "n_branches", "branch_size0", "branch_size1",
                  "branch_size2", "branch_size3", "episode_bars", "device", "device_id", "span_begin", "span_end",
                  "n_bars"):
            _lib.check(L.vp_api_env_info(self._h, k.encode(), ctypes.byref(v)))
            self.info[k] = int(v.value)
        self.cuda = bool(self.info["device"])
        self.buffers = {name: self._buffer(name) for name in _BUFFERS}

    def _buffer(self, name):
        L = _lib.lib()
        dtype, ndim = ctypes.c_int(), ctypes.c_int()
        shape = (ctypes.c_int64 * 3)()
        ptr = L.vp_api_env_buffer(self._h, name.encode(), ctypes.byref(dtype), ctypes.byref(ndim), shape)
        if not ptr:
            _lib.check(1)
        shp = tuple(shape[: ndim.value])
        is_int = dtype.value == 1
        if self.cuda:
            import torch

            return torch.from_dlpack(_dlpack.capsule(ptr, shp, is_int, True, self.info["device_id"], self))
        ctype = ctypes.c_int32 if is_int else ctypes.c_float
        return np.ctypeslib.as_array((ctype * int(np.prod(shp))).from_address(ptr)).reshape(shp)

    def reset(self, seed=-1):
        _lib.check(_lib.lib().vp_api_env_reset(self._h, -1 if seed is None else int(seed)))

    def step(self):
        _lib.check(_lib.lib().vp_api_env_step(self._h))

    def close(self):
        if getattr(self, "_h", None):
            self.buffers = {}
            _lib.lib().vp_api_env_close(self._h)
            self._h = None

    def __del__(self):
        self.close()


def _spaces(info):
    K, F, P = info["window"], info["n_features"], info["n_portfolio"]
    obs = gym.spaces.Dict({
        "window": gym.spaces.Box(-np.inf, np.inf, (K, F), np.float32),
        "portfolio": gym.spaces.Box(-np.inf, np.inf, (P,), np.float32),
    })
    act = gym.spaces.MultiDiscrete([info[f"branch_size{b}"] for b in range(info["n_branches"])])
    return obs, act


class VectorEnv(gym.vector.VectorEnv):
    """num_envs market environments stepping in lock-step in the C library, as training makes them:
    the config file `config` (None: the defaults) with `overrides` ({"key": value} or ["key=value"]),
    on the config's data (a CSV file or a synth: market) over `span` (train, val, test or all), on
    device "cpu", "cuda" or "auto".

    Observations are {"window": [n, K, F] feature rows t-K+1..t, "portfolio": [n, P]}; actions are
    [n, 4] choices of MultiDiscrete(3, 4, 3, 3) (direction, size, take-profit, stop-loss). An env
    whose episode ends restarts in the same step (autoreset mode SAME_STEP): the reward and the
    termination belong to the old episode, the observation to the new one. Ruin terminates; the end
    of the episode window truncates. On the CPU the arrays are numpy (views of the library's buffers
    with copy=False, overwritten by the next step); on CUDA they are torch tensors on the GPU."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, config=None, overrides=None, num_envs=0, span="train", device="cpu", copy=True):
        self._c = CEnv(config, overrides, num_envs, span, device)
        self.num_envs = self._c.info["n_envs"]
        self.single_observation_space, self.single_action_space = _spaces(self._c.info)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.cuda = self._c.cuda
        self.device = "cuda" if self.cuda else "cpu"
        self.copy = copy
        self.episode_bars = self._c.info["episode_bars"]

    @property
    def buffers(self):
        """The library's buffers: window, portfolio, bar, reward, done, actions, features."""
        return self._c.buffers

    def _obs(self):
        b = self._c.buffers
        if not self.copy:
            return {"window": b["window"], "portfolio": b["portfolio"]}
        if self.cuda:
            return {"window": b["window"].clone(), "portfolio": b["portfolio"].clone()}
        return {"window": b["window"].copy(), "portfolio": b["portfolio"].copy()}

    def reset(self, *, seed=None, options=None):
        if isinstance(seed, (list, tuple)):
            seed = seed[0]
        if seed is not None:
            self._np_random, self._np_random_seed = gym.utils.seeding.np_random(seed)
        self._c.reset(seed)
        return self._obs(), {}

    def step(self, actions):
        b = self._c.buffers
        if self.cuda:
            import torch

            # the window's last step, read before the step overwrites the portfolio
            last = torch.round(b["portfolio"][:, _TIME_LEFT] * self.episode_bars) == 1
            b["actions"].copy_(torch.as_tensor(actions, dtype=torch.int32).reshape(self.num_envs, -1))
            torch.cuda.synchronize()  # PyTorch's stream has read and written the buffers before the C step
        else:
            last = np.rint(b["portfolio"][:, _TIME_LEFT] * self.episode_bars) == 1
            np.copyto(b["actions"], np.asarray(actions, dtype=np.int32).reshape(self.num_envs, -1))
        self._c.step()
        done = b["done"] > 0
        truncated = done & last
        terminated = done & ~last
        reward = b["reward"].clone() if self.cuda else b["reward"].copy()
        return self._obs(), reward, terminated, truncated, {}

    def close_extras(self, **kwargs):
        self._c.close()


class VulpesEnv(gym.Env):
    """One market environment on the CPU as a gymnasium.Env (a VectorEnv of one env): observations
    {"window": [K, F], "portfolio": [P]}, actions MultiDiscrete(3, 4, 3, 3). The C env restarts an
    ended episode at once, so the observation returned with terminated or truncated is already the
    next episode's first; reset() restarts episode 0 of the seeded stream."""

    metadata = {"render_modes": []}

    def __init__(self, config=None, overrides=None, span="train"):
        self._v = VectorEnv(config, overrides, 1, span, "cpu", copy=True)
        self.observation_space = self._v.single_observation_space
        self.action_space = self._v.single_action_space

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        obs, info = self._v.reset(seed=seed)
        return {k: v[0] for k, v in obs.items()}, info

    def step(self, action):
        obs, r, term, trunc, info = self._v.step(np.asarray(action).reshape(1, -1))
        return {k: v[0] for k, v in obs.items()}, float(r[0]), bool(term[0]), bool(trunc[0]), info

    def close(self):
        self._v.close()
