"""The four workloads this page compiles and measures, small enough to read.

    python snippets/pytorch_compile_stack/models.py     # builds each one at a tiny size, checks shapes

The measurement scripts (scripts/measure/pytorch_compile_stack/*.py) import these
classes, so the page shows exactly the code that was timed.
"""
# --8<-- [start:imports]
import torch
import torch.nn as nn
import torch.nn.functional as F
# --8<-- [end:imports]


# --8<-- [start:gpt2]
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        if d_model % n_head:
            raise ValueError(f"d_model={d_model} must be a multiple of n_head={n_head}")
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)   # one GEMM for q, k and v
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        # (B, T, C) -> (B, heads, T, head_dim): views and transposes, no copies yet
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class GPT2Block(nn.Module):
    """Pre-LayerNorm transformer block as in GPT-2: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, d_model: int = 768, n_head: int = 12):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
# --8<-- [end:gpt2]


# --8<-- [start:mlp]
class LayerNormMLP(nn.Module):
    """x + fc2(gelu(fc1(layer_norm(x)))): two GEMMs with normalization and activation around them."""

    def __init__(self, d_model: int = 1024, hidden: int = 4096):
        super().__init__()
        self.ln = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, hidden)
        self.fc2 = nn.Linear(hidden, d_model)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))
# --8<-- [end:mlp]


# --8<-- [start:conv]
class ConvBlock(nn.Module):
    """ResNet basic block: conv-BN-ReLU, conv-BN, add the input, ReLU (run in eval mode)."""

    def __init__(self, channels: int = 128):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))
# --8<-- [end:conv]


# --8<-- [start:pointwise]
def pointwise_chain(x, bias, residual):
    """Seven elementwise ops: eager runs seven kernels, each reading and writing the whole tensor."""
    y = F.gelu(x + bias, approximate="tanh")
    y = y * 0.5 + residual
    y = torch.clamp(y, -4.0, 4.0)
    return y * torch.sigmoid(y)
# --8<-- [end:pointwise]


# --8<-- [start:helpers]
def randomize_norms(model: nn.Module, generator=None) -> nn.Module:
    """Give BatchNorm/LayerNorm non-trivial statistics and affine weights, so that the
    correctness check cannot pass by accident with the identity defaults (mean 0, var 1)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
                m.weight.copy_(1 + 0.1 * torch.randn(m.weight.shape, generator=generator))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=generator))
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=generator))
                m.running_var.copy_(1 + 0.2 * torch.rand(m.running_var.shape, generator=generator))
    return model
# --8<-- [end:helpers]


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(2, 16, 64)
    print("gpt2 block  ", tuple(GPT2Block(64, 4)(x).shape))
    print("mlp         ", tuple(LayerNormMLP(64, 256)(x).shape))
    img = torch.randn(2, 8, 16, 16)
    print("conv block  ", tuple(randomize_norms(ConvBlock(8)).eval()(img).shape))
    print("pointwise   ", tuple(pointwise_chain(x, torch.randn(64), torch.randn_like(x)).shape))
