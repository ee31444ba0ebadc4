//! [`Model`]: either reference network, built from its config, with typed inputs
//! ([`ObsBatch`]), recurrent state ([`RecurrentState`]) and outputs ([`Outputs`]).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};

use super::Precision;
use super::config::ModelConfig;
use super::error::NnError;
use super::flat::{grid_to_flat, prev_action_grid};
use super::layers::{ConvHead, Layer, TransformerLayer, ValueHead, conv_flops, conv1};
use super::obs::ObsBatch;
use crate::agents::distribution::{NUM_CHANNELS, channels_of};
use crate::sim::action::{ActionType, FlatLayout};
use crate::sim::block::NUM_BLOCKS;
use crate::sim::obs::NUM_WORLD_CHANNELS;

/// Rows of the player-id embedding table.
const NUM_PLAYER_IDS: i64 = 16;

/// The recurrent state of a batch: `[h0, c0, h1, c1, ...]`, one `(h, c)` pair per
/// LSTM layer in layer order, each `(B, L, X, Y, Z)`. Empty for stateless models.
/// Zeros at an episode's start; feed each step's `state` output into the next step
/// of the same episode.
#[derive(Debug)]
pub struct RecurrentState {
    tensors: Vec<Tensor>,
}

impl RecurrentState {
    /// A state from its tensors, in the order above.
    pub fn from_tensors(tensors: Vec<Tensor>) -> Self {
        Self { tensors }
    }

    /// The tensors, in the order above.
    pub fn tensors(&self) -> &[Tensor] {
        &self.tensors
    }

    /// The tensors, by value.
    pub fn into_tensors(self) -> Vec<Tensor> {
        self.tensors
    }

    /// Whether the model is stateless.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// The batch size, `None` for a stateless model.
    pub fn batch_size(&self) -> Option<usize> {
        self.tensors.first().map(|t| t.size()[0] as usize)
    }

    /// Rows `start..start + len` (views, no copy).
    pub fn narrow(&self, start: i64, len: i64) -> Self {
        Self::from_tensors(
            self.tensors
                .iter()
                .map(|t| t.narrow(0, start, len))
                .collect(),
        )
    }

    /// The states of several batches as one batch, in order.
    pub fn cat(states: &[&RecurrentState]) -> Self {
        let n = states.first().map_or(0, |s| s.tensors.len());
        Self::from_tensors(
            (0..n)
                .map(|k| Tensor::cat(&states.iter().map(|s| &s.tensors[k]).collect::<Vec<_>>(), 0))
                .collect(),
        )
    }
}

/// Copies an output of a model computing in `precision` to the CPU as `f32`
/// values, flattened. Outputs of reduced-precision models hold values exactly
/// representable in that precision, so they cross to the host in it (half the
/// bytes of `f32`) and widen there, with no loss.
pub fn host_f32(t: &Tensor, precision: Precision) -> Result<Vec<f32>, tch::TchError> {
    let flat = t
        .flatten(0, -1)
        .to_kind(precision.kind())
        .to_device(Device::Cpu)
        .to_kind(Kind::Float);
    Vec::<f32>::try_from(&flat)
}

/// What one forward call returns, for a batch of `B`.
#[derive(Debug)]
pub struct Outputs {
    /// `(B, N)` unmasked policy logits over the flat actions.
    pub flat_logits: Tensor,
    /// `(B, 28, X, Y, Z)` the action head's grid before flattening.
    pub action_grid: Tensor,
    /// `(B,)` value estimates (times `vf_scale`).
    pub value: Tensor,
    /// `(B, 10, X, Y, Z)` per-voxel goal block logits (softmax over dim 1).
    pub goal_logits: Tensor,
    /// `(B, N)` the predicted other player's action logits (alpha-zero models only).
    pub other_agent_logits: Option<Tensor>,
    /// The state after this step.
    pub state: RecurrentState,
}

/// Intermediate tensors of a forward call, for the golden checks.
#[derive(Debug)]
pub struct Trace {
    /// `(B, C_emb, X, Y, Z)` the embedded input (transformers: with the position
    /// embedding and zero padding; conv: before `fc_after_embedding`).
    pub embedded: Tensor,
    /// `(B, H, X, Y, Z)` the backbone's output, which feeds the heads.
    pub backbone_out: Tensor,
}

/// A reference network (conv or transformer) with its weights.
///
/// [`Model::forward`] runs without gradients and with BatchNorm in eval mode;
/// [`Model::forward_t`] records gradients for training. A model lives on one
/// device; inputs are moved there.
#[derive(Debug)]
pub struct Model {
    config: ModelConfig,
    layout: FlatLayout,
    vs: nn::VarStore,
    block_embedding: nn::Embedding,
    player_embedding: nn::Embedding,
    /// Transformers: `(X, Y, Z, P)`.
    position_embedding: Option<Tensor>,
    fc_after_embedding: Option<nn::Conv3D>,
    layers: Vec<Layer>,
    action_head: ConvHead,
    value_head: ValueHead,
    goal_head: ConvHead,
    other_agent_head: Option<ConvHead>,
    /// `use_goal_action_prior`: `(2,)` weights of the place and break priors.
    goal_action_prior: Option<Tensor>,
    /// `use_predicted_goal_action_prior`: `(2,)` weights of the place and break
    /// priors read from the goal head.
    predicted_goal_action_prior: Option<Tensor>,
    /// FLOPs per sample of the parts outside `layers` and the heads.
    embedding_flops: u64,
    /// The format the weights are in and the layers compute in.
    precision: Precision,
    /// Whether inference uses BatchNorms folded into their convolutions
    /// ([`Model::fold_batch_norm`]).
    batch_norm_folded: bool,
}

