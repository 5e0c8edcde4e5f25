"""The engine-free operator core: specs, version histories, keyed operators.  Never imports pyspark."""

from runtime.core.changelog import ChangeKind, classify_op
from runtime.core.errors import QuerySyntaxError, SpecError, TimeweaveError
from runtime.core.spec import (
    JoinType,
    StateRetention,
    TemporalJoinSpec,
    ValidityColumns,
    VersionedTableSpec,
    VersionFormat,
)
from runtime.core.state import NO_WATERMARK, InMemoryKeyContext, KeyContext
from runtime.core.temporal_join import (
    EventTimeTemporalJoin,
    Joined,
    Late,
    LeftRow,
    ProcessingTimeTemporalJoin,
)
from runtime.core.versioned import Match, VersionEvent, VersionHistory

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
