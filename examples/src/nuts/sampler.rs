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

/// Builds a subtree of `2^depth` leapfrog steps of size `eps` from the end state
/// `(q, p, g)`, for a trajectory that started at energy `h0`.
///
/// Returns the subtree's far end `(q, p, g)`; its proposal `(q, logp, g)` drawn
/// multinomially with weights `exp(h0 - H)`, and the proposal's energy `H`; the momentum of its first state; the sum of its
/// momenta; the log of its summed weights; the sum of its acceptance probabilities; its
/// leapfrog count; whether it is valid (no U-turn or divergence inside); whether it diverged;
/// and the advanced key. An invalid subtree is returned as soon as it is found.
#[autobatch]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
pub fn build_tree(
    shared: &Shared,
    depth: i64,
    q: Vector,
    p: Vector,
    g: Vector,
    eps: f64,
    minv: Vector,
    h0: f64,
    key: Key,
) -> (
    Vector,
    Vector,
    Vector,
    Vector,
    f64,
    Vector,
    f64,
    Vector,
    Vector,
    f64,
    f64,
    i64,
    bool,
    bool,
    Key,
) {
    if depth == 0 {
        // One leapfrog step, written out here rather than as a function: a call would copy
        // every vector in and out.
        let half = &p + &((0.5 * eps) * &g);
        let q1 = &q + &(eps * &(&minv * &half));
        let (logp1, g1): (f64, Vector) = logp_grad(shared, &q1);
        let p1 = &half + &((0.5 * eps) * &g1);
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
        return (
            q1.clone(),
            p1.clone(),
            g1.clone(),
            q1,
            logp1,
            g1,
            h,
            p1.clone(),
            p1,
            log_weight,
            accept,
            1,
            !divergent,
            divergent,
            key,
        );
    }
    // The first half, extending from the given end.
    let (
        q,
        p,
        g,
        prop_q,
        prop_logp,
        prop_g,
        prop_h,
        p_begin,
        rho_init,
        lsw_init,
        acc_init,
        n_init,
        valid,
        divergent,
        key,
    ) = build_tree(shared, depth - 1, q, p, g, eps, minv.clone(), h0, key);
    if !valid {
        return (
            q, p, g, prop_q, prop_logp, prop_g, prop_h, p_begin, rho_init, lsw_init, acc_init,
            n_init, false, divergent, key,
        );
    }
    let p_init_end = p.clone();
    // The second half, extending from the end of the first.
    let (
        q,
        p,
        g,
        final_q,
        final_logp,
        final_g,
        final_h,
        p_final_begin,
        rho_final,
        lsw_final,
        acc_final,
        n_final,
        valid,
        divergent,
        key,
    ) = build_tree(shared, depth - 1, q, p, g, eps, minv.clone(), h0, key);
    let accept = acc_init + acc_final;
    let n = n_init + n_final;
    if !valid {
        return (
            q, p, g, prop_q, prop_logp, prop_g, prop_h, p_begin, rho_init, lsw_final, accept, n,
            false, divergent, key,
        );
    }
    // Multinomial sample between the halves.
    let lsw: f64 = log_add_exp(lsw_init, lsw_final);
    let (u, key) = key.uniform();
    let take_final = u < (lsw_final - lsw).exp();
    let (prop_q, prop_logp, prop_g, prop_h) = if take_final {
        (final_q, final_logp, final_g, final_h)
    } else {
        (prop_q, prop_logp, prop_g, prop_h)
    };
    // The generalised U-turn criterion over the merged subtree and across its seam.
    let rho = &rho_init + &rho_final;
    let ps_begin = &minv * &p_begin;
    let ps_end = &minv * &p;
    let ps_init_end = &minv * &p_init_end;
    let ps_final_begin = &minv * &p_final_begin;
    let rho_left = &rho_init + &p_final_begin;
    let rho_right = &rho_final + &p_init_end;
    let persist = ps_begin.dot(&rho) > 0.0
        && ps_end.dot(&rho) > 0.0
        && ps_begin.dot(&rho_left) > 0.0
        && ps_final_begin.dot(&rho_left) > 0.0
        && ps_init_end.dot(&rho_right) > 0.0
        && ps_end.dot(&rho_right) > 0.0;
    (
        q, p, g, prop_q, prop_logp, prop_g, prop_h, p_begin, rho, lsw, accept, n, persist, false,
        key,
    )
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

/// One NUTS transition from `(q, logp, g)` with step size `eps`, inverse metric `minv` and
/// at most `shared.settings.max_depth` doublings: the next state `(q, logp, g)`, its energy (the Hamiltonian
/// with the momentum it was reached with), the tree depth, the leapfrog count, whether the
/// trajectory diverged, the mean acceptance probability over the trajectory (what step-size
/// adaptation targets), and the advanced key.
#[autobatch]
#[allow(clippy::type_complexity)]
pub fn transition(
    shared: &Shared,
    q: Vector,
    logp: f64,
    g: Vector,
    eps: f64,
    minv: Vector,
    key: Key,
) -> (Vector, f64, Vector, f64, i64, i64, bool, f64, Key) {
    let (z, key) = key.normals_like(&q);
    let p = &z / &minv.map(f64::sqrt);
    let h0 = -logp + 0.5 * p.dot(&(&minv * &p));
    let mut key = key;
    // The two ends of the trajectory: forward and backward.
    let mut fwd_q = q.clone();
    let mut fwd_p = p.clone();
    let mut fwd_g = g.clone();
    let mut bck_q = q.clone();
    let mut bck_p = p.clone();
    let mut bck_g = g.clone();
    // The sample so far, the summed momenta and the log of the summed weights.
    let mut sample_q = q;
    let mut sample_logp = logp;
    let mut sample_g = g;
    let mut sample_h = h0;
    let mut rho = p;
    let mut lsw = 0.0;
    let mut depth: i64 = 0;
    let mut n_leapfrog = 0;
    let mut accept_sum = 0.0;
    let mut divergent = false;
    while depth < shared.settings.max_depth {
        let (u, k) = key.uniform();
        let forward = u > 0.5;
        let (start_q, start_p, start_g, step, near_p, far_p) = if forward {
            (
                fwd_q.clone(),
                fwd_p.clone(),
                fwd_g.clone(),
                eps,
                fwd_p.clone(),
                bck_p.clone(),
            )
        } else {
            (
                bck_q.clone(),
                bck_p.clone(),
                bck_g.clone(),
                -eps,
                bck_p.clone(),
                fwd_p.clone(),
            )
        };
        let (
            end_q,
            end_p,
            end_g,
            prop_q,
            prop_logp,
            prop_g,
            prop_h,
            p_begin,
            rho_sub,
            lsw_sub,
            acc,
            n,
            valid,
            div,
            k,
        ): (
            Vector,
            Vector,
            Vector,
            Vector,
            f64,
            Vector,
            f64,
            Vector,
            Vector,
            f64,
            f64,
            i64,
            bool,
            bool,
            Key,
        ) = build_tree(
            shared,
            depth,
            start_q,
            start_p,
            start_g,
            step,
            minv.clone(),
            h0,
            k,
        );
        n_leapfrog += n;
        accept_sum += acc;
        divergent = div;
        if !valid {
            key = k;
            break;
        }
        depth += 1;
        // Biased progressive sampling: prefer the new subtree.
        let (u, k) = k.uniform();
        key = k;
        if lsw_sub > lsw || u < (lsw_sub - lsw).exp() {
            sample_q = prop_q;
            sample_logp = prop_logp;
            sample_g = prop_g;
            sample_h = prop_h;
        }
        lsw = log_add_exp(lsw, lsw_sub);
        // The U-turn criterion over the whole tree and across the seam with the subtree.
        let rho_old = rho;
        rho = &rho_old + &rho_sub;
        let ps_far = &minv * &far_p;
        let ps_near = &minv * &near_p;
        let ps_begin = &minv * &p_begin;
        let ps_end = &minv * &end_p;
        let rho_old_ext = &rho_old + &p_begin;
        let rho_sub_ext = &rho_sub + &near_p;
        let persist = ps_far.dot(&rho) > 0.0
            && ps_end.dot(&rho) > 0.0
            && ps_far.dot(&rho_old_ext) > 0.0
            && ps_begin.dot(&rho_old_ext) > 0.0
            && ps_near.dot(&rho_sub_ext) > 0.0
            && ps_end.dot(&rho_sub_ext) > 0.0;
        if forward {
            fwd_q = end_q;
            fwd_p = end_p;
            fwd_g = end_g;
        } else {
            bck_q = end_q;
            bck_p = end_p;
            bck_g = end_g;
        }
        if !persist {
            break;
        }
    }
    let accept = accept_sum / (n_leapfrog as f64);
    (
        sample_q,
        sample_logp,
        sample_g,
        sample_h,
        depth,
        n_leapfrog,
        divergent,
        accept,
        key,
    )
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
    let mut q = q;
    let mut logp = logp0;
    let mut g = g0;
    let mut key = key;
    let mut eps: f64 = shared.settings.step_size;
    let mut minv = Vector::filled_like(1.0, &q);
    // Dual averaging state.
    let mut mu = (10.0 * eps).ln();
    let mut da_count = 0.0;
    let mut s_bar = 0.0;
    let mut x_bar = 0.0;
    // Metric windows and the running (Welford) mean and squared deviations.
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
    let mut w_count = 0.0;
    let mut w_mean = Vector::filled_like(0.0, &q);
    let mut w_m2 = Vector::filled_like(0.0, &q);
    let mut i: i64 = 0;
    while i < shared.settings.warmup + shared.settings.draws {
        let (q1, logp1, g1, energy, depth, n_leapfrog, divergent, accept, k): (
            Vector,
            f64,
            Vector,
            f64,
            i64,
            i64,
            bool,
            f64,
            Key,
        ) = transition(shared, q, logp, g, eps, minv.clone(), key);
        q = q1;
        logp = logp1;
        g = g1;
        key = k;
        let step_used = eps;
        if i < shared.settings.warmup {
            if shared.settings.adapt_step_size {
                da_count += 1.0;
                let eta = 1.0 / (da_count + 10.0);
                s_bar = (1.0 - eta) * s_bar + eta * (shared.settings.target_accept - accept);
                let x = mu - s_bar * da_count.sqrt() / 0.05;
                let x_eta = da_count.powf(-0.75);
                x_bar = (1.0 - x_eta) * x_bar + x_eta * x;
                eps = x.exp();
                if i + 1 == shared.settings.warmup {
                    eps = x_bar.exp();
                }
            }
            if shared.settings.adapt_metric && i >= init_buffer && i < slow_end {
                w_count += 1.0;
                let delta = &q - &w_mean;
                w_mean = &w_mean + &(&delta / w_count);
                w_m2 = &w_m2 + &(&delta * &(&q - &w_mean));
                if i + 1 == window_end {
                    let shrink = w_count / (w_count + 5.0);
                    let floor = 1e-3 * (5.0 / (w_count + 5.0));
                    minv = &((shrink / (w_count - 1.0)) * &w_m2) + floor;
                    w_count = 0.0;
                    w_mean = Vector::filled_like(0.0, &q);
                    w_m2 = Vector::filled_like(0.0, &q);
                    window *= 2;
                    window_end = i + 1 + window;
                    if window_end + 2 * window > slow_end {
                        window_end = slow_end;
                    }
                    // Restart step-size adaptation around the current step size.
                    mu = (10.0 * eps).ln();
                    da_count = 0.0;
                    s_bar = 0.0;
                    x_bar = 0.0;
                }
            }
        }
        let _recorded: bool = record(
            shared,
            chain,
            i - shared.settings.warmup,
            &q,
            depth,
            n_leapfrog,
            divergent,
            accept,
            step_used,
            logp,
            energy,
        );
        i += 1;
    }
    (q, eps, minv)
}
