"""Chapter 2's graded tests reject hard-coded answers and the classic mistakes, and accept other correct code.

Each case swaps one function of the solution for a variant and runs the exercise's whole
test cell (visible and hidden tests) against it; the harness is tests/mistakes.py.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from mistakes import GradedCells, mistake_tests, naming_tests

CHAPTER = "02-hidden-markov-models"

CELLS = GradedCells(CHAPTER)
BASE = CELLS.base
logsumexp, safe_log, Trellis = BASE["logsumexp"], BASE["safe_log"], BASE["Trellis"]


# ---- sample_hmm --------------------------------------------------------------------------------

def sample_hardcoded(pi, A, B, T, rng):
    if T == 5:
        return np.array([2, 0, 1, 2, 0]), np.array([1, 0, 1, 1, 0])
    return np.zeros(T, dtype=int), np.zeros(T, dtype=int)


def sample_emits_from_previous_state(pi, A, B, T, rng):
    n_states, n_symbols = B.shape
    states, obs = np.empty(T, dtype=int), np.empty(T, dtype=int)
    for t in range(T):
        states[t] = rng.choice(n_states, p=pi if t == 0 else A[states[t - 1]])
        obs[t] = rng.choice(n_symbols, p=B[states[max(t - 1, 0)]])
    return states, obs


def sample_ignores_pi(pi, A, B, T, rng):
    n_states, n_symbols = B.shape
    states, obs = np.empty(T, dtype=int), np.empty(T, dtype=int)
    for t in range(T):
        states[t] = rng.choice(n_states) if t == 0 else rng.choice(n_states, p=A[states[t - 1]])
        obs[t] = rng.choice(n_symbols, p=B[states[t]])
    return states, obs


def sample_columns_of_A(pi, A, B, T, rng):
    n_states, n_symbols = B.shape
    states, obs = np.empty(T, dtype=int), np.empty(T, dtype=int)
    for t in range(T):
        column = A[:, states[t - 1]] if t else None
        states[t] = rng.choice(n_states, p=pi if t == 0 else column / column.sum())
        obs[t] = rng.choice(n_symbols, p=B[states[t]])
    return states, obs


def sample_global_rng(pi, A, B, T, rng):
    n_states, n_symbols = B.shape
    states, obs = np.empty(T, dtype=int), np.empty(T, dtype=int)
    for t in range(T):
        states[t] = np.random.choice(n_states, p=pi if t == 0 else A[states[t - 1]])
        obs[t] = np.random.choice(n_symbols, p=B[states[t]])
    return states, obs


def sample_other_correct(pi, A, B, T, rng):
    def draw(p):  # inverse CDF with one uniform number
        return min(int(np.searchsorted(np.cumsum(p), rng.random(), side="right")), len(p) - 1)

    states, obs = [], []
    for t in range(T):
        states.append(draw(pi) if not states else draw(A[states[-1]]))
        obs.append(draw(B[states[-1]]))
    return np.array(states, dtype=np.int64), np.array(obs, dtype=np.int64)


# ---- forward_log -------------------------------------------------------------------------------

def forward_without_pi(log_pi, log_A, log_B, obs):
    log_alpha = np.empty((len(obs), len(log_pi)))
    log_alpha[0] = log_B[:, obs[0]]
    for t in range(1, len(obs)):
        log_alpha[t] = logsumexp(log_alpha[t - 1][:, None] + log_A, axis=0) + log_B[:, obs[t]]
    return log_alpha, float(logsumexp(log_alpha[-1]))


def forward_emission_of_previous_step(log_pi, log_A, log_B, obs):
    log_alpha = np.empty((len(obs), len(log_pi)))
    log_alpha[0] = log_pi + log_B[:, obs[0]]
    for t in range(1, len(obs)):
        log_alpha[t] = logsumexp(log_alpha[t - 1][:, None] + log_A, axis=0) + log_B[:, obs[t - 1]]
    return log_alpha, float(logsumexp(log_alpha[-1]))


def forward_max_instead_of_sum(log_pi, log_A, log_B, obs):
    log_alpha = np.empty((len(obs), len(log_pi)))
    log_alpha[0] = log_pi + log_B[:, obs[0]]
    for t in range(1, len(obs)):
        log_alpha[t] = np.max(log_alpha[t - 1][:, None] + log_A, axis=0) + log_B[:, obs[t]]
    return log_alpha, float(np.max(log_alpha[-1]))


def forward_A_transposed(log_pi, log_A, log_B, obs):
    log_alpha = np.empty((len(obs), len(log_pi)))
    log_alpha[0] = log_pi + log_B[:, obs[0]]
    for t in range(1, len(obs)):
        log_alpha[t] = logsumexp(log_alpha[t - 1][:, None] + log_A.T, axis=0) + log_B[:, obs[t]]
    return log_alpha, float(logsumexp(log_alpha[-1]))


def forward_in_probability_space(log_pi, log_A, log_B, obs):
    pi, A, B = np.exp(log_pi), np.exp(log_A), np.exp(log_B)
    alpha = np.empty((len(obs), len(pi)))
    alpha[0] = pi * B[:, obs[0]]
    for t in range(1, len(obs)):
        alpha[t] = (alpha[t - 1] @ A) * B[:, obs[t]]
    with np.errstate(divide="ignore"):
        return np.log(alpha), float(np.log(alpha[-1].sum()))


def forward_other_correct(log_pi, log_A, log_B, obs):
    """Rabiner's scaled forward pass in probabilities, converted to logs at the end."""
    pi, A, B = np.exp(log_pi), np.exp(log_A), np.exp(log_B)
    scaled = np.empty((len(obs), len(pi)))
    log_scale = np.empty(len(obs))
    alpha = pi * B[:, obs[0]]
    for t in range(len(obs)):
        if t:
            alpha = (alpha @ A) * B[:, obs[t]]
        log_scale[t] = np.log(alpha.sum())
        alpha = alpha / alpha.sum()
        scaled[t] = alpha
    with np.errstate(divide="ignore"):
        log_alpha = np.log(scaled) + np.cumsum(log_scale)[:, None]
    return log_alpha, float(log_scale.sum())


# ---- backward_log ------------------------------------------------------------------------------

def backward_emission_of_current_step(log_A, log_B, obs):
    log_beta = np.zeros((len(obs), log_A.shape[0]))
    for t in range(len(obs) - 2, -1, -1):
        log_beta[t] = logsumexp(log_A + (log_B[:, obs[t]] + log_beta[t + 1])[None, :], axis=1)
    return log_beta


