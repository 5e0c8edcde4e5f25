"""VersionHistory: validity, deletes, ties, expiry."""

from __future__ import annotations

import random

from timeweave.core.versioned import VersionEvent, VersionHistory


def ev(time: int, seq: int, payload: str | None = None, deleted: bool = False) -> VersionEvent:
    return VersionEvent(time, seq, deleted, payload)


def test_version_valid_from_inclusive_to_next_exclusive() -> None:
    h = VersionHistory.of([ev(10, 0, "a"), ev(20, 1, "b")])
    assert h.version_at(9) is None
    assert h.version_at(10).event.payload == "a"
    assert h.version_at(19).event.payload == "a"
    assert h.version_at(19).valid_to == 20
    assert h.version_at(20).event.payload == "b"
    assert h.version_at(20).valid_to is None


def test_delete_ends_validity_and_reinsert_starts_new_version() -> None:
    h = VersionHistory.of([ev(10, 0, "a"), ev(20, 1, deleted=True), ev(30, 2, "c")])
    assert h.version_at(15).valid_to == 20
    assert h.version_at(20) is None and h.version_at(29) is None
    assert h.version_at(30).event.payload == "c"


def test_ties_last_in_input_order_wins_whatever_the_arrival_order() -> None:
    forward = VersionHistory.of([ev(10, 0, "first"), ev(10, 1, "second")])
    backward = VersionHistory.of([ev(10, 1, "second"), ev(10, 0, "first")])
    assert forward.version_at(10).event.payload == "second"
    assert backward.version_at(10).event.payload == "second"


def test_update_before_after_pair_at_same_time_keeps_the_after_image() -> None:
    # Flink changelog: -U then +U at one time; -U counts as a delete, the later +U wins the tie.
    h = VersionHistory.of([ev(10, 0, "old"), ev(20, 1, deleted=True), ev(20, 2, "new")])
    assert h.version_at(20).event.payload == "new"


def test_expiry_keeps_the_version_in_force_at_the_watermark() -> None:
    h = VersionHistory.of([ev(10, 0, "a"), ev(20, 1, "b"), ev(30, 2, "c"), ev(40, 3, "d")])
    assert h.expire_before(35) == 2
    assert [e.payload for e in h.events] == ["c", "d"]
    assert h.version_at(35).event.payload == "c"
    assert h.expire_before(35) == 0


def test_versions_at_equals_version_at_for_every_ascending_time() -> None:
    # The emission path asks for many time-ordered rows at once; it must give exactly version_at's answers
    # (deleted spans, equal times, before the first version, after the last), sharing one Match per version.
    rng = random.Random(7)
    for _ in range(200):
        history = VersionHistory.of([
            VersionEvent(rng.randrange(0, 40), seq, rng.random() < 0.3, f"p{seq}") for seq in range(rng.randrange(0, 8))
        ])
        times = sorted(rng.randrange(-5, 50) for _ in range(rng.randrange(0, 20)))
        assert history.versions_at(times) == [history.version_at(t) for t in times]
