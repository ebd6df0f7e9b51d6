"""A bounded loader for pickles of plain data (flight-recorder dumps).

A pickle is a program for a stack machine; :mod:`pickle` runs it in C with no
bound but the memory of the host, builds whatever classes it names, and
hashes dictionary keys however deeply they nest (a pickle of a tuple a
million levels deep as a key crashes the interpreter). This loader runs the
same opcodes in Python and builds only plain data: ``dict``, ``list``,
``tuple``, ``set``, ``frozenset``, ``str``, ``bytes``, ``bytearray``,
``int``, ``float``, ``bool`` and ``None``. Every cost is bounded: the number
of opcodes, the nesting depth of containers, each length field against the
bytes that remain. Keys and set items must be scalars or flat tuples of
them. A container can be filled only until it is put inside another one, as
every pickler writes them, so its depth is known when it is nested.

Anything else raises :class:`RefusedError` (code: a class, a function, a
persistent id, an out-of-band buffer) or :class:`CorruptError` (malformed,
truncated, over a bound); nothing else escapes :func:`loads`.
"""

from __future__ import annotations

import struct
from typing import Any

#: Opcodes run at most (a real 2,000-entry dump with stacks runs a few hundred thousand).
MAX_OPS = 5_000_000
#: Containers nest at most this deep (a dump nests five or six).
MAX_DEPTH = 32
#: Values on the stack at once, and items in one container (torch writes each list in
#: one batch; a dump holds a few thousand entries).
MAX_ITEMS = 1_000_000

_REFUSED = {
    b"i": "an instance",
    b"o": "an instance",
    b"\x81": "an instance",
    b"\x92": "an instance",
    b"R": "a call",
    b"b": "an object state",
    b"P": "a persistent id",
    b"Q": "a persistent id",
    b"\x82": "an extension code",
    b"\x83": "an extension code",
    b"\x84": "an extension code",
    b"\x97": "an out-of-band buffer",
    b"\x98": "an out-of-band buffer",
}


class RefusedError(ValueError):
    """The pickle names something other than plain data."""


class CorruptError(ValueError):
    """The pickle is malformed, truncated, or over a bound."""


_U8 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U16 = struct.Struct("<H")
_F64 = struct.Struct(">d")
#: What a malformed pickle makes the loop below raise; each becomes :class:`CorruptError`.
_MALFORMED = (IndexError, KeyError, TypeError, ValueError, struct.error, OverflowError)


