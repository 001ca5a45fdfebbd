"""pipeline.py: redis-py pipelines that apply the split fix (HotkeyClient.pipeline()).

A split key's value is spread over S parts, so a pipeline that sent its commands unchanged
would read and write part 0 alone: a GET would return a fraction of the total, with no
error. make_split_aware() turns a redis-py pipeline (redis.client.Pipeline or
redis.cluster.ClusterPipeline) into one of a subclass that, for a key in a split mode:

  GET                       queues a GET of every part; execute() returns their sum
  INCR, INCRBY, DECR,       go to one part chosen at random when execute() runs (the part
  DECRBY, INCRBYFLOAT       is claimed as a write in flight, so a fold waits for it)
  DEL, UNLINK               delete the key and its sub-keys; the name counts once
  anything else, WATCH      raises SplitKeyError when queued

Commands on other keys are queued unchanged; after execute() the cached copies of every key
the pipeline touched are dropped (the kit does not know which commands wrote). A command's
first argument is taken as its key, as redis-py's commands that touch one key are written;
a keyless command whose first argument happens to be a split key's name is refused too.

Commands are held in the kit's list and handed to redis-py's pipeline by execute(), so the
part a counter write takes is chosen when it is sent, never before a fold that would miss
it. Not thread-safe, as a redis-py pipeline is not.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import redis

from .client import SPLIT_COUNTERS, HotkeyClient, SplitKeyError, _sum_values
from .feed import SPLIT_MODES, Entry



def _name(arg: Any) -> bytes:
    return arg.upper() if isinstance(arg, bytes) else str(arg).upper().encode()


class _Command:
    """One command as the caller queued it, and what execute() turns it into."""

    __slots__ = ("args", "options", "entry", "key")

    def __init__(self, args: Tuple[Any, ...], options: Dict[str, Any], entry: Optional[Entry],
                 key: Optional[bytes]):
        self.args = args
        self.options = options
        self.entry = entry      # the split entry the command's key is in, or None
        self.key = key


class SplitAwarePipeline:
    """The mixin make_split_aware() puts in front of the pipeline's own class."""

    _hk_kit: HotkeyClient
    _hk_cmds: List[_Command]

    def _hk_key(self, args: Tuple[Any, ...]) -> Tuple[Optional[bytes], Optional[Entry]]:
        if len(args) < 2:
            return None, None
        try:
            k, e, _ = self._hk_kit._lookup(args[1])
        except redis.exceptions.DataError:
            return None, None
        if e is not None and e.mode in SPLIT_MODES:
            return k, e
        return k, None

    def pipeline_execute_command(self, *args: Any, **options: Any) -> Any:
        k, e = self._hk_key(args)
        cmd = _name(args[0])
        if e is not None:
            if not (cmd in (b"DEL", b"UNLINK", b"GET")
                    or (cmd in SPLIT_COUNTERS and len(args) <= 3)):
                raise SplitKeyError(f"{cmd.decode()} of split key {k!r} in a pipeline: the "
                                    "kit applies GET, the counters, DEL and UNLINK only")
        self._hk_cmds.append(_Command(args, options, e, k))
        return self

    def immediate_execute_command(self, *args: Any, **options: Any) -> Any:
        # Between WATCH and MULTI commands run at once, on the watched connection.
        self._hk_refuse_watched(args)
        return super().immediate_execute_command(*args, **options)  # type: ignore[misc]

    def _hk_refuse_watched(self, args: Tuple[Any, ...]) -> None:
        names = args[1:] if _name(args[0]) == b"WATCH" else args[1:2]
        for n in names:
            k, e = self._hk_key((args[0], n))
            if e is not None:
                raise SplitKeyError(f"{_name(args[0]).decode()} of split key {k!r}: its "
                                    "value is spread over parts a WATCH cannot cover")

    def multi(self) -> None:
        if self._hk_cmds:
            raise redis.exceptions.RedisError(
                "Commands without an initial WATCH have already been issued")
        super().multi()  # type: ignore[misc]

    def __len__(self) -> int:
        return len(self._hk_cmds) + super().__len__()  # type: ignore[misc,no-any-return]

    def reset(self) -> None:
        self._hk_cmds = []
        super().reset()  # type: ignore[misc]

    def _hk_plan(self, c: _Command, claims: List[Tuple[Entry, bytes, int]]
                 ) -> Tuple[List[Tuple[Tuple[Any, ...], Dict[str, Any]]], Callable[[List[Any]], Any]]:
        """The commands to send for `c` and how their replies make its reply."""
        kit = self._hk_kit
        cmd = _name(c.args[0])
        if cmd in (b"DEL", b"UNLINK"):
            sends: List[Tuple[Tuple[Any, ...], Dict[str, Any]]] = []
            plain = []
            splits = 0
            for n in c.args[1:]:
                k, e = self._hk_key((c.args[0], n))
                if e is not None:
                    sends.append(((c.args[0], k, *e.sub_keys), c.options))
                    splits += 1
                else:
                    plain.append(n)
            if not splits:
                return [(c.args, c.options)], lambda r: r[0]
            if plain:
                sends.append(((c.args[0], *plain), c.options))
            kit._count("pipeline_split_commands")

            def combine(r: List[Any]) -> Any:
                for v in r:
                    if isinstance(v, BaseException):
                        return v
                return sum(1 if v else 0 for v in r[:splits]) + sum(r[splits:])
            return sends, combine
        e, k = c.entry, c.key
        if e is None or k is None:
            return [(c.args, c.options)], lambda r: r[0]
        kit._count("pipeline_split_commands")
        if cmd == b"GET":
            names = kit._split_parts_read(k, e)
            return [(("GET", n), c.options) for n in names], _sum_values
        live = kit._feed.state.live(e, kit._clock()) and kit._feed.state.find(k) is e
        index = kit._choose_part(e) if live else None
        if index is None:
            return [(c.args, c.options)], lambda r: r[0]
        claims.append((e, k, index))
        # INCR and DECR of a part are INCRBY/DECRBY 1 there: same reply, one spelling.
        args = (c.args[0], e.parts[index], *c.args[2:])
        return [(args, c.options)], lambda r: r[0]

    def _hk_stage(self, base: Any) -> Tuple[List[Tuple[int, Callable[[List[Any]], Any]]],
                                            List[Tuple[Entry, bytes, int]], Set[bytes]]:
        """Hands the held commands to redis-py's pipeline (`base`); returns how to combine
        the replies, the split writes claimed (release them after execute) and the keys
        touched. On an error, what was claimed is released here."""
        cmds, self._hk_cmds = self._hk_cmds, []
        claims: List[Tuple[Entry, bytes, int]] = []
        plans: List[Tuple[int, Callable[[List[Any]], Any]]] = []
        touched: Set[bytes] = set()
        try:
            for c in cmds:
                if c.key is not None:
                    touched.add(c.key)
                sends, combine = self._hk_plan(c, claims)
                for args, options in sends:
                    base.pipeline_execute_command(*args, **options)
                plans.append((len(sends), combine))
        except BaseException:
            self._hk_done(claims, touched)
            raise
        return plans, claims, touched

    def _hk_done(self, claims: List[Tuple[Entry, bytes, int]], touched: Set[bytes]) -> None:
        for e, k, index in claims:
            self._hk_kit._release_part(e, k, index)
        for k in touched:
            self._hk_kit._invalidate(k)

    @staticmethod
    def _hk_combine(plans: List[Tuple[int, Callable[[List[Any]], Any]]],
                    replies: List[Any]) -> List[Any]:
        out, i = [], 0
        for n, combine in plans:
            out.append(combine(replies[i:i + n]))
            i += n
        return out

    def execute(self, raise_on_error: bool = True) -> List[Any]:
        base: Any = super()
        plans, claims, touched = self._hk_stage(base)
        try:
            replies = base.execute(raise_on_error)
        finally:
            self._hk_done(claims, touched)
        return self._hk_combine(plans, replies)


@functools.lru_cache(maxsize=None)
def _split_aware_class(mixin: Any, cls: Any) -> type:
    """One subclass per pipeline class, made once."""
    return type("HotkeyPipeline" + cls.__name__, (mixin, cls), {})


def make_split_aware(pipe: Any, kit: HotkeyClient, mixin: Any = SplitAwarePipeline) -> Any:
    """`pipe`, now an instance of a subclass of its class with `mixin` in front."""
    cls: Any = type(pipe)
    pipe.__class__ = _split_aware_class(mixin, cls)
    pipe._hk_kit = kit
    pipe._hk_cmds = []
    return pipe


__all__: Sequence[str] = ("SplitAwarePipeline", "make_split_aware")
