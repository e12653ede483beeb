"""vulpes.export_onnx: onnxruntime runs the exported network with the C forward's outputs (1e-5),
at batch sizes and tau counts other than the export's."""
import numpy as np
import onnxruntime as ort

import vulpes


def test_onnx_matches_the_c_forward(checkpoint, tmp_path):
    path = vulpes.export_onnx(checkpoint, tmp_path / "net.onnx")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["window", "portfolio", "taus"]
    assert [o.name for o in sess.get_outputs()] == ["q", "log_probs", "quantiles"]
    with vulpes.CModel(checkpoint) as m:
        cfg = m.config
        rng = np.random.default_rng(11)
        for batch, n_taus in [(1, 8), (9, 3)]:
            w = np.clip(rng.standard_normal((batch, cfg["window"], cfg["n_features"])), -5, 5).astype(np.float32)
            p = rng.uniform(-1, 1, (batch, cfg["n_portfolio"])).astype(np.float32)
            t = rng.uniform(0.01, 0.99, (batch, n_taus)).astype(np.float32)
            q, lp, qu = sess.run(None, {"window": w, "portfolio": p, "taus": t})
            c = m.forward(w, p, t)
            assert q.shape == (batch, 13) and qu.shape == (batch, n_taus, 13)
            assert np.abs(q - c["q"]).max() <= 1e-5
            assert np.abs(lp - c["log_probs"]).max() <= 1e-5
            assert np.abs(qu - c["quantiles"]).max() <= 1e-5
