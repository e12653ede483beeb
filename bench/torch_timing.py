"""Timing shared by the PyTorch references (torch_step.py, torch_collect.py, torch_ppo.py, ...), the
method of `vulpes bench`: the work `iters` times per launch, captured in one CUDA graph unless
eager, one warm-up launch, then the median of 5 launches between CUDA events; and the reader of
the vulpes bench's JSON lines they compare with."""
import json
import statistics

import torch


def time_launches(fn, iters, eager):
    """(ms per call of fn, note): fn() called iters times per launch. Without `eager` the calls
    are captured in one CUDA graph; when capture fails they are timed eagerly and the note says
    so. Returns the graph too, so the caller can drop it before freeing memory."""
    note, graph = "", None
    if not eager:
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(iters):
                    fn()
        except Exception as e:  # noqa: BLE001  (reported, then timed without the graph)
            graph, note = None, f"graph capture failed ({type(e).__name__}); timed eagerly"
            torch.cuda.synchronize()
    run = graph.replay if graph else (lambda: [fn() for _ in range(iters)])
    run()
    torch.cuda.synchronize()
    per = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        per.append(a.elapsed_time(b) / iters)
    return statistics.median(per), note, graph


def read_vulpes(path, bench, what=None):
    """The JSON lines of `vulpes bench BENCH --json` in file path whose "bench" is `bench` (and,
    when given, whose "what" is `what`), in file order; lines that are not JSON are skipped."""
    out = []
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if r.get("bench") == bench and (what is None or r.get("what") == what):
                out.append(r)
    return out
