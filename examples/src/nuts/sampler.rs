//! The No-U-Turn sampler as ordinary scalar Rust under `#[autobatch]`: the recursive tree
//! builder (whose leaves are leapfrog steps), one transition, and a chain loop with warmup.
//!
//! This is the algorithm of modern Stan and nuts-rs: multinomial sampling of the next state
//! (biased progressive sampling between the old tree and each new subtree, uniform
//! multinomial inside a subtree), the generalised U-turn criterion on the sum of momenta
//! (with the two extra checks across the seam of every merge), divergence when the energy
//! error exceeds 1000 (or is NaN), and a maximum tree depth. Each function is plain Rust
//! that a user can call on one chain; the same functions run over thousands of chains with
//! `<name>::batch`, each chain building its own tree to its own depth.
//!
//! Momenta use a diagonal inverse metric `minv` (kinetic energy `p' diag(minv) p / 2`).
//!
//! Every function takes the run's context `shared` ([`Shared`]): the gradient primitive
//! reaches the target through it, and the settings every chain shares (maximum depth, warmup
//! and draws, adaptation) are read from it where they are used, not passed per chain.

use super::shared::{logp_grad, record, Shared};
use autobatch_runtime::{autobatch, Key, Vector};

/// One end of a trajectory: position, momentum, and the log density's gradient there.
#[autobatch]
#[derive(Clone, Debug, PartialEq)]
pub struct End {
    /// Position.
    pub q: Vector,
    /// Momentum.
    pub p: Vector,
    /// Gradient of the log density at `q`.
    pub g: Vector,
}

/// A state a trajectory proposes: position, log density, gradient, and its energy (the
/// Hamiltonian with the momentum it was reached with).
#[autobatch]
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    /// Position.
    pub q: Vector,
    /// Log density at `q`.
    pub logp: f64,
    /// Gradient of the log density at `q`.
    pub g: Vector,
    /// Energy.
    pub h: f64,
}

/// A subtree of leapfrog steps, as [`build_tree()`] returns it.
#[autobatch]
#[derive(Clone, Debug, PartialEq)]
pub struct Tree {
    /// Its far end.
    pub end: End,
    /// Its proposal, drawn multinomially with weights `exp(h0 - H)`.
    pub proposal: Proposal,
    /// The momentum of its first state.
    pub p_begin: Vector,
    /// The sum of its momenta.
    pub rho: Vector,
    /// The log of its summed weights.
    pub log_sum_weight: f64,
    /// The sum of its acceptance probabilities.
    pub accept_sum: f64,
    /// Its leapfrog count.
    pub n_leapfrog: i64,
    /// Whether it is valid (no U-turn or divergence inside).
    pub valid: bool,
    /// Whether it diverged.
    pub divergent: bool,
}

/// The subtree of depth 0: one leapfrog step of size `eps` from the end `start`, for a
/// trajectory that started at energy `h0`.
///
/// A small function of its own so that the pipeline inlines it where [`build_tree()`] reaches
/// depth 1: a subtree of two leaves then takes its two steps in its own activation, without a
/// call (arguments and seven result vectors copied, the caller's live vectors held and given
/// back) per step.
#[autobatch]
pub fn leapfrog(shared: &Shared, start: End, eps: f64, minv: Vector, h0: f64) -> Tree {
    // The half-step momentum is computed again where the full step needs it (the same
    // operations, so the same bits) rather than kept: a vector kept across the gradient is a
    // row written, held and read back for every chain.
    let q1 = &start.q + &(eps * &(&minv * &(&start.p + &((0.5 * eps) * &start.g))));
    let (logp1, g1): (f64, Vector) = logp_grad(shared, &q1);
    let p1 = &(&start.p + &((0.5 * eps) * &start.g)) + &((0.5 * eps) * &g1);
    let h = -logp1 + 0.5 * p1.dot(&(&minv * &p1));
    let log_weight = if h.is_nan() {
        f64::NEG_INFINITY
    } else {
        h0 - h
    };
    let divergent = -log_weight > 1000.0;
    let accept = if log_weight > 0.0 {
        1.0
    } else {
        log_weight.exp()
    };
    Tree {
        end: End {
            q: q1.clone(),
            p: p1.clone(),
            g: g1.clone(),
        },
        proposal: Proposal {
            q: q1,
            logp: logp1,
            g: g1,
            h,
        },
        p_begin: p1.clone(),
        rho: p1,
        log_sum_weight: log_weight,
        accept_sum: accept,
        n_leapfrog: 1,
        valid: !divergent,
        divergent,
    }
}

