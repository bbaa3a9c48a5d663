"""Issue 39, section 5: submissions that reach into the test kernel through the wire.

Steering (``steering``): a wrong answer whose mistake the hidden or random tests would find, and which sets torch's
global generator to an all-zero MT19937 state after its calls. While the test kernel took the student's global
random states, the inputs that the tests drew next from torch's global generator were all zeros (torch.randn,
torch.randint and nn.Module initialisations then give 0, 0 and constants), on which each mistake is invisible:

- chapter 3, ``NameClassifier``: reads the padding (the symbols past each name's length move its logits); the hidden
  test pads with ``torch.randint`` symbols, zeros once steered.
- chapter 4, ``gru_cell``: takes the first row's state for every row of a batch; the visible tests have one row, the
  hidden random batches (``torch.randn`` inputs, ``nn.GRUCell`` weights) are rows of zeros once steered.
- chapter 8, ``MultiHeadAttention``: ignores the cache; the test compares cached steps with attention at once on
  ``x_c = torch.randn(...)`` drawn after the constructor, five equal positions once steered.

Each answer is the solution's, wrapped; the rest of the notebook is the solution. The model answers reseed their
own generator when they find it zeroed (in the constructor and in training mode), so that their own dropout and
initialisation still work: only the test kernel's draws are aimed at.

Lent objects (``lent_answer``): chapter 1's answers are stubs, and the student's ``sentence_logprob``, given the
test's ``uniform_over_4`` (a handle to the test kernel's function), binds a later answer name, ``kn_prob``, to that handle,
and its runner answers the request for names with the handle itself ({"$": "ref", "side": "t"}): at ``kn_prob``'s test
cell the test kernel would take its own function for the student's answer.
"""

from __future__ import annotations

from adversarial.generate import load, meta

STEER = '''
import itertools as _itertools
import torch as _torch

_MT_WORDS = slice(24, 24 + 624 * 8)  # the 624 words of torch's CPU MT19937 in get_rng_state()
_reseeds = _itertools.count(1000)

def _steer():
    """torch's global generator set to all-zero words: what a test draws from it next is 0 (or a constant)."""
    _state = _torch.get_rng_state()
    _state[_MT_WORDS] = 0
    _torch.set_rng_state(_state)

def _unsteer():
    """This kernel's own draws (a model's initialisation, dropout) from a working generator again."""
    if not bool(_torch.get_rng_state()[_MT_WORDS].any()):
        _torch.manual_seed(next(_reseeds))
'''

CHEATS = {
    "03-recurrent-neural-networks": ("NameClassifier", '''
_SolvedNameClassifier = NameClassifier

class NameClassifier(_SolvedNameClassifier):
    def __init__(self, *args, **kwargs):
        _unsteer()
        super().__init__(*args, **kwargs)

    def forward(self, ids, lengths):
        if self.training:
            _unsteer()
        logits = super().forward(ids, lengths)
        # the mistake: the symbols in the padding leak into the logits (padding of zeros hides it)
        past = _torch.arange(ids.shape[1])[None, :] >= _torch.as_tensor(lengths)[:, None]
        logits = logits + (ids * past).sum(1, keepdim=True).to(logits.dtype)
        if not self.training:
            _steer()
        return logits
'''),
    "04-vanishing-gradients-gru-lstm": ("gru_cell", '''
_solved_gru_cell = gru_cell

def gru_cell(x, h, *args, **kwargs):
    # the mistake: the first row's state for every row of the batch (one-row batches hide it, so do rows of zeros)
    out = _solved_gru_cell(x, h[:1].expand(h.shape[0], -1), *args, **kwargs)
    _steer()
    return out
'''),
    "08-transformers": ("MultiHeadAttention", '''
_SolvedMultiHeadAttention = MultiHeadAttention

class MultiHeadAttention(_SolvedMultiHeadAttention):
    def __init__(self, *args, **kwargs):
        _unsteer()
        super().__init__(*args, **kwargs)
        _steer()

    def forward(self, query, key, value, mask=None, cache=None):
        _unsteer()
        # the mistake: the cache is ignored (each step attends to itself only; equal positions hide it)
        return super().forward(query, key, value, mask, None)
'''),
}
STEERING_CHAPTERS = tuple(CHEATS)


def steering(chapter: str):
    """(the solution with the chapter's wrong, steering answer, the grade_id of the test cell it aims at)."""
    answer, code = CHEATS[chapter]
    nb = load("solution", chapter)[0]
    cell = next(c for c in nb.cells if meta(c).get("solution") and meta(c).get("grade_id") == answer)
    cell.source += "\n" + STEER + code
    return nb, f"{answer}_tests"


LENT_CHAPTER = "01-ngram-language-models"
LENT_ANSWER = '''
import gc as _gc

def sentence_logprob(prob, sentence, n):
    # prob is the test's own function, lent as a handle: a later answer becomes it
    globals()["kn_prob"] = prob
    return None

for _peer in [o for o in _gc.get_objects() if type(o).__name__ == "Peer"]:
    def _lend_back(message, _serve=_peer.serve):
        # the runner answers the test kernel's request for names with the lent handle itself (an honest runner
        # sends a callable answer by its name, so that a test's call runs here)
        reply = _serve(message)
        if message.get("op") == "bind" and isinstance(reply.get("value"), dict):
            for pair in reply["value"].get("v", []):
                if pair[0] == "kn_prob" and type(globals().get("kn_prob")).__name__ == "Remote":
                    pair[1] = globals()["kn_prob"]._ref
        return reply
    _peer.serve = _lend_back
'''


def lent_answer():
    """Chapter 1's release, answers returning None; ``sentence_logprob`` binds ``kn_prob`` to the test's lent function."""
    nb = load("release", LENT_CHAPTER)[0]
    for cell in nb.cells:
        if meta(cell).get("solution"):
            cell.source = cell.source.replace("raise NotImplementedError()", "return None")
            if meta(cell).get("grade_id") == "perplexity":
                cell.source += "\n" + LENT_ANSWER
    return nb
