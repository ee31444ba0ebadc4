//! The building blocks of both networks, each created under its reference
//! state-dict name (ARCHITECTURE.md §9 of the shared models), so PyTorch checkpoints
//! load one to one.
//!
//! Inputs are checked once by [`super::Model::forward`], so these use tch's panicking
//! ops: a panic here is a bug in the model, not bad input.

use tch::Tensor;
use tch::nn::{self, Module, ModuleT};

/// `(f - 1) / 2` padding: "same" output size for odd kernels.
fn conv(path: nn::Path, c_in: i64, c_out: i64, kernel: i64) -> nn::Conv3D {
    let config = nn::ConvConfig {
        padding: (kernel - 1) / 2,
        ..Default::default()
    };
    nn::conv3d(path, c_in, c_out, kernel, config)
}

/// A 1x1x1 conv (a per-voxel linear map with bias).
pub(crate) fn conv1(path: nn::Path, c_in: i64, c_out: i64) -> nn::Conv3D {
    conv(path, c_in, c_out, 1)
}

/// FLOPs (2 per multiply-add) of a conv over `cells` voxels.
pub(crate) fn conv_flops(c_in: i64, c_out: i64, kernel: i64, cells: i64) -> u64 {
    (2 * c_in * c_out * kernel.pow(3) * cells) as u64
}

/// A backbone layer.
#[derive(Debug)]
pub(crate) enum Layer {
    /// `relu(BN2(conv2(relu(BN1(conv1(x))))) + x)`.
    Residual(Box<ResidualBlock>),
    /// `leaky_relu(conv(x))`, weights `layer_i.0`.
    Plain { conv: nn::Conv3D, flops: u64 },
    /// A per-voxel LSTM over time, added back to its input.
    Lstm {
        /// `weight_ih_l0`, `weight_hh_l0`, `bias_ih_l0`, `bias_hh_l0`: the
        /// variables `nn::lstm` made, in the order libtorch's LSTM takes them.
        weights: Vec<Tensor>,
        size: i64,
        flops: u64,
    },
    /// A post-norm transformer encoder layer attending along one axis (or all).
    Transformer(Box<TransformerLayer>),
}

impl Layer {
    /// A conv layer of the conv backbone.
    pub(crate) fn conv(
        path: nn::Path,
        c_in: i64,
        width: i64,
        kernel: i64,
        residual: bool,
        dropout: f64,
        cells: i64,
    ) -> Self {
        if residual {
            let bn = |p| nn::batch_norm3d(p, width, Default::default());
            Self::Residual(Box::new(ResidualBlock {
                conv1: conv(&path / "conv1", width, width, kernel),
                bn1: bn(&path / "bn1"),
                conv2: conv(&path / "conv2", width, width, kernel),
                bn2: bn(&path / "bn2"),
                dropout,
                flops: 2 * conv_flops(width, width, kernel, cells),
                folded: None,
            }))
        } else {
            Self::Plain {
                conv: conv(&path / "0", c_in, width, kernel),
                flops: conv_flops(c_in, width, kernel, cells),
            }
        }
    }

    /// A per-voxel LSTM of width `size`.
    pub(crate) fn lstm(path: nn::Path, size: i64, cells: i64) -> Self {
        // Made for its variables (and, on CUDA, their cuDNN layout); the layer
        // calls libtorch's LSTM itself, to choose its training mode per call, so
        // the config's own `train` is never read.
        let _ = nn::lstm(&path, size, size, Default::default());
        let weights = ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
            .iter()
            .map(|name| path.get(name).expect("nn::lstm made this variable"))
            .collect();
        Self::Lstm {
            weights,
            size,
            // Two (4L x L) matrix products per voxel.
            flops: (2 * 2 * 4 * size * size * cells) as u64,
        }
    }

    /// Lays an LSTM's weights out again as one block of memory, which cuDNN
    /// needs to run them without copying them at every call. `nn::lstm` does
    /// this when it is built on CUDA; converting the weights to another
    /// precision gives each its own memory again. A no-op elsewhere.
    pub(crate) fn flatten_rnn_weights(&self) {
        let Self::Lstm { weights, size, .. } = self else {
            return;
        };
        let on_cudnn = weights[0].device().is_cuda() && tch::Cuda::cudnn_is_available();
        if on_cudnn {
            let _guard = tch::no_grad_guard();
            // 4 tensors per layer, LSTM mode 2, no projection, one layer,
            // batch-first, one direction: how `nn::lstm` built them.
            let _ = Tensor::internal_cudnn_rnn_flatten_weight(
                weights, 4, *size, 2, *size, 0, 1, true, false,
            );
        }
    }

