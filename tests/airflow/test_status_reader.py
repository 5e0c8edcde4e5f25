"""Reading a job's status file where the worker / triggerer sees it: a path, or a URI through ObjectStoragePath."""

from __future__ import annotations

import json

import pytest

from timeweave.airflow.utils.metrics_file import clear_status, dataset_uri, read_status


def test_a_uri_is_read_through_object_storage():
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/tw-runs/job.json", json.dumps({"state": "running", "metrics": {"batches": 2}}).encode())
    assert read_status("memory://tw-runs/job.json")["metrics"] == {"batches": 2}
    assert clear_status("memory://tw-runs/job.json") is True
    assert read_status("memory://tw-runs/job.json") is None


def test_a_file_that_is_not_a_status_is_an_error(tmp_path):
    target = tmp_path / "job.json"
    target.write_text("[1, 2]")
    with pytest.raises(ValueError, match="no timeweave status"):
        read_status(str(target))
    target.write_text("{oops")
    with pytest.raises(ValueError, match="is not JSON"):
        read_status(str(target))


@pytest.mark.parametrize(
    ("path", "expected"),
    [("s3a://lake/a/b/", ("s3://lake", "a/b")), ("gs://b/k", ("gs://b", "k")), ("hdfs://nn:8020/x", ("hdfs://nn:8020", "/x")),
     ("file:///data/out", ("file", "/data/out"))],
)
def test_dataset_names_follow_openlineage_conventions(path, expected):
    assert dataset_uri(path) == expected