impl Model {
    /// A model with freshly initialised (random) weights.
    pub fn new(config: ModelConfig, device: Device) -> Result<Self, NnError> {
        let vs = nn::VarStore::new(device);
        let root = vs.root();
        let net = config.net.clone();
        let size = config.world_size.axes().map(|a| a as i64);
        let cells = config.world_size.num_cells() as i64;
        let e = net.embedding_size;
        let block_embedding = nn::embedding(
            &root / "block_id_embedding",
            NUM_BLOCKS as i64,
            e,
            Default::default(),
        );
        let player_embedding = nn::embedding(
            &root / "player_id_embedding",
            NUM_PLAYER_IDS,
            e,
            Default::default(),
        );
        let transformer = config.class.is_transformer();
        let position_embedding = transformer.then(|| {
            let p = net.position_embedding_size.unwrap_or_default();
            root.var(
                "position_embedding",
                &[size[0], size[1], size[2], p],
                nn::Init::Randn {
                    mean: 0.0,
                    stdev: 1.0,
                },
            )
        });
        let c_emb = config.embedding_channels();
        let width = config.backbone_width();
        let (fc_after_embedding, embedding_flops) = if !transformer && net.use_fc_after_embedding {
            (
                Some(conv1(&root / "fc_after_embedding", c_emb, net.hidden_size)),
                conv_flops(c_emb, net.hidden_size, 1, cells),
            )
        } else {
            (None, 0)
        };
        let backbone = &root / "backbone";
        let lstm_at = config.lstm_layer_indices();
        let mut layers = Vec::with_capacity(net.num_layers);
        let mut j = 0;
        for i in 0..net.num_layers {
            let path = &backbone / format!("layer_{i}");
            if lstm_at.contains(&i) {
                layers.push(Layer::lstm(path, width, cells));
                continue;
            }
            layers.push(if transformer {
                let axis = net.use_separated_transformer.then_some(j % 3);
                let heads = net.num_heads.unwrap_or(1);
                Layer::Transformer(Box::new(TransformerLayer::new(
                    path, width, heads, axis, size,
                )))
            } else {
                let kernel = if j < net.num_conv_1_layers {
                    1
                } else {
                    net.filter_size.unwrap_or(1)
                };
                let c_in = if j == 0 {
                    config.backbone_in_channels()
                } else {
                    width
                };
                let residual = net.use_resnet && c_in == width;
                Layer::conv(path, c_in, width, kernel, residual, net.dropout, cells)
            });
            j += 1;
        }
        let h = net.hidden_size;
        let action_head = ConvHead::new(
            &root / "action_head",
            width,
            h,
            NUM_CHANNELS as i64,
            net.num_action_layers,
            cells,
        );
        let value_head = ValueHead::new(&root / "value_head", width, h, net.num_value_layers);
        let goal_head = ConvHead::new(&root / "goal_head", width, h, NUM_BLOCKS as i64, 2, cells);
        let other_agent_head = config.class.is_alpha_zero().then(|| {
            ConvHead::new(
                &root / "other_agent_action_prediction_head",
                width,
                h,
                NUM_CHANNELS as i64,
                net.num_action_layers,
                cells,
            )
        });
        // Starts at e^2: a goal-consistent cell is 7x as likely as another.
        let goal_action_prior = net
            .use_goal_action_prior
            .then(|| root.var("goal_action_prior", &[2], nn::Init::Const(2.0)));
        // Starts at 1: the policy follows the goal head's odds as they are.
        let predicted_goal_action_prior = net
            .use_predicted_goal_action_prior
            .then(|| root.var(PREDICTED_GOAL_ACTION_PRIOR, &[2], nn::Init::Const(1.0)));
        Ok(Self {
            layout: config.flat_layout(),
            config,
            vs,
            block_embedding,
            player_embedding,
            position_embedding,
            fc_after_embedding,
            layers,
            action_head,
            value_head,
            goal_head,
            other_agent_head,
            goal_action_prior,
            predicted_goal_action_prior,
            embedding_flops,
            precision: Precision::F32,
            batch_norm_folded: false,
        })
    }

    /// The config.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The flat action layout of the model's env.
    pub fn layout(&self) -> &FlatLayout {
        &self.layout
    }

    /// The device the weights live on.
    pub fn device(&self) -> Device {
        self.vs.device()
    }

    /// The format the network computes in.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// Converts the weights to `precision` for inference. [`Model::forward`] then
    /// computes in it and still takes and returns `f32`; the training calls and
    /// [`Model::save`] refuse anything but `f32`, since optimisers and saved
    /// checkpoints need full-precision weights. Half precision runs on CUDA only
    /// (libtorch's CPU convolutions lack it).
    pub fn set_precision(&mut self, precision: Precision) -> Result<(), NnError> {
        if precision == Precision::F16 && self.device() == Device::Cpu {
            return Err(self.precision_error(precision, "f16 runs on CUDA only; use bf16 or f32"));
        }
        match precision {
            Precision::F32 => self.vs.float(),
            Precision::Bf16 => self.vs.bfloat16(),
            Precision::F16 => self.vs.half(),
        }
        for layer in &self.layers {
            layer.flatten_rnn_weights();
        }
        self.precision = precision;
        // Folded copies were made from the old weights: make them again.
        self.fold_layers(self.batch_norm_folded);
        Ok(())
    }

    /// For a model that only serves inference from now on: folds each residual
    /// block's BatchNorms (their running statistics) into its convolutions, so
    /// forward passes not in training mode run one pass fewer over the
    /// activations. Outputs are equal up to float rounding. The folded copies
    /// are made from the weights as they are now; a model whose weights change
    /// afterwards (training, `load_weights`) must not be folded.
    pub fn fold_batch_norm(&mut self) {
        self.batch_norm_folded = true;
        self.fold_layers(true);
    }

    fn fold_layers(&mut self, on: bool) {
        for layer in &mut self.layers {
            layer.fold_batch_norm(on);
        }
    }