    /// Whether the layer carries state.
    pub(crate) fn is_recurrent(&self) -> bool {
        matches!(self, Self::Lstm { .. })
    }

    /// FLOPs per sample (2 per multiply-add, elementwise work left out).
    pub(crate) fn flops(&self) -> u64 {
        match self {
            Self::Residual(r) => r.flops,
            Self::Plain { flops, .. } | Self::Lstm { flops, .. } => *flops,
            Self::Transformer(t) => t.flops,
        }
    }

    /// A one-line description.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Residual(r) => {
                let s = r.conv1.ws.size();
                let k = s[2];
                format!(
                    "residual block: 2x conv {k}x{k}x{k} {} -> {}, BatchNorm",
                    s[1], s[0]
                )
            }
            Self::Plain { conv, .. } => {
                let s = conv.ws.size();
                let k = s[2];
                format!("conv {k}x{k}x{k} {} -> {}, LeakyReLU", s[1], s[0])
            }
            Self::Lstm { size: s, .. } => {
                format!("per-voxel LSTM {s} -> {s}, residual")
            }
            Self::Transformer(t) => t.describe(),
        }
    }

    /// Applies a stateless layer to `(B, C, X, Y, Z)`; `train` puts BatchNorm in
    /// training mode (batch statistics, running averages updated) and turns on
    /// residual blocks' dropout.
    /// Folds a residual block's BatchNorms into its convolutions for
    /// inference (`on`), or drops the folded copies (`!on`, e.g. before the
    /// weights change). Training forwards never use them.
    pub(crate) fn fold_batch_norm(&mut self, on: bool) {
        if let Self::Residual(r) = self {
            r.folded = on.then(|| {
                let padding = (r.conv1.ws.size()[2] - 1) / 2;
                [
                    FoldedConv::new(&r.conv1, &r.bn1, padding),
                    FoldedConv::new(&r.conv2, &r.bn2, padding),
                ]
            });
        }
    }

    pub(crate) fn forward(&self, x: &Tensor, train: bool) -> Tensor {
        match self {
            Self::Residual(r) if !train && r.folded.is_some() => {
                let [c1, c2] = r.folded.as_ref().expect("checked");
                (c2.forward(&c1.forward(x).relu()) + x).relu()
            }
            Self::Residual(r) => {
                let mut h = r.bn1.forward_t(&r.conv1.forward(x), train).relu();
                if train && r.dropout > 0.0 {
                    // PyTorch's Dropout3d: whole channels of a sample at once.
                    h = h.feature_dropout(r.dropout, true);
                }
                (r.bn2.forward_t(&r.conv2.forward(&h), train) + x).relu()
            }
            Self::Plain { conv, .. } => conv.forward(x).leaky_relu(),
            Self::Transformer(t) => t.forward(x),
            Self::Lstm { .. } => unreachable!("LSTM layers take state: use forward_lstm"),
        }
    }

    /// Applies an LSTM layer to `(B, L, X, Y, Z)` with state `(h, c)` of the same
    /// shape; returns `x + h'` and `(h', c')`.
    /// `grad`: gradients are being recorded (cuDNN computes them only from a
    /// forward pass run in training mode).
    pub(crate) fn forward_lstm(
        &self,
        x: &Tensor,
        h: &Tensor,
        c: &Tensor,
        grad: bool,
    ) -> (Tensor, Tensor, Tensor) {
        let Self::Lstm { weights, .. } = self else {
            unreachable!("forward_lstm on a stateless layer")
        };
        let size = x.size();
        let l = size[1];
        // Every voxel is its own sequence: (B, L, X, Y, Z) -> (B·X·Y·Z, L) in
        // (b, x, y, z) order, and the state to (1, B·X·Y·Z, L).
        let to_rows = |t: &Tensor| t.permute([0, 2, 3, 4, 1]).reshape([-1, l]);
        let from_rows = |t: &Tensor| {
            t.reshape([size[0], size[2], size[3], size[4], l])
                .permute([0, 4, 1, 2, 3])
                .contiguous()
        };
        // cuDNN refuses a non-contiguous initial state ("rnn: hx is not
        // contiguous"); the CPU kernels accept either, so this costs the CPU one
        // copy of the state and makes the recurrent models run on CUDA.
        let state = [
            to_rows(h).unsqueeze(0).contiguous(),
            to_rows(c).unsqueeze(0).contiguous(),
        ];
        let (_, h2, c2) = run_lstm(&to_rows(x).unsqueeze(1), &state, weights, grad);
        let h2 = from_rows(&h2);
        let c2 = from_rows(&c2);
        (x + &h2, h2, c2)
    }

    /// [`Layer::forward_lstm`] over sequences: `x` is `(B·T, L, X, Y, Z)` with
    /// the `T` steps of each sequence in consecutive rows, `(h, c)` the `(B, L, X,
    /// Y, Z)` state before each sequence's first step. Returns `x + h'` for every
    /// step and the state after the last. Equal to `T` calls of `forward_lstm`
    /// carrying the state, in one libtorch call (for training).
    pub(crate) fn forward_lstm_seq(
        &self,
        x: &Tensor,
        seq_len: i64,
        h: &Tensor,
        c: &Tensor,
        grad: bool,
    ) -> (Tensor, Tensor, Tensor) {
        let Self::Lstm { weights, .. } = self else {
            unreachable!("forward_lstm_seq on a stateless layer")
        };
        let size = x.size();
        let (l, cells) = (size[1], size[2] * size[3] * size[4]);
        let b = size[0] / seq_len;
        // (B·T, L, X, Y, Z) -> (B·X·Y·Z, T, L): one batch-first sequence per voxel.
        let seqs = x
            .reshape([b, seq_len, l, cells])
            .permute([0, 3, 1, 2])
            .reshape([b * cells, seq_len, l]);
        // Contiguous for cuDNN, as in `forward_lstm`.
        let to_rows = |t: &Tensor| {
            t.reshape([b, l, cells])
                .permute([0, 2, 1])
                .reshape([1, b * cells, l])
                .contiguous()
        };
        let state = [to_rows(h), to_rows(c)];
        let (out, h2, c2) = run_lstm(&seqs, &state, weights, grad);
        let out = out
            .reshape([b, cells, seq_len, l])
            .permute([0, 2, 3, 1])
            .reshape(size.as_slice());
        let from_rows = |t: &Tensor| {
            t.reshape([b, cells, l])
                .permute([0, 2, 1])
                .reshape([b, l, size[2], size[3], size[4]])
        };
        (x + out, from_rows(&h2), from_rows(&c2))
    }
}