def backward_A_transposed(log_A, log_B, obs):
    log_beta = np.zeros((len(obs), log_A.shape[0]))
    for t in range(len(obs) - 2, -1, -1):
        log_beta[t] = logsumexp(log_A.T + (log_B[:, obs[t + 1]] + log_beta[t + 1])[None, :], axis=1)
    return log_beta


def backward_includes_own_emission(log_A, log_B, obs):
    log_beta = np.zeros((len(obs), log_A.shape[0]))
    log_beta[-1] = log_B[:, obs[-1]]
    for t in range(len(obs) - 2, -1, -1):
        log_beta[t] = logsumexp(log_A + log_beta[t + 1][None, :], axis=1) + log_B[:, obs[t]]
    return log_beta


def backward_in_probability_space(log_A, log_B, obs):
    A, B = np.exp(log_A), np.exp(log_B)
    beta = np.ones((len(obs), A.shape[0]))
    for t in range(len(obs) - 2, -1, -1):
        beta[t] = A @ (B[:, obs[t + 1]] * beta[t + 1])
    with np.errstate(divide="ignore"):
        return np.log(beta)


def backward_other_correct(log_A, log_B, obs):
    """Element by element, with np.logaddexp.reduce instead of the given logsumexp."""
    T, N = len(obs), len(log_A)
    log_beta = np.zeros((T, N))
    for t in reversed(range(T - 1)):
        for i in range(N):
            log_beta[t, i] = np.logaddexp.reduce([log_A[i, j] + log_B[j, obs[t + 1]] + log_beta[t + 1, j]
                                                  for j in range(N)])
    return log_beta


# ---- state_posteriors --------------------------------------------------------------------------

def posteriors_normalised_over_time(log_alpha, log_beta):
    joint = log_alpha + log_beta
    return np.exp(joint - logsumexp(joint, axis=0)[None, :])


def posteriors_as_logs(log_alpha, log_beta):
    joint = log_alpha + log_beta
    return joint - logsumexp(joint, axis=1)[:, None]


def posteriors_exp_before_normalising(log_alpha, log_beta):
    joint = np.exp(log_alpha + log_beta)
    with np.errstate(invalid="ignore"):
        return joint / joint.sum(axis=1, keepdims=True)


def posteriors_without_beta(log_alpha, log_beta):
    return np.exp(log_alpha - logsumexp(log_alpha, axis=1)[:, None])


def posteriors_other_correct(log_alpha, log_beta):
    joint = np.asarray(log_alpha) + np.asarray(log_beta)
    weights = np.exp(joint - joint.max(axis=1, keepdims=True))  # a softmax over the states of each step
    return weights / weights.sum(axis=1, keepdims=True)


# ---- viterbi -----------------------------------------------------------------------------------

