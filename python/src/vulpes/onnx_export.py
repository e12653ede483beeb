"""A checkpoint's network as an ONNX model (vulpes.export_onnx)."""
import torch

from .model import load

__all__ = ["export_onnx"]


class _Exported(torch.nn.Module):
    """VulpesNet with taus always given, so the graph has the three outputs."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, window, portfolio, taus):
        return self.net(window, portfolio, taus)


def export_onnx(checkpoint, path, batch=1, n_taus=8, opset=17):
    """Writes the network of `checkpoint` to the ONNX file `path`: inputs window [B, K, F], portfolio
    [B, P] and taus [B, N] (float32; B and N dynamic, exported at batch and n_taus), outputs q
    [B, A], log_probs [B, A, Z] and quantiles [B, N, A]. Returns path."""
    net = load(checkpoint)
    c = net.config
    args = (torch.zeros(batch, c["window"], c["n_features"]), torch.zeros(batch, c["n_portfolio"]),
            torch.full((batch, n_taus), 0.5))
    dyn = {"window": {0: "batch"}, "portfolio": {0: "batch"}, "taus": {0: "batch", 1: "n_taus"},
           "q": {0: "batch"}, "log_probs": {0: "batch"}, "quantiles": {0: "batch", 1: "n_taus"}}
    torch.onnx.export(_Exported(net), args, str(path), input_names=["window", "portfolio", "taus"],
                      output_names=["q", "log_probs", "quantiles"], dynamic_axes=dyn, opset_version=opset,
                      dynamo=False)
    return str(path)