class _Loader:
    """One run of the stack machine (see the module docstring for its bounds)."""

    def __init__(self, data: bytes, max_ops: int, max_depth: int, max_items: int) -> None:
        self.data = data
        self.max_items = max_items
        self.pos = 0
        self.stack: list[Any] = []
        self.marks: list[int] = []
        self.memo: dict[int, Any] = {}
        self.max_ops = max_ops
        self.max_depth = max_depth
        #: id -> [container, depth, nested]; holding the container keeps its id its own
        self.info: dict[int, list[Any]] = {}

    # -- arguments -------------------------------------------------------------
    def take(self, n: int) -> bytes:
        """The next ``n`` bytes; a length past the end of the data is corrupt."""
        if n < 0 or n > len(self.data) - self.pos:
            raise CorruptError(f"a length of {n} bytes runs past the end of the data")
        start = self.pos
        self.pos += n
        return self.data[start : self.pos]

    def number(self, fmt: struct.Struct) -> Any:
        return fmt.unpack(self.take(fmt.size))[0]

    def line(self) -> bytes:
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise CorruptError("a text argument has no end of line")
        start, self.pos = self.pos, end + 1
        return self.data[start:end]

    def items(self) -> list[Any]:
        """The items above the last MARK, removed from the stack."""
        at = self.marks.pop()
        items = self.stack[at:]
        del self.stack[at:]
        return items

    # -- containers --------------------------------------------------------------
    def made(self, container: Any, items: list[Any]) -> Any:
        """A new container holding ``items``."""
        self.info[id(container)] = [container, 0, False]
        if items:
            self.fill(container, items)
        return container

    def fill(self, container: object, items: list[Any]) -> None:
        """``items`` went into ``container``: they are nested now, and it may be deeper."""
        have = self.info.get(id(container))
        if have is None or have[2]:
            raise CorruptError("a container was changed after it was put inside another")
        depth = have[1]
        info = self.info
        for item in items:
            if type(item) in _CONTAINER_TYPES and item is not container:
                found = info[id(item)]
                found[2] = True
                if found[1] >= depth:
                    depth = found[1] + 1
        if depth > self.max_depth:
            raise CorruptError(f"containers nested more than {self.max_depth} deep")
        have[1] = depth

    @staticmethod
    def key(value: object) -> object:
        """A dictionary key or set item: scalars and flat tuples hash in bounded time."""
        kind = type(value)
        if kind in _SCALAR_TYPES or (
            kind is tuple and all(type(v) in _SCALAR_TYPES for v in value)  # type: ignore[attr-defined]
        ):
            return value
        raise CorruptError(f"a key or set item of type {kind.__name__}")

    def set_items(self, target: object, items: list[Any]) -> None:
        if type(target) is not dict or len(items) % 2:
            raise CorruptError("SETITEMS needs a dict and pairs")
        if len(target) + len(items) // 2 > self.max_items:
            raise CorruptError(f"a dict of more than {self.max_items} items")
        keys, values = items[::2], items[1::2]
        for k in keys:
            if type(k) not in _SCALAR_TYPES:
                self.key(k)
        self.fill(target, values)
        target.update(zip(keys, values, strict=True))

    def append_items(self, target: object, items: list[Any]) -> None:
        if type(target) is not list:
            raise CorruptError(f"APPENDS on a {type(target).__name__}")
        if len(target) + len(items) > self.max_items:
            raise CorruptError(f"a list of more than {self.max_items} items")
        self.fill(target, items)
        target.extend(items)

    # -- the loop ----------------------------------------------------------------
    def run(self) -> object:
        try:
            return self._run()
        except (CorruptError, RefusedError):
            raise
        except _MALFORMED as exc:
            raise CorruptError(
                f"truncated or malformed near byte {self.pos} ({type(exc).__name__})"
            ) from None
        except (MemoryError, RecursionError) as exc:
            raise CorruptError(f"pickle too large to load ({type(exc).__name__})") from None

    def _run(self) -> object:
        data, stack, memo, marks = self.data, self.stack, self.memo, self.marks
        push = stack.append
        size = len(data)
        u32 = _U32.unpack_from
        info = self.info
        max_items = self.max_items
        for _ in range(self.max_ops):
            if len(stack) > max_items:
                raise CorruptError(f"more than {max_items} values on the stack")
            pos = self.pos
            code = data[pos]  # IndexError (corrupt) past the end
            # the opcodes of real dumps first, inlined: arguments read here need no bounds
            # check beyond the slice's own (a short slice is caught by the length test)
            if code == 0x71:  # BINPUT
                memo[data[pos + 1]] = stack[-1]
                self.pos = pos + 2
                continue
            if code == 0x58:  # BINUNICODE
                n = u32(data, pos + 1)[0]
                end = pos + 5 + n
                if end > size:
                    raise CorruptError(f"a length of {n} bytes runs past the end of the data")
                push(data[pos + 5 : end].decode("utf-8", "surrogatepass"))
                self.pos = end
                continue
            if code == 0x68:  # BINGET
                push(memo[data[pos + 1]])
                self.pos = pos + 2
                continue
            if code == 0x8C:  # SHORT_BINUNICODE
                end = pos + 2 + data[pos + 1]
                if end > size:
                    raise CorruptError("a SHORT_BINUNICODE runs past the end of the data")
                push(data[pos + 2 : end].decode("utf-8", "surrogatepass"))
                self.pos = end
                continue
            if code == 0x28:  # MARK
                marks.append(len(stack))
                self.pos = pos + 1
                continue
            if code == 0x72:  # LONG_BINPUT
                memo[u32(data, pos + 1)[0]] = stack[-1]
                self.pos = pos + 5
                continue
            if code == 0x4B:  # BININT1
                push(data[pos + 1])
                self.pos = pos + 2
                continue
            if code in (0x7D, 0x5D):  # EMPTY_DICT, EMPTY_LIST
                new: Any = {} if code == 0x7D else []
                info[id(new)] = [new, 0, False]
                push(new)
                self.pos = pos + 1
                continue
            self.pos = pos + 1
            if code == 0x94:  # MEMOIZE
                memo[len(memo)] = stack[-1]
            elif code == 0x75:  # SETITEMS
                items = self.items()
                self.set_items(stack[-1], items)
            elif code == 0x65:  # APPENDS
                items = self.items()
                self.append_items(stack[-1], items)
            elif code == 0x4A:  # BININT
                push(self.number(_I32))
            elif code == 0x4D:  # BININT2
                push(self.number(_U16))
            elif code == 0x4E:  # NONE
                push(None)
            elif code in (0x88, 0x89):  # NEWTRUE, NEWFALSE
                push(code == 0x88)
            elif code == 0x47:  # BINFLOAT
                push(self.number(_F64))
            elif code == 0x8A:  # LONG1
                push(int.from_bytes(self.take(self.take(1)[0]), "little", signed=True))
            elif code == 0x8B:  # LONG4
                push(int.from_bytes(self.take(self.number(_I32)), "little", signed=True))
            elif code == 0x6A:  # LONG_BINGET
                push(memo[self.number(_U32)])
            elif code == 0x73:  # SETITEM
                value = stack.pop()
                key = stack.pop()
                self.set_items(stack[-1], [key, value])
            elif code == 0x61:  # APPEND
                value = stack.pop()
                self.append_items(stack[-1], [value])
            elif code == 0x29:  # EMPTY_TUPLE
                push(self.made((), []))
            elif code in (0x85, 0x86, 0x87):  # TUPLE1, TUPLE2, TUPLE3
                n = code - 0x84
                if n > len(stack) - (marks[-1] if marks else 0):
                    raise CorruptError("TUPLE of more items than the stack holds")
                items = stack[-n:]
                del stack[-n:]
                push(self.made(tuple(items), items))
            elif code == 0x74:  # TUPLE
                items = self.items()
                push(self.made(tuple(items), items))
            elif code == 0x6C:  # LIST
                items = self.items()
                push(self.made(list(items), items))
            elif code == 0x64:  # DICT
                items = self.items()
                target = self.made({}, [])
                self.set_items(target, items)
                push(target)
            elif code == 0x8F:  # EMPTY_SET
                push(self.made(set(), []))
            elif code == 0x90:  # ADDITEMS
                if not marks or marks[-1] < 1:
                    raise CorruptError("ADDITEMS without a set below its MARK")
                target = stack[marks[-1] - 1]
                items = self.items()
                if type(target) is not set or len(target) + len(items) > self.max_items:
                    raise CorruptError("ADDITEMS needs a set, of at most MAX_ITEMS items")
                target.update(self.key(i) for i in items)
            elif code == 0x91:  # FROZENSET
                push(self.made(frozenset(self.key(i) for i in self.items()), []))
            elif code == 0x43:  # SHORT_BINBYTES
                push(self.take(self.take(1)[0]))
            elif code == 0x42:  # BINBYTES
                push(self.take(self.number(_U32)))
            elif code == 0x8E:  # BINBYTES8
                push(self.take(self.number(_U8)))
            elif code == 0x96:  # BYTEARRAY8
                push(bytearray(self.take(self.number(_U8))))
            elif code == 0x8D:  # BINUNICODE8
                push(_text(self.take(self.number(_U8))))
            elif code == 0x54:  # BINSTRING
                push(self.take(self.number(_I32)).decode("latin-1"))
            elif code == 0x55:  # SHORT_BINSTRING
                push(self.take(self.take(1)[0]).decode("latin-1"))
            elif code == 0x56:  # UNICODE
                push(self.line().decode("raw_unicode_escape"))
            elif code == 0x53:  # STRING
                text = self.line()
                if len(text) < 2 or text[0] != text[-1] or text[0] not in b"'\"":
                    raise CorruptError("bad STRING argument")
                push(text[1:-1].decode("unicode_escape"))
            elif code == 0x49:  # INT (and protocol 0's True / False)
                text = self.line()
                push(text == b"01" if text in (b"00", b"01") else _int(text))
            elif code == 0x4C:  # LONG
                push(_int(self.line().rstrip(b"L")))
            elif code == 0x46:  # FLOAT
                push(float(self.line()))
            elif code == 0x67:  # GET
                push(memo[_int(self.line())])
            elif code == 0x70:  # PUT
                memo[_int(self.line())] = stack[-1]
            elif code == 0x30:  # POP
                if marks and marks[-1] == len(stack):
                    marks.pop()
                else:
                    stack.pop()
            elif code == 0x31:  # POP_MARK
                self.items()
            elif code == 0x32:  # DUP
                push(stack[-1])
            elif code == 0x80:  # PROTO
                self.take(1)
            elif code == 0x95:  # FRAME
                self.take(8)
            elif code == 0x2E:  # STOP
                if len(stack) != 1 or marks:
                    raise CorruptError("STOP with an unbalanced stack")
                return stack[0]
            elif code == 0x63:  # GLOBAL
                module, name = self.line(), self.line()
                raise RefusedError(f"refused global {_shown(module)}.{_shown(name)}")
            elif code == 0x93:  # STACK_GLOBAL
                name, module = stack[-1], stack[-2]
                raise RefusedError(f"refused global {_shown(module)}.{_shown(name)}")
            else:
                why = _REFUSED.get(bytes([code]))
                if why is not None:
                    raise RefusedError(f"refused {why}")
                raise CorruptError(f"unknown opcode 0x{code:02x} at byte {self.pos - 1}")
        raise CorruptError(f"more than {self.max_ops} opcodes")


_SCALAR_TYPES = frozenset({str, bytes, int, float, bool, type(None)})
_CONTAINER_TYPES = frozenset({dict, list, tuple, set, frozenset})


def _shown(value: object) -> str:
    """A name from the pickle, short and printable, for a note."""
    if isinstance(value, bytes):
        text = value[:80].decode("latin-1")
    else:
        text = value[:80] if isinstance(value, str) else "?"  # never str() of a structure
    return "".join(c if c.isprintable() else "?" for c in text[:80])


def _int(text: bytes) -> int:
    """A decimal integer argument (at most 4,300 digits, Python's own bound)."""
    try:
        return int(text)
    except ValueError as exc:
        raise CorruptError(f"bad integer: {exc}") from None


def _text(data: bytes) -> str:
    """UTF-8 text as pickle writes it (lone surrogates included)."""
    return data.decode("utf-8", "surrogatepass")


def loads(
    data: bytes, *, max_ops: int = MAX_OPS, max_depth: int = MAX_DEPTH, max_items: int = MAX_ITEMS
) -> object:
    """The plain data ``data`` pickles; :class:`RefusedError` or :class:`CorruptError` otherwise."""
    return _Loader(data, max_ops, max_depth, max_items).run()