/// One layer of libtorch's LSTM over batch-first `input` `(N, T, L)` from
/// `state` `[h, c]` (each `(1, N, L)`); returns the outputs and the final `h`
/// and `c`. `train` only matters to cuDNN, which keeps what backward needs
/// only in training mode (dropout is 0, so the values are the same).
fn run_lstm(
    input: &Tensor,
    state: &[Tensor; 2],
    weights: &[Tensor],
    train: bool,
) -> (Tensor, Tensor, Tensor) {
    input.lstm(state, weights, true, 1, 0.0, train, false, true)
}

/// A residual block's weights (`conv1`, `bn1`, `conv2`, `bn2`); BatchNorm runs in
/// eval mode on its running statistics.
#[derive(Debug)]
pub(crate) struct ResidualBlock {
    conv1: nn::Conv3D,
    bn1: nn::BatchNorm,
    conv2: nn::Conv3D,
    bn2: nn::BatchNorm,
    /// Dropout3d's probability after the first ReLU, in training only.
    dropout: f64,
    flops: u64,
    /// Each conv with its BatchNorm's inference statistics folded in
    /// ([`Layer::fold_batch_norm`]), used when not training.
    folded: Option<[FoldedConv; 2]>,
}

/// A 3-D convolution with a BatchNorm in inference mode folded into its weights
/// and bias: `BN(conv(x)) = conv'(x)` with `w' = w·s`, `b' = (b - mean)·s + beta`
/// and `s = gamma / sqrt(var + eps)` per output channel. One pass over the
/// activations instead of two; equal up to float rounding.
#[derive(Debug)]
pub(crate) struct FoldedConv {
    ws: Tensor,
    bs: Tensor,
    padding: i64,
}

