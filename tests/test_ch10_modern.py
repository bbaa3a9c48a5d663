"""Chapter 10 (beyond the 2017 Transformer): the measuring helper, the grader measuring where the student's code
runs, and the figures the learner run prints."""

from __future__ import annotations

import re
import shutil
import sys

import nbformat
import pytest
import torch

from course import REPO, SOLUTIONS, learner_run, load_definitions, nbgrader_meta, printed_text, reads_learner_run, record

CHAPTER = "10-beyond-the-2017-transformer"
NOTEBOOK = SOLUTIONS / CHAPTER / f"{CHAPTER}.ipynb"


@pytest.fixture(scope="module")
def ch():
    return load_definitions(CHAPTER)


def test_measure_sees_the_score_matrix_and_counts_operations():
    from seqlab.modern import measure, plain_attention

    q = torch.randn(1, 50, 4)
    out, largest, shape, operations = measure(plain_attention, q, q, q, True)
    assert largest == 50 * 50 and shape[-2:] == (50, 50) and out.shape == (1, 50, 4)

    def loop(a):
        h = torch.zeros(())
        for t in range(a.shape[0]):
            h = h * 0.5 + a[t]
        return h

    assert measure(loop, torch.ones(100))[3] >= 200  # two operations a step, at least
    assert measure(lambda a: a.cumsum(0), torch.ones(100))[3] <= 3


