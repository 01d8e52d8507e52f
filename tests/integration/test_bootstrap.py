"""`infra.resources.bootstrap` against moto's server over real HTTP: what a first run asks for
(no table asked again once CreateTable said it is ACTIVE, no queue looked up before it is
created), and that running it again - with another case timeout - leaves everything there and
sets the queue's new visibility timeout.
"""

from __future__ import annotations

import json

import pytest

from assay_local.motoserver import MotoHandle
from chalicelib import names
from infra.resources import bootstrap, case_tasks_visibility_seconds
from tests.integration.conftest import REGION

pytestmark = pytest.mark.usefixtures("models_put_back")

PREFIX = "boot-"


@pytest.fixture(autouse=True)
def _moto_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)


def test_a_first_bootstrap_creates_each_resource_once_and_asks_nothing_again(
    moto: MotoHandle, aws_client
) -> None:
    from chalicelib.adapters import tables

    urls = bootstrap(moto.url, REGION, PREFIX, 120)

    made = moto.requests()
    assert made["dynamodb.CreateTable"] == len(tables.ALL_MODELS)
    assert "dynamodb.DescribeTable" not in made  # moto answers CreateTable with ACTIVE
    assert made["sqs.CreateQueue"] == len(urls) == 4
    assert "sqs.GetQueueUrl" not in made and "sqs.SetQueueAttributes" not in made
    assert made["dynamodb.UpdateTimeToLive"] == sum(
        1 for model in tables.ALL_MODELS if tables.ttl_attribute(model)
    )
    assert sorted(aws_client("dynamodb").list_tables()["TableNames"]) == sorted(
        tables.table_name(model) for model in tables.ALL_MODELS
    )
    stack = names.StackNames(PREFIX, "")
    aws_client("s3").head_bucket(Bucket=stack.results_bucket)
    sqs = aws_client("sqs")
    attributes = sqs.get_queue_attributes(
        QueueUrl=urls[stack.case_tasks_queue], AttributeNames=["All"]
    )["Attributes"]
    assert int(attributes["VisibilityTimeout"]) == case_tasks_visibility_seconds(120)
    redrive = json.loads(attributes["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"].endswith(f":{stack.case_tasks_dlq}")


def test_bootstrap_again_keeps_everything_and_sets_a_queue_s_new_attributes(
    moto: MotoHandle, aws_client
) -> None:
    first = bootstrap(moto.url, REGION, PREFIX, 120)
    stack = names.StackNames(PREFIX, "")
    sqs = aws_client("sqs")
    sqs.send_message(QueueUrl=first[stack.case_tasks_queue], MessageBody="kept")
    moto.reset_counts()

    again = bootstrap(moto.url, REGION, PREFIX, 300)

    assert again == first
    made = moto.requests()
    assert "dynamodb.UpdateTimeToLive" not in made  # no table was new
    assert made["sqs.SetQueueAttributes"] == 1  # the case-tasks queue, whose timeout changed
    attributes = sqs.get_queue_attributes(
        QueueUrl=first[stack.case_tasks_queue], AttributeNames=["All"]
    )["Attributes"]
    assert int(attributes["VisibilityTimeout"]) == case_tasks_visibility_seconds(300)
    assert attributes["ApproximateNumberOfMessages"] == "1"