    /// A copy of the model (same config, device and weights) computing in
    /// `precision`, for inference beside a model that keeps training in `f32`.
    pub fn inference_copy(&self, precision: Precision) -> Result<Self, NnError> {
        let mut copy = Self::new(self.config.clone(), self.device())?;
        copy.vs.copy(&self.vs)?;
        copy.set_precision(precision)?;
        Ok(copy)
    }

    fn precision_error(&self, precision: Precision, message: &str) -> NnError {
        NnError::Precision {
            model: self.config.name.clone(),
            precision,
            message: message.into(),
        }
    }

    fn require_f32(&self, what: &str) -> Result<(), NnError> {
        if self.precision == Precision::F32 {
            Ok(())
        } else {
            Err(self.precision_error(
                self.precision,
                &format!("{what} needs f32 weights (reduced precision is for inference)"),
            ))
        }
    }

    /// The variable store (weights and BatchNorm statistics), for training.
    pub fn var_store(&self) -> &nn::VarStore {
        &self.vs
    }

    /// Number of trainable parameters (BatchNorm running statistics excluded, as
    /// PyTorch's `parameters()` counts).
    pub fn num_parameters(&self) -> usize {
        self.vs
            .trainable_variables()
            .iter()
            .map(|t| t.numel())
            .sum()
    }

    /// Multiply-adds times 2 for one sample's forward pass (convolutions, linear
    /// maps, LSTM and attention products; elementwise work left out).
    pub fn flops_per_sample(&self) -> u64 {
        let cells = self.config.world_size.num_cells() as i64;
        let heads = self.action_head.flops()
            + self.value_head.flops()
            + self.goal_head.flops()
            + self.other_agent_head.as_ref().map_or(0, ConvHead::flops);
        // The value head's pooling reads every voxel once.
        let pool = (self.config.backbone_width() * cells) as u64;
        self.embedding_flops + self.layers.iter().map(Layer::flops).sum::<u64>() + heads + pool
    }

    /// The model's structure, one line per part.
    pub fn describe(&self) -> String {
        let c = &self.config;
        let mut out = String::new();
        let [x, y, z] = c.world_size.axes();
        let _ = writeln!(out, "model {} ({})", c.name, c.class.name());
        let _ = writeln!(
            out,
            "world {x}x{y}x{z}, {} flat actions, {} inventory rows read",
            self.layout.len(),
            c.num_inventory_obs
        );
        let _ = writeln!(
            out,
            "embedding: {} channels{}{}",
            c.embedding_channels(),
            if c.class.is_transformer() {
                format!(
                    " (position {}), zero-padded to {}",
                    c.net.position_embedding_size.unwrap_or(0),
                    c.net.hidden_size
                )
            } else {
                String::new()
            },
            match &self.fc_after_embedding {
                Some(_) => format!(", fc_after_embedding 1x1x1 -> {}", c.net.hidden_size),
                None => String::new(),
            }
        );
        for (i, layer) in self.layers.iter().enumerate() {
            let _ = writeln!(out, "backbone.layer_{i}: {}", layer.describe());
        }
        let _ = writeln!(
            out,
            "heads: action (28 ch -> flat), value, goal (10 ch){}",
            if self.other_agent_head.is_some() {
                ", other-agent action"
            } else {
                ""
            }
        );
        let _ = writeln!(
            out,
            "recurrent state: {} tensors",
            2 * self.layers.iter().filter(|l| l.is_recurrent()).count()
        );
        out
    }

    /// The zero state for a batch of `batch` (empty for stateless models).
    pub fn initial_state(&self, batch: usize) -> RecurrentState {
        let [x, y, z] = self.config.world_size.axes().map(|a| a as i64);
        let l = self.config.backbone_width();
        let n = self.layers.iter().filter(|l| l.is_recurrent()).count();
        RecurrentState::from_tensors(
            (0..2 * n)
                .map(|_| Tensor::zeros([batch as i64, l, x, y, z], (Kind::Float, self.device())))
                .collect(),
        )
    }

    /// Runs the network on a batch, without gradients. `state: None` starts every
    /// sample from the zero state.
    pub fn forward(
        &self,
        batch: &ObsBatch,
        state: Option<&RecurrentState>,
    ) -> Result<Outputs, NnError> {
        self.forward_traced(batch, state)
            .map(|(outputs, _)| outputs)
    }

    /// [`Model::forward`], also returning intermediate tensors.
    pub fn forward_traced(
        &self,
        batch: &ObsBatch,
        state: Option<&RecurrentState>,
    ) -> Result<(Outputs, Trace), NnError> {
        let _guard = tch::no_grad_guard();
        self.run(batch, 1, state, false, false)
    }

    /// Runs the network with gradients recorded, for training: `train` puts
    /// BatchNorm in training mode. `state: None` starts from the zero state.
    pub fn forward_t(
        &self,
        batch: &ObsBatch,
        state: Option<&RecurrentState>,
        train: bool,
    ) -> Result<Outputs, NnError> {
        self.require_f32("training")?;
        self.run(batch, 1, state, train, true)
            .map(|(outputs, _)| outputs)
    }

    /// Runs the network over `B` sequences of `seq_len` steps each, with gradients
    /// recorded, for training recurrent models: `batch` holds `B·seq_len` rows,
    /// each sequence's steps in consecutive rows (RLlib's batch-major layout);
    /// `state` (`B` rows, `None` = zeros) is the state before each sequence's first
    /// step. Stateless layers see all rows at once (so BatchNorm's training
    /// statistics span every step); the LSTMs run through each sequence in order.
    /// The outputs have `B·seq_len` rows; `state` is the state after each
    /// sequence's last step. Equal to `seq_len` calls of [`Model::forward_t`]
    /// carrying the state, up to BatchNorm's batch statistics in training mode.
    pub fn forward_seq_t(
        &self,
        batch: &ObsBatch,
        seq_len: usize,
        state: Option<&RecurrentState>,
        train: bool,
    ) -> Result<Outputs, NnError> {
        self.require_f32("training")?;
        self.run(batch, seq_len.max(1) as i64, state, train, true)
            .map(|(outputs, _)| outputs)
    }