impl FoldedConv {
    fn new(conv: &nn::Conv3D, bn: &nn::BatchNorm, padding: i64) -> Self {
        let _guard = tch::no_grad_guard();
        let out = conv.ws.size()[0];
        let gamma = bn.ws.as_ref().map_or_else(
            || Tensor::ones([out], (conv.ws.kind(), conv.ws.device())),
            Tensor::shallow_clone,
        );
        let beta = bn.bs.as_ref().map_or_else(
            || Tensor::zeros([out], (conv.ws.kind(), conv.ws.device())),
            Tensor::shallow_clone,
        );
        // tch's BatchNorm keeps its eps private; every BatchNorm here is made
        // with the default config, whose eps is PyTorch's 1e-5.
        let scale = gamma / (&bn.running_var + BATCH_NORM_EPS).sqrt();
        let bias = conv
            .bs
            .as_ref()
            .map_or_else(|| Tensor::zeros_like(&scale), Tensor::shallow_clone);
        Self {
            ws: &conv.ws * scale.reshape([out, 1, 1, 1, 1]),
            bs: (bias - &bn.running_mean) * &scale + beta,
            padding,
        }
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        x.conv3d(
            &self.ws,
            Some(&self.bs),
            [1, 1, 1],
            [self.padding; 3],
            [1, 1, 1],
            1,
        )
    }
}

/// The eps of every BatchNorm of these models (`nn::BatchNormConfig`'s default,
/// PyTorch's).
const BATCH_NORM_EPS: f64 = 1e-5;

/// A post-norm `nn.TransformerEncoderLayer` (ReLU, LayerNorm eps 1e-5), attending
/// along one spatial axis of `(B, C, X, Y, Z)` or over all voxels.
#[derive(Debug)]
pub(crate) struct TransformerLayer {
    in_proj_weight: Tensor,
    in_proj_bias: Tensor,
    out_proj: nn::Linear,
    linear1: nn::Linear,
    linear2: nn::Linear,
    norm1: nn::LayerNorm,
    norm2: nn::LayerNorm,
    heads: i64,
    /// 0 = X, 1 = Y, 2 = Z; `None` = every voxel in one sequence.
    axis: Option<usize>,
    flops: u64,
}

impl TransformerLayer {
    /// A layer of width `c` with `heads` heads and a feed-forward width of `c`.
    pub(crate) fn new(
        path: nn::Path,
        c: i64,
        heads: i64,
        axis: Option<usize>,
        size: [i64; 3],
    ) -> Self {
        let attn = &path / "self_attn";
        let ln = |p| nn::layer_norm(p, vec![c], Default::default());
        let cells = size.iter().product::<i64>();
        let seq = axis.map_or(cells, |a| size[a]);
        // QKV, out, two feed-forward maps: 6 C x C products per voxel; scores and
        // weighted sums: 2 x seq x C per voxel.
        let flops = (2 * (6 * c * c + 2 * seq * c) * cells) as u64;
        Self {
            in_proj_weight: attn.var(
                "in_proj_weight",
                &[3 * c, c],
                nn::init::DEFAULT_KAIMING_UNIFORM,
            ),
            in_proj_bias: attn.zeros("in_proj_bias", &[3 * c]),
            out_proj: nn::linear(&attn / "out_proj", c, c, Default::default()),
            linear1: nn::linear(&path / "linear1", c, c, Default::default()),
            linear2: nn::linear(&path / "linear2", c, c, Default::default()),
            norm1: ln(&path / "norm1"),
            norm2: ln(&path / "norm2"),
            heads,
            axis,
            flops,
        }
    }

