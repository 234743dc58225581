"""The inventory as a value: what a fleet owns and the values it last applied (pure).

Keys name objects: `install/root`, `bot/<name>`, `routine/<bot>/<title>`, `room/<name>`. The
last-applied values make plans three-way (desired / live / last applied), which is how drift is
told apart from a change in the manifests. Secret values are kept only as keyed hashes. Reading
and writing the file is `controller.adapters.inventory`; this module never touches the disk.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

SCHEMA_VERSION = 1
INSTALL_KEY = "install/root"
HISTORY_KEPT = 10


def bot_key(name: str) -> str:
    return f"bot/{name}"


def routine_key(bot: str, title: str) -> str:
    return f"routine/{bot}/{title}"


def room_key(name: str) -> str:
    return f"room/{name}"


def object_key(kind: str, name: str) -> str:
    """The inventory key of a plan object (`install` has one key whatever its name)."""
    return INSTALL_KEY if kind == "install" else f"{kind}/{name}"


def split_key(key: str) -> tuple[str, str]:
    """(kind, name) of an inventory key; a routine's name is `<bot>/<title>`."""
    kind, _, name = key.partition("/")
    return kind, name


def routine_name(bot: str, title: str) -> str:
    """A routine's plan name: `<bot>/<title>`."""
    return f"{bot}/{title}"


def routine_parts(name: str) -> tuple[str, str]:
    """(bot, title) of a routine's plan name (a title may itself contain `/`)."""
    bot, _, title = name.partition("/")
    return bot, title