    /// `train`: BatchNorm in training mode; `grad`: gradients are recorded.
    fn run(
        &self,
        batch: &ObsBatch,
        seq_len: i64,
        state: Option<&RecurrentState>,
        train: bool,
        grad: bool,
    ) -> Result<(Outputs, Trace), NnError> {
        let rows = batch.len() as i64;
        if rows % seq_len != 0 {
            return Err(NnError::BadInput {
                model: self.config.name.clone(),
                input: "world",
                message: format!("{rows} rows are not whole sequences of {seq_len}"),
            });
        }
        let sequences = (rows / seq_len) as usize;
        self.check_inputs(batch, sequences, state)?;
        let device = self.device();
        let batch = batch.to_device(device);
        let zeros;
        let state = match state {
            Some(s) => s,
            None => {
                zeros = self.initial_state(sequences);
                &zeros
            }
        };
        // The embedding comes out in f32 (its pieces are promoted to the widest
        // kind); the layers compute in the model's precision, and every output is
        // returned in f32. `to_kind` to the same kind is free.
        let kind = self.precision.kind();
        let embedded = self.embed(&batch);
        let input = embedded.to_kind(kind);
        let mut x = match &self.fc_after_embedding {
            Some(fc) => fc.forward(&input),
            None => input,
        };
        let mut state_out = Vec::with_capacity(state.tensors.len());
        let mut k = 0;
        for layer in &self.layers {
            if layer.is_recurrent() {
                let h = state.tensors[k].to_device(device).to_kind(kind);
                let c = state.tensors[k + 1].to_device(device).to_kind(kind);
                let (out, h, c) = if seq_len == 1 {
                    layer.forward_lstm(&x, &h, &c, grad)
                } else {
                    layer.forward_lstm_seq(&x, seq_len, &h, &c, grad)
                };
                x = out;
                state_out.push(h.to_kind(Kind::Float));
                state_out.push(c.to_kind(Kind::Float));
                k += 2;
            } else {
                x = layer.forward(&x, train);
            }
        }
        let mut action_grid = self.action_head.forward(&x).to_kind(Kind::Float);
        if let Some(weights) = &self.goal_action_prior {
            action_grid += goal_action_prior(&batch.world, weights);
        }
        let goal_logits = self.goal_head.forward(&x).to_kind(Kind::Float);
        if let Some(weights) = &self.predicted_goal_action_prior {
            action_grid += predicted_goal_action_prior(&batch.world, &goal_logits, weights);
        }
        let flat_logits = grid_to_flat(&action_grid, &self.layout);
        let mut value = self.value_head.forward(&x).to_kind(Kind::Float);
        if self.config.net.vf_scale != 1.0 {
            value *= self.config.net.vf_scale;
        }
        let other_agent_logits = self
            .other_agent_head
            .as_ref()
            .map(|head| grid_to_flat(&head.forward(&x).to_kind(Kind::Float), &self.layout));
        Ok((
            Outputs {
                flat_logits,
                action_grid,
                value,
                goal_logits,
                other_agent_logits,
                state: RecurrentState::from_tensors(state_out),
            },
            Trace {
                embedded,
                backbone_out: x.to_kind(Kind::Float),
            },
        ))
    }