@pytest.mark.numerics
@pytest.mark.parametrize("seed", range(4))
def test_solutions_equal_torch_references(ch, seed):
    """tiled attention = PyTorch's attention; GQA = enable_gqa (torch >= 2.5) or repeated heads; the scans = loops."""
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(seed)
    B, T, d = 2, 37 + seed, 8
    q, k, v = (torch.randn(B, T, d, generator=gen) for _ in range(3))
    torch.testing.assert_close(ch["tiled_attention"](q, k, v, 8 + seed, causal=True),
                               F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=1e-5, rtol=1e-5)
    h, g = 8, [1, 2, 4, 8][seed]
    qh, kg, vg = torch.randn(B, h, T, d, generator=gen), torch.randn(B, g, T, d, generator=gen), torch.randn(B, g, T, d, generator=gen)
    ours, _ = ch["gqa_attention"](qh, kg, vg)
    try:
        theirs = F.scaled_dot_product_attention(qh, kg, vg, is_causal=True, enable_gqa=True)
    except TypeError:  # torch before 2.5: no enable_gqa
        theirs = F.scaled_dot_product_attention(qh, kg.repeat_interleave(h // g, 1), vg.repeat_interleave(h // g, 1), is_causal=True)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
    a, b, h0 = torch.rand(T, 3, generator=gen), torch.randn(T, 3, generator=gen), torch.randn(3, generator=gen)
    state, rows = h0, []
    for t in range(T):
        state = a[t] * state + b[t]
        rows.append(state)
    torch.testing.assert_close(ch["parallel_scan"](a, b, h0), torch.stack(rows), atol=1e-5, rtol=1e-5)


def _submission(tmp_path, replacements: dict[str, str]):
    """The solution notebook with the answer cells named in ``replacements`` rewritten: a student's submission."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        grade_id = nbgrader_meta(cell).get("grade_id")
        if grade_id in replacements:
            cell.source = replacements[grade_id]
    folder = tmp_path / "submission"
    folder.mkdir()
    nbformat.write(nb, folder / NOTEBOOK.name)
    return folder


PLAIN_TILED = '''def tiled_attention(q, k, v, block_size, causal=False, key_lengths=None):
    from seqlab.modern import plain_attention
    return plain_attention(q, k, v, causal, key_lengths)'''

LOOPED_SCAN = '''def scan_combine(first, second):
    (a1, b1), (a2, b2) = first, second
    return a1 * a2, a2 * b1 + b2


def parallel_scan(a, b, h0):
    h, rows = h0, []
    for t in range(a.shape[0]):
        h = a[t] * h + b[t]
        rows.append(h)
    return torch.stack(rows)'''


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_the_grader_measures_the_students_code_where_it_runs(tmp_path):
    """seqlab.modern.measure through the instructors' grader: the student's function runs in the sandboxed kernel, so
    the largest tensor and the operations are counted there (the runner's "measure" request). Without it the test
    kernel counted nothing of the student's work, and plain attention and a loop passed the checks that forbid them."""
    sys.path.insert(0, str(REPO / "autograder"))
    import job
    from sandbox import Limits, Sandbox

    worker = Sandbox(tmp_path / "worker", Limits())
    try:
        folder = _submission(tmp_path, {"tiled_attention": PLAIN_TILED, "parallel_scan": LOOPED_SCAN})
        result = job.run_job(folder, SOLUTIONS / CHAPTER, "plain", tmp_path / "out", worker)
    finally:
        worker.close()
    cells = {gid: cell for entry in result["notebooks"].values() for gid, cell in entry["cells"].items() if cell["test"]}
    record("grader-10-measure", score=result["score"], max_score=result["max_score"])
    # Both functions compute the right numbers, so the only visible checks they fail are the measured ones: a
    # failure in the visible part (not hidden_failure) is the largest-tensor check, and the operation count.
    for gid in ("tiled_attention_tests", "parallel_scan_tests"):
        assert cells[gid]["auto_score"] == 0 and not cells[gid]["hidden_failure"] and not cells[gid]["student_error"], cells[gid]
    others = {gid: (c["auto_score"], c["max_score"]) for gid, c in cells.items()
              if gid not in ("tiled_attention_tests", "parallel_scan_tests")}
    assert all(score == top for score, top in others.values()), others


def _lines(pattern: str, text: str) -> list[tuple[str, ...]]:
    found = re.findall(pattern, text)
    assert found, f"the learner run printed no line matching {pattern!r}"
    return found


@reads_learner_run(CHAPTER)
def test_learner_run_supports_the_chapters_claims():
    run = learner_run(NOTEBOOK)
    assert run.returncode == 0, run.stderr[-2000:]
    text = printed_text(run.notebook)
    # §1: plain attention's largest tensor grows like T^2, the tiled one's like T at most
    plain_factor, tiled_factor = (float(x) for x in _lines(r"plain x(\d+), tiled x(\d+)", text)[0])
    assert plain_factor == 256 and tiled_factor <= 16, (plain_factor, tiled_factor)
    # §1: the online softmax worked by hand equals the plain softmax
    running, plain = _lines(r"o / l = ([\d.]+)\n", text)[-1], _lines(r"plain softmax: ([\d.]+)", text)[0]
    assert running == plain
    # §2: the cache is h/g times smaller
    sizes = {int(g): float(mib) for g, mib in _lines(r"g = +(\d+) key/value heads: cache +([\d.]+) MiB", text)}
    assert sizes[12] == 12 * sizes[1] == 6 * sizes[2]
    # §3: with RoPE each offset's scores are one number; added sinusoids differ with the absolute position
    for rope, added in _lines(r"RoPE scores \[([^\]]+)\]\s+added sinusoids \[([^\]]+)\]", text):
        assert len(set(rope.split(", "))) == 1 and len(set(added.split(", "))) == 3
    # §5: loop and scan agree; the scan is faster on one thread at the longest length
    rows = _lines(r"difference loop vs scan ([\d.e+-]+); processor time loop ([\d.]+) ms, scan ([\d.]+) ms", text)
    assert all(float(diff) < 1e-5 for diff, _, _ in rows)
    assert float(rows[-1][2]) < float(rows[-1][1]), rows
    # §6: the scan's log-likelihood is the forward loop's
    for scan_ll, loop_ll in _lines(r"log-likelihood scan +(-[\d.]+), loop +(-[\d.]+)", text):
        assert scan_ll == loop_ll
    # §3: the comparison's last line names the scheme whose loss changed less from windows of 64 to 128
    changes = {name: float(change) for name, change in _lines(r"(\w+) *: dev NLL per token, windows of 64 [\d.]+, of 128 [\d.]+ "
                                                                r"\(change ([-+][\d.]+)\)", text)}
    assert _lines(r"the smaller change from windows of 64 to 128: (\w+)", text)[0] == min(changes, key=changes.get)
    record("ch10-learner", cpu_seconds=round(run.seconds.cpu, 1), plain_factor=plain_factor, tiled_factor=tiled_factor,
           scan_vs_loop_ms=[rows[-1][2], rows[-1][1]])


def test_the_comparisons_rope_is_the_chapters(ch):
    """The committed comparison's RoPE (seqlab.modern.rope_rotate) rotates as the chapter's apply_rope does."""
    from seqlab.modern import PositionGPT, rope_rotate

    x = torch.randn(2, 3, 17, 8, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(rope_rotate(x), ch["apply_rope"](x, torch.arange(17)), atol=1e-6, rtol=1e-6)
    with pytest.raises(ValueError, match="rope"):
        PositionGPT(10, "learned")


@pytest.mark.numerics
def test_apply_rope_equals_rotary_embedding_torch(ch):
    """lucidrains' rotary-embedding-torch (the test extra pins it) rotates as the chapter specifies: its own
    frequencies and positions 0..T-1 (rotate_queries_or_keys), kept short because it computes them in float32, and
    the course's rope_rotate agrees; no mapping between pair conventions is needed, both pair (0, 1), (2, 3), ..."""
    from rotary_embedding_torch import RotaryEmbedding

    from seqlab.modern import rope_rotate

    x = torch.randn(2, 3, 12, 16, generator=torch.Generator().manual_seed(1))
    for base in (10000.0, 500.0):
        theirs = RotaryEmbedding(16, theta=base).rotate_queries_or_keys(x)
        torch.testing.assert_close(ch["apply_rope"](x, torch.arange(12), base), theirs, atol=1e-6, rtol=0)
    torch.testing.assert_close(rope_rotate(x), RotaryEmbedding(16).rotate_queries_or_keys(x), atol=1e-6, rtol=0)


def test_apply_ropes_hidden_test_consults_rotary_embedding_torch(monkeypatch):
    """The graded test cell's hidden part compares with the package: a package made to answer 1e-3 off fails the
    solution there, with a message naming the package."""
    import rotary_embedding_torch

    from mistakes import GradedCells
    from seqlab.check import CheckFailed

    true_rotation = rotary_embedding_torch.apply_rotary_emb
    monkeypatch.setattr(rotary_embedding_torch, "apply_rotary_emb", lambda *a, **k: true_rotation(*a, **k) + 1e-3)
    with pytest.raises(CheckFailed, match="against rotary-embedding-torch"):
        GradedCells(CHAPTER).run("apply_rope_tests")


def test_rope_comparison_record_is_the_scripts():
    """helpers/seqlab/results/ch10_rope_vs_sinusoidal.json, as `python -m seqlab.modern` writes it: two models of one
    size, trained alike, each scored at the training length and at twice it."""
    from seqlab.modern import ROPE_CONFIG, PositionGPT, rope_comparison_record

    record = rope_comparison_record()
    assert record is not None, "run `python -m seqlab.modern` (about 2 min of CPU) to write the comparison"
    models, config = record["models"], record["config"]
    assert set(models) == {"rope", "sinusoidal"} and config["train_context"] == 64
    size = sum(p.numel() for p in PositionGPT(config["vocab"], "rope", **ROPE_CONFIG).parameters())
    assert models["rope"]["parameters"] == models["sinusoidal"]["parameters"] == size
    for row in models.values():
        assert 0 < row["dev_nll_64"] < 7 and 0 < row["dev_nll_128"] < 7, row


# ---- the selective-SSM language model against chapter 9's GPT (seqlab.ssmlm) ------------------------------------

@pytest.mark.numerics
@pytest.mark.parametrize("scan", ["loop", "parallel"])
def test_the_ssm_models_scan_is_the_chapters_selective_scan(ch, scan):
    """seqlab.ssmlm's layer computes the chapter's selective_scan (from a zero state), with either scan."""
    from seqlab.ssmlm import selective_ssm

    gen = torch.Generator().manual_seed(7)
    b, L, D, N = 2, 37, 5, 4
    u, delta_raw = torch.randn(b, L, D, generator=gen), 2 * torch.randn(b, L, D, generator=gen)
    A, B, C = -torch.rand(D, N, generator=gen) - 0.1, torch.randn(b, L, N, generator=gen), torch.randn(b, L, N, generator=gen)
    torch.testing.assert_close(selective_ssm(u, delta_raw, A, B, C, scan), ch["selective_scan"](u, delta_raw, A, B, C)[0],
                               atol=1e-5, rtol=1e-5)


def test_the_ssm_language_model_is_causal_and_sized_to_the_gpt():
    """The next-token model sees no later token (changing token 9 leaves logits 0-8), and matched_inner finds the
    inner width whose parameter count is the GPT's within 5%."""
    from seqlab.gptlm import GPT_CONFIG, ReferenceGPT
    from seqlab.ssmlm import SSMLM, matched_inner, parameters

    torch.manual_seed(0)
    model = SSMLM(50, d_model=32, layers=2, inner=48)
    ids = torch.randint(0, 50, (2, 16))
    changed = ids.clone()
    changed[:, 9] = (changed[:, 9] + 1) % 50
    with torch.no_grad():
        before, after = model(ids), model(changed)
    torch.testing.assert_close(before[:, :9], after[:, :9])
    assert not torch.allclose(before[:, 9:], after[:, 9:])
    gpt_size = parameters(ReferenceGPT(512, **GPT_CONFIG))
    inner = matched_inner(512, gpt_size, GPT_CONFIG["d_model"], GPT_CONFIG["layers"])
    assert abs(parameters(SSMLM(512, GPT_CONFIG["d_model"], GPT_CONFIG["layers"], inner)) / gpt_size - 1) <= 0.05


def test_the_ssm_record_is_the_scripts_and_matches_the_gpt_records():
    """helpers/seqlab/results/ch10_ssm.json, as `python -m seqlab.ssmlm --train` writes it, against the GPT record it
    claims to match: parameters within 5%, the same processor seconds, context, batch and rate. When chapter 9's GPT
    record changes (its seconds or its size), this fails until the SSM is trained again."""
    from seqlab.gptlm import comparison_record
    from seqlab.ssmlm import SSMLM, parameters, ssm_record

    ssm, gpt_record = ssm_record(), comparison_record()
    assert ssm is not None, "run `python -m seqlab.ssmlm --train` (about 3 min of CPU) to write the record"
    gpt = gpt_record["comparison"]["gpt"]
    rerun = "chapter 9's GPT record changed: run `python -m seqlab.ssmlm --train` again"
    assert ssm["gpt_parameters"] == gpt["parameters"] and ssm["gpt_record_seconds"] == gpt_record["seconds_each"], rerun
    assert (ssm["context"], ssm["batch_size"], ssm["lr"], ssm["vocab_size"]) == (
        gpt_record["context"], gpt_record["batch_size"], gpt_record["lr"], gpt_record["vocab_size"]), rerun
    assert abs(ssm["parameters"] / gpt["parameters"] - 1) <= 0.05
    config = ssm["config"]
    assert ssm["parameters"] == parameters(SSMLM(ssm["vocab_size"], config["d_model"], config["layers"], config["inner"]))
    assert gpt_record["seconds_each"] <= ssm["cpu_seconds"] < gpt_record["seconds_each"] + 2
    assert ssm["tokens_seen"] == ssm["steps"] * ssm["batch_size"] * ssm["context"]
    assert ssm["threads"] == 1 and ssm["device"] == "cpu" and ssm["command"].startswith("python -m seqlab.ssmlm --train")
    for split in ("dev", "test"):
        assert 1 < ssm[f"{split}_token_perplexity"] < ssm["vocab_size"]


@pytest.mark.parametrize("arguments, message", [([], "nothing to do"), (["--train", "--seconds", "0"], "must be positive"),
                                                (["--train", "--device", "tpu"], "use 'cpu', 'cuda' or 'cuda:N'")])
def test_the_ssm_script_refuses_bad_arguments_clearly(arguments, message):
    import subprocess

    done = subprocess.run([sys.executable, "-m", "seqlab.ssmlm", *arguments], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr


@reads_learner_run(CHAPTER)
def test_learner_run_prints_the_ssm_beside_the_gpt_and_the_text_says_what_it_measured():
    """The printed comparison is the two records', its last line names the lower test perplexity, and the sentence
    after it says what the records say (the SSM the lowest, below the GPT and chapter 9's LSTM, with under a third of
    the GPT's updates): a re-run that changes the order fails here until the text follows."""
    from seqlab.gptlm import comparison_record
    from seqlab.ssmlm import ssm_record

    run = learner_run(NOTEBOOK)
    assert run.returncode == 0, run.stderr[-2000:]
    text = printed_text(run.notebook)
    ssm, gpt_record = ssm_record(), comparison_record()
    gpt, lstm = gpt_record["comparison"]["gpt"], gpt_record["comparison"]["lstm"]
    (difference, lower), = _lines(r"SSM against GPT: .* test perplexity per token ([-+][\d.]+): the lower is (the selective SSM|the GPT)", text)
    assert float(difference) == round(ssm["test_token_perplexity"] - gpt["test_token_perplexity"], 2)
    assert lower == ("the selective SSM" if ssm["test_token_perplexity"] < gpt["test_token_perplexity"] else "the GPT")
    assert f"{ssm['test_token_perplexity']:6.2f}" in text and f"{gpt['test_token_perplexity']:6.2f}" in text
    prose = "\n".join(c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "markdown")
    assert "the selective SSM's test perplexity per token is the lowest in the table" in prose
    assert "under a third of the GPT's updates" in prose and "below chapter 9's long short-term memory (LSTM)" in prose
    rows = gpt_record["comparison"].values()
    assert ssm["test_token_perplexity"] < min(row["test_token_perplexity"] for row in rows), "the text says the SSM is the lowest: change it"
    assert ssm["steps"] / gpt["steps"] < 1 / 3, "the text says under a third of the GPT's updates: change it"
    assert lstm["test_token_perplexity"] > ssm["test_token_perplexity"], "the text says the SSM is below the LSTM: change it"
