"""What crosses between the trusted kernel (test cells) and the student kernel (student code).

Only data, as JSON (no pickle, nothing that can carry code): scalars, strings, bytes,
containers, NumPy arrays and scalars, torch tensors, random generators by state, and the
course's own classes by their fields (see autograder/CONVENTION.md). Anything else becomes
a reference ({"$": "ref"}) to an object that stays on the side that owns it; the other side
holds a :class:`Remote` handle and may call it and read its attributes through the peer.

Frames on a channel: 8-byte big-endian length, then UTF-8 JSON, read within limits (parse_json): a
frame that is too large, nests too deeply or holds too many values is the sender's error (WireError),
never a crash of the reader.
"""

from __future__ import annotations

import base64
import collections
import copyreg
import dataclasses
import hashlib
import io
import json
import math
import pickle
import random
import re
import select
import socket
import struct
import time
import types
from typing import Any, Callable

import numpy as np

try:  # the kernels preload torch; the codec also works without it
    import torch
except Exception:  # noqa: BLE001
    torch = None

MAX_FRAME = 256 * 2**20
MAX_ITEMS = 5_000_000  # a generator longer than this is not data
MAX_DEPTH = 60
# How deeply a frame's JSON may nest. A value nests 2-3 JSON levels per level of MAX_DEPTH, inside a message's own
# few, so honest frames stay below 200; json.loads recurses once per level, and the Python stack of the process that
# reads (the grader's own, for control frames) must never overflow on what the other side sent.
MAX_JSON_DEPTH = 400
PLAIN = (type(None), bool, int, float, str)
BUILTIN_FACTORIES = {"int": int, "float": float, "list": list, "dict": dict, "set": set, "str": str, "tuple": tuple}


class WireError(Exception):
    """The peer broke the protocol, or a value could not be carried."""


class PeerGone(WireError):
    """The peer's end of the channel closed or did not answer in time."""


# -- framing -----------------------------------------------------------------------------------------

class Channel:
    """Length-prefixed JSON frames over a connected stream socket."""

    def __init__(self, sock: socket.socket, max_frame: int = MAX_FRAME, max_values: int | None = None):
        self.sock = sock
        self.max_frame = max_frame
        self.max_values = max_values  # about how many JSON values a frame may make the reader build (parse_json)
        self.sock.setblocking(True)

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, message: dict, timeout: float | None = None) -> None:
        data = json.dumps(message, separators=(",", ":"), allow_nan=True).encode()
        self.sock.settimeout(timeout)
        try:
            self.sock.sendall(struct.pack(">Q", len(data)) + data)
        except (OSError, socket.timeout) as error:
            raise PeerGone(f"could not send: {error}") from None
        finally:
            self.sock.settimeout(None)

    def _read(self, n: int, deadline: float | None) -> bytes:
        chunks, got = [], 0
        while got < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                    raise PeerGone("no answer in time")
            try:
                chunk = self.sock.recv(min(n - got, 1 << 20))
            except OSError as error:
                raise PeerGone(f"the channel failed: {error}") from None
            if not chunk:
                raise PeerGone("the other side closed the channel")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def recv(self, deadline: float | None = None) -> dict:
        (size,) = struct.unpack(">Q", self._read(8, deadline))
        if size > self.max_frame:
            raise WireError(f"a message of {size:,d} bytes is larger than the limit of {self.max_frame:,d}")
        message = parse_json(self._read(size, deadline), max_values=self.max_values)
        if not isinstance(message, dict):
            raise WireError("a message that is not a JSON object")
        return message


# -- reading JSON within limits -------------------------------------------------------------------------

_ESCAPES = re.compile(rb"\\.", re.S)  # a backslash and the character it escapes (only inside strings)
_SCAN_CHUNK = 1 << 20  # bytes per step of json_shape: its arrays stay a few MB whatever the text's size
_QUOTE, _COMMA = ord('"'), ord(",")
_OPEN, _CLOSE = np.array([ord("["), ord("{")], np.uint8), np.array([ord("]"), ord("}")], np.uint8)


def json_shape(data: bytes) -> tuple[int, int]:
    """(deepest nesting, about how many values) of a UTF-8 JSON text: its opening brackets and commas outside strings.

    No recursion, no Python loop per character and no object per string: once the escapes are gone, quotes
    alternate between opening and closing a string, so a character lies outside the strings where the quotes
    before it are even in number. The text is read in chunks, so a 256 MB frame costs a few MB to scan. In UTF-8
    a byte below 0x80 is always that ASCII character: no multi-byte character can hide a quote or a bracket."""
    if b"\\" in data:
        data = _ESCAPES.sub(b"", data)
    codes = np.frombuffer(data, dtype=np.uint8)
    inside, depth, deepest, count = 0, 0, 0, 0
    for start in range(0, len(codes), _SCAN_CHUNK):
        part = codes[start:start + _SCAN_CHUNK]
        parity = (np.cumsum(part == _QUOTE, dtype=np.int64) + inside) & 1
        outside = parity == 0
        opens, closes = np.isin(part, _OPEN) & outside, np.isin(part, _CLOSE) & outside
        count += int(opens.sum() + ((part == _COMMA) & outside).sum())
        levels = np.cumsum(opens.astype(np.int64) - closes) + depth
        deepest, depth, inside = max(deepest, int(levels.max())), int(levels[-1]), int(parity[-1])
    return deepest, count


def json_problem(data: bytes, max_depth: int = MAX_JSON_DEPTH, max_values: int | None = None) -> str | None:
    """Why a UTF-8 JSON text is beyond the limits ("nested more than 400 levels deep"), or None.

    json.loads recurses once per level of nesting (a deep enough text raises RecursionError in the reader),
    and every value it builds costs the reader memory (``max_values``: about how many may be built). Only a
    text with more brackets than ``max_depth`` (or more commas than ``max_values``) is scanned, so small
    frames cost nothing more."""
    brackets = data.count(b"[") + data.count(b"{")
    if brackets <= max_depth and (max_values is None or brackets + data.count(b",") <= max_values):
        return None
    depth, values = json_shape(data)
    if depth > max_depth:
        return f"nested more than {max_depth} levels deep"
    if max_values is not None and values > max_values:
        return f"of more than {max_values:,d} values"
    return None


