"""examples/python/ppo_cleanrl.py trains a PPO agent on the VectorEnv for 2 iterations: it exits 0
and reports both iterations with their env step counts and finite losses."""
import math
import os
import re
import subprocess
import sys


def test_ppo_example_two_iterations(root):
    script = os.path.join(root, "examples", "python", "ppo_cleanrl.py")
    p = subprocess.run([sys.executable, script, "--iterations", "2", "--num-envs", "8", "--num-steps", "32",
                        "--episode-bars", "16"], capture_output=True, text=True, timeout=300, cwd=root)
    assert p.returncode == 0, p.stderr
    lines = [line for line in p.stdout.splitlines() if line.startswith("iteration ")]
    assert len(lines) == 2
    for k, line in enumerate(lines, 1):
        m = re.match(rf"iteration {k}/2: (\d+) env steps, .* policy loss (\S+), value loss (\S+), entropy (\S+), "
                     r"mean episode return (\S+) over (\d+) episodes", line)
        assert m, line
        assert int(m.group(1)) == k * 8 * 32
        assert all(math.isfinite(float(m.group(g))) for g in (2, 3, 4, 5))
        # 16-bar episodes: every env finished 2 episodes per 32-step rollout
        assert int(m.group(6)) == k * 8 * 2