    /// Checks the inputs; `sequences` is the state's batch size (the rows for
    /// single steps).
    fn check_inputs(
        &self,
        batch: &ObsBatch,
        sequences: usize,
        state: Option<&RecurrentState>,
    ) -> Result<(), NnError> {
        let bad = |input: &'static str, message: String| NnError::BadInput {
            model: self.config.name.clone(),
            input,
            message,
        };
        let b = batch.world.size()[0];
        let [x, y, z] = self.config.world_size.axes().map(|a| a as i64);
        let want_world = [b, NUM_WORLD_CHANNELS as i64, x, y, z];
        if batch.world.size() != want_world {
            return Err(bad(
                "world",
                format!("shape {:?}, expected {want_world:?}", batch.world.size()),
            ));
        }
        let inv = batch.inventory.size();
        if inv.len() != 3 || inv[0] != b || inv[1] < 1 || inv[2] != NUM_BLOCKS as i64 {
            return Err(bad(
                "inventory",
                format!("shape {inv:?}, expected ({b}, P >= 1, 10)"),
            ));
        }
        if batch.timestep.size() != [b] {
            return Err(bad(
                "timestep",
                format!("shape {:?}, expected [{b}]", batch.timestep.size()),
            ));
        }
        if self.config.net.use_prev_action {
            match &batch.prev_action {
                Some(p) if p.size() == [b] => {}
                Some(p) => {
                    return Err(bad(
                        "prev_action",
                        format!("shape {:?}, expected [{b}]", p.size()),
                    ));
                }
                None => return Err(bad("prev_action", "required by use_prev_action".into())),
            }
        }
        if let Some(state) = state {
            let n = 2 * self.layers.iter().filter(|l| l.is_recurrent()).count();
            if state.tensors.len() != n {
                return Err(bad(
                    "state",
                    format!("{} tensors, expected {n}", state.tensors.len()),
                ));
            }
            let want = [sequences as i64, self.config.backbone_width(), x, y, z];
            if let Some(t) = state
                .tensors
                .iter()
                .find(|t| t.size() != want || t.kind() != Kind::Float)
            {
                return Err(bad(
                    "state",
                    format!(
                        "a tensor of shape {:?} ({:?}), expected {want:?} Float",
                        t.size(),
                        t.kind()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The per-voxel input (ARCHITECTURE.md §3): `(B, C, X, Y, Z)` float32.
    fn embed(&self, batch: &ObsBatch) -> Tensor {
        let net = &self.config.net;
        let device = self.device();
        let b = batch.len() as i64;
        let [x, y, z] = self.config.world_size.axes().map(|a| a as i64);
        let world = batch.world.to_kind(Kind::Int64);
        let current = world.select(1, 0);
        let goal = world.select(1, 2);
        let players = world.select(1, 4);
        let last = world.select(1, 5);
        // Broadcasts a (B, k) per-sample vector to every voxel, channels last.
        let broadcast = |v: Tensor| {
            let k = v.size()[1];
            v.reshape([b, 1, 1, 1, k]).expand([b, x, y, z, k], false)
        };
        let mut pieces = vec![self.block_embedding.forward(&current)];
        if !net.mask_goal {
            pieces.push(self.block_embedding.forward(&goal));
        }
        let players = if net.mask_other_players {
            players.eq(1).to_kind(Kind::Int64)
        } else {
            players
        };
        pieces.push(self.player_embedding.forward(&players));
        let inventory = batch.inventory.to_kind(Kind::Float);
        let inventory = if net.mask_other_players {
            inventory.select(1, 0)
        } else {
            let want = self.config.num_inventory_obs as i64;
            let rows = inventory.size()[1].min(want);
            let flat = inventory
                .narrow(1, 0, rows)
                .reshape([b, rows * NUM_BLOCKS as i64]);
            if rows < want {
                flat.constant_pad_nd([0, (want - rows) * NUM_BLOCKS as i64])
            } else {
                flat
            }
        };
        let timestep = batch.timestep.reshape([b, 1]);
        // Not `/=`: that divides in place, and `timestep` is a view of the caller's
        // input.
        let (inventory, timestep) = if net.scale_obs {
            (inventory / 64.0, timestep / 1000.0)
        } else {
            (inventory, timestep)
        };
        pieces.push(broadcast(inventory));
        pieces.push(broadcast(timestep));
        if net.use_extra_features {
            pieces.push(current.eq_tensor(&goal).to_kind(Kind::Float).unsqueeze(-1));
        }
        if net.use_relative_position {
            pieces.push(relative_position(&players, [x, y, z]));
        }
        let last = if net.mask_other_players {
            last.clamp_max(1)
        } else {
            last
        };
        pieces.push(self.player_embedding.forward(&last));
        if net.use_prev_action {
            let actions = batch.prev_action.as_ref().expect("checked by check_inputs");
            let actions = Vec::<i64>::try_from(actions.to_device(Device::Cpu)).unwrap_or_default();
            let grid = prev_action_grid(&actions, &self.layout, self.config.world_size);
            pieces.push(grid.to_device(device).permute([0, 2, 3, 4, 1]));
        }
        if let Some(position) = &self.position_embedding {
            let p = position.size()[3];
            pieces.push(position.unsqueeze(0).expand([b, x, y, z, p], false));
        }
        let mut embedded = Tensor::cat(&pieces, 4);
        if self.config.class.is_transformer() {
            let pad = net.hidden_size - embedded.size()[4];
            if pad > 0 {
                embedded = embedded.constant_pad_nd([0, pad]);
            }
        }
        embedded.permute([0, 4, 1, 2, 3]).contiguous()
    }

    /// Loads weights from a safetensors state dict (the reference's names). Every
    /// weight must be present with its exact shape; extra tensors are an error too,
    /// except BatchNorm's `num_batches_tracked` counters.
    pub fn load_weights(&mut self, path: &Path) -> Result<(), NnError> {
        self.load_weights_allowing(path, &[]).map(|_| ())
    }

    /// Loads the weights of a model trained without mbag's predicted-goal
    /// prior into one with it (a warm start from goal pretraining, say): as
    /// [`Model::load_weights`], except that the prior's weights may be missing
    /// and then keep their initial values. Returns the names left so.
    pub fn warm_start(&mut self, path: &Path) -> Result<Vec<String>, NnError> {
        self.load_weights_allowing(path, &[PREDICTED_GOAL_ACTION_PRIOR])
    }

    fn load_weights_allowing(
        &mut self,
        path: &Path,
        may_miss: &[&str],
    ) -> Result<Vec<String>, NnError> {
        if let Err(source) = std::fs::metadata(path) {
            return Err(NnError::Io {
                path: path.to_owned(),
                source,
            });
        }
        let file: HashMap<String, Tensor> = Tensor::read_safetensors(path)?.into_iter().collect();
        let mut vars: BTreeMap<String, Tensor> = self.vs.variables().into_iter().collect();
        let missing: Vec<String> = may_miss
            .iter()
            .filter(|name| vars.contains_key(**name) && !file.contains_key(**name))
            .map(|name| (*name).to_owned())
            .collect();
        for name in &missing {
            vars.remove(name);
        }
        for (name, var) in &vars {
            let Some(src) = file.get(name) else {
                return Err(NnError::MissingTensor {
                    path: path.to_owned(),
                    name: name.clone(),
                    expected: var.size(),
                });
            };
            if src.size() != var.size() {
                return Err(NnError::ShapeMismatch {
                    path: path.to_owned(),
                    name: name.clone(),
                    expected: var.size(),
                    found: src.size(),
                });
            }
        }
        let mut extra: Vec<_> = file
            .iter()
            .filter(|(name, _)| {
                !vars.contains_key(*name) && !name.ends_with(".num_batches_tracked")
            })
            .collect();
        extra.sort_by(|a, b| a.0.cmp(b.0));
        if let Some((name, t)) = extra.first() {
            return Err(NnError::UnexpectedTensor {
                path: path.to_owned(),
                name: (*name).clone(),
                found: t.size(),
            });
        }
        tch::no_grad(|| -> Result<(), NnError> {
            for (name, var) in &vars {
                let mut var = var.shallow_clone();
                var.f_copy_(&file[name].to_kind(var.kind()))?;
            }
            Ok(())
        })?;
        Ok(missing)
    }

    /// Reads a checkpoint: the config JSON and the weights file it names (or
    /// `<stem>.safetensors` beside it).
    pub fn load(config_path: &Path, device: Device) -> Result<Self, NnError> {
        let config = ModelConfig::read(config_path)?;
        let weights = Self::weights_path(config_path, &config);
        let mut model = Self::new(config, device)?;
        model.load_weights(&weights)?;
        Ok(model)
    }

    /// The weights file of the checkpoint whose config `config` was read from
    /// `config_path`: the file it names, else `<stem>.safetensors` beside it.
    pub fn weights_path(config_path: &Path, config: &ModelConfig) -> PathBuf {
        let dir = config_path.parent().unwrap_or(Path::new("."));
        match &config.weights {
            Some(w) => dir.join(w),
            None => config_path.with_extension("safetensors"),
        }
    }

    /// Writes a checkpoint in the shared models' format: `<dir>/<name>.json` (the
    /// config, renamed) and `<dir>/<name>.safetensors` (the full state dict,
    /// BatchNorm counters included, so PyTorch loads it strictly). Returns the
    /// config's path.
    pub fn save(&self, dir: &Path, name: &str) -> Result<PathBuf, NnError> {
        self.require_f32("saving")?;
        let weights_name = format!("{name}.safetensors");
        let config = self.config.renamed(name, &weights_name);
        let mut tensors: BTreeMap<String, Tensor> = self
            .vs
            .variables()
            .into_iter()
            .map(|(k, v)| (k, v.to_device(Device::Cpu).contiguous()))
            .collect();
        let counters: Vec<String> = tensors
            .keys()
            .filter_map(|k| k.strip_suffix(".running_mean"))
            .map(|prefix| format!("{prefix}.num_batches_tracked"))
            .collect();
        for name in counters {
            tensors.insert(name, Tensor::zeros([1], (Kind::Int64, Device::Cpu)));
        }
        let tensors: Vec<(String, Tensor)> = tensors.into_iter().collect();
        let weights_path = dir.join(&weights_name);
        Tensor::write_safetensors(&tensors, &weights_path)?;
        let config_path = dir.join(format!("{name}.json"));
        let text = serde_json::to_string_pretty(&config.json).expect("a JSON value serialises");
        std::fs::write(&config_path, text + "\n").map_err(|source| NnError::Io {
            path: config_path.clone(),
            source,
        })?;
        Ok(config_path)
    }
}

/// The goal prior on the `(B, 28, X, Y, Z)` action grid: `weights[0]` on the
/// place channel of the goal's block in every empty cell whose goal is a block,
/// `weights[1]` on the break channel of every non-air cell that differs from
/// the goal. `world` is the `(B, 6, X, Y, Z)` observation.
fn goal_action_prior(world: &Tensor, weights: &Tensor) -> Tensor {
    let world = world.to_kind(Kind::Int64);
    let current = world.select(1, 0);
    let goal = world.select(1, 2);
    let empty = current.eq(0);
    // (B, X, Y, Z, 10) -> (B, 10, X, Y, Z); air's channel never counts.
    let place = goal
        .one_hot(NUM_BLOCKS as i64)
        .permute([0, 4, 1, 2, 3])
        .logical_and(&empty.unsqueeze(1))
        .to_kind(Kind::Float);
    let place = place.narrow(1, 1, NUM_BLOCKS as i64 - 1);
    let wrong = current
        .ne_tensor(&goal)
        .logical_and(&current.ne(0))
        .to_kind(Kind::Float)
        .unsqueeze(1);
    prior_grid(place * weights.get(0), wrong * weights.get(1))
}

/// The `(B, 28, X, Y, Z)` action grid that is `place` (`(B, 9, ..)`, the
/// non-air blocks) on the place channels, `brk` (`(B, 1, ..)`) on the break
/// channel and zero elsewhere.
fn prior_grid(place: Tensor, brk: Tensor) -> Tensor {
    let size = brk.size();
    let device = brk.device();
    let zeros = |c: usize| {
        Tensor::zeros(
            [size[0], c as i64, size[2], size[3], size[4]],
            (Kind::Float, device),
        )
    };
    let place_at = channels_of(ActionType::PlaceBlock);
    let break_at = channels_of(ActionType::BreakBlock);
    debug_assert!(place_at.end <= break_at.start);
    // Channel order: [.. place (air first) .. break ..].
    Tensor::cat(
        &[
            zeros(place_at.start + 1),
            place,
            zeros(break_at.start - place_at.end),
            brk,
            zeros(NUM_CHANNELS - break_at.end),
        ],
        1,
    )
}

/// The variable of `use_predicted_goal_action_prior`, which a warm start from a
/// model without the option leaves at its initial value.
const PREDICTED_GOAL_ACTION_PRIOR: &str = "predicted_goal_action_prior";

/// The lowest log-probability the predicted-goal prior adds: below it the
/// goal head's odds say nothing more (and `log 0` would be `-inf`).
const PRIOR_LOG_FLOOR: f64 = -10.0;

/// The predicted-goal prior on the `(B, 28, X, Y, Z)` action grid:
/// `weights[0] * log p(b)` on placing block `b` in every empty cell and
/// `weights[1] * log (1 - p(current block))` on breaking every non-air cell,
/// where `p` is the softmax of `goal_logits` (`(B, 10, X, Y, Z)`, detached: the
/// goal head learns from goal targets only), floored at [`PRIOR_LOG_FLOOR`].
fn predicted_goal_action_prior(world: &Tensor, goal_logits: &Tensor, weights: &Tensor) -> Tensor {
    let world = world.to_kind(Kind::Int64);
    let current = world.select(1, 0);
    let empty = current.eq(0).unsqueeze(1).to_kind(Kind::Float);
    let solid = current.ne(0).unsqueeze(1).to_kind(Kind::Float);
    let log_p = goal_logits.detach().log_softmax(1, Kind::Float);
    let place = log_p
        .clamp_min(PRIOR_LOG_FLOOR)
        .narrow(1, 1, NUM_BLOCKS as i64 - 1)
        * &empty;
    let p_current = log_p.gather(1, &current.unsqueeze(1), false).exp();
    let wrong = (-p_current).log1p().clamp_min(PRIOR_LOG_FLOOR) * &solid;
    prior_grid(place * weights.get(0), wrong * weights.get(1))
}

/// `(B, X, Y, Z, 3)`: each voxel's offset from the centre of the cells marked
/// as the observing player in `players` (`(B, X, Y, Z)` markers), divided by the
/// axis lengths; all zeros for a sample without the marker.
fn relative_position(players: &Tensor, axes: [i64; 3]) -> Tensor {
    let device = players.device();
    let me = players
        .eq(i64::from(crate::sim::obs::CURRENT_PLAYER))
        .to_kind(Kind::Float);
    let b = me.size()[0];
    let count = me.sum_dim_intlist([1, 2, 3].as_slice(), false, Kind::Float);
    let present = count.gt(0.0).to_kind(Kind::Float).reshape([b, 1, 1, 1, 1]);
    let count = count.clamp_min(1.0);
    let mut channels = Vec::with_capacity(3);
    for (axis, &len) in axes.iter().enumerate() {
        let mut shape = [1i64, 1, 1, 1];
        shape[axis + 1] = len;
        let coord = Tensor::arange(len, (Kind::Float, device)).reshape(shape);
        let centre =
            (&me * &coord).sum_dim_intlist([1, 2, 3].as_slice(), false, Kind::Float) / &count;
        let offset = (coord - centre.reshape([b, 1, 1, 1])) / len as f64;
        channels.push(offset.expand([b, axes[0], axes[1], axes[2]], false));
    }
    Tensor::stack(&channels, 4) * present
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_action_prior_marks_goal_places_and_wrong_blocks() {
        // A 3x1x1 world: cell 0 empty with goal block 3, cell 1 holds block 4
        // where the goal is air, cell 2 holds block 5 as the goal wants.
        let mut world = vec![0u8; 6 * 3];
        world[0..3].copy_from_slice(&[0, 4, 5]);
        world[6..9].copy_from_slice(&[3, 0, 5]);
        let world = Tensor::from_slice(&world).reshape([1, 6, 3, 1, 1]);
        let weights = Tensor::from_slice(&[1.5f32, -0.5]);
        let prior = goal_action_prior(&world, &weights);
        assert_eq!(prior.size(), [1, NUM_CHANNELS as i64, 3, 1, 1]);
        let place = channels_of(ActionType::PlaceBlock).start as i64;
        let brk = channels_of(ActionType::BreakBlock).start as i64;
        let at = |c: i64, x: i64| prior.double_value(&[0, c, x, 0, 0]);
        assert_eq!(at(place + 3, 0), 1.5);
        assert_eq!(at(brk, 1), -0.5);
        // Everything else is zero: one place entry and one break entry in all.
        assert_eq!(prior.ne(0.0).sum(Kind::Int64).int64_value(&[]), 2);
    }

    #[test]
    fn predicted_goal_prior_follows_the_goal_heads_odds() {
        // A 2x1x1 world: cell 0 empty, cell 1 holds block 4. The goal head is
        // sure cell 0 wants block 3 and gives block 4 at cell 1 even odds.
        let mut world = vec![0u8; 6 * 2];
        world[1] = 4;
        let world = Tensor::from_slice(&world).reshape([1, 6, 2, 1, 1]);
        let mut logits = vec![-30.0f32; NUM_BLOCKS * 2];
        logits[3 * 2] = 0.0;
        logits[4 * 2 + 1] = 0.0;
        logits[2 * 2 + 1] = 0.0;
        let logits = Tensor::from_slice(&logits).reshape([1, NUM_BLOCKS as i64, 2, 1, 1]);
        let weights = Tensor::from_slice(&[2.0f32, 1.0]);
        let prior = predicted_goal_action_prior(&world, &logits, &weights);
        assert_eq!(prior.size(), [1, NUM_CHANNELS as i64, 2, 1, 1]);
        let place = channels_of(ActionType::PlaceBlock).start as i64;
        let brk = channels_of(ActionType::BreakBlock).start as i64;
        let at = |c: i64, x: i64| prior.double_value(&[0, c, x, 0, 0]);
        assert!(
            at(place + 3, 0).abs() < 1e-5,
            "the sure place costs nothing"
        );
        assert!((at(place + 5, 0) - 2.0 * PRIOR_LOG_FLOOR).abs() < 1e-5);
        assert!(
            (at(brk, 1) - 0.5f64.ln()).abs() < 1e-5,
            "even odds: log 1/2"
        );
        // No place prior in a full cell, no break prior in an empty one.
        assert_eq!(at(place + 3, 1), 0.0);
        assert_eq!(at(brk, 0), 0.0);
        // A block the head is sure of is never broken.
        let sure = logits.copy();
        let _ = sure.get(0).get(2).fill_(-30.0);
        let prior = predicted_goal_action_prior(&world, &sure, &weights);
        assert!((prior.double_value(&[0, brk, 1, 0, 0]) - PRIOR_LOG_FLOOR).abs() < 1e-5);
    }

    #[test]
    fn relative_position_is_each_voxel_offset_from_the_player() {
        // A 4x3x2 world, the player at (1, 0..=1, 1); a second sample without
        // the player.
        let mut markers = vec![0i64; 2 * 4 * 3 * 2];
        markers[3 * 2 + 1] = 1;
        markers[(3 + 1) * 2 + 1] = 1;
        markers[24 + 5] = 2;
        let players = Tensor::from_slice(&markers).reshape([2, 4, 3, 2]);
        let rel = relative_position(&players, [4, 3, 2]);
        assert_eq!(rel.size(), [2, 4, 3, 2, 3]);
        let at = |s: i64, x: i64, y: i64, z: i64, c: i64| rel.double_value(&[s, x, y, z, c]);
        assert!((at(0, 3, 2, 0, 0) - 2.0 / 4.0).abs() < 1e-6);
        assert!((at(0, 3, 2, 0, 1) - 1.5 / 3.0).abs() < 1e-6);
        assert!((at(0, 3, 2, 0, 2) + 1.0 / 2.0).abs() < 1e-6);
        assert!((at(0, 1, 0, 1, 1) + 0.5 / 3.0).abs() < 1e-6);
        assert_eq!(rel.get(1).abs().sum(Kind::Float).double_value(&[]), 0.0);
    }

    /// `rows` random observations for `model` (world, inventory, timestep and
    /// previous action), from libtorch's seed `seed`.
    fn random_batch(model: &Model, rows: i64, seed: i64) -> ObsBatch {
        let [x, y, z] = model.config().world_size.axes().map(|a| a as i64);
        tch::manual_seed(seed);
        ObsBatch::new(
            Tensor::randint(3, [rows, 6, x, y, z], (Kind::Uint8, Device::Cpu)),
            Tensor::randint(5, [rows, 2, 10], (Kind::Int, Device::Cpu)),
            Tensor::randint(100, [rows], (Kind::Float, Device::Cpu)),
            Some(Tensor::randint(
                model.layout().len() as i64,
                [rows],
                (Kind::Int64, Device::Cpu),
            )),
        )
        .unwrap()
    }

    /// A bf16 copy computes the same policy as the f32 model up to rounding,
    /// hands back f32 outputs and state, and refuses to train or be saved.
    #[test]
    fn a_bf16_copy_agrees_with_f32_and_refuses_training() {
        let path = crate::cli::shared_dir().join("models/paper_human_small.json");
        let model = Model::load(&path, Device::Cpu).unwrap();
        let batch = random_batch(&model, 4, 7);
        let exact = model.forward(&batch, None).unwrap();
        let half = model.inference_copy(Precision::Bf16).unwrap();
        assert_eq!(model.precision(), Precision::F32, "the original stays f32");
        let rounded = half.forward(&batch, None).unwrap();
        assert_eq!(rounded.flat_logits.kind(), Kind::Float);
        assert!(
            rounded
                .state
                .tensors()
                .iter()
                .all(|t| t.kind() == Kind::Float)
        );
        // bf16 keeps 8 bits of mantissa: the logits move, but by far less than
        // their spread.
        let spread = exact.flat_logits.std(true).double_value(&[]);
        let moved = (&rounded.flat_logits - &exact.flat_logits)
            .abs()
            .mean(Kind::Float)
            .double_value(&[]);
        assert!(
            moved > 0.0 && moved < 0.1 * spread,
            "moved {moved}, spread {spread}"
        );
        // Its own state feeds its next step.
        half.forward(&batch, Some(&rounded.state)).unwrap();
        assert!(matches!(
            half.forward_t(&batch, None, true),
            Err(NnError::Precision { .. })
        ));
        let dir = std::env::temp_dir().join(format!("mbag-bf16-{}", std::process::id()));
        assert!(matches!(
            half.save(&dir, "m"),
            Err(NnError::Precision { .. })
        ));
        let mut cpu = Model::load(&path, Device::Cpu).unwrap();
        assert!(matches!(
            cpu.set_precision(Precision::F16),
            Err(NnError::Precision { .. })
        ));
        assert_eq!("bf16".parse::<Precision>(), Ok(Precision::Bf16));
        assert!("f8".parse::<Precision>().is_err());
    }

    /// Sequences through `forward_seq_t` equal single steps carrying the state
    /// (BatchNorm in eval mode, where rows do not interact).
    #[test]
    fn sequences_equal_steps_carrying_the_state() {
        let path = crate::cli::shared_dir().join("models/paper_human_small.json");
        let model = Model::load(&path, Device::Cpu).unwrap();
        let (b, t) = (2i64, 3i64);
        let batch = random_batch(&model, b * t, 5);
        let seq = tch::no_grad(|| model.forward_seq_t(&batch, t as usize, None, false)).unwrap();
        let mut state: Option<RecurrentState> = None;
        for step in 0..t {
            // Rows b * t + step of every sequence.
            let idx = Tensor::from_slice(&(0..b).map(|s| s * t + step).collect::<Vec<_>>());
            let one = ObsBatch::new(
                batch.world.index_select(0, &idx),
                batch.inventory.index_select(0, &idx),
                batch.timestep.index_select(0, &idx),
                batch.prev_action.as_ref().map(|p| p.index_select(0, &idx)),
            )
            .unwrap();
            let out = model.forward(&one, state.as_ref()).unwrap();
            let want = seq.flat_logits.index_select(0, &idx);
            let diff = (&out.flat_logits - want).abs().max().double_value(&[]);
            assert!(diff < 1e-4, "step {step}: {diff}");
            state = Some(out.state);
        }
        let last = state.unwrap();
        for (a, b) in last.tensors().iter().zip(seq.state.tensors()) {
            assert!((a - b).abs().max().double_value(&[]) < 1e-5);
        }
    }

    /// A batching service thread must be able to own a model and its outputs.
    #[test]
    fn models_and_outputs_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<Model>();
        send::<Outputs>();
        send::<ObsBatch>();
        send::<RecurrentState>();
    }
}