def parse_json(data: bytes, max_depth: int = MAX_JSON_DEPTH, max_values: int | None = None):
    """JSON from another process, read within the limits of json_problem: what breaks them is the sender's
    error (WireError), never a RecursionError or an exhausted memory in the reader."""
    try:
        text = data.decode("utf-8")  # never json's guess of UTF-16 or UTF-32, in which json_shape would be wrong
    except UnicodeDecodeError as error:
        raise WireError(f"a message that is not UTF-8 ({error})") from None
    problem = json_problem(data, max_depth, max_values)
    if problem:
        raise WireError(f"a message {problem}")
    try:
        return json.loads(text)
    except RecursionError:  # below max_depth, but the reader's stack was already deep
        raise WireError("a message nested too deeply to be read here") from None
    except ValueError as error:
        raise WireError(f"a message that is not JSON ({error})") from None


# -- references -------------------------------------------------------------------------------------

class Remote:
    """A handle to an object that lives in the other kernel; every operation is a request."""

    __slots__ = ("_peer", "_ref", "_label")

    def __init__(self, peer: "Peer", ref: dict, label: str):
        object.__setattr__(self, "_peer", peer)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_label", label)

    def __call__(self, *args, **kwargs):
        return self._peer.request("call", target=self._ref, args=list(args), kwargs=kwargs)

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name in self._ref.get("methods", ()):  # a method: calling it is one request, not two
            return RemoteMethod(self, name)
        return self._peer.request("getattr", target=self._ref, name=name)

    def __setattr__(self, name: str, value) -> None:
        self._peer.request("setattr", target=self._ref, name=name, value=value)

    def __repr__(self) -> str:
        return f"<{self._label} in the other kernel>"

    def _not_data(self, *_args, **_kwargs):
        raise TypeError(f"{self!r} is a handle, not data: a test can call it, read its attributes and pass it "
                        "back, but not compare, hash, iterate or measure it (see autograder/CONVENTION.md)")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = __bool__ = __len__ = __iter__ = _not_data
    __getitem__ = __contains__ = __float__ = __int__ = __index__ = _not_data

    @staticmethod
    def _remote_value_and_grad(fn: "Remote", args: list, wrt: int, weights=None, output: int | None = None):
        """seqlab.grading.value_and_grad: the gradient is taken where the function runs."""
        return fn._peer.request("grad", target=fn._ref, args=list(args), kwargs={}, wrt=wrt, weights=weights,
                                output=output)

    @staticmethod
    def _remote_measure(fn: "Remote", args: tuple, kwargs: dict):
        """seqlab.modern.measure: the largest tensor and the operations are counted where the function runs."""
        return tuple(fn._peer.request("measure", target=fn._ref, args=list(args), kwargs=kwargs))

    @staticmethod
    def _remote_type_names(obj: "Remote") -> list[str]:
        """seqlab.grading.type_names: the names of the classes of the object, most specific first."""
        return obj._peer.request("typeof", target=obj._ref)

    @staticmethod
    def _remote_optimizer(model: "Remote", name: str, options: dict):
        """seqlab.grading.optimizer_for: the optimizer is built where the model's parameters live."""
        return model._peer.request("optimizer", target=model._ref, name=name, options=options)


class RemoteMethod:
    """A method of an object in the other kernel, called in one request."""

    __slots__ = ("owner", "name")

    def __init__(self, owner: Remote, name: str):
        self.owner, self.name = owner, name

    def __call__(self, *args, **kwargs):
        return self.owner._peer.request("callmethod", target=self.owner._ref, name=self.name, args=list(args),
                                        kwargs=kwargs)

    def __repr__(self) -> str:
        return f"<method {self.name} of {self.owner!r}>"


_METHODS: dict[type, list[str]] = {}


def public_methods(cls: type) -> list[str]:
    if cls not in _METHODS:
        names = []
        for name in dir(cls):
            if not name.startswith("_"):
                try:
                    if callable(getattr(cls, name)) and not isinstance(getattr(cls, name), type):
                        names.append(name)
                except Exception:  # noqa: BLE001 - a descriptor that fails on the class
                    continue
        _METHODS[cls] = names
    return _METHODS[cls]


# -- the codec ---------------------------------------------------------------------------------------

def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text) -> bytes:
    if not isinstance(text, str):
        raise WireError("bytes expected as base64 text")
    return base64.b64decode(text.encode("ascii"), validate=True)


NUMPY_KINDS = "biufcUS"  # bool, ints, unsigned, floats, complex, str, bytes
TORCH_DTYPES = {} if torch is None else {
    str(d).replace("torch.", ""): d for d in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
                                                torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
                                                torch.complex64, torch.complex128)}


def _np_dtype(text) -> np.dtype:
    if not isinstance(text, str):
        raise WireError("a dtype must be text")
    try:
        dtype = np.dtype(text)
    except TypeError:
        raise WireError(f"unknown dtype {text!r}") from None
    if dtype.kind not in NUMPY_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise WireError(f"dtype {text!r} is not data")
    return dtype


def _shape(value) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(s, int) and 0 <= s for s in value) or len(value) > 32:
        raise WireError("a shape must be a list of sizes")
    return tuple(value)