    fn describe(&self) -> String {
        let c = self.in_proj_weight.size()[1];
        let over = match self.axis {
            Some(a) => format!("along {}", ["X", "Y", "Z"][a]),
            None => "over all voxels".to_owned(),
        };
        format!("transformer d={c} heads={} ff={c} {over}", self.heads)
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let s = x.size();
        let c = s[1];
        // Permute so the attended axis is second to last, channels last.
        let perm: [i64; 5] = match self.axis {
            Some(0) => [0, 3, 4, 2, 1],
            Some(1) => [0, 2, 4, 3, 1],
            _ => [0, 2, 3, 4, 1],
        };
        let permuted = x.permute(perm);
        let psize = permuted.size();
        let seq_len = match self.axis {
            Some(_) => psize[3],
            None => psize[1] * psize[2] * psize[3],
        };
        let seqs = permuted.reshape([-1, seq_len, c]);
        let out = self.encode(&seqs).reshape(&psize[..]);
        let mut inverse = [0i64; 5];
        for (i, &p) in perm.iter().enumerate() {
            inverse[p as usize] = i as i64;
        }
        out.permute(inverse).contiguous()
    }

    /// The encoder layer on `(S, L, C)` sequences.
    fn encode(&self, x: &Tensor) -> Tensor {
        let [s, l, c] = x.size()[..] else {
            unreachable!("sequences are rank 3")
        };
        let d = c / self.heads;
        let qkv = x.linear(&self.in_proj_weight, Some(&self.in_proj_bias));
        let split = |i: i64| {
            qkv.narrow(2, i * c, c)
                .reshape([s, l, self.heads, d])
                .transpose(1, 2)
        };
        let attn = Tensor::scaled_dot_product_attention(
            &split(0),
            &split(1),
            &split(2),
            None::<Tensor>,
            0.0,
            false,
            None,
            false,
        )
        .transpose(1, 2)
        .reshape([s, l, c]);
        let x1 = self.norm1.forward(&(x + self.out_proj.forward(&attn)));
        let ff = self.linear2.forward(&self.linear1.forward(&x1).relu());
        self.norm2.forward(&(x1 + ff))
    }
}

/// A head of 1x1x1 convs with LeakyReLU between them (`action_head`,
/// `goal_head`, `other_agent_action_prediction_head`): weights at indices 0, 2, ...
#[derive(Debug)]
pub(crate) struct ConvHead {
    convs: Vec<nn::Conv3D>,
    flops: u64,
}

impl ConvHead {
    pub(crate) fn new(
        path: nn::Path,
        c_in: i64,
        hidden: i64,
        c_out: i64,
        layers: usize,
        cells: i64,
    ) -> Self {
        let mut convs = Vec::with_capacity(layers);
        let mut flops = 0;
        for k in 0..layers {
            let i = if k == 0 { c_in } else { hidden };
            let o = if k + 1 == layers { c_out } else { hidden };
            convs.push(conv1(&path / (2 * k), i, o));
            flops += conv_flops(i, o, 1, cells);
        }
        Self { convs, flops }
    }

    pub(crate) fn forward(&self, x: &Tensor) -> Tensor {
        let mut h = self.convs[0].forward(x);
        for conv in &self.convs[1..] {
            h = conv.forward(&h.leaky_relu());
        }
        h
    }

    pub(crate) fn flops(&self) -> u64 {
        self.flops
    }
}

/// The value head: global average pool, then linear layers with LeakyReLU between
/// them (weights `value_head.2`, `value_head.4`, ...), squeezed to `(B,)`.
#[derive(Debug)]
pub(crate) struct ValueHead {
    linears: Vec<nn::Linear>,
    flops: u64,
}

impl ValueHead {
    pub(crate) fn new(path: nn::Path, c_in: i64, hidden: i64, layers: usize) -> Self {
        let mut linears = Vec::with_capacity(layers);
        let mut flops = 0;
        for k in 0..layers {
            let i = if k == 0 { c_in } else { hidden };
            let o = if k + 1 == layers { 1 } else { hidden };
            linears.push(nn::linear(&path / (2 + 2 * k), i, o, Default::default()));
            flops += (2 * i * o) as u64;
        }
        Self { linears, flops }
    }

    pub(crate) fn forward(&self, x: &Tensor) -> Tensor {
        let mut h = self.linears[0].forward(&x.mean_dim(&[2i64, 3, 4][..], false, x.kind()));
        for linear in &self.linears[1..] {
            h = linear.forward(&h.leaky_relu());
        }
        h.squeeze_dim(1)
    }

    pub(crate) fn flops(&self) -> u64 {
        self.flops
    }
}