class FrozenDict(dict[str, Any]):
    """A dict that refuses every change. The inventory a plan reads is made of these: json, `==`
    and `{**d}` see a plain dict, and a write raises TypeError (what a run does to the records goes
    to the engine's ledger, engine/ledger.py)."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("the inventory a plan reads is immutable; apply records into the engine's Ledger")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, Any]]]:
        return FrozenDict, (dict(self),)

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self


class FrozenList(list[Any]):
    """A list that refuses every change (a list value inside a frozen record); `==` a plain list."""

    __slots__ = ()

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("the inventory a plan reads is immutable; apply records into the engine's Ledger")

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __iadd__ = __imul__ = _refuse

    def __reduce__(self) -> tuple[type[FrozenList], tuple[list[Any]]]:
        return FrozenList, (list(self),)

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return self


def frozen(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """`value` with every dict and list in it (at any depth) frozen; one frozen copy per shared
    list or dict (the inventory file's reader shares equal `applied` lists: memory)."""
    if isinstance(value, (FrozenDict, FrozenList)) or not isinstance(value, (dict, list)):
        return value
    memo = {} if memo is None else memo
    found = memo.get(id(value))
    if found is None:
        if isinstance(value, dict):
            found = FrozenDict({k: frozen(v, memo) for k, v in value.items()})
        else:
            found = FrozenList([frozen(v, memo) for v in value])
        memo[id(value)] = found
    return found


def frozen_records(objects: Mapping[str, Mapping[str, Any]]) -> FrozenDict:
    """The records of an inventory, frozen: the map, each record, and each map in a record (its
    `applied` one level deep: the JSON values in it (toolset lists, config values) are shared by
    many records and replaced whole, never changed in place; freezing them too would cost a pass
    over every value, about 1 s at 10,000 bots)."""
    if isinstance(objects, FrozenDict):
        return objects
    return FrozenDict({key: _frozen_record(entry) for key, entry in objects.items()})


def _frozen_record(entry: Mapping[str, Any]) -> FrozenDict:
    if isinstance(entry, FrozenDict):
        return entry
    fields = {k: frozen(v) for k, v in entry.items() if k != "applied" and isinstance(v, (dict, list))}
    applied = entry.get("applied")
    if isinstance(applied, dict):
        fields["applied"] = applied if isinstance(applied, FrozenDict) else FrozenDict(applied)
    return FrozenDict(entry, **fields)


def renamed_records(objects: Mapping[str, Any], old: str, new: str) -> tuple[dict[str, Any], list[str]]:
    """`objects` with a bot's records (its own and its routines') moved from `old` to `new`, and
    the moved keys. A record already under the new name wins (a rename never overwrites what the
    fleet made)."""
    out = dict(objects)
    moved = []
    prefix = f"routine/{old}/"
    for key in [k for k in out if k == bot_key(old) or k.startswith(prefix)]:
        entry = out.pop(key)
        target = bot_key(new) if key == bot_key(old) else routine_key(new, key[len(prefix) :])
        if target not in out:
            out[target] = {**entry, "renamed_from": old} if target == bot_key(new) else entry
            moved.append(target)
    return out, moved


def reclaimed_records(
    objects: Mapping[str, Any], restored: Mapping[str, Mapping[str, Any]], bots: Iterable[str]
) -> tuple[dict[str, Any], dict[str, Mapping[str, Any]], list[str]]:
    """(objects, restored, keys given back): the records of restored bots that are in the manifests
    again go back to `objects`. A record the fleet made meanwhile wins."""
    out, kept, keys = dict(objects), dict(restored), []
    for bot in sorted(set(bots) & set(kept)):
        for key, entry in kept.pop(bot).items():
            if key not in out:
                out[key] = entry
                keys.append(key)
    return out, kept, keys


def document(
    fleet: str,
    salt: str,
    objects: Mapping[str, Any],
    last_apply: Mapping[str, Any] | None,
    history: Sequence[Mapping[str, Any]],
    restored: Mapping[str, Any],
    host: str | None,
) -> dict[str, Any]:
    """The inventory file's document (adapters/inventory.py writes it)."""
    return {
        "schemaVersion": SCHEMA_VERSION,
        "fleet": fleet,
        "salt": salt,
        "last_apply": last_apply,
        "history": list(history[-HISTORY_KEPT:]),
        "objects": objects,
        **({"restored": restored} if restored else {}),
        **({"host": host} if host else {}),
    }


EMPTY = FrozenDict()


@dataclass(frozen=True)
class Inventory:
    """What a fleet owns and last applied, as the planner reads it: immutable at every depth.

    `salt` keys the secret hashes; a new inventory's comes from the engine (records.new_salt),
    never from here (core makes no random values)."""

    fleet: str
    salt: str
    objects: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=FrozenDict)
    last_apply: Mapping[str, Any] | None = None
    history: tuple[Mapping[str, Any], ...] = ()
    exists: bool = False
    # Records of restored bots (bot -> {key: entry}), kept aside until the bot is back in the
    # manifests: until then it is left alone (a `--prune` run does not prune it again), then its
    # own and its routines' ownership come back with it (`reclaimed`).
    restored: Mapping[str, Mapping[str, Mapping[str, Any]]] = dataclasses.field(default_factory=FrozenDict)
    # The machine this home was last converged as (`--host`; None: the whole fleet, or never
    # recorded). A plan for another slice is refused until `--rehost` (engine/reconciling.py).
    host: str | None = None

    def __post_init__(self) -> None:
        memo: dict[int, Any] = {}
        object.__setattr__(self, "objects", frozen_records(self.objects))
        object.__setattr__(self, "last_apply", frozen(self.last_apply, memo))
        object.__setattr__(self, "history", tuple(frozen(h, memo) for h in self.history))
        object.__setattr__(self, "restored", frozen(self.restored, memo))

    def owns(self, key: str) -> bool:
        return key in self.objects

    def applied(self, key: str) -> Mapping[str, Any]:
        applied: Mapping[str, Any] = self.objects.get(key, EMPTY).get("applied", EMPTY)
        return applied

    def secret_hash(self, value: str) -> str:
        """A keyed hash: detects a changed secret without storing it."""
        return "hmac:" + hmac.new(self.salt.encode(), value.encode(), hashlib.sha256).hexdigest()[:32]

    def owned_bots(self) -> list[str]:
        return list(self._owned)

    @functools.cached_property
    def _owned(self) -> tuple[str, ...]:
        return tuple(split_key(k)[1] for k in self._by_kind.get("bot", ()))

    def keys_of(self, kind: str) -> list[str]:
        return list(self._by_kind.get(kind, ()))

    @functools.cached_property
    def _by_kind(self) -> dict[str, tuple[str, ...]]:
        """The object keys of each kind, sorted (once: the inventory is immutable, and a watch
        loop asks a kept one every pass)."""
        kinds: dict[str, list[str]] = {}
        for key in sorted(self.objects):
            kinds.setdefault(split_key(key)[0], []).append(key)
        return {kind: tuple(keys) for kind, keys in kinds.items()}

    def reclaimed(self, bots: Iterable[str]) -> Inventory:
        """This inventory with the records of restored bots that are in the manifests again given back."""
        objects, restored, keys = reclaimed_records(self.objects, self.restored, bots)
        return dataclasses.replace(self, objects=objects, restored=restored) if keys or restored != self.restored else self

    def renamed(self, old: str, new: str) -> Inventory:
        """This inventory with a bot's records moved from `old` to `new` (`renamed_records`)."""
        objects, moved = renamed_records(self.objects, old, new)
        return dataclasses.replace(self, objects=objects) if moved or len(objects) != len(self.objects) else self

    def to_json(self) -> dict[str, Any]:
        return document(self.fleet, self.salt, self.objects, self.last_apply, self.history, self.restored, self.host)

    @classmethod
    def from_json(cls, fleet: str, data: dict[str, Any], *, salt: str) -> Inventory:
        """The inventory of a document; `salt` is used when the document has none (a new one, from the engine)."""
        return cls(
            fleet=fleet,
            salt=str(data.get("salt") or salt),
            objects=data["objects"],
            last_apply=data.get("last_apply"),
            history=tuple(data.get("history") or ()),
            exists=True,
            restored=restored if isinstance(restored := data.get("restored"), dict) else {},
            host=host if isinstance(host := data.get("host"), str) and host else None,
        )