class Codec:
    """Encode and decode values for one side ("s" student, "t" trusted).

    ``classes`` maps "module:qualname" to the course's own classes that travel by their fields.
    Objects that are not data are kept in ``objects`` and sent as references.
    """

    def __init__(self, side: str, classes: dict[str, type] | None = None):
        self.side = side
        self.classes = dict(classes or {})
        self.objects: dict[int, Any] = {}
        self.next_id = 1
        self.peer: Peer | None = None
        self.names: Callable[[str], Any] | None = None  # resolves {"$": "name"} references on the owning side
        self.mirrors: dict[int, list] = {}  # arguments the other side sent once and refers to while unchanged
        self.iter_items: dict[int, list] = {}  # iterator argument -> its items (their changes go back)

    # encoding ---------------------------------------------------------------------------------------
    def course_class(self, cls: type) -> tuple[str, type] | None:
        for klass in cls.__mro__:
            for key, known in self.classes.items():
                if known is klass:
                    return key, klass
        return None

    def keep(self, value) -> dict:
        ident = self.next_id
        self.next_id += 1
        self.objects[ident] = value
        label = getattr(value, "__qualname__", None) or type(value).__qualname__
        if not isinstance(value, type) and not callable(value):
            label = f"a {type(value).__qualname__} object"
        ref = {"$": "ref", "side": self.side, "id": ident, "label": str(label)[:80], "callable": bool(callable(value))}
        if not isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            ref["methods"] = public_methods(type(value))
        return ref

    def encode(self, value, depth: int = 0, *, as_argument: bool = False):  # noqa: C901 - one case per type
        if depth > MAX_DEPTH:
            raise WireError("a value nested too deeply (or that contains itself)")
        d = depth + 1
        if isinstance(value, Remote):
            return value._ref
        if isinstance(value, bool) or value is None or isinstance(value, str):
            return value if type(value) in PLAIN else {"$": "str", "v": str(value)} if isinstance(value, str) else bool(value)
        if isinstance(value, int) and not isinstance(value, (np.integer,)):
            if type(value) is not int and not isinstance(value, bool):
                return int(value)
            return value
        if isinstance(value, float):
            return float(value) if type(value) is not float else value
        if isinstance(value, complex):
            return {"$": "complex", "v": [value.real, value.imag]}
        if isinstance(value, (bytes, bytearray)):
            return {"$": "bytes", "v": _b64(bytes(value))}
        if isinstance(value, np.ndarray):
            array = np.asarray(value)
            if array.dtype.kind in NUMPY_KINDS and array.dtype.fields is None:
                array = array if array.flags.c_contiguous else array.copy(order="C")  # (ascontiguousarray makes a 0-d array 1-d)
                return {"$": "nd", "dtype": array.dtype.str, "shape": list(array.shape), "v": _b64(array.tobytes())}
            if array.dtype.kind == "O":
                return {"$": "ndobj", "shape": list(array.shape), "v": [self.encode(x, d) for x in array.ravel().tolist()]}
            raise WireError(f"an array of dtype {array.dtype} is not data")
        if isinstance(value, np.generic):
            if value.dtype.kind not in NUMPY_KINDS:
                raise WireError(f"a NumPy scalar of dtype {value.dtype} is not data")
            return {"$": "npscalar", "dtype": value.dtype.str, "v": _b64(np.asarray(value).tobytes())}
        if isinstance(value, np.dtype):
            return {"$": "npdtype", "v": value.str}
        if torch is not None:
            if isinstance(value, torch.Tensor):
                return self.encode_tensor(value, d)
            if isinstance(value, torch.dtype):
                return {"$": "tdtype", "v": str(value).replace("torch.", "")}
            if isinstance(value, torch.device):
                return {"$": "device", "v": "cpu"}
            if isinstance(value, torch.Size):
                return {"$": "tuple", "v": [int(s) for s in value]}
        if isinstance(value, np.random.Generator):
            return {"$": "npgen", "bitgen": type(value.bit_generator).__name__, "state": self.encode(value.bit_generator.state, d)}
        if isinstance(value, np.random.RandomState):
            return {"$": "randomstate", "state": self.encode(value.get_state(legacy=True), d)}
        if isinstance(value, range):
            return {"$": "range", "v": [value.start, value.stop, value.step]}
        if isinstance(value, slice):
            return {"$": "slice", "v": [self.encode(value.start, d), self.encode(value.stop, d), self.encode(value.step, d)]}
        known = self.course_class(type(value)) if not isinstance(value, type) else None
        if known is not None:
            return self.encode_object(value, known, d)
        if isinstance(value, tuple) and type(value) is not tuple and hasattr(value, "_fields"):
            return {"$": "tuple", "v": [self.encode(x, d) for x in value]}  # a student's own named tuple
        if isinstance(value, (list, tuple, set, frozenset)):
            kind = "list" if isinstance(value, list) else "tuple" if isinstance(value, tuple) else \
                "frozenset" if isinstance(value, frozenset) else "set"
            return {"$": kind, "v": [self.encode(x, d) for x in value]}
        if isinstance(value, dict):
            node = {"$": "dict", "v": [[self.encode(k, d), self.encode(v, d)] for k, v in value.items()]}
            if isinstance(value, collections.Counter):
                node["kind"] = "Counter"
            elif isinstance(value, collections.OrderedDict):
                node["kind"] = "OrderedDict"
            elif isinstance(value, collections.defaultdict):
                factory = value.default_factory
                name = next((k for k, f in BUILTIN_FACTORIES.items() if f is factory), None)
                node["kind"] = "defaultdict"
                node["factory"] = name
            return node
        if isinstance(value, (collections.abc.KeysView, collections.abc.ValuesView, collections.abc.ItemsView)):
            return {"$": "list", "v": [self.encode(x, d) for x in value]}
        if isinstance(value, (types.GeneratorType, map, filter, zip, enumerate, reversed)) or (
                isinstance(value, collections.abc.Iterator) and not isinstance(value, io.IOBase)):
            items = []
            for item in value:
                items.append(self.encode(item, d))
                if len(items) > MAX_ITEMS:
                    raise WireError(f"an iterator with more than {MAX_ITEMS:,d} items is not data")
            return {"$": "iter" if as_argument else "list", "v": items}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {"$": "dict", "v": [[f.name, self.encode(getattr(value, f.name), d)] for f in dataclasses.fields(value)]}
        return self.keep(value)

    def encode_tensor(self, value, depth: int) -> dict:
        tensor = value.detach()
        if tensor.is_sparse or tensor.layout != torch.strided:
            tensor = tensor.to_dense()
        tensor = tensor.cpu().contiguous()
        dtype = str(tensor.dtype).replace("torch.", "")
        if dtype not in TORCH_DTYPES:
            raise WireError(f"a tensor of dtype {dtype} is not data")
        raw = tensor.view(torch.int16) if tensor.dtype == torch.bfloat16 else tensor
        node = {"$": "tensor", "dtype": dtype, "shape": list(tensor.shape), "v": _b64(raw.numpy().tobytes()),
                "rg": bool(value.requires_grad)}
        if value.grad is not None:
            node["grad"] = self.encode_tensor(value.grad, depth)
        return node

    def encode_object(self, value, known: tuple[str, type], depth: int) -> dict:
        key, cls = known
        if hasattr(cls, "_fields") and isinstance(value, tuple):
            fields = {name: getattr(value, name) for name in cls._fields}
        elif dataclasses.is_dataclass(cls):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(cls)}
        else:
            fields = dict(vars(value))
        return {"$": "obj", "cls": key, "v": [[name, self.encode(v, depth)] for name, v in fields.items()]}

    # decoding ---------------------------------------------------------------------------------------
    def decode(self, node, depth: int = 0):  # noqa: C901 - one case per tag
        if depth > MAX_DEPTH:
            raise WireError("a value nested too deeply")
        d = depth + 1
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or not isinstance(node.get("$"), str):
            raise WireError("a malformed value")
        tag, v = node["$"], node.get("v")
        if tag in ("list", "tuple", "set", "frozenset", "iter"):
            if not isinstance(v, list):
                raise WireError(f"a malformed {tag}")
            items = [self.decode(x, d) for x in v]
            if tag == "list":
                return items
            if tag == "iter":  # an argument that was a generator: one pass, as the caller's
                iterator = iter(items)
                self.iter_items[id(iterator)] = items
                return iterator
            try:
                return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
            except TypeError:
                raise WireError(f"a {tag} of unhashable items") from None
        if tag == "dict":
            if not isinstance(v, list) or not all(isinstance(p, list) and len(p) == 2 for p in v):
                raise WireError("a malformed dict")
            kind = node.get("kind")
            if kind == "Counter":
                out = collections.Counter()
            elif kind == "OrderedDict":
                out = collections.OrderedDict()
            elif kind == "defaultdict":
                out = collections.defaultdict(BUILTIN_FACTORIES.get(node.get("factory")))
            else:
                out = {}
            for key, value in v:
                try:
                    out[self.decode(key, d)] = self.decode(value, d)
                except TypeError:
                    raise WireError("a dict with an unhashable key") from None
            return out
        if tag == "str":
            return str(v)
        if tag == "complex":
            return complex(float(v[0]), float(v[1]))
        if tag == "bytes":
            return _unb64(v)
        if tag == "nd":
            dtype, shape = _np_dtype(node.get("dtype")), _shape(node.get("shape"))
            raw = _unb64(v)
            if len(raw) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
                raise WireError("an array whose bytes do not match its shape")
            return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        if tag == "ndobj":
            shape = _shape(node.get("shape"))
            items = [self.decode(x, d) for x in v]
            array = np.empty(len(items), dtype=object)
            array[:] = items if items else []
            return array.reshape(shape)
        if tag == "npscalar":
            dtype = _np_dtype(node.get("dtype"))
            raw = _unb64(v)
            if len(raw) != dtype.itemsize:
                raise WireError("a NumPy scalar of the wrong size")
            return np.frombuffer(raw, dtype=dtype)[0]
        if tag == "npdtype":
            return _np_dtype(v)
        if tag == "tensor":
            return self.decode_tensor(node)
        if tag == "tdtype":
            if v not in TORCH_DTYPES:
                raise WireError(f"unknown torch dtype {v!r}")
            return TORCH_DTYPES[v]
        if tag == "device":
            return torch.device("cpu")
        if tag == "npgen":
            name = node.get("bitgen")
            if name not in ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"):
                raise WireError(f"unknown bit generator {name!r}")
            bitgen = getattr(np.random, name)()
            try:
                bitgen.state = self.decode(node.get("state"), d)
            except (TypeError, ValueError, KeyError) as error:
                raise WireError(f"a malformed generator state ({error})") from None
            return np.random.Generator(bitgen)
        if tag == "randomstate":
            rs = np.random.RandomState()
            try:
                rs.set_state(self.decode(node.get("state"), d))
            except (TypeError, ValueError) as error:
                raise WireError(f"a malformed RandomState ({error})") from None
            return rs
        if tag == "range":
            return range(*[int(x) for x in v])
        if tag == "slice":
            return slice(*[self.decode(x, d) for x in v])
        if tag == "obj":
            return self.decode_object(node, d)
        if tag == "ref":
            return self.decode_ref(node)
        if tag == "keep":  # a large argument the sender will refer to again while it is unchanged
            value = self.decode(v, d)
            self.mirrors[int(node.get("id", 0))] = [value, fingerprint(value)]
            return value
        if tag == "mirror":
            entry = self.mirrors.get(node.get("id"))
            if entry is None:
                raise WireError("a reference to an argument that was never sent")
            return entry[0]
        if tag == "name":
            if node.get("side") == self.side:
                if self.names is None:
                    raise WireError("no names on this side")
                return self.names(str(v))
            return Remote(self.peer, node, str(v))
        raise WireError(f"unknown tag {tag!r}")

    def decode_tensor(self, node: dict):
        if torch is None:
            raise WireError("torch is not available")
        dtype = node.get("dtype")
        if dtype not in TORCH_DTYPES:
            raise WireError(f"unknown torch dtype {dtype!r}")
        shape = _shape(node.get("shape"))
        raw = _unb64(node.get("v"))
        np_dtype = np.int16 if dtype == "bfloat16" else torch.empty(0, dtype=TORCH_DTYPES[dtype]).numpy().dtype
        if len(raw) != int(np.prod(shape, dtype=np.int64)) * np.dtype(np_dtype).itemsize:
            raise WireError("a tensor whose bytes do not match its shape")
        array = np.frombuffer(raw, dtype=np_dtype).reshape(shape).copy()
        tensor = torch.from_numpy(array)
        if dtype == "bfloat16":
            tensor = tensor.view(torch.bfloat16)
        if node.get("rg") and tensor.is_floating_point():
            tensor.requires_grad_(True)
        if isinstance(node.get("grad"), dict):
            grad = self.decode_tensor(node["grad"])
            if grad.shape == tensor.shape:
                tensor.grad = grad.to(tensor.dtype)
        return tensor

    def decode_object(self, node: dict, depth: int):
        cls = self.classes.get(node.get("cls"))
        if cls is None:
            raise WireError(f"{node.get('cls')!r} is not one of the course's data classes")
        fields = {str(k): self.decode(x, depth) for k, x in node.get("v", [])}
        if hasattr(cls, "_fields") and issubclass(cls, tuple):
            return cls(**fields)
        obj = cls.__new__(cls)
        for name, value in fields.items():
            object.__setattr__(obj, name, value)
        return obj

    def decode_ref(self, node: dict):
        if node.get("side") == self.side:
            ident = node.get("id")
            if ident not in self.objects:
                raise WireError("a reference to an object that does not exist")
            return self.objects[ident]
        if self.peer is None:
            raise WireError("a reference with no peer to ask")
        methods = node.get("methods") if isinstance(node.get("methods"), list) else []
        return Remote(self.peer, {"$": "ref", "side": node.get("side"), "id": node.get("id"),
                                  "methods": [str(m) for m in methods if isinstance(m, str)]},
                      str(node.get("label", "object"))[:80])