/// Builds a subtree of `2^depth` leapfrog steps of size `eps` from the end `start`, for a
/// trajectory that started at energy `h0`; returns it with the advanced key. An invalid
/// subtree is returned as soon as it is found.
#[autobatch]
pub fn build_tree(
    shared: &Shared,
    depth: i64,
    start: End,
    eps: f64,
    minv: Vector,
    h0: f64,
    key: Key,
) -> (Tree, Key) {
    if depth == 0 {
        return (leapfrog(shared, start, eps, minv, h0), key);
    }
    // The first half, extending from the given end.
    let (first, key) = if depth == 1 {
        (leapfrog(shared, start, eps, minv.clone(), h0), key)
    } else {
        build_tree(shared, depth - 1, start, eps, minv.clone(), h0, key)
    };
    if !first.valid {
        return (
            Tree {
                valid: false,
                ..first
            },
            key,
        );
    }
    // The second half, extending from the end of the first (whose momentum the U-turn
    // checks read afterwards: kept in place rather than copied aside).
    let (second, key) = if depth == 1 {
        (
            leapfrog(shared, first.end.clone(), eps, minv.clone(), h0),
            key,
        )
    } else {
        build_tree(
            shared,
            depth - 1,
            first.end.clone(),
            eps,
            minv.clone(),
            h0,
            key,
        )
    };
    let accept = first.accept_sum + second.accept_sum;
    let n = first.n_leapfrog + second.n_leapfrog;
    if !second.valid {
        return (
            Tree {
                end: second.end,
                log_sum_weight: second.log_sum_weight,
                accept_sum: accept,
                n_leapfrog: n,
                valid: false,
                divergent: second.divergent,
                ..first
            },
            key,
        );
    }
    // Multinomial sample between the halves.
    let lsw: f64 = log_add_exp(first.log_sum_weight, second.log_sum_weight);
    let (u, key) = key.uniform();
    let take_final = u < (second.log_sum_weight - lsw).exp();
    let proposal = if take_final {
        second.proposal
    } else {
        first.proposal
    };
    // The generalised U-turn criterion over the merged subtree and across its seam.
    let rho = &first.rho + &second.rho;
    let ps_begin = &minv * &first.p_begin;
    let ps_end = &minv * &second.end.p;
    let ps_init_end = &minv * &first.end.p;
    let ps_final_begin = &minv * &second.p_begin;
    let rho_left = &first.rho + &second.p_begin;
    let rho_right = &second.rho + &first.end.p;
    let persist = ps_begin.dot(&rho) > 0.0
        && ps_end.dot(&rho) > 0.0
        && ps_begin.dot(&rho_left) > 0.0
        && ps_final_begin.dot(&rho_left) > 0.0
        && ps_init_end.dot(&rho_right) > 0.0
        && ps_end.dot(&rho_right) > 0.0;
    let merged = Tree {
        end: second.end,
        proposal,
        p_begin: first.p_begin,
        rho,
        log_sum_weight: lsw,
        accept_sum: accept,
        n_leapfrog: n,
        valid: persist,
        divergent: false,
    };
    (merged, key)
}

/// `ln(exp(a) + exp(b))` without overflow.
#[autobatch]
pub fn log_add_exp(a: f64, b: f64) -> f64 {
    let hi = a.max(b);
    if hi == f64::NEG_INFINITY {
        hi
    } else {
        hi + ((a - hi).exp() + (b - hi).exp()).ln()
    }
}

/// Where a chain is: position, log density and its gradient.
#[autobatch]
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    /// Position.
    pub q: Vector,
    /// Log density at `q`.
    pub logp: f64,
    /// Gradient of the log density at `q`.
    pub g: Vector,
}

/// What one transition did: the next state and its statistics.
#[autobatch]
#[derive(Clone, Debug, PartialEq)]
pub struct Transition {
    /// The next state.
    pub state: State,
    /// Its energy (the Hamiltonian with the momentum it was reached with).
    pub energy: f64,
    /// The tree depth.
    pub depth: i64,
    /// The leapfrog count.
    pub n_leapfrog: i64,
    /// Whether the trajectory diverged.
    pub divergent: bool,
    /// The mean acceptance probability over the trajectory (what step-size adaptation
    /// targets).
    pub accept: f64,
}

