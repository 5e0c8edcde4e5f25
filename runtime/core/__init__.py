"""The engine-free operator core: specs, version histories, keyed operators.  Never imports pyspark."""

from timeweave.core.changelog import ChangeKind, classify_op
from timeweave.core.errors import QuerySyntaxError, SpecError, TimeweaveError
from timeweave.core.spec import (
    JoinType,
    StateRetention,
    TemporalJoinSpec,
    ValidityColumns,
    VersionedTableSpec,
    VersionFormat,
)
from timeweave.core.state import NO_WATERMARK, InMemoryKeyContext, KeyContext
from timeweave.core.temporal_join import (
    EventTimeTemporalJoin,
    Joined,
    Late,
    LeftRow,
    ProcessingTimeTemporalJoin,
)
from timeweave.core.versioned import Match, VersionEvent, VersionHistory

__all__ = [
    "NO_WATERMARK",
    "ChangeKind",
    "EventTimeTemporalJoin",
    "InMemoryKeyContext",
    "JoinType",
    "Joined",
    "KeyContext",
    "Late",
    "LeftRow",
    "Match",
    "ProcessingTimeTemporalJoin",
    "QuerySyntaxError",
    "SpecError",
    "StateRetention",
    "TemporalJoinSpec",
    "TimeweaveError",
    "ValidityColumns",
    "VersionEvent",
    "VersionFormat",
    "VersionHistory",
    "VersionedTableSpec",
    "classify_op",
]