# -- what a decoded value holds -------------------------------------------------------------------------

PLAIN_TYPES = frozenset({type(None), bool, int, float, complex, str, bytes})  # the common leaves, by a set lookup
DATA_LEAVES = (type(None), bool, int, float, complex, str, bytes, range, np.generic, np.dtype, np.random.Generator,
               np.random.RandomState)
if torch is not None:
    DATA_LEAVES += (torch.Tensor, torch.dtype, torch.device)


def only_data(value, course_classes=(), depth: int = 0, handles: bool = False) -> bool:
    """Whether a decoded value is data all the way down: no handle to the other side's objects, no iterator, no
    object that is neither data nor an instance of one of ``course_classes`` (which travel by their fields).

    ``handles``: handles to the other side's objects are allowed too (data and the other side's code, but none of
    this side's own objects: what an answer name of the student's may hold, in the test kernel)."""
    if type(value) in PLAIN_TYPES:
        return True
    if depth > 2 * MAX_DEPTH:  # deeper than decode() builds: refuse rather than recurse
        return False
    d = depth + 1
    if handles and type(value) in (Remote, RemoteMethod):
        return True
    if type(value) in course_classes:  # (first: a course class may subclass a tuple, or even an int)
        items = field_values(value) + (list(value) if isinstance(value, tuple) else [])
        return all(only_data(x, course_classes, d, handles) for x in items)
    if isinstance(value, DATA_LEAVES):
        return True
    if isinstance(value, (list, tuple, set, frozenset)):  # (a given cell's corpus: a million words, so the leaves first)
        return all(type(x) in PLAIN_TYPES or only_data(x, course_classes, d, handles) for x in value)
    if isinstance(value, dict):
        return all(only_data(k, course_classes, d, handles) and only_data(v, course_classes, d, handles)
                   for k, v in value.items())
    if isinstance(value, np.ndarray):
        return value.dtype != object or all(only_data(x, course_classes, d, handles) for x in value.flat)
    if isinstance(value, slice):
        return all(only_data(x, course_classes, d, handles) for x in (value.start, value.stop, value.step))
    return False


