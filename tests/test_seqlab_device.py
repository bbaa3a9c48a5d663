"""Issue 28 on the CPU: seqlab.hardware, and every training script's --device (its GPU half is tests/test_gpu.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from seqlab import hardware
from trainings import BY_NAME, TRAININGS, run_in_process

NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")


@pytest.fixture(autouse=True)
def no_chosen_device(monkeypatch):
    """Each test starts as a fresh process would: no device chosen by use_device, no $SEQLAB_DEVICE."""
    monkeypatch.setattr(hardware, "_chosen", None)
    monkeypatch.delenv(hardware.ENVIRONMENT, raising=False)


def test_resolve_device_names_and_refusals():
    assert hardware.resolve_device("cpu") == torch.device("cpu")
    assert hardware.resolve_device(torch.device("cpu")) == torch.device("cpu")
    assert hardware.resolve_device(None) == hardware.default_device()
    for bad, message in (("gpu", "unknown device 'gpu'"), ("meta", "not supported here"), ("", "unknown device")):
        with pytest.raises(ValueError, match=message):
            hardware.resolve_device(bad)


def test_default_device_is_cuda_exactly_when_torch_sees_a_gpu():
    assert hardware.default_device().type == ("cuda" if torch.cuda.is_available() else "cpu")


@NO_CUDA
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_without_a_gpu_is_a_clear_error(name):
    with pytest.raises(ValueError, match="torch sees no CUDA GPU on this machine.*use --device cpu"):
        hardware.resolve_device(name)


def test_describe_names_device_hardware_and_torch():
    facts = hardware.describe("cpu")
    assert facts == {"device": "cpu", "hardware": hardware.cpu_name(), "torch": torch.__version__}
    assert facts["hardware"] and facts["hardware"] != "unknown CPU" or sys.platform != "linux", facts
    json.dumps(facts)  # goes into a JSON record as it is


def test_the_environment_and_use_device_choose_the_default(monkeypatch, capsys):
    monkeypatch.setenv(hardware.ENVIRONMENT, "cpu")
    assert hardware.default_device() == torch.device("cpu")
    monkeypatch.delenv(hardware.ENVIRONMENT)
    assert hardware.use_device("cpu") == torch.device("cpu")
    assert hardware.default_device() == torch.device("cpu"), "a notebook's choice is every helper's default"
    out, err = capsys.readouterr()
    assert err == "" and out.count("\n") == 1 and out.startswith("device: cpu (") and torch.__version__ in out, out
    assert hardware.use_device(quiet=True) == torch.device("cpu")  # keeps the choice
    assert capsys.readouterr().out == ""
    from seqlab.seq2seq import device
    assert device() == torch.device("cpu")


@NO_CUDA
def test_a_notebook_asking_for_cuda_without_one_gets_the_same_clear_error():
    with pytest.raises(ValueError, match="no CUDA GPU"):
        hardware.use_device("cuda")


# ---- every training script: --device cpu trains, scores and records; --device cuda is refused clearly -------

@pytest.mark.parametrize("name", [t.name for t in TRAININGS])
def test_script_trains_on_the_cpu_and_records_the_machine(name, tmp_path):
    training = BY_NAME[name]
    record = run_in_process(training, tmp_path, "cpu")
    assert record["device"] == "cpu" and record["hardware"] == hardware.cpu_name(), record
    assert record["torch"] == torch.__version__ and "cuda" not in record
    assert "--device cpu" in record["command"], record["command"]
    checkpoint = training.checkpoint(tmp_path)
    if checkpoint is not None:  # the weights are CPU tensors: they load without map_location on any machine
        saved = torch.load(checkpoint, weights_only=True)
        weights = saved.get("state_dict", saved)
        assert weights and all(t.device.type == "cpu" for t in weights.values())


@NO_CUDA
@pytest.mark.parametrize("name", [t.name for t in TRAININGS])
def test_script_refuses_cuda_with_a_usage_error(name, tmp_path, capsys):
    training = BY_NAME[name]
    with pytest.raises(SystemExit) as stop:
        run_in_process(training, tmp_path, "cuda")
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "argument --device: device 'cuda' asked for, but torch sees no CUDA GPU" in err, err
    assert not training.record(tmp_path).exists()


@NO_CUDA
def test_refusal_from_the_command_line_is_a_message_not_a_traceback(tmp_path):
    training = BY_NAME["adding"]
    done = subprocess.run([sys.executable, "-m", f"seqlab.{training.module}", *training.argv(tmp_path),
                           "--device", "cuda"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "use --device cpu" in done.stderr.splitlines()[-1], done.stderr


def test_train_adding_and_train_variant_take_a_device():
    from seqlab.adding import train_adding
    from seqlab.name_ablation import train_variant

    a = train_adding("GRU", 0, steps=3, length=8, test_size=16)
    b = train_adding("GRU", 0, steps=3, length=8, test_size=16, device="cpu")
    assert a["test_mse"] == b["test_mse"] and next(b["model"].parameters()).device.type == "cpu"
    assert train_variant(0, epochs=1, n_train=32, device="cpu")["dev_accuracy"] >= 0.0
