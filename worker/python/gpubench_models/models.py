"""The C++ engine's models (worker/engine/models.cc), layer for layer, with the
C++ modules' names, so that a C++ model's weights load here as they are
(tests/worker/aot_test.cc compares the two models' outputs on those weights).

Every constructor takes the workload's parameters with their defaults already
applied (the plan's, filled once by FillConfigDefaults; the worker passes them all).
Inputs: images [B, 3, S, S] float, tokens [B, T] int64, frames
[B, T, 3, S, S] float; outputs as the C++ models'.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

MODEL_WORKLOADS = ("mlp", "simple_cnn", "resnet18", "resnet50", "unet", "bilstm",
                   "cnn_lstm", "transformer")

MLP_HIDDEN = {"small": (10,), "medium": (128, 128), "large": (2048, 192)}


def _conv(cin, cout, kernel, stride, padding, bias):
    return nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, bias=bias)


class Mlp(nn.Module):
    def __init__(self, image_size, hidden, num_classes):
        super().__init__()
        width = 3 * image_size * image_size
        self.depth = len(hidden)
        for i, h in enumerate(hidden):
            setattr(self, "fc%d" % i, nn.Linear(width, h))
            width = h
        self.out = nn.Linear(width, num_classes)

    def forward(self, x):
        x = x.flatten(1)
        for i in range(self.depth):
            x = F.relu(getattr(self, "fc%d" % i)(x))
        return self.out(x)


class SimpleCnn(nn.Module):
    def __init__(self, image_size, num_classes):
        super().__init__()
        self.conv1 = _conv(3, 32, 3, 1, 1, True)
        self.conv2 = _conv(32, 64, 3, 1, 1, True)
        self.fc1 = nn.Linear(64 * (image_size // 4) * (image_size // 4), 128)
        self.fc2 = nn.Linear(128, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class ResidualBlock(nn.Module):
    """torchvision's BasicBlock, or its Bottleneck (stride on the 3x3: v1.5)."""

    def __init__(self, cin, planes, stride, bottleneck):
        super().__init__()
        out = planes * (4 if bottleneck else 1)
        self.bottleneck = bottleneck
        if bottleneck:
            self.conv1 = _conv(cin, planes, 1, 1, 0, False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = _conv(planes, planes, 3, stride, 1, False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.conv3 = _conv(planes, out, 1, 1, 0, False)
            self.bn3 = nn.BatchNorm2d(out)
        else:
            self.conv1 = _conv(cin, planes, 3, stride, 1, False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = _conv(planes, planes, 3, 1, 1, False)
            self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or cin != out:
            self.downsample = nn.Sequential(_conv(cin, out, 1, stride, 0, False),
                                            nn.BatchNorm2d(out))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        if self.bottleneck:
            y = F.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
        else:
            y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.downsample is None else self.downsample(x)))


class ResNet(nn.Module):
    """torchvision's resnet18 / resnet50, module names included."""

    def __init__(self, num_classes, bottleneck, blocks_per_stage):
        super().__init__()
        self.conv1 = _conv(3, 64, 7, 2, 3, False)
        self.bn1 = nn.BatchNorm2d(64)
        cin = 64
        for stage, blocks in enumerate(blocks_per_stage):
            planes = 64 << stage
            layer = nn.ModuleList()
            for i in range(blocks):
                layer.append(ResidualBlock(cin, planes, 2 if stage > 0 and i == 0 else 1,
                                           bottleneck))
                cin = planes * (4 if bottleneck else 1)
            setattr(self, "layer%d" % (stage + 1), layer)
        self.stages = len(blocks_per_stage)
        self.fc = nn.Linear(cin, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        for stage in range(self.stages):
            for block in getattr(self, "layer%d" % (stage + 1)):
                x = block(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class DoubleConv(nn.Module):
    """conv-BN-ReLU twice, as in milesial/Pytorch-UNet."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = _conv(cin, cout, 3, 1, 1, False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = _conv(cout, cout, 3, 1, 1, False)
        self.bn2 = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.relu(self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


class UpBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cin // 2, 2, stride=2)
        self.conv = DoubleConv(cin, cout)

    def forward(self, below, skip):
        x = self.up(below)
        dy = skip.size(2) - x.size(2)
        dx = skip.size(3) - x.size(3)
        if dx != 0 or dy != 0:
            x = F.pad(x, (dx // 2, dx - dx // 2, dy // 2, dy - dy // 2))
        return self.conv(torch.cat([skip, x], 1))


class UNet(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        widths = (64, 128, 256, 512, 1024)
        self.inc = DoubleConv(3, widths[0])
        for i in range(1, 5):
            setattr(self, "down%d" % i, DoubleConv(widths[i - 1], widths[i]))
        for i in range(4, 0, -1):
            setattr(self, "up%d" % (5 - i), UpBlock(widths[i], widths[i - 1]))
        self.outc = _conv(widths[0], num_classes, 1, 1, 0, True)

    def forward(self, x):
        skips = []
        x = self.inc(x)
        for i in range(1, 5):
            skips.append(x)
            x = getattr(self, "down%d" % i)(F.max_pool2d(x, 2))
        for i in range(1, 5):
            x = getattr(self, "up%d" % i)(x, skips[len(skips) - i])
        return self.outc(x)


class BiLstm(nn.Module):
    EMBEDDING, HIDDEN, LAYERS = 128, 256, 2

    def __init__(self, vocab_size, num_classes):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, self.EMBEDDING)
        self.lstm = nn.LSTM(self.EMBEDDING, self.HIDDEN, num_layers=self.LAYERS,
                            bidirectional=True, batch_first=True)
        self.fc = nn.Linear(2 * self.HIDDEN, num_classes)

    def forward(self, x):
        _, (h, _) = self.lstm(self.embedding(x))
        return self.fc(torch.cat([h[-2], h[-1]], 1))


class CnnLstm(nn.Module):
    WIDTHS, HIDDEN = (3, 32, 64, 128), 256

    def __init__(self, num_classes):
        super().__init__()
        w = self.WIDTHS
        for i in range(3):
            setattr(self, "conv%d" % (i + 1), _conv(w[i], w[i + 1], 3, 2, 1, False))
            setattr(self, "bn%d" % (i + 1), nn.BatchNorm2d(w[i + 1]))
        self.lstm = nn.LSTM(w[3], self.HIDDEN, batch_first=True)
        self.fc = nn.Linear(self.HIDDEN, num_classes)

    def forward(self, x):
        batch, time = x.shape[0], x.shape[1]
        x = x.flatten(0, 1)
        for i in range(1, 4):
            x = F.relu(getattr(self, "bn%d" % i)(getattr(self, "conv%d" % i)(x)))
        x = x.mean((2, 3)).view(batch, time, self.WIDTHS[3])
        out, _ = self.lstm(x)
        return self.fc(out[:, time - 1])


class TransformerBlock(nn.Module):
    """Pre-LN, fused qkv projection."""

    def __init__(self, hidden, heads, causal):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, t, h = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, h // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        y = x + self.proj(attended.transpose(1, 2).reshape(b, t, h))
        return y + self.fc2(F.gelu(self.fc1(self.ln2(y))))


class Transformer(nn.Module):
    def __init__(self, sequence_length, num_layers, hidden, heads, decoder, vocab_size,
                 num_classes):
        super().__init__()
        self.decoder = decoder
        self.embedding = nn.Embedding(vocab_size, hidden)
        self.positions = nn.Parameter(torch.randn(sequence_length, hidden) * 0.02)
        self.num_layers = num_layers
        for i in range(num_layers):
            setattr(self, "block%d" % i, TransformerBlock(hidden, heads, decoder))
        self.final_norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab_size if decoder else num_classes)

    def forward(self, x):
        x = self.embedding(x) + self.positions[: x.shape[1]]
        for i in range(self.num_layers):
            x = getattr(self, "block%d" % i)(x)
        x = self.final_norm(x)
        return self.head(x) if self.decoder else self.head(x.mean(1))


def create(workload, p):
    """The model of a workload; p holds its parameters, defaults applied:
    model_size, image_size, num_classes, sequence_length, num_layers,
    hidden_size, num_heads, decoder, vocab_size."""
    if workload == "mlp":
        if p["model_size"] not in MLP_HIDDEN:
            raise ValueError("model_size: must be small, medium or large")
        return Mlp(p["image_size"], MLP_HIDDEN[p["model_size"]], p["num_classes"])
    if workload == "simple_cnn":
        return SimpleCnn(p["image_size"], p["num_classes"])
    if workload == "resnet18":
        return ResNet(p["num_classes"], False, (2, 2, 2, 2))
    if workload == "resnet50":
        return ResNet(p["num_classes"], True, (3, 4, 6, 3))
    if workload == "unet":
        return UNet(p["num_classes"])
    if workload == "bilstm":
        return BiLstm(p["vocab_size"], p["num_classes"])
    if workload == "cnn_lstm":
        return CnnLstm(p["num_classes"])
    if workload == "transformer":
        return Transformer(p["sequence_length"], p["num_layers"], p["hidden_size"],
                           p["num_heads"], bool(p["decoder"]), p["vocab_size"],
                           p["num_classes"])
    raise ValueError("workload: not a built-in model: %r" % workload)


def sample_shape(workload, p):
    """One sample's shape (batch dimension not included) and whether it holds
    token ids (int64) rather than pixels (float)."""
    s, t = p["image_size"], p["sequence_length"]
    if workload in ("bilstm", "transformer"):
        return (t,), True
    if workload == "cnn_lstm":
        return (t, 3, s, s), False
    return (3, s, s), False


def parameter_count(model):
    """Trainable parameters, as the C++ engine counts them."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