def field_values(obj) -> list:
    """The values of an object's fields: its __dict__ and its slots."""
    values = list(vars(obj).values()) if isinstance(getattr(obj, "__dict__", None), dict) else []
    for klass in type(obj).__mro__:
        slots = getattr(klass, "__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                values.append(getattr(obj, name))
    return values


# -- arguments sent again and again ---------------------------------------------------------------------

MIRROR_MIN_BYTES = 2048  # smaller arguments are simply sent again


def _tensor_state(obj):
    grad = obj.grad
    raw = obj.detach().cpu().contiguous()
    raw = raw.float() if raw.dtype == torch.bfloat16 else raw
    return tuple, ((str(obj.dtype), tuple(obj.shape), raw.numpy().tobytes(), bool(obj.requires_grad),
                    None if grad is None else fingerprint(grad)),)


class _FastPickler(pickle.Pickler):
    dispatch_table = dict(copyreg.dispatch_table)
    if torch is not None:
        dispatch_table[torch.Tensor] = _tensor_state
        dispatch_table[torch.nn.Parameter] = _tensor_state


class _SlowPickler(_FastPickler):
    def reducer_override(self, obj):
        if isinstance(obj, type) and obj.__module__ != "builtins":  # notebook classes: not importable
            return str, (f"{obj.__module__}.{obj.__qualname__}",)
        if torch is not None and isinstance(obj, torch.Tensor):
            return _tensor_state(obj)
        if isinstance(obj, (Remote, types.FunctionType, types.MethodType)):
            raise pickle.PicklingError("not data")
        return NotImplemented


class _Fingerprinter:
    """A fast fingerprint of a value (C pickle into a hash, never unpickled): has it changed since?

    The C pickler looks types up in a dispatch table, so only tensors (whose pickle would leave
    out .grad) cost Python calls; a class that cannot be pickled by reference falls back to a
    slower pickler that names it. (The picklers are made once: a call of the student's code from a
    test fingerprints its arguments, and chapter 2's tests make two thousand such calls.)
    """

    @staticmethod
    def of(value) -> bytes | None:
        for pickler in (_FastPickler, _SlowPickler):
            buffer = io.BytesIO()
            try:
                pickler(buffer, protocol=5).dump(value)
                break
            except Exception:  # noqa: BLE001 - anything that does not pickle is simply not mirrored
                if pickler is _SlowPickler:
                    return None
        if buffer.tell() < MIRROR_MIN_BYTES:
            return None
        return hashlib.blake2b(buffer.getbuffer(), digest_size=16).digest()


fingerprint = _Fingerprinter.of


# -- in-place changes ---------------------------------------------------------------------------------

MUTABLE = (list, dict, set, np.ndarray, np.random.Generator, np.random.RandomState)


def is_mutable(value) -> bool:
    if isinstance(value, MUTABLE):
        return True
    if torch is not None and isinstance(value, torch.Tensor):
        return True
    return hasattr(value, "__dict__") and not isinstance(value, (type, types.FunctionType, Remote))


def write_back(target, new) -> None:
    """Make ``target`` equal to ``new`` in place (the student's function changed its argument)."""
    if isinstance(target, list) and isinstance(new, list):
        target[:] = new
    elif isinstance(target, dict) and isinstance(new, dict):
        target.clear()
        target.update(new)
    elif isinstance(target, set) and isinstance(new, set):
        target.clear()
        target.update(new)
    elif isinstance(target, np.ndarray) and isinstance(new, np.ndarray):
        if target.shape == new.shape:
            target[...] = new
    elif torch is not None and isinstance(target, torch.Tensor) and isinstance(new, torch.Tensor):
        with torch.no_grad():
            if target.shape == new.shape and target.dtype == new.dtype:
                target.copy_(new)
            else:
                target.data = new.detach().clone()
        if new.grad is not None or target.grad is not None:
            target.grad = None if new.grad is None else new.grad.clone()
    elif isinstance(target, np.random.Generator) and isinstance(new, np.random.Generator):
        target.bit_generator.state = new.bit_generator.state
    elif isinstance(target, np.random.RandomState) and isinstance(new, np.random.RandomState):
        target.set_state(new.get_state())
    elif hasattr(target, "__dict__") and type(new) is type(target) and hasattr(new, "__dict__"):
        fields = vars(target)  # only the fields the test's object has: the other side adds none and drops none
        for name, value in vars(new).items():
            if name in fields:
                fields[name] = value


# -- global random states ------------------------------------------------------------------------------

class RandomStates:
    """The global random states of torch, NumPy and random travel with each request: only those that changed since
    the last exchange, and a state is read where that is cheap.

    Both directions, except one: the test kernel (``keeps_own``) never takes the student's states. Its requests
    carry its states when they changed (or the test seeded them, ``watch_seeding``), so that the student's code
    draws where the test's seed put it; the student's code then goes on drawing from its own generators, call after
    call, as it would in one kernel, until the test seeds or draws again. After each request the test kernel's
    generators are as they were before it (``settle``), whatever the student's code did to its own: hidden tests that
    draw their inputs from the global generators draw what the course chose, never a state the student's code set
    (an all-zero generator, a seed whose inputs a wrong answer passes). While the student's code calls back into the
    test kernel (a test's toy model), the test's code there draws from the student's states, as in one kernel;
    they too are undone when the request ends.

    NumPy's legacy ``get_state`` copies 624 words into a new array (about 40 µs, four times a call); the same words
    lie in the MT19937 generator's own memory, read here as bytes in about 1 µs (checked against ``get_state`` once;
    elsewhere, ``get_state`` every time). One thing those bytes do not hold is the Gaussian that the legacy
    generator keeps for its next ``standard_normal``: it is made together with the one drawn before (which moves
    the words), but using it up changes nothing else, so while one is kept the full state is read every time.
    """

    def __init__(self, keeps_own: bool = False):
        self.last: dict[str, object] = {}
        self.gauss_kept = True  # until a full read says otherwise
        self.np_words = _np_state_words()
        self.keeps_own = keeps_own
        self.reseeded: set[str] = set()  # generators the test seeded since the last exchange (watch_seeding)
        self.setters = {"np": np.random.set_state, "py": random.setstate,
                        "torch": torch.set_rng_state if torch is not None else None}

    def _raw(self) -> dict[str, object]:
        words = self.np_words() if self.np_words is not None and not self.gauss_kept else None
        if words is not None and words == self.last.get("np_words"):
            numpy_state = self.last["np"]
        else:
            kind, keys, pos, has_gauss, gauss = np.random.get_state(legacy=True)
            numpy_state = (keys.tobytes(), pos, has_gauss, gauss)
            self.gauss_kept = bool(has_gauss)
            words = self.np_words() if self.np_words is not None else None
        raw = {"np": numpy_state, "np_words": words, "py": random.getstate()}
        if torch is not None:
            raw["torch"] = torch.get_rng_state().numpy().tobytes()
        return raw

    def outgoing(self) -> dict[str, str]:
        """The states that changed (or were seeded) since the last exchange."""
        now = self._raw()
        changed = {}
        for key, value in now.items():
            if key != "np_words" and (self.last.get(key) != value or key in self.reseeded):
                if key == "np":
                    keys, pos, has_gauss, gauss = value
                    changed[key] = json.dumps(["MT19937", _b64(keys), int(pos), int(has_gauss), float(gauss)])
                elif key == "py":
                    version, internal, gauss = value
                    changed[key] = json.dumps([version, list(internal), gauss])
                else:
                    changed[key] = _b64(value)
        self.reseeded.clear()
        self.last = now
        return changed

    def incoming(self, states) -> None:
        if not isinstance(states, dict) or not states:
            return
        try:
            if "np" in states:
                kind, keys, pos, has_gauss, gauss = json.loads(states["np"])
                words = np.frombuffer(_unb64(keys), dtype=np.uint32).copy()
                self.setters["np"]((str(kind), words, int(pos), int(has_gauss), float(gauss)))
            if "py" in states:
                version, internal, gauss = json.loads(states["py"])
                self.setters["py"]((int(version), tuple(int(x) for x in internal), gauss))
            if "torch" in states and torch is not None:
                raw = np.frombuffer(_unb64(states["torch"]), dtype=np.uint8).copy()
                self.setters["torch"](torch.from_numpy(raw))
        except (ValueError, TypeError, RuntimeError, OverflowError) as error:
            raise WireError(f"a malformed random state ({error})") from None
        self.gauss_kept = True  # the state just set may keep one: the next read is a full one
        self.last = self._raw()

    def settle(self, own: dict[str, object]) -> None:
        """The test kernel, after a request in which the student's code called back into it: its generators as they
        were before the request (``own``, its ``last`` then), wherever the callbacks left them."""
        now = self._raw()
        if now.get("np") != own.get("np"):
            keys, pos, has_gauss, gauss = own["np"]
            self.setters["np"](("MT19937", np.frombuffer(keys, dtype=np.uint32).copy(), pos, has_gauss, gauss))
            self.gauss_kept = True
        if now.get("py") != own.get("py"):
            self.setters["py"](own["py"])
        if "torch" in own and now.get("torch") != own["torch"]:
            self.setters["torch"](torch.from_numpy(np.frombuffer(own["torch"], dtype=np.uint8).copy()))
        self.last = own

    def watch_seeding(self) -> None:
        """The test kernel: seeding a global generator (torch.manual_seed, np.random.seed, random.seed, or setting a
        state) sends that state with the next request even if it equals the one sent last: ``torch.manual_seed(0);
        a = f(); torch.manual_seed(0); b = f()`` gives ``a == b``, as in one kernel. (Without it, a state equal to the
        last one sent reads as "the test did nothing", and the student's code would go on from its own.)"""
        import functools

        def watched(function, key):
            @functools.wraps(function)
            def seeding(*args, **kwargs):
                result = function(*args, **kwargs)
                self.reseeded.add(key)
                if key == "np":
                    self.gauss_kept = True  # the words may be the same as before: read the whole state
                return result
            return seeding

        places = [(np.random, "seed", "np"), (np.random, "set_state", "np"), (random, "seed", "py"),
                  (random, "setstate", "py")]
        if torch is not None:
            places += [(torch, "manual_seed", "torch"), (torch.random, "manual_seed", "torch"), (torch, "seed", "torch"),
                       (torch.random, "seed", "torch"), (torch, "set_rng_state", "torch"),
                       (torch.random, "set_rng_state", "torch")]
        for module, name, key in places:
            function = getattr(module, name, None)
            if function is not None and not getattr(function, "seqlab_watched", False):
                setattr(module, name, watched(function, key))
                getattr(module, name).seqlab_watched = True


def _np_state_words() -> Callable[[], bytes] | None:
    """A reader of the legacy global generator's MT19937 words and position as bytes, if they lie where expected."""
    import ctypes

    try:
        generator = np.random.mtrand._rand._bit_generator
        if type(generator).__name__ != "MT19937":
            return None
        address = generator.ctypes.state_address
        _, keys, pos, _, _ = np.random.get_state(legacy=True)
        raw = ctypes.string_at(address, 624 * 4 + 4)
        if raw != keys.astype("<u4").tobytes() + int(pos).to_bytes(4, "little", signed=True):
            return None
    except Exception:  # noqa: BLE001 - another NumPy: read the full state every time
        return None

    def words() -> bytes | None:
        current = np.random.mtrand._rand._bit_generator  # seed() keeps it; a new one (code that replaced it) is read
        if current is not generator:  # in full, from now on
            return None
        return ctypes.string_at(address, 624 * 4 + 4)

    return words


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


# -- one side of the conversation ---------------------------------------------------------------------

class _Items:
    """A generator or iterator argument, drawn once by the caller; its items' changes come back."""

    def __init__(self, iterator):
        self.items = []
        for item in iterator:
            self.items.append(item)
            if len(self.items) > MAX_ITEMS:
                raise WireError(f"an iterator with more than {MAX_ITEMS:,d} items is not data")


def _is_iterator(value) -> bool:
    return isinstance(value, collections.abc.Iterator) and not isinstance(value, (io.IOBase, Remote))


def raised_by_peer(error: BaseException | None) -> bool:
    """Whether ``error``, or an error it was raised while handling, was rebuilt from the other side's reply.

    The trusted runner reports a test that failed so as failed in the student's code: feedback then shows the
    error's type but not its message, which the student's code wrote and which may carry a hidden test's inputs."""
    seen = 0
    while error is not None and seen < 50:
        if getattr(error, "__dict__", {}).get("raised_by_peer") is True:
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


class RemoteError(Exception):
    """An exception raised by the other side's code, by type name and message."""


def rebuild_exception(name: str, message: str) -> BaseException:
    import builtins

    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception) and cls not in (SystemExit, KeyboardInterrupt):
        try:
            return cls(message)
        except Exception:  # noqa: BLE001 - exceptions whose constructor wants more
            pass
    return RemoteError(f"{name}: {message}")