/// One NUTS transition from `from` with step size `eps`, inverse metric `minv` and at most
/// `shared.settings.max_depth` doublings; returns it with the advanced key.
#[autobatch]
pub fn transition(
    shared: &Shared,
    from: State,
    eps: f64,
    minv: Vector,
    key: Key,
) -> (Transition, Key) {
    let (z, key) = key.normals_like(&from.q);
    let p = &z / &minv.map(f64::sqrt);
    let h0 = -from.logp + 0.5 * p.dot(&(&minv * &p));
    let mut key = key;
    // The two ends of the trajectory: forward and backward.
    let mut fwd = End {
        q: from.q.clone(),
        p: p.clone(),
        g: from.g.clone(),
    };
    let mut bck = End {
        q: from.q.clone(),
        p: p.clone(),
        g: from.g.clone(),
    };
    // The sample so far, the summed momenta and the log of the summed weights.
    let mut sample = Proposal {
        q: from.q,
        logp: from.logp,
        g: from.g,
        h: h0,
    };
    let mut rho = p;
    let mut lsw = 0.0;
    let mut depth: i64 = 0;
    let mut n_leapfrog = 0;
    let mut accept_sum = 0.0;
    let mut divergent = false;
    while depth < shared.settings.max_depth {
        let (u, k) = key.uniform();
        let forward = u > 0.5;
        let step = if forward { eps } else { -eps };
        let (start, near_p, far_p) = if forward {
            (fwd.clone(), fwd.p.clone(), bck.p.clone())
        } else {
            (bck.clone(), bck.p.clone(), fwd.p.clone())
        };
        let (tree, k) = build_tree(shared, depth, start, step, minv.clone(), h0, k);
        n_leapfrog += tree.n_leapfrog;
        accept_sum += tree.accept_sum;
        divergent = tree.divergent;
        if !tree.valid {
            key = k;
            break;
        }
        depth += 1;
        // Biased progressive sampling: prefer the new subtree.
        let (u, k) = k.uniform();
        key = k;
        if tree.log_sum_weight > lsw || u < (tree.log_sum_weight - lsw).exp() {
            sample = tree.proposal;
        }
        lsw = log_add_exp(lsw, tree.log_sum_weight);
        // The U-turn criterion over the whole tree and across the seam with the subtree.
        let rho_old = rho;
        rho = &rho_old + &tree.rho;
        let ps_far = &minv * &far_p;
        let ps_near = &minv * &near_p;
        let ps_begin = &minv * &tree.p_begin;
        let ps_end = &minv * &tree.end.p;
        let rho_old_ext = &rho_old + &tree.p_begin;
        let rho_sub_ext = &tree.rho + &near_p;
        let persist = ps_far.dot(&rho) > 0.0
            && ps_end.dot(&rho) > 0.0
            && ps_far.dot(&rho_old_ext) > 0.0
            && ps_begin.dot(&rho_old_ext) > 0.0
            && ps_near.dot(&rho_sub_ext) > 0.0
            && ps_end.dot(&rho_sub_ext) > 0.0;
        if forward {
            fwd = tree.end;
        } else {
            bck = tree.end;
        }
        if !persist {
            break;
        }
    }
    let accept = accept_sum / (n_leapfrog as f64);
    let done = Transition {
        state: State {
            q: sample.q,
            logp: sample.logp,
            g: sample.g,
        },
        energy: sample.h,
        depth,
        n_leapfrog,
        divergent,
        accept,
    };
    (done, key)
}

/// Dual averaging of the step size (Stan's constants: gamma 0.05, t0 10, kappa 0.75).
#[autobatch]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepSizeAdaptation {
    /// Where the log step size is shrunk towards.
    pub mu: f64,
    /// Transitions averaged so far.
    pub count: f64,
    /// The averaged acceptance error.
    pub s_bar: f64,
    /// The averaged log step size.
    pub x_bar: f64,
}

/// A metric window's running (Welford) mean and squared deviations of the draws.
#[autobatch]
#[derive(Clone, Debug, PartialEq)]
pub struct MetricWindow {
    /// Draws in the window so far.
    pub count: f64,
    /// Their mean.
    pub mean: Vector,
    /// Their summed squared deviations from the mean.
    pub m2: Vector,
}