def _backtrack(delta, back):
    path = np.empty(len(delta), dtype=int)
    path[-1] = delta[-1].argmax()
    for t in range(len(delta) - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return Trellis(path, float(delta[-1, path[-1]]), delta, back)


def viterbi_logsumexp_instead_of_max(log_pi, log_A, log_B, obs):
    T, N = len(obs), len(log_pi)
    delta, back = np.empty((T, N)), np.full((T, N), -1, dtype=int)
    delta[0] = log_pi + log_B[:, obs[0]]
    for t in range(1, T):
        scores = delta[t - 1][:, None] + log_A
        back[t] = scores.argmax(axis=0)
        delta[t] = logsumexp(scores, axis=0) + log_B[:, obs[t]]
    return _backtrack(delta, back)


def viterbi_argmax_into_delta(log_pi, log_A, log_B, obs):
    T, N = len(obs), len(log_pi)
    delta, back = np.empty((T, N)), np.full((T, N), -1, dtype=int)
    delta[0] = log_pi + log_B[:, obs[0]]
    for t in range(1, T):
        scores = delta[t - 1][:, None] + log_A
        back[t] = scores.argmax(axis=0)
        delta[t] = back[t] + log_B[:, obs[t]]
    return _backtrack(delta, back)


def viterbi_back_ignores_A(log_pi, log_A, log_B, obs):
    T, N = len(obs), len(log_pi)
    delta, back = np.empty((T, N)), np.full((T, N), -1, dtype=int)
    delta[0] = log_pi + log_B[:, obs[0]]
    for t in range(1, T):
        back[t] = delta[t - 1].argmax()  # the best previous state, whatever the transition costs
        delta[t] = (delta[t - 1][:, None] + log_A).max(axis=0) + log_B[:, obs[t]]
    return _backtrack(delta, back)


def viterbi_without_pi(log_pi, log_A, log_B, obs):
    T, N = len(obs), len(log_pi)
    delta, back = np.empty((T, N)), np.full((T, N), -1, dtype=int)
    delta[0] = log_B[:, obs[0]]
    for t in range(1, T):
        scores = delta[t - 1][:, None] + log_A
        back[t] = scores.argmax(axis=0)
        delta[t] = scores.max(axis=0) + log_B[:, obs[t]]
    return _backtrack(delta, back)


def viterbi_greedy(log_pi, log_A, log_B, obs):
    """The best state of every column on its own instead of following the back-pointers."""
    result = BASE["viterbi"](log_pi, log_A, log_B, obs)
    path = result.delta.argmax(axis=1)
    return Trellis(path, float(result.delta[-1].max()), result.delta, result.back)


def viterbi_off_by_one_backtrack(log_pi, log_A, log_B, obs):
    result = BASE["viterbi"](log_pi, log_A, log_B, obs)
    path = np.empty(len(obs), dtype=int)
    path[-1] = result.delta[-1].argmax()
    for t in range(len(obs) - 1, 0, -1):
        path[t - 1] = result.back[t - 1, path[t]] if t > 1 else result.back[t, path[t]]
    return Trellis(path, result.log_prob, result.delta, result.back)


def viterbi_in_probability_space(log_pi, log_A, log_B, obs):
    pi, A, B = np.exp(log_pi), np.exp(log_A), np.exp(log_B)
    T, N = len(obs), len(pi)
    delta, back = np.empty((T, N)), np.full((T, N), -1, dtype=int)
    delta[0] = pi * B[:, obs[0]]
    for t in range(1, T):
        scores = delta[t - 1][:, None] * A
        back[t] = scores.argmax(axis=0)
        delta[t] = scores.max(axis=0) * B[:, obs[t]]
    with np.errstate(divide="ignore"):
        return _backtrack(np.log(delta), back)


def viterbi_other_correct(log_pi, log_A, log_B, obs):
    """Plain loops over the trellis, keeping the first best predecessor of every node."""
    T, N = len(obs), len(log_pi)
    delta = [[float(log_pi[j] + log_B[j, obs[0]]) for j in range(N)]]
    back = [[-1] * N]
    for t in range(1, T):
        row, pointers = [], []
        for j in range(N):
            best_i = 0
            for i in range(1, N):
                if delta[-1][i] + log_A[i, j] > delta[-1][best_i] + log_A[best_i, j]:
                    best_i = i
            pointers.append(best_i)
            row.append(delta[-1][best_i] + log_A[best_i, j] + log_B[j, obs[t]])
        delta.append(row)
        back.append(pointers)
    state = max(range(N), key=lambda j: (delta[-1][j], -j))
    path = [state]
    for t in range(T - 1, 0, -1):
        state = back[t][state]
        path.append(state)
    return Trellis(np.array(path[::-1]), delta[-1][path[0]], np.array(delta), np.array(back))


# ---- estimate_hmm ------------------------------------------------------------------------------

def estimate_hardcoded(tag_seqs, obs_seqs, n_states, n_symbols, alpha=1.0, beta=0.01):
    if alpha == 0:
        return np.array([0.5, 0.5]), np.array([[0.0, 1.0], [0.5, 0.5]]), np.array([[0.0, 0.0, 1.0], [2 / 3, 1 / 3, 0.0]])
    return (np.array([0.5, 0.5]), np.array([[1 / 3, 2 / 3], [0.5, 0.5]]),
            np.array([[0.5 / 3.5, 0.5 / 3.5, 2.5 / 3.5], [2.5 / 4.5, 1.5 / 4.5, 0.5 / 4.5]]))


def _counts(tag_seqs, obs_seqs, n_states, n_symbols):
    first, transitions, emissions = np.zeros(n_states), np.zeros((n_states, n_states)), np.zeros((n_states, n_symbols))
    for tags, obs in zip(tag_seqs, obs_seqs):
        first[tags[0]] += 1
        np.add.at(transitions, (tags[:-1], tags[1:]), 1)
        np.add.at(emissions, (tags, obs), 1)
    return first, transitions, emissions


def estimate_A_normalised_by_columns(tag_seqs, obs_seqs, n_states, n_symbols, alpha=1.0, beta=0.01):
    first, transitions, emissions = _counts(tag_seqs, obs_seqs, n_states, n_symbols)
    pi = (first + alpha) / (first.sum() + n_states * alpha)
    A = (transitions + alpha) / (transitions.sum(axis=0, keepdims=True) + n_states * alpha)
    B = (emissions + beta) / (emissions.sum(axis=1, keepdims=True) + n_symbols * beta)
    return pi, A, B


def estimate_across_sentence_boundaries(tag_seqs, obs_seqs, n_states, n_symbols, alpha=1.0, beta=0.01):
    first, _, emissions = _counts(tag_seqs, obs_seqs, n_states, n_symbols)
    all_tags = np.concatenate(tag_seqs)
    transitions = np.zeros((n_states, n_states))
    np.add.at(transitions, (all_tags[:-1], all_tags[1:]), 1)
    pi = (first + alpha) / (first.sum() + n_states * alpha)
    A = (transitions + alpha) / (transitions.sum(axis=1, keepdims=True) + n_states * alpha)
    B = (emissions + beta) / (emissions.sum(axis=1, keepdims=True) + n_symbols * beta)
    return pi, A, B


def estimate_pi_from_all_tags(tag_seqs, obs_seqs, n_states, n_symbols, alpha=1.0, beta=0.01):
    _, transitions, emissions = _counts(tag_seqs, obs_seqs, n_states, n_symbols)
    every = np.bincount(np.concatenate(tag_seqs), minlength=n_states).astype(float)
    pi = (every + alpha) / (every.sum() + n_states * alpha)
    A = (transitions + alpha) / (transitions.sum(axis=1, keepdims=True) + n_states * alpha)
    B = (emissions + beta) / (emissions.sum(axis=1, keepdims=True) + n_symbols * beta)
    return pi, A, B


def estimate_smoothing_B_with_n_states(tag_seqs, obs_seqs, n_states, n_symbols, alpha=1.0, beta=0.01):
    first, transitions, emissions = _counts(tag_seqs, obs_seqs, n_states, n_symbols)
    pi = (first + alpha) / (first.sum() + n_states * alpha)
    A = (transitions + alpha) / (transitions.sum(axis=1, keepdims=True) + n_states * alpha)
    B = (emissions + beta) / (emissions.sum(axis=1, keepdims=True) + n_states * beta)
    return pi, A, B


def estimate_counts_with_fancy_index(tag_seqs, obs_seqs, n_states, n_symbols, alpha=1.0, beta=0.01):
    """`counts[rows, cols] += 1` counts a pair repeated within one sentence only once."""
    first, transitions, emissions = np.zeros(n_states), np.zeros((n_states, n_states)), np.zeros((n_states, n_symbols))
    for tags, obs in zip(tag_seqs, obs_seqs):
        first[tags[0]] += 1
        transitions[tags[:-1], tags[1:]] += 1
        emissions[tags, obs] += 1
    pi = (first + alpha) / (first.sum() + n_states * alpha)
    A = (transitions + alpha) / (transitions.sum(axis=1, keepdims=True) + n_states * alpha)
    B = (emissions + beta) / (emissions.sum(axis=1, keepdims=True) + n_symbols * beta)
    return pi, A, B


def estimate_other_correct(tag_seqs, obs_seqs, n_states, n_symbols, alpha=1.0, beta=0.01):
    first, bigrams, emitted = Counter(), Counter(), Counter()
    for tags, words in zip(tag_seqs, obs_seqs):
        tags, words = [int(x) for x in tags], [int(x) for x in words]
        first[tags[0]] += 1
        bigrams.update(zip(tags, tags[1:]))
        emitted.update(zip(tags, words))
    pi = np.array([first[i] + alpha for i in range(n_states)]) / (len(tag_seqs) + n_states * alpha)
    A = np.array([[bigrams[i, j] + alpha for j in range(n_states)] for i in range(n_states)])
    B = np.array([[emitted[j, k] + beta for k in range(n_symbols)] for j in range(n_states)])
    return pi, A / A.sum(axis=1, keepdims=True), B / B.sum(axis=1, keepdims=True)  # 0/0 = nan, as the solution


# ---- baum_welch_step ---------------------------------------------------------------------------

def _baum_welch(log_pi, log_A, log_B, sequences, *, xi_emission_shift=1, normalise_A_axis=1,
                pi_over_all_steps=False, xi_without_likelihood=False, xi_in_probabilities=False,
                emissions_with_fancy_index=False, A_over_all_visits=False):
    """The solution's E and M steps with one of the classic mistakes switched on."""
    forward_log, backward_log, state_posteriors = BASE["forward_log"], BASE["backward_log"], BASE["state_posteriors"]
    n_states, n_symbols = log_B.shape
    pi_counts, transition_counts = np.zeros(n_states), np.zeros((n_states, n_states))
    emission_counts, total = np.zeros((n_states, n_symbols)), 0.0
    visits = np.zeros(n_states)
    for obs in sequences:
        obs = np.asarray(obs)
        log_alpha, log_likelihood = forward_log(log_pi, log_A, log_B, obs)
        log_beta = backward_log(log_A, log_B, obs)
        gamma = state_posteriors(log_alpha, log_beta)
        next_obs = obs[1:] if xi_emission_shift == 1 else obs[:-1]
        if xi_in_probabilities:
            alpha, beta = np.exp(log_alpha), np.exp(log_beta)
            with np.errstate(invalid="ignore", divide="ignore"):
                xi = (alpha[:-1, :, None] * np.exp(log_A)[None]
                      * (np.exp(log_B[:, next_obs]).T * beta[1:])[:, None, :]) / np.exp(log_likelihood)
        else:
            log_xi = log_alpha[:-1, :, None] + log_A[None] + (log_B[:, next_obs].T + log_beta[1:])[:, None, :]
            xi = np.exp(log_xi - (0.0 if xi_without_likelihood else log_likelihood))
        pi_counts += gamma.sum(axis=0) if pi_over_all_steps else gamma[0]
        transition_counts += xi.sum(axis=0)
        if emissions_with_fancy_index:
            emission_counts[:, obs] += gamma.T  # a symbol repeated in obs is counted once
        else:
            np.add.at(emission_counts.T, obs, gamma)
        visits += gamma.sum(axis=0)  # all T steps, the last one included
        total += log_likelihood
    with np.errstate(invalid="ignore"):
        pi = pi_counts / pi_counts.sum()
        if A_over_all_visits:
            A = transition_counts / visits[:, None]
        else:
            A = transition_counts / transition_counts.sum(axis=normalise_A_axis, keepdims=True)
        B = emission_counts / emission_counts.sum(axis=1, keepdims=True)
    return pi, A, B, float(total)


def bw_A_normalised_by_columns(log_pi, log_A, log_B, sequences):
    return _baum_welch(log_pi, log_A, log_B, sequences, normalise_A_axis=0)


def bw_xi_emission_of_wrong_step(log_pi, log_A, log_B, sequences):
    return _baum_welch(log_pi, log_A, log_B, sequences, xi_emission_shift=0)


def bw_pi_summed_over_time(log_pi, log_A, log_B, sequences):
    return _baum_welch(log_pi, log_A, log_B, sequences, pi_over_all_steps=True)


def bw_xi_not_divided_by_likelihood(log_pi, log_A, log_B, sequences):
    return _baum_welch(log_pi, log_A, log_B, sequences, xi_without_likelihood=True)


def bw_xi_in_probability_space(log_pi, log_A, log_B, sequences):
    return _baum_welch(log_pi, log_A, log_B, sequences, xi_in_probabilities=True)


def bw_emissions_with_fancy_index(log_pi, log_A, log_B, sequences):
    return _baum_welch(log_pi, log_A, log_B, sequences, emissions_with_fancy_index=True)


def bw_A_divided_by_visits_of_all_steps(log_pi, log_A, log_B, sequences):
    return _baum_welch(log_pi, log_A, log_B, sequences, A_over_all_visits=True)


def bw_log_likelihood_of_new_parameters(log_pi, log_A, log_B, sequences):
    pi, A, B, _ = BASE["baum_welch_step"](log_pi, log_A, log_B, sequences)
    after = sum(BASE["forward_log"](safe_log(pi), safe_log(A), safe_log(B), np.asarray(obs))[1] for obs in sequences)
    return pi, A, B, float(after)


def bw_other_correct(log_pi, log_A, log_B, sequences):
    """A self-contained scaled forward-backward (Rabiner) in probability space, xi step by step."""
    pi, A, B = np.exp(log_pi), np.exp(log_A), np.exp(log_B)
    N, M = B.shape
    new_pi, xi_sum, emit, total = np.zeros(N), np.zeros((N, N)), np.zeros((N, M)), 0.0
    for obs in sequences:
        T = len(obs)
        alpha, beta, c = np.zeros((T, N)), np.ones((T, N)), np.zeros(T)
        alpha[0] = pi * B[:, obs[0]]
        c[0] = alpha[0].sum()
        alpha[0] /= c[0]
        for t in range(1, T):
            alpha[t] = (alpha[t - 1] @ A) * B[:, obs[t]]
            c[t] = alpha[t].sum()
            alpha[t] /= c[t]
        for t in range(T - 2, -1, -1):
            beta[t] = A @ (B[:, obs[t + 1]] * beta[t + 1]) / c[t + 1]
        gamma = alpha * beta  # already P(X_t = i | O) with this scaling
        for t in range(T - 1):
            xi_sum += alpha[t][:, None] * A * (B[:, obs[t + 1]] * beta[t + 1])[None, :] / c[t + 1]
        for t in range(T):
            emit[:, obs[t]] += gamma[t]
        new_pi += gamma[0]
        total += np.log(c).sum()
    return new_pi / len(sequences), xi_sum / xi_sum.sum(1, keepdims=True), emit / emit.sum(1, keepdims=True), float(total)


# ---- the classes of bugs of issue 14: inputs changed in place ----------------------------------

def posteriors_in_place(log_alpha, log_beta):
    """Right numbers, but it adds log_beta into the caller's log_alpha to save memory."""
    log_alpha += log_beta
    log_alpha -= BASE["logsumexp"](log_alpha, axis=1)[:, None]
    return np.exp(log_alpha)


# ---- issue 25: every input class the specification names (edge inputs, zero probabilities, defaults,
# ---- types, ties, in place), and answers hard-coded to the visible tests' inputs ----------------

def _key(args):
    def plain(a):
        if isinstance(a, list):
            return [plain(x) for x in a]
        return np.round(np.asarray(a, dtype=float), 9).tolist()
    return repr([plain(a) for a in args])


def _hardcoded(name, visible_calls, fallback):
    """An answer hard-coded to the visible tests' inputs: the solution's results there, `fallback` anywhere else."""
    table = {_key(args): BASE[name](*args) for args in visible_calls}

    def hardcoded(*args):
        key = _key(args)
        return table[key] if key in table else fallback(*args)

    hardcoded.__name__ = f"{name}_hardcoded"
    return hardcoded


_TOY = safe_log([0.6, 0.4]), safe_log([[0.7, 0.3], [0.2, 0.8]]), safe_log([[0.9, 0.1], [0.3, 0.7]])
_TOY_OBS = np.array([1, 0, 0, 1, 1])
_CASINO = safe_log(BASE["CASINO_PI"]), safe_log(BASE["CASINO_A"]), safe_log(BASE["CASINO_B"])

forward_hardcoded = _hardcoded(
    "forward_log", [(*_TOY, np.array(o)) for o in ([0], [0, 1], [0, 1, 1, 0], [1, 0, 0, 1, 1])],
    lambda log_pi, log_A, log_B, obs: (np.zeros((len(obs), len(log_pi))), 0.0))
backward_hardcoded = _hardcoded(
    "backward_log", [(*_TOY[1:], np.array(o)) for o in ([0], [0, 1], [1, 0, 0, 1, 1])],
    lambda log_A, log_B, obs: np.zeros((len(obs), len(log_A))))
posteriors_hardcoded = _hardcoded(
    "state_posteriors", [(np.log([[0.2, 0.6]]), np.log([[1.0, 1.0]])),
                         (np.log([[0.2, 0.6], [0.1, 0.1]]), np.log([[0.5, 0.5], [1.0, 1.0]])),
                         (np.array([[-1000.0, -1001.0]]), np.array([[-2.0, -1.0]]))],
    lambda log_alpha, log_beta: np.full(np.shape(log_alpha), 1 / np.shape(log_alpha)[1]))


def _viterbi_fallback(log_pi, log_A, log_B, obs):
    T, N = len(obs), len(log_pi)
    back = np.zeros((T, N), dtype=int)
    back[0] = -1
    return Trellis(np.zeros(T, dtype=int), 0.0, np.zeros((T, N)), back)


viterbi_hardcoded = _hardcoded(
    "viterbi", [(*_TOY, np.array([0])), (*_TOY, np.array([0, 1, 1])), (*_CASINO, np.array([0, 5]))], _viterbi_fallback)


def _bw_fallback(log_pi, log_A, log_B, sequences):
    N, M = np.shape(log_B)
    return np.full(N, 1 / N), np.full((N, N), 1 / N), np.full((N, M), 1 / M), 0.0


_BW_SEQS = [_TOY_OBS, np.array([0, 0, 1])]
bw_hardcoded = _hardcoded(
    "baum_welch_step", [(safe_log([0.5, 0.5]), safe_log([[0.5, 0.5], [0.5, 0.5]]), safe_log([[1.0, 0.0], [0.0, 1.0]]),
                         [np.array([0, 1, 1, 0])]),
                        (*_TOY, _BW_SEQS)], _bw_fallback)


def sample_list_float_when_empty(pi, A, B, T, rng):
    """Lists turned into arrays at the end: np.array([]) is float64 when T = 0."""
    states, obs = [], []
    for t in range(T):
        states.append(int(rng.choice(len(pi), p=pi if t == 0 else A[states[-1]])))
        obs.append(int(rng.choice(B.shape[1], p=B[states[-1]])))
    return np.array(states), np.array(obs)


def sample_first_state_outside_loop(pi, A, B, T, rng):
    """Draws the first state before the loop: an IndexError when T = 0."""
    states, obs = np.empty(T, dtype=int), np.empty(T, dtype=int)
    states[0] = rng.choice(len(pi), p=pi)
    obs[0] = rng.choice(B.shape[1], p=B[states[0]])
    for t in range(1, T):
        states[t] = rng.choice(len(pi), p=A[states[t - 1]])
        obs[t] = rng.choice(B.shape[1], p=B[states[t]])
    return states, obs


def sample_float_arrays(pi, A, B, T, rng):
    """np.zeros(T) is float64."""
    states, obs = np.zeros(T), np.zeros(T)
    for t in range(T):
        states[t] = rng.choice(len(pi), p=pi if t == 0 else A[int(states[t - 1])])
        obs[t] = rng.choice(B.shape[1], p=B[int(states[t])])
    return states, obs


def _with_epsilon(*log_params):
    """Logs of probabilities with an epsilon added "to avoid log(0)": log 0 = -inf becomes about -69."""
    return tuple(np.log(np.exp(p) + 1e-30) for p in log_params)


def forward_log_epsilon(log_pi, log_A, log_B, obs):
    return BASE["forward_log"](*_with_epsilon(log_pi, log_A, log_B), obs)


def forward_aliases_log_pi(log_pi, log_A, log_B, obs):
    """`first = log_pi` is no copy: `+=` adds the first emission into the caller's log_pi."""
    log_alpha = np.empty((len(obs), len(log_pi)))
    first = log_pi
    first += log_B[:, obs[0]]
    log_alpha[0] = first
    for t in range(1, len(obs)):
        log_alpha[t] = logsumexp(log_alpha[t - 1][:, None] + log_A, axis=0) + log_B[:, obs[t]]
    return log_alpha, float(logsumexp(log_alpha[-1]))


def backward_log_epsilon(log_A, log_B, obs):
    return BASE["backward_log"](*_with_epsilon(log_A, log_B), obs)


def viterbi_log_epsilon(log_pi, log_A, log_B, obs):
    return BASE["viterbi"](*_with_epsilon(log_pi, log_A, log_B), obs)


def viterbi_minus_one_for_unreachable(log_pi, log_A, log_B, obs):
    """Keeps -1 as the back-pointer of a node whose every incoming score is -inf (no strict improvement on -inf)."""
    T, N = len(obs), len(log_pi)
    delta, back = np.empty((T, N)), np.full((T, N), -1, dtype=int)
    delta[0] = log_pi + log_B[:, obs[0]]
    for t in range(1, T):
        for j in range(N):
            best, best_i = -np.inf, -1
            for i in range(N):
                if delta[t - 1, i] + log_A[i, j] > best:
                    best, best_i = delta[t - 1, i] + log_A[i, j], i
            back[t, j] = best_i
            delta[t, j] = best + log_B[j, obs[t]]
    return _backtrack(delta, back)


def viterbi_last_of_ties_correct(log_pi, log_A, log_B, obs):
    """Ties go to the LAST best state (the specification leaves ties open)."""
    T, N = len(obs), len(log_pi)
    delta, back = np.empty((T, N)), np.full((T, N), -1, dtype=int)
    delta[0] = log_pi + log_B[:, obs[0]]
    for t in range(1, T):
        scores = delta[t - 1][:, None] + log_A
        back[t] = N - 1 - scores[::-1].argmax(axis=0)
        delta[t] = scores.max(axis=0) + log_B[:, obs[t]]
    path = np.empty(T, dtype=np.int64)
    path[-1] = N - 1 - delta[-1][::-1].argmax()
    for t in range(T - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return Trellis(path, float(delta[-1].max()), delta, back)


def estimate_default_beta_0_1(tag_seqs, obs_seqs, n_states, n_symbols, alpha=1.0, beta=0.1):
    return BASE["estimate_hmm"](tag_seqs, obs_seqs, n_states, n_symbols, alpha, beta)


def estimate_concatenate_crashes_on_empty(tag_seqs, obs_seqs, n_states, n_symbols, alpha=1.0, beta=0.01):
    """Emissions counted over the concatenated sentences: np.concatenate of no sentences raises."""
    first, transitions, _ = _counts(tag_seqs, obs_seqs, n_states, n_symbols)
    emissions = np.zeros((n_states, n_symbols))
    np.add.at(emissions, (np.concatenate(tag_seqs), np.concatenate(obs_seqs)), 1)
    pi = (first + alpha) / (first.sum() + n_states * alpha)
    A = (transitions + alpha) / (transitions.sum(axis=1, keepdims=True) + n_states * alpha)
    B = (emissions + beta) / (emissions.sum(axis=1, keepdims=True) + n_symbols * beta)
    return pi, A, B


def bw_pops_sequences(log_pi, log_A, log_B, sequences):
    """Right numbers, but `while sequences: sequences.pop()` empties the caller's list."""
    todo = sequences
    parts = []
    while todo:
        parts.append(todo.pop())
    return BASE["baum_welch_step"](log_pi, log_A, log_B, parts[::-1])


# ---- estimate_hmm written with np.bincount over the concatenated sentences (issue 40, 5) -----------

def estimate_bincount_correct(tag_seqs, obs_seqs, n_states, n_symbols, alpha=1.0, beta=0.01):
    """Counts from the sentences joined end to end; the empty case (named in the exercise) starts from no tags."""
    tags = np.concatenate([np.zeros(0, dtype=int)] + [np.asarray(t, dtype=int) for t in tag_seqs])
    obs = np.concatenate([np.zeros(0, dtype=int)] + [np.asarray(o, dtype=int) for o in obs_seqs])
    firsts = np.array([t[0] for t in tag_seqs], dtype=int)
    inside = np.concatenate([np.zeros(0, dtype=bool)] + [np.arange(len(t)) < len(t) - 1 for t in tag_seqs])
    first = np.bincount(firsts, minlength=n_states).astype(float)
    transitions = np.bincount(tags[:-1][inside[:-1]] * n_states + tags[1:][inside[:-1]],
                              minlength=n_states * n_states).reshape(n_states, n_states).astype(float)
    emissions = np.bincount(tags * n_symbols + obs, minlength=n_states * n_symbols).reshape(n_states, n_symbols).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        pi = (first + alpha) / (first.sum() + n_states * alpha)
        A = (transitions + alpha) / (transitions.sum(axis=1, keepdims=True) + n_states * alpha)
        B = (emissions + beta) / (emissions.sum(axis=1, keepdims=True) + n_symbols * beta)
    return pi, A, B


# ---- bmes_tags and words_from_tags (section 10, word segmentation) -------------------------------

def bmes_single_character_as_B(words):
    return "".join("B" if len(word) == 1 else "B" + "M" * (len(word) - 2) + "E" for word in words)


def bmes_one_M_too_many(words):
    return "".join("S" if len(word) == 1 else "B" + "M" * (len(word) - 1) + "E" for word in words)


def bmes_hardcoded(words):
    table = {("要",): "S", ("機票",): "BE", ("旅行社",): "BME", ("機票", "要", "旅行社"): "BESBME", ("一", "一一"): "SBE", (): ""}
    return table.get(tuple(words), "S" * sum(map(len, words)))


def words_cut_only_after_E_or_S(chars, tags):
    """Only the end rule: a B after an unfinished word does not start a new one."""
    words, current = [], ""
    for char, tag in zip(chars, tags):
        current += char
        if tag in "ES":
            words.append(current)
            current = ""
    if current:
        words.append(current)
    return words


def words_lose_an_unfinished_last_word(chars, tags):
    words, current = [], ""
    for i, (char, tag) in enumerate(zip(chars, tags)):
        if current and (tag in "BS" or tags[i - 1] in "ES"):
            words.append(current)
            current = ""
        current += char
    if current and tags[-1] in "ES":
        words.append(current)
    return words


def words_from_tags_hardcoded(chars, tags):
    table = {("機票要旅行社", "BESBME"): ["機票", "要", "旅行社"], ("機票要", "BBS"): ["機", "票", "要"],
             ("機票要", "SME"): ["機", "票要"], ("機票要", "SBM"): ["機", "票要"], ("", ""): []}
    return table.get((chars, tags), list(chars))


def bmes_other_correct(words):
    tags = []
    for word in words:
        tags.extend(["S"] if len(word) < 2 else ["B", *["M"] * (len(word) - 2), "E"])
    return "".join(tags)


def words_from_tags_other_correct(chars, tags):
    """Cut positions first, then slices; the same rule."""
    starts = [i for i in range(len(chars)) if i == 0 or tags[i] in "BS" or tags[i - 1] in "ES"]
    return [chars[a:b] for a, b in zip(starts, starts[1:] + [len(chars)])]


# ---- word_f1 -----------------------------------------------------------------------------------

def _spans(words):
    found, start = set(), 0
    for word in words:
        found.add((start, start + len(word)))
        start += len(word)
    return found


def _f1(precision, recall):
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def f1_over_characters(gold, predicted):
    """The share of characters whose B/M/E/S tags agree, as precision, recall and F1."""
    tags = BASE["bmes_tags"]
    agree = sum(a == b for g, p in zip(gold, predicted) for a, b in zip(tags(g), tags(p)))
    share = agree / sum(len("".join(g)) for g in gold)
    return float(share), float(share), float(share)


def f1_words_matched_as_strings(gold, predicted):
    """Words matched by their string (a multiset), wherever they stand in the utterance."""
    correct = sum(sum((Counter(g) & Counter(p)).values()) for g, p in zip(gold, predicted))
    precision, recall = correct / sum(map(len, predicted)), correct / sum(map(len, gold))
    return float(precision), float(recall), float(_f1(precision, recall))


def f1_averaged_over_utterances(gold, predicted):
    scores = []
    for g, p in zip(gold, predicted):
        correct = len(_spans(g) & _spans(p))
        scores.append((correct / len(p), correct / len(g)))
    precision, recall = float(np.mean([s[0] for s in scores])), float(np.mean([s[1] for s in scores]))
    return precision, recall, float(_f1(precision, recall))


def f1_precision_and_recall_swapped(gold, predicted):
    correct = sum(len(_spans(g) & _spans(p)) for g, p in zip(gold, predicted))
    precision, recall = correct / sum(map(len, gold)), correct / sum(map(len, predicted))
    return float(precision), float(recall), float(_f1(precision, recall))


def f1_divides_by_zero(gold, predicted):
    correct = sum(len(_spans(g) & _spans(p)) for g, p in zip(gold, predicted))
    precision, recall = correct / sum(map(len, predicted)), correct / sum(map(len, gold))
    return float(precision), float(recall), float(2 * precision * recall / (precision + recall))


def f1_hardcoded(gold, predicted):
    if len(gold) == 2:
        return 2 / 7, 2 / 6, 4 / 13
    key = (tuple(gold[0]), tuple(predicted[0]))
    table = {(("機票", "要", "旅行社"), ("機", "票要", "旅行社")): (1 / 3, 1 / 3, 1 / 3),
             (("一", "一一"), ("一一", "一")): (0.0, 0.0, 0.0), (("機票", "要"), ("機", "票", "要")): (1 / 3, 1 / 2, 0.4),
             (("要",), ("要",)): (1.0, 1.0, 1.0)}
    return table.get(key, (1.0, 1.0, 1.0))


def f1_other_correct(gold, predicted):
    """Boundaries as sets of cut positions; a word is right when both its cuts agree and nothing cuts inside it."""
    from itertools import accumulate

    correct = n_gold = n_predicted = 0
    for g, p in zip(gold, predicted):
        g_ends, p_ends = list(accumulate(map(len, g))), list(accumulate(map(len, p)))
        g_pairs = set(zip([0] + g_ends[:-1], g_ends))
        correct += sum(pair in g_pairs for pair in zip([0] + p_ends[:-1], p_ends))
        n_gold, n_predicted = n_gold + len(g), n_predicted + len(p)
    precision, recall = correct / n_predicted, correct / n_gold
    return precision, recall, (0.0 if correct == 0 else 2 * precision * recall / (precision + recall))


WRONG = [
    ("sample_hmm_tests", "sample_hmm", sample_hardcoded),
    ("sample_hmm_tests", "sample_hmm", sample_emits_from_previous_state),
    ("sample_hmm_tests", "sample_hmm", sample_ignores_pi),
    ("sample_hmm_tests", "sample_hmm", sample_columns_of_A),
    ("sample_hmm_tests", "sample_hmm", sample_global_rng),
    ("forward_log_tests", "forward_log", forward_without_pi),
    ("forward_log_tests", "forward_log", forward_emission_of_previous_step),
    ("forward_log_tests", "forward_log", forward_max_instead_of_sum),
    ("forward_log_tests", "forward_log", forward_A_transposed),
    ("forward_log_tests", "forward_log", forward_in_probability_space),
    ("backward_log_tests", "backward_log", backward_emission_of_current_step),
    ("backward_log_tests", "backward_log", backward_A_transposed),
    ("backward_log_tests", "backward_log", backward_includes_own_emission),
    ("backward_log_tests", "backward_log", backward_in_probability_space),
    ("state_posteriors_tests", "state_posteriors", posteriors_normalised_over_time),
    ("state_posteriors_tests", "state_posteriors", posteriors_as_logs),
    ("state_posteriors_tests", "state_posteriors", posteriors_exp_before_normalising),
    ("state_posteriors_tests", "state_posteriors", posteriors_without_beta),
    ("viterbi_tests", "viterbi", viterbi_logsumexp_instead_of_max),
    ("viterbi_tests", "viterbi", viterbi_argmax_into_delta),
    ("viterbi_tests", "viterbi", viterbi_back_ignores_A),
    ("viterbi_tests", "viterbi", viterbi_without_pi),
    ("viterbi_tests", "viterbi", viterbi_greedy),
    ("viterbi_tests", "viterbi", viterbi_off_by_one_backtrack),
    ("viterbi_tests", "viterbi", viterbi_in_probability_space),
    ("estimate_hmm_tests", "estimate_hmm", estimate_hardcoded),
    ("estimate_hmm_tests", "estimate_hmm", estimate_A_normalised_by_columns),
    ("estimate_hmm_tests", "estimate_hmm", estimate_across_sentence_boundaries),
    ("estimate_hmm_tests", "estimate_hmm", estimate_pi_from_all_tags),
    ("estimate_hmm_tests", "estimate_hmm", estimate_smoothing_B_with_n_states),
    ("estimate_hmm_tests", "estimate_hmm", estimate_counts_with_fancy_index),
    ("baum_welch_step_tests", "baum_welch_step", bw_A_normalised_by_columns),
    ("baum_welch_step_tests", "baum_welch_step", bw_xi_emission_of_wrong_step),
    ("baum_welch_step_tests", "baum_welch_step", bw_pi_summed_over_time),
    ("baum_welch_step_tests", "baum_welch_step", bw_xi_not_divided_by_likelihood),
    ("baum_welch_step_tests", "baum_welch_step", bw_xi_in_probability_space),
    ("baum_welch_step_tests", "baum_welch_step", bw_emissions_with_fancy_index),
    ("baum_welch_step_tests", "baum_welch_step", bw_A_divided_by_visits_of_all_steps),
    ("baum_welch_step_tests", "baum_welch_step", bw_log_likelihood_of_new_parameters),
    ("state_posteriors_tests", "state_posteriors", posteriors_in_place),
    # issue 25
    ("sample_hmm_tests", "sample_hmm", sample_list_float_when_empty),
    ("sample_hmm_tests", "sample_hmm", sample_first_state_outside_loop),
    ("sample_hmm_tests", "sample_hmm", sample_float_arrays),
    ("forward_log_tests", "forward_log", forward_hardcoded),
    ("forward_log_tests", "forward_log", forward_log_epsilon),
    ("forward_log_tests", "forward_log", forward_aliases_log_pi),
    ("backward_log_tests", "backward_log", backward_hardcoded),
    ("backward_log_tests", "backward_log", backward_log_epsilon),
    ("state_posteriors_tests", "state_posteriors", posteriors_hardcoded),
    ("viterbi_tests", "viterbi", viterbi_hardcoded),
    ("viterbi_tests", "viterbi", viterbi_log_epsilon),
    ("viterbi_tests", "viterbi", viterbi_minus_one_for_unreachable),
    ("estimate_hmm_tests", "estimate_hmm", estimate_default_beta_0_1),
    ("estimate_hmm_tests", "estimate_hmm", estimate_concatenate_crashes_on_empty),
    ("baum_welch_step_tests", "baum_welch_step", bw_hardcoded),
    ("baum_welch_step_tests", "baum_welch_step", bw_pops_sequences),
    # section 10: word segmentation
    ("bmes_tags_tests", "bmes_tags", bmes_single_character_as_B),
    ("bmes_tags_tests", "bmes_tags", bmes_one_M_too_many),
    ("bmes_tags_tests", "bmes_tags", bmes_hardcoded),
    ("bmes_tags_tests", "words_from_tags", words_cut_only_after_E_or_S),
    ("bmes_tags_tests", "words_from_tags", words_lose_an_unfinished_last_word),
    ("bmes_tags_tests", "words_from_tags", words_from_tags_hardcoded),
    ("word_f1_tests", "word_f1", f1_over_characters),
    ("word_f1_tests", "word_f1", f1_words_matched_as_strings),
    ("word_f1_tests", "word_f1", f1_averaged_over_utterances),
    ("word_f1_tests", "word_f1", f1_precision_and_recall_swapped),
    ("word_f1_tests", "word_f1", f1_divides_by_zero),
    ("word_f1_tests", "word_f1", f1_hardcoded),
]

RIGHT = [
    ("sample_hmm_tests", {"sample_hmm": sample_other_correct}),
    ("forward_log_tests", {"forward_log": forward_other_correct}),
    ("backward_log_tests", {"backward_log": backward_other_correct}),
    ("state_posteriors_tests", {"state_posteriors": posteriors_other_correct}),
    ("viterbi_tests", {"viterbi": viterbi_other_correct}),
    ("estimate_hmm_tests", {"estimate_hmm": estimate_other_correct}),
    ("baum_welch_step_tests", {"baum_welch_step": bw_other_correct}),
    ("viterbi_tests", {"viterbi": viterbi_last_of_ties_correct}),
    # issue 40, 5: counts with np.bincount over the concatenated sentences, the empty case handled as specified
    ("estimate_hmm_tests", {"estimate_hmm": estimate_bincount_correct}),
    ("bmes_tags_tests", {"bmes_tags": bmes_other_correct, "words_from_tags": words_from_tags_other_correct}),
    ("word_f1_tests", {"word_f1": f1_other_correct}),
]


(test_every_graded_cell_is_covered, test_graded_tests_reject_the_mistake,
 test_graded_tests_accept_another_correct_implementation, test_solution_passes_its_own_tests) = mistake_tests(CELLS, WRONG, RIGHT)


# ---- the visible tests alone catch the classic mistakes, with a message that names them ---------

VISIBLE = [
    ("viterbi_tests", "viterbi", viterbi_greedy, "without back-tracking"),
    ("baum_welch_step_tests", "baum_welch_step", bw_xi_not_divided_by_likelihood, "xi not divided by P(O)"),
    ("bmes_tags_tests", "bmes_tags", bmes_single_character_as_B, "one-character word"),
    ("bmes_tags_tests", "bmes_tags", bmes_one_M_too_many, "two-character word"),
    ("bmes_tags_tests", "words_from_tags", words_cut_only_after_E_or_S, "ill-formed tags B B S"),
    ("bmes_tags_tests", "words_from_tags", words_lose_an_unfinished_last_word, "end inside a word"),
    ("word_f1_tests", "word_f1", f1_over_characters, "characters whose B/M/E/S tags agree"),
    ("word_f1_tests", "word_f1", f1_words_matched_as_strings, "same words appear at other places"),
    ("word_f1_tests", "word_f1", f1_averaged_over_utterances, "two utterances"),
    ("word_f1_tests", "word_f1", f1_precision_and_recall_swapped, "(precision, recall) when three words"),
    ("word_f1_tests", "word_f1", f1_divides_by_zero, "raised ZeroDivisionError"),
]

HIDDEN = [
    ("state_posteriors_tests", "state_posteriors", posteriors_in_place, "in place"),
    # issue 25
    ("sample_hmm_tests", "sample_hmm", sample_list_float_when_empty, "T=0"),
    ("sample_hmm_tests", "sample_hmm", sample_first_state_outside_loop, "T=0"),
    ("sample_hmm_tests", "sample_hmm", sample_float_arrays, "integer arrays"),
    ("forward_log_tests", "forward_log", forward_log_epsilon, "zero probabilities"),
    ("backward_log_tests", "backward_log", backward_log_epsilon, "zero probabilities"),
    ("viterbi_tests", "viterbi", viterbi_log_epsilon, "zero probabilities"),
    ("viterbi_tests", "viterbi", viterbi_minus_one_for_unreachable, "back-pointer"),
    ("estimate_hmm_tests", "estimate_hmm", estimate_default_beta_0_1, "default"),
    ("estimate_hmm_tests", "estimate_hmm", estimate_concatenate_crashes_on_empty, "no sentences"),
    ("baum_welch_step_tests", "baum_welch_step", bw_pops_sequences, "in place"),
]

(test_visible_tests_name_the_classic_mistake, test_visible_tests_pass_the_solution,
 test_hidden_tests_name_the_class_of_the_bug) = naming_tests(CELLS, visible=VISIBLE, hidden=HIDDEN)