class Peer:
    """Requests to the other kernel over ``channel``; serves its nested requests while waiting.

    ``serve(message)`` answers one request of the other side; ``public_only`` restricts what
    the other side may do with this side's objects (the trusted side exposes only public names).
    """

    def __init__(self, channel: Channel, codec: Codec, serve: Callable[[dict], dict],
                 timeout: Callable[[], tuple[float, float]], hooks=None, keeps_own_randomness: bool = False,
                 peer_keeps_own_randomness: bool = False):
        self.channel = channel
        self.codec = codec
        codec.peer = self
        self.serve = serve
        self.timeout = timeout  # () -> (own seconds left, wall seconds left) of the time limit in force
        # hooks (the runner's time limits, owntime.py): request_begun() -> token, request_ended(token, reply or
        # None); answer_begun(message) -> token, answer_ended(token) -> fields added to the reply
        self.hooks = hooks
        self.errors: dict[str, type] = {}  # error names of the other side raised here as these classes
        # the test kernel keeps its own global random states (RandomStates): it never takes the student's, and the
        # student's replies need not carry them
        self.randoms = RandomStates(keeps_own=keeps_own_randomness)
        self.answered = 0  # requests of the other side answered (callbacks while this side waits)
        self.peer_keeps_own_randomness = peer_keeps_own_randomness
        self.next_id = 1
        self.broken: str | None = None
        self.broke_protocol = False  # the other side sent what is not a frame within the limits (not merely silence)
        self.sent: dict[int, list] = {}  # id(argument) -> [argument, fingerprint, mirror id]
        self.next_mirror = 1
        # what the calls to the other side cost (benchmark.py reports it): how many, their wall time from
        # encoding the arguments to decoding the answer, and the part the other side says it spent running
        # the code called (the rest is the price of two kernels: encoding, the socket, decoding)
        self.calls, self.call_s, self.remote_s = 0, 0.0, 0.0

    def encode_argument(self, value):
        if isinstance(value, _Items):
            return {"$": "iter", "v": [self.codec.encode(x) for x in value.items]}
        return self.encode_value_argument(value)

    def encode_value_argument(self, value):
        """A large argument is sent once; while it is unchanged, later calls refer to the copy over there."""
        fp = fingerprint(value) if is_mutable(value) or isinstance(value, tuple) else None
        if fp is None:
            return self.codec.encode(value, as_argument=True)
        entry = self.sent.get(id(value))
        if entry is not None and entry[0] is value and entry[1] == fp:
            return {"$": "mirror", "id": entry[2]}
        node = {"$": "keep", "id": self.next_mirror, "v": self.codec.encode(value, as_argument=True)}
        self.sent[id(value)] = [value, fp, self.next_mirror]
        self.next_mirror += 1
        return node

    def request(self, op: str, **fields):
        began = time.monotonic()
        ran = [0.0]
        try:
            return self._request(op, ran, **fields)
        finally:
            spent = time.monotonic() - began
            self.calls += 1
            self.call_s += spent
            self.remote_s += min(max(ran[0], 0.0), spent)

    def _request(self, op: str, ran: list, **fields):
        if self.broken:
            raise RemoteError(f"the other kernel cannot be reached: {self.broken}")
        ident = self.next_id
        self.next_id += 1
        message = {"kind": "req", "id": ident, "op": op, "rng": self.randoms.outgoing()}
        own_states, answered = self.randoms.last, self.answered
        args = None
        if "args" in fields:
            args = [_Items(a) if _is_iterator(a) else a for a in fields.pop("args")]
            kwargs = {k: _Items(v) if _is_iterator(v) else v for k, v in fields.pop("kwargs").items()}
            message["args"] = [self.encode_argument(a) for a in args]
            message["kwargs"] = {str(k): self.encode_argument(v) for k, v in kwargs.items()}
            args = (args, kwargs)
        for key, value in fields.items():
            message[key] = value if key in ("target", "name", "names", "options", "register", "wrt") else self.codec.encode(value)
        if op == "optimizer":
            message["options"] = {str(k): self.codec.encode(v) for k, v in fields["options"].items()}
        own, wall = self.timeout()
        deadline = time.monotonic() + wall
        # the other side stops itself at these (owntime.py), a little before this side's deadline so that its
        # answer arrives in time
        message["seconds"], message["wall"] = own, max(0.05, wall - min(0.5, 0.1 * wall))
        token = self.hooks.request_begun() if self.hooks is not None else None
        reply = None
        try:
            self.channel.send(message, timeout=wall)
            while True:
                incoming = self.channel.recv(deadline)
                if incoming.get("kind") == "req":
                    self.channel.send(self.answer(incoming), timeout=max(0.1, deadline - time.monotonic()))
                    continue
                if incoming.get("kind") == "rep" and incoming.get("id") == ident:
                    reply = incoming
                    break
        except PeerGone as error:
            self.broken = str(error)
            raise RemoteError(f"the other kernel did not answer: {error}") from None
        except WireError as error:
            self.broken, self.broke_protocol = str(error), True
            raise RemoteError(f"the other kernel broke the protocol: {error}") from None
        except BaseException:  # interrupted while waiting (the time limit): the channel is in an unknown state
            self.broken = self.broken or "a request was interrupted while its answer was awaited"
            raise
        finally:
            if self.hooks is not None:
                self.hooks.request_ended(token, reply)
            if self.randoms.keeps_own and self.answered != answered:  # callbacks ran the test's code on the student's
                self.randoms.settle(own_states)                      # states: the test's own come back
        if not self.randoms.keeps_own:
            self.randoms.incoming(reply.get("rng"))
        if isinstance(reply.get("ran_s"), (int, float)) and math.isfinite(reply["ran_s"]):
            ran[0] = float(reply["ran_s"])
        if args is not None and isinstance(reply.get("changed"), dict):
            positional, keywords = args
            course_classes = tuple(self.codec.classes.values())
            for key, node in reply["changed"].items():
                target = positional[int(key)] if key.isdigit() and int(key) < len(positional) else keywords.get(key)
                if target is None or not (isinstance(target, _Items) or is_mutable(target)):
                    continue
                new = self.codec.decode(node)
                if not only_data(new, course_classes):  # a handle to the other side's code inside the test's own object
                    raise RemoteError(f"the other kernel's code put something that is not data into argument {key!r} "
                                      "(a function, an object of its own); an argument changed in place must hold data")
                if isinstance(target, _Items):
                    for old_item, new_item in zip(target.items, new if isinstance(new, list) else []):
                        if is_mutable(old_item):
                            write_back(old_item, new_item)
                else:
                    write_back(target, new)
                    if id(target) in self.sent:
                        self.sent[id(target)][1] = fingerprint(target)
        if reply.get("error"):
            error = reply["error"]
            name, text = str(error.get("type", "Exception")), str(error.get("message", ""))[:4000]
            rebuilt = self.errors[name](text) if name in self.errors else rebuild_exception(name, text)
            rebuilt.raised_by_peer = True  # exceptions take attributes (BaseException has a __dict__)
            raise rebuilt
        return self.codec.decode(reply.get("value"))

    def answer(self, message: dict) -> dict:
        """Answer one request of the other side (called while this side waits for its own reply)."""
        token = None
        self.answered += 1
        try:
            if self.hooks is not None:
                token = self.hooks.answer_begun(message)  # the time limit of this request (owntime.py)
            self.randoms.incoming(message.get("rng"))
            reply = self.serve(message)
        except WireError as error:
            reply = {"error": {"type": "ValueError", "message": f"the grader could not carry a value: {error}"}}
        except BaseException as error:  # noqa: BLE001 - the other side's request failed: tell it why
            if isinstance(error, (SystemExit, KeyboardInterrupt)) and not isinstance(error, KeyboardInterrupt):
                raise
            reply = {"error": {"type": type(error).__name__, "message": str(error)[:4000]}}
        if self.hooks is not None:
            reply.update(self.hooks.answer_ended(token))
        reply.update({"kind": "rep", "id": message.get("id")})
        if self.randoms.keeps_own or not self.peer_keeps_own_randomness:  # (the test kernel ignores the student's)
            reply["rng"] = self.randoms.outgoing()
        return reply