/// Runs one chain for `warmup + draws` transitions (of the context's settings) from `q` and
/// records every transition (with its statistics) through [`record()`] under chain index
/// `chain`: warmup transitions as draws `-warmup..0`, the draws kept as `0..draws`.
///
/// During warmup, `adapt_step_size` tunes the step size (from `step_size`) by dual averaging
/// towards a mean acceptance of `target_accept` (Stan's constants: gamma 0.05, t0 10, kappa
/// 0.75), and `adapt_metric` estimates the diagonal inverse metric from the draws of Stan's doubling
/// windows (an initial buffer of 75, windows from 25, a final buffer of 50; 15% / 75% / 10%
/// for warmups shorter than 150). Returns the final position, step size and inverse metric.
#[autobatch]
pub fn chain(shared: &Shared, q: Vector, chain: i64, key: Key) -> (Vector, f64, Vector) {
    let (logp0, g0): (f64, Vector) = logp_grad(shared, &q);
    let mut state = State {
        q,
        logp: logp0,
        g: g0,
    };
    let mut key = key;
    let mut eps: f64 = shared.settings.step_size;
    let mut minv = Vector::filled_like(1.0, &state.q);
    let mut da = StepSizeAdaptation {
        mu: (10.0 * eps).ln(),
        count: 0.0,
        s_bar: 0.0,
        x_bar: 0.0,
    };
    // Metric windows.
    let mut init_buffer: i64 = 75;
    let mut term_buffer: i64 = 50;
    let mut window: i64 = 25;
    if shared.settings.warmup < 150 {
        init_buffer = (15 * shared.settings.warmup) / 100;
        term_buffer = shared.settings.warmup / 10;
        window = shared.settings.warmup - init_buffer - term_buffer;
    }
    let slow_end = shared.settings.warmup - term_buffer;
    let mut window_end = init_buffer + window;
    if window_end + 2 * window > slow_end {
        window_end = slow_end;
    }
    let mut w = MetricWindow {
        count: 0.0,
        mean: Vector::filled_like(0.0, &state.q),
        m2: Vector::filled_like(0.0, &state.q),
    };
    let mut i: i64 = 0;
    while i < shared.settings.warmup + shared.settings.draws {
        let (t, k) = transition(shared, state, eps, minv.clone(), key);
        state = t.state;
        key = k;
        let step_used = eps;
        if i < shared.settings.warmup {
            if shared.settings.adapt_step_size {
                da.count += 1.0;
                let eta = 1.0 / (da.count + 10.0);
                da.s_bar =
                    (1.0 - eta) * da.s_bar + eta * (shared.settings.target_accept - t.accept);
                let x = da.mu - da.s_bar * da.count.sqrt() / 0.05;
                let x_eta = da.count.powf(-0.75);
                da.x_bar = (1.0 - x_eta) * da.x_bar + x_eta * x;
                eps = x.exp();
                if i + 1 == shared.settings.warmup {
                    eps = da.x_bar.exp();
                }
            }
            if shared.settings.adapt_metric && i >= init_buffer && i < slow_end {
                w.count += 1.0;
                let delta = &state.q - &w.mean;
                w.mean = &w.mean + &(&delta / w.count);
                w.m2 = &w.m2 + &(&delta * &(&state.q - &w.mean));
                if i + 1 == window_end {
                    let shrink = w.count / (w.count + 5.0);
                    let floor = 1e-3 * (5.0 / (w.count + 5.0));
                    minv = &((shrink / (w.count - 1.0)) * &w.m2) + floor;
                    w = MetricWindow {
                        count: 0.0,
                        mean: Vector::filled_like(0.0, &state.q),
                        m2: Vector::filled_like(0.0, &state.q),
                    };
                    window *= 2;
                    window_end = i + 1 + window;
                    if window_end + 2 * window > slow_end {
                        window_end = slow_end;
                    }
                    // Restart step-size adaptation around the current step size.
                    da = StepSizeAdaptation {
                        mu: (10.0 * eps).ln(),
                        count: 0.0,
                        s_bar: 0.0,
                        x_bar: 0.0,
                    };
                }
            }
        }
        let _recorded: bool = record(
            shared,
            chain,
            i - shared.settings.warmup,
            &state.q,
            t.depth,
            t.n_leapfrog,
            t.divergent,
            t.accept,
            step_used,
            state.logp,
            t.energy,
        );
        i += 1;
    }
    (state.q, eps, minv)
}
