"""Updating results (engine-free): continuous queries whose result rows change, and their changelogs (seed 003).

A continuous query over a stream produces a *dynamic table*; its result at any moment equals the batch query over
the input seen so far.  When a later row changes a row already emitted, the output carries the change in a
changelog encoding.  The modules, bottom up:

==========================  ===========================================================================
``modes.py``                :class:`ChangelogMode` append / retract / upsert, parsed from text; which outputs
                            each can carry (append refuses updates, upsert needs a unique key)
``encoder.py``              :class:`ChangelogEncoder`: the one place "the result for key K was X, is now Y (or
                            gone)" becomes ``+I`` / ``-U`` / ``+U`` / ``-D`` rows (:class:`Change`), keeping the
                            emitted result as keyed state (by slot: one per key, or one per window)
``group_aggregate.py``      :class:`GroupAggregateOperator`: a continuous ``GROUP BY`` without a window on the
                            keyed-operator contract, over append-only or updating input, with idle-state
                            retention
``group_sql.py``            :func:`~timeweave.core.updates.group_sql.parse_group_aggregate_query`: the GROUP BY's
                            SQL form (``SELECT keys, aggregates FROM t [WHERE ...] GROUP BY keys``) read into
                            its keys and aggregate texts, anything else a positioned ``QuerySyntaxError``
``materialize.py``          :class:`MaterializedTable`: the reference rule for applying a changelog to a table
                            (upsert by key, retract as a multiset, idempotent per micro-batch id)
==========================  ===========================================================================

Retracting accumulators (``SUM``, ``MIN``, ``MAX``, ``COUNT(DISTINCT)`` that take values back) live with the
other accumulators, :mod:`timeweave.core.windows.accumulators`; the op codes of an updating input in
:mod:`timeweave.core.changelog` (:func:`~timeweave.core.changelog.direction_of`).

>>> from timeweave.core.operator import Tag, run_keyed
>>> from timeweave.core.windows.accumulators import AggregateCall, Count
>>> op = GroupAggregateOperator(GroupAggregateSpec(("user",), (AggregateCall(Count(), "url", name="cnt"),),
...                                                changelog="upsert", per_row=True))
>>> clicks = [{"user": "Mary", "url": "./home"}, {"user": "Bob", "url": "./cart"},
...           {"user": "Mary", "url": "./prod?id=1"}, {"user": "Liz", "url": "./home"}]
>>> changes = run_keyed(op, [(row["user"], row) for row in clicks], [])[Tag.CHANGELOG]
>>> [str(c) for c in changes]
["+I ('Mary',) (1,)", "+U ('Mary',) (2,)", "+I ('Bob',) (1,)", "+I ('Liz',) (1,)"]
>>> table = MaterializedTable("upsert", key_names=("user",), value_names=("cnt",))
>>> table.apply(changes), table.rows()
(4, [{'user': 'Bob', 'cnt': 1}, {'user': 'Liz', 'cnt': 1}, {'user': 'Mary', 'cnt': 2}])
"""

from timeweave.core.updates.encoder import EMITTED, Change, ChangelogEncoder, same_result
from timeweave.core.updates.group_aggregate import GroupAggregateOperator, GroupAggregateSpec, Rejected
from timeweave.core.updates.materialize import MaterializedTable
from timeweave.core.updates.modes import ChangelogMode

__all__ = [
    "EMITTED",
    "Change",
    "ChangelogEncoder",
    "ChangelogMode",
    "GroupAggregateOperator",
    "GroupAggregateSpec",
    "MaterializedTable",
    "Rejected",
    "same_result",
]
