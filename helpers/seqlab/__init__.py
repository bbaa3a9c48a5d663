"""seqlab: the helpers behind the course "Sequence Models, from HMMs to Transformers".

One module a purpose; notebooks import from here, never the other way round:

- ``seqlab.data``     -- the course's datasets, offline (``load_brown``)
- ``seqlab.check``    -- readable checks for the exercises' tests (``expect``, ``expect_close``)
- ``seqlab.grading``  -- whether nbgrader is grading, and the small budgets used then
- ``seqlab.widgets``  -- interactive figures built from core ipywidgets and matplotlib
- ``seqlab.tagsets``  -- Brown part-of-speech tags mapped to the 12 universal tags
- ``seqlab.trellis``  -- the Viterbi trellis explorer (chapter 2)
- ``seqlab.names``    -- surnames by origin and first names (chapter 3)
- ``seqlab.diagrams`` -- drawn diagrams: the RNN cell, the unrolled network, the shapes of sequence problems (chapter 3)
- ``seqlab.name_ablation`` -- which of the surname classifier's tricks matter, seeded over several runs (chapter 3)
- ``seqlab.gradflow`` -- how gradients flow back through RNN, GRU and LSTM cells, and its widget
- ``seqlab.train``    -- a training loop with a progress bar and a live loss plot
- ``seqlab.hardware`` -- which device torch computes on (``use_device``, ``--device``) and what a record says of the machine
- ``seqlab.adding``   -- the adding problem, a long-range task for RNN, GRU and LSTM (chapter 4)
- ``seqlab.wordlm``   -- word-level LSTM and tanh-RNN language models of Brown on chapter 1's split, and their checkpoints (chapter 4)
- ``seqlab.dates``    -- dates in many forms to ISO, and numbers to words (chapters 6-8)
- ``seqlab.seq2seq``  -- vocabularies, padded batches, training, greedy/beam decoding, evaluation (chapters 6-8)
- ``seqlab.beamtree`` -- the beam-search tree explorer (chapter 6)
- ``seqlab.embeddings`` -- word vectors (GloVe) and their evaluation sets, offline (chapter 5)
- ``seqlab.projector`` -- the embedding projector: neighbours and analogy arrows in 2-D (chapter 5)
- ``seqlab.attention`` -- chapter 7's attention seq2seq, its checkpoints, alignment heatmaps and explorer
- ``seqlab.transformer`` -- chapter 8's reference Transformer, its checkpoints, the attention and positional-encoding explorers
- ``seqlab.a11y``     -- alt text and text equivalents of every figure and widget, a colour-blind-safe palette (issue 47)
"""

__version__ = "0.1.0"


def _accessible_figures() -> None:
    # In a notebook's kernel, every figure it displays carries alt text and its numbers as text (seqlab.a11y);
    # anywhere else (scripts, tests, the grader's kernels before IPython) nothing happens.
    import sys

    if "IPython" in sys.modules:
        from seqlab import a11y

        a11y.install()


_accessible_figures()
